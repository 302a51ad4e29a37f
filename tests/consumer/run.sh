#!/bin/sh
# install.package test: install, then build and run tests/consumer against the install:
# through CMake (the shared and static targets of the core and of the model component) and
# through pkg-config (shared, and --static with the static archives, which proves that the
# .pc files name every library a static link needs, the Vulkan loader included); and that
# the version written once in CMakeLists.txt is the one every place reports.
# usage: run.sh BUILD PREFIX CONSUMER_SRC CMAKE VERSION SOVERSION
set -eu
build=$1 prefix=$2 src=$3 cmake=$4 version=$5 soversion=$6
out=$build/consumer-build
rm -rf "$prefix" "$out"
"$cmake" --install "$build" --prefix "$prefix" >/dev/null
"$cmake" -S "$src" -B "$out" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
"$cmake" --build "$out" >/dev/null
libdir=$(dirname "$(find "$prefix" -name libsgfp4.a | head -1)")
export LD_LIBRARY_PATH="$libdir"
fail() { echo "install_package: $*" >&2; exit 1; }

# the contract hash of the consumers' 1x1 container, computed here without the library
hash=$(python3 -c 'import hashlib
c = bytearray(2056); c[1] = 0x38; c[3] = 0x3C; c[8] = 3
print(hashlib.sha256(bytes(c)).hexdigest())')

"$out/consumer" | grep -q "^libsgfp4 $version: decoded 3.5$" || fail "consumer (shared)"
"$out/consumer_static" >/dev/null || fail "consumer_static"
"$out/consumer_model" "$hash" >/dev/null || fail "consumer_model (shared)"
"$out/consumer_model_static" "$hash" >/dev/null || fail "consumer_model_static"

# pkg-config, shared and static
pc() { PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config "$@"; }
[ "$(pc --modversion sgfp4)" = "$version" ] || fail "sgfp4.pc says $(pc --modversion sgfp4)"
[ "$(pc --modversion sgfp4-model)" = "$version" ] || fail "sgfp4-model.pc version"
# shellcheck disable=SC2046
cc -o "$out/consumer_pc" "$src/consumer.c" $(pc --cflags --libs sgfp4)
"$out/consumer_pc" >/dev/null || fail "consumer_pc"
# shellcheck disable=SC2046
cc -o "$out/consumer_model_pc" "$src/consumer_model.c" $(pc --cflags --libs sgfp4-model)
"$out/consumer_model_pc" "$hash" >/dev/null || fail "consumer_model_pc"
# --static: the archives themselves, and what Libs.private / Requires.private add
archives() {
    for flag in $(pc --static --cflags --libs "$1"); do
        case $flag in
        -lsgfp4) echo "$libdir/libsgfp4.a" ;;
        -lsgfp4_model) echo "$libdir/libsgfp4_model.a" ;;
        *) echo "$flag" ;;
        esac
    done
}
# shellcheck disable=SC2046
cc -o "$out/consumer_pc_static" "$src/consumer.c" $(archives sgfp4) ||
    fail "a static link with pkg-config --static sgfp4 fails"
"$out/consumer_pc_static" >/dev/null || fail "consumer_pc_static"
# shellcheck disable=SC2046
cc -o "$out/consumer_model_pc_static" "$src/consumer_model.c" $(archives sgfp4-model) ||
    fail "a static link with pkg-config --static sgfp4-model fails"
"$out/consumer_model_pc_static" "$hash" >/dev/null || fail "consumer_model_pc_static"
if readelf -d "$out/consumer_model_pc_static" | grep -q 'NEEDED.*libsgfp4'; then
    fail "the --static consumer links a shared libsgfp4"
fi

# one version everywhere: the tool, the soname, the licence installed beside the docs
"$prefix/bin/sgfp4" --version | grep -q "^sgfp4 $version (libsgfp4 $version)$" ||
    fail "sgfp4 --version says: $("$prefix/bin/sgfp4" --version)"
readelf -d "$libdir/libsgfp4.so" | grep -q "SONAME.*\[libsgfp4\.so\.$soversion\]" ||
    fail "libsgfp4.so has the soname $(readelf -d "$libdir/libsgfp4.so" | grep SONAME)"
[ -f "$prefix/share/doc/sgfp4/LICENSE" ] || fail "no LICENSE in share/doc/sgfp4"
echo "install_package: find_package (core and model, shared and static), pkg-config" \
    "(shared and --static), version $version everywhere, soname libsgfp4.so.$soversion: all work"
