#!/usr/bin/env bash
# Sets up everything on a fresh Debian 12 machine (as root), builds, and runs the main job
# on the built-in example: every golden vector decoded and verified, then the MNN fixtures.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/release -j"$(nproc)" >/dev/null
sgfp4=build/release/sgfp4
echo "== sgfp4 verify --golden golden/"
"$sgfp4" verify --golden golden
