#!/bin/sh
# `sgfp4 decode --backend vulkan` writes the same bytes as `--backend scalar`, for every dtype;
# `sgfp4 matvec --backend vulkan` the same bytes as `--backend scalar` for both classes on v1
# and v2 containers (and a NaN refused in Class A); `sgfp4 matvec --fast` (the D9 fast
# products) refused on the CPU backends, on the GPU the same bytes run to run;
# `sgfp4 info --devices` lists the device. Exits 77 (skipped) without a Vulkan device.
# Usage: cli_vulkan.sh SGFP4 SOURCE_DIR WORK_DIR
# SPDX-License-Identifier: MIT
set -eu
cli=$1 src=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
# --fast on a CPU backend: a usage error naming what is not offered, nothing written (no
# device needed).
for backend in scalar auto; do
    status=0
    "$cli" matvec "$src/golden/decode/v1_shape_130x200.fp4" --shape 130x200 \
        --x "$src/golden/matvec/v1_shape_130x200_a_mixed.x.f32" --backend $backend --fast \
        -o "$work/cpu_fast.y" 2> "$work/cpu_fast.err" || status=$?
    test $status -eq 2
    grep -q 'not offered on the CPU' "$work/cpu_fast.err"
    test ! -e "$work/cpu_fast.y"
done
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
for v in "decode/v1_shape_130x200.fp4 130x200 v1_shape_130x200_a_mixed" \
         "decode/v2_mixed_random_trees.sgfp4 128x192 v2_mixed_random_trees_a_mixed"; do
    set -- $v
    for class in a b; do
        "$cli" matvec "$src/golden/$1" --shape "$2" --x "$src/golden/matvec/$3.x.f32" \
            --class $class --backend scalar -q -f -o "$work/scalar.y"
        "$cli" matvec "$src/golden/$1" --shape "$2" --x "$src/golden/matvec/$3.x.f32" \
            --class $class --backend vulkan -q -f -o "$work/vulkan.y"
        cmp "$work/scalar.y" "$work/vulkan.y"
    done
done
# Class A refuses a NaN activation, on the GPU as on the CPU, and writes nothing.
printf '\377\377\377\177' > "$work/nan.x"
head -c 796 /dev/zero >> "$work/nan.x"
rm -f "$work/nan.y"
if "$cli" matvec "$src/golden/decode/v1_shape_130x200.fp4" --shape 130x200 --x "$work/nan.x" \
    --backend vulkan -q -o "$work/nan.y" 2> "$work/nan.err"; then
    echo "matvec --backend vulkan accepted a NaN in Class A"; exit 1
fi
grep -q 'Class A' "$work/nan.err"
test ! -e "$work/nan.y"
echo "matvec --backend vulkan: identical to --backend scalar"
# --fast on the GPU: both classes, the same bytes on a second run, and an output of the
# product's size.
for v in "decode/v1_shape_130x200.fp4 130x200 v1_shape_130x200_a_mixed" \
         "decode/v2_mixed_random_trees.sgfp4 128x192 v2_mixed_random_trees_a_mixed"; do
    set -- $v
    for class in a b; do
        for run in 1 2; do
            "$cli" matvec "$src/golden/$1" --shape "$2" --x "$src/golden/matvec/$3.x.f32" \
                --class $class --backend vulkan --fast -q -f -o "$work/fast$run.y"
        done
        cmp "$work/fast1.y" "$work/fast2.y"
        "$cli" matvec "$src/golden/$1" --shape "$2" --x "$src/golden/matvec/$3.x.f32" \
            --class $class --backend scalar -q -f -o "$work/d8.y"
        test "$(wc -c < "$work/fast1.y")" -eq "$(wc -c < "$work/d8.y")"
    done
done
"$cli" matvec "$src/golden/decode/v1_shape_130x200.fp4" --shape 130x200 -v \
    --x "$src/golden/matvec/v1_shape_130x200_a_mixed.x.f32" --backend vulkan --fast -f \
    -o "$work/fast.y" 2> "$work/fast.err"
grep -q 'D9 fast products' "$work/fast.err"
echo "matvec --backend vulkan --fast: refused on the CPU, the same bytes run to run"
