#!/bin/bash
# The GPU peers of `sgfp4 bench --backend vulkan --op matvec` (docs/benchmarks.md, "GPU
# matvec"), for the same device in the same run: llama.cpp's CUDA mat-vec (ggml's mul_mat
# of Q4_0 / Q4_K / F16 weights, activation quantization included) and torch's int4 GEMV
# (_weight_int4pack_mm, group 128) and bf16 product.
#
#   tools/gpu/gpu_peers.sh build GGML_SOURCE BIN_DIR   build the ggml harness
#   tools/gpu/gpu_peers.sh run BIN_DIR OUT_DIR [ROUNDS] time both peers
#
# GGML_SOURCE: a ggml source tree, or a .tar.gz of one (a snapshot of ggml-org/ggml; never
# put it in this repository). `build` configures ggml's CUDA backend for sm_90 without flash
# attention in a scratch folder under ${TMPDIR:-/tmp} (removed at exit), builds it, and puts
# its libraries and ggml_cuda_matvec (this folder's harness) in BIN_DIR. `run` writes
# OUT_DIR/ggml.jsonl and OUT_DIR/torch.jsonl (one JSON line per type, shape and batch);
# gpu_table.py joins them with sgfp4's JSON. Building while sgfp4 builds, and running after
# its benchmark, keeps the GPU to one program at a time. Needs CUDA's nvcc, CMake, Ninja and
# python3 with torch (the lent GPU machine has them).
# SPDX-License-Identifier: MIT
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
usage() {
    echo "usage: $0 build GGML_SOURCE BIN_DIR | run BIN_DIR OUT_DIR [ROUNDS]" >&2
    exit 2
}
[ $# -ge 3 ] || usage
case $1 in
build)
    src=$2 bin=$3
    scratch=$(mktemp -d "${TMPDIR:-/tmp}/sgfp4-gpu-peers.XXXXXX")
    trap 'rm -rf "$scratch"' EXIT
    if [ -f "$src" ]; then
        mkdir "$scratch/ggml" && tar -xzf "$src" -C "$scratch/ggml"
        src=$scratch/ggml
    fi
    cmake -S "$src" -B "$scratch/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON \
        -DCMAKE_CUDA_ARCHITECTURES=90 -DGGML_CUDA_FA=OFF -DGGML_CUDA_NCCL=OFF \
        -DBUILD_SHARED_LIBS=ON -DGGML_BUILD_TESTS=OFF -DGGML_BUILD_EXAMPLES=OFF \
        -DGGML_NATIVE=OFF >"$scratch/configure.log" 2>&1 ||
        { tail -30 "$scratch/configure.log"; exit 1; }
    cmake --build "$scratch/build" -j"$(nproc)" >"$scratch/build.log" 2>&1 ||
        { tail -40 "$scratch/build.log"; exit 1; }
    mkdir -p "$bin"
    bin=$(cd "$bin" && pwd)
    find "$scratch/build" -name 'libggml*.so*' -exec cp -P {} "$bin/" \;
    gcc -O2 -std=gnu11 -Wall -Wextra "$here/ggml_cuda_matvec.c" -I"$src/include" \
        -o "$bin/ggml_cuda_matvec" -L"$bin" -lggml -lggml-base -lggml-cuda \
        -Wl,-rpath,"$bin" -lm
    ;;
run)
    bin=$2 out=$3 rounds=${4:-30}
    mkdir -p "$out"
    "$bin/ggml_cuda_matvec" "$rounds" >"$out/ggml.jsonl"
    python3 "$here/torch_matvec.py" "$rounds" >"$out/torch.jsonl"
    ;;
*) usage ;;
esac
