#!/bin/sh
# A program that only decodes links libsgfp4 alone: the core library needs (DT_NEEDED) the C
# library, libm, pthreads and, with the Vulkan backend, the Vulkan loader, and nothing of the
# model component (OpenSSL, jansson, zstd, libpng). usage: core_dependencies.sh LIBSGFP4_SO
# SPDX-License-Identifier: MIT
set -eu
needed=$(readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
status=0
for lib in $needed; do
    case $lib in
    libc.so.* | libm.so.* | libpthread.so.* | ld-linux*.so.* | libvulkan.so.* | libasan.so.* | \
        libubsan.so.* | libgcc_s.so.*) ;;
    *)
        echo "libsgfp4 needs $lib: not one the core may need"
        status=1
        ;;
    esac
done
echo "libsgfp4 needs: $(echo $needed)"
exit $status
