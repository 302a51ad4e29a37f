#!/usr/bin/env bash
# Sets up everything on a fresh Debian 12 machine (as root), builds, and runs the main job
# on the built-in examples: every golden vector decoded and verified, then the built-in
# synthetic model encoded, verified, decoded and described.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/release -j"$(nproc)" >/dev/null
sgfp4=build/release/sgfp4
echo "== sgfp4 verify --golden golden/"
"$sgfp4" verify --golden golden

# Whole models: the built-in synthetic transformer-like model (deterministic, ~32 MB BF16)
# quantized to a D6 manifest file, checked, restored to an ordinary safetensors model, and
# described tensor by tensor against the original.
work=build/example
mkdir -p "$work"
echo "== sgfp4 example -o $work/model.safetensors"
"$sgfp4" example -o "$work/model.safetensors"
echo "== sgfp4 encode $work/model.safetensors -o $work/model.sgfp4.safetensors"
"$sgfp4" encode "$work/model.safetensors" -o "$work/model.sgfp4.safetensors"
echo "== sgfp4 verify $work/model.sgfp4.safetensors"
"$sgfp4" verify "$work/model.sgfp4.safetensors"
echo "== sgfp4 decode $work/model.sgfp4.safetensors -o $work/model.decoded.safetensors"
"$sgfp4" decode "$work/model.sgfp4.safetensors" -o "$work/model.decoded.safetensors"
echo "== sgfp4 info $work/model.sgfp4.safetensors --against $work/model.safetensors"
"$sgfp4" info "$work/model.sgfp4.safetensors" --against "$work/model.safetensors"
