#!/usr/bin/env bash
# Sets up everything on a fresh Debian 12 machine (as root), builds, and runs the main job
# on the built-in examples: every golden vector decoded and verified, then the built-in
# synthetic model encoded, verified, decoded and described; then a Python environment,
# build/venv, in which `import sgfp4` works (scripts/python-venv.sh), and a round trip in it.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== scripts/install-deps.sh: the Debian packages (apt-get, when some are missing)"
./scripts/install-deps.sh
echo "== cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release"
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release >/dev/null
# the first build takes minutes: its progress shows, one line per file
echo "== cmake --build build/release -j$(nproc)"
cmake --build build/release -j"$(nproc)"
sgfp4=build/release/sgfp4
echo "== sgfp4 verify --golden golden/"
"$sgfp4" verify --golden golden

# Whole models: the built-in synthetic transformer-like model (deterministic, ~32 MB BF16)
# quantized to a D6 manifest file, checked, restored to an ordinary safetensors model, and
# described tensor by tensor against the original.
work=build/example
rm -rf "$work" && mkdir -p "$work" # outputs are never replaced without -f: start afresh
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

# Python: build/venv with libsgfp4 and the sgfp4 package (docs/python.md); activate it with
# `. build/venv/bin/activate`.
echo "== scripts/python-venv.sh build/venv build/release"
./scripts/python-venv.sh build/venv build/release
echo "== build/venv/bin/python3 -m sgfp4"
build/venv/bin/python3 -m sgfp4
