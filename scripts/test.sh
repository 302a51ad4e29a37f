#!/usr/bin/env bash
# Sets up everything on a fresh Debian 12 machine (as root) and runs the whole test suite:
# a warnings-as-errors GCC build with ctest, then the same suite built by clang under
# AddressSanitizer + UndefinedBehaviorSanitizer (with clang's pointer-overflow and implicit
# integer conversion checks, which GCC's UBSan lacks), also warnings-as-errors.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
jobs=$(nproc)
cmake -S . -B build/ci -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSGFP4_WERROR=ON
cmake --build build/ci -j"$jobs"
ctest --test-dir build/ci -j"$jobs" --output-on-failure
# A build folder configured by another compiler is set up afresh (CMake keeps the first).
if [ -f build/asan/CMakeCache.txt ] && ! grep -q '^CMAKE_C_COMPILER:.*clang' build/asan/CMakeCache.txt; then
  rm -rf build/asan
fi
# CMAKE_C_FLAGS is set empty so that flags an earlier configuration cached are not kept.
cmake -S . -B build/asan -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug \
      -DCMAKE_C_FLAGS_DEBUG="-g -O1" -DCMAKE_C_FLAGS="" \
      -DSGFP4_WERROR=ON -DSGFP4_SANITIZE=address,undefined,implicit-conversion
cmake --build build/asan -j"$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build/asan -j"$jobs" --output-on-failure
