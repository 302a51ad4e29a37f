#!/bin/sh
# install.build_minimal test: the smallest build (the core library only: -DSGFP4_MODEL=OFF
# -DSGFP4_CLI=OFF -DSGFP4_BUILD_TESTS=OFF, and OpenSSL hidden from CMake) configures and builds,
# installs no model component, and a program that only decodes links it, shared and static
# (pkg-config --static), needing nothing of OpenSSL, jansson, zstd or libpng.
# usage: minimal.sh SOURCE WORK CMAKE CONSUMER_SRC
set -eu
source=$1 work=$2 cmake=$3 src=$4
rm -rf "$work"
fail() { echo "build_minimal: $*" >&2; exit 1; }
"$cmake" -S "$source" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DSGFP4_MODEL=OFF \
    -DSGFP4_CLI=OFF -DSGFP4_BUILD_TESTS=OFF -DSGFP4_WERROR=ON \
    -DCMAKE_DISABLE_FIND_PACKAGE_OpenSSL=ON >"$work.log" 2>&1 || fail "configure: $(tail -5 "$work.log")"
"$cmake" --build "$work/build" -j2 >>"$work.log" 2>&1 || fail "build: $(tail -5 "$work.log")"
"$cmake" --install "$work/build" --prefix "$work/prefix" >/dev/null
[ ! -e "$work/prefix/include/sgfp4_model.h" ] || fail "sgfp4_model.h installed without the model"
if find "$work/prefix" -name 'libsgfp4_model*' | grep -q .; then fail "a model library installed"; fi
grep -q '^#define SGFP4_HAVE_MODEL 0$' "$work/prefix/include/sgfp4_config.h" ||
    fail "sgfp4_config.h does not say the model is absent"
libdir=$(dirname "$(find "$work/prefix" -name libsgfp4.a | head -1)")
pc() { PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config "$@"; }
# shellcheck disable=SC2046
cc -o "$work/consumer" "$src/consumer.c" $(pc --cflags --libs sgfp4)
LD_LIBRARY_PATH="$libdir" "$work/consumer" >/dev/null || fail "the shared consumer"
static=$(for flag in $(pc --static --cflags --libs sgfp4); do
    if [ "$flag" = -lsgfp4 ]; then echo "$libdir/libsgfp4.a"; else echo "$flag"; fi
done | tr '\n' ' ')
# shellcheck disable=SC2086
cc -o "$work/consumer_static" "$src/consumer.c" $static || fail "the static link: $static"
"$work/consumer_static" >/dev/null || fail "the static consumer"
for bin in "$work/consumer" "$libdir/libsgfp4.so"; do
    if readelf -d "$bin" | grep -E 'NEEDED.*(crypto|jansson|zstd|png)'; then
        fail "$bin needs a library of the model component"
    fi
done
if readelf -d "$work/consumer_static" | grep -q 'NEEDED.*libsgfp4'; then
    fail "the static consumer needs a shared libsgfp4"
fi
echo "build_minimal: the core alone builds, installs and links (shared, and static with: $static)"
