#!/usr/bin/env bash
# Sets up everything on a fresh Debian 12 machine (as root) and runs the whole test suite:
# a warnings-as-errors build with ctest, then the same suite under ASan + UBSan.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
jobs=$(nproc)
cmake -S . -B build/ci -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSGFP4_WERROR=ON
cmake --build build/ci -j"$jobs"
ctest --test-dir build/ci -j"$jobs" --output-on-failure
cmake -S . -B build/asan -DCMAKE_BUILD_TYPE=Debug -DSGFP4_WERROR=ON \
      -DSGFP4_SANITIZE=address,undefined
cmake --build build/asan -j"$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build/asan -j"$jobs" --output-on-failure
