#!/bin/sh
# install_package test: install, then build and run tests/consumer against the install,
# through CMake (shared and static targets) and through pkg-config.
set -eu
build=$1 prefix=$2 src=$3 cmake=$4
rm -rf "$prefix" "$build/consumer-build"
"$cmake" --install "$build" --prefix "$prefix" >/dev/null
"$cmake" -S "$src" -B "$build/consumer-build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
"$cmake" --build "$build/consumer-build" >/dev/null
LD_LIBRARY_PATH="$prefix/lib:$prefix/lib/x86_64-linux-gnu" "$build/consumer-build/consumer"
"$build/consumer-build/consumer_static"
libdir=$(dirname "$(find "$prefix" -name sgfp4.pc | head -1)")
flags=$(PKG_CONFIG_PATH="$libdir" pkg-config --cflags --libs sgfp4)
cc -o "$build/consumer-build/consumer_pc" "$src/consumer.c" $flags
LD_LIBRARY_PATH="$prefix/lib:$prefix/lib/x86_64-linux-gnu" "$build/consumer-build/consumer_pc"
echo "install_package: find_package (shared, static) and pkg-config all work"
