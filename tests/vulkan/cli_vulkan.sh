#!/bin/sh
# `sgfp4 decode --backend vulkan` writes the same bytes as `--backend scalar`, for every dtype,
# and `sgfp4 info --devices` lists the device. Exits 77 (skipped) without a Vulkan device.
# Usage: cli_vulkan.sh SGFP4 SOURCE_DIR WORK_DIR
# SPDX-License-Identifier: MIT
set -eu
cli=$1 src=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
"$cli" info --devices > "$work/devices.txt"
grep -q '^vulkan device 0:' "$work/devices.txt" || { cat "$work/devices.txt"; exit 77; }
"$cli" info --devices --json | grep -q '"rounding_mode_rte_float32"'
for v in "v1_shape_130x200.fp4 130x200" "v2_mixed_random_trees.sgfp4 128x192"; do
    set -- $v
    for dtype in f32 f16 bf16; do
        "$cli" decode "$src/golden/decode/$1" --shape "$2" --dtype $dtype -q \
            --backend scalar -f -o "$work/scalar.$dtype"
        "$cli" decode "$src/golden/decode/$1" --shape "$2" --dtype $dtype -q \
            --backend vulkan -f -o "$work/vulkan.$dtype"
        cmp "$work/scalar.$dtype" "$work/vulkan.$dtype"
    done
done
echo "decode --backend vulkan: identical to --backend scalar"
