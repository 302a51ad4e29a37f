#!/bin/sh
# The GPU benchmark's operations run to completion at tiny sizes: a decode variant checked
# against the CPU decoder on each of its five containers, and the matrix-vector products of
# every kernel variant with the plain read of their bytes; the operations it no longer has
# are usage errors. Timings on lavapipe mean nothing (and its copy rate never settles, so
# each measurement waits out the 2 s settle limit); this checks the code paths. Exits 77
# without a device.
# Usage: cli_vulkan_bench.sh SGFP4
# SPDX-License-Identifier: MIT
set -eu
cli=$1
"$cli" info --devices | grep -q '^vulkan device 0:' || exit 77
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$cli" bench --backend vulkan --op variants --size 72 --repeat 3 --variant f16-guard --json \
    > "$work/variants.json"
test "$(grep -c '"bit_identical": true' "$work/variants.json")" -eq 5
# The D8 products: every variant, both profiles and classes, checked against the CPU oracle
# (the command fails on a difference).
"$cli" bench --backend vulkan --op matvec --shape 70x200 --batch 3 --repeat 2 --variant all \
    --json > "$work/matvec.json"
# Of the splits only slices1 fits 70x200 (4 blocks a row): v1 6 variants, v2 5 (default, noprefetch, leavesahead,
# leavesatuse, slices1), each for both classes.
test "$(grep -c '"bit_identical": true' "$work/matvec.json")" -eq 22
# The read arm: one per tensor (v1, v2), and every product's ratio to it; its figures and the
# ratios present and positive.
test "$(grep -c '"op": "read"' "$work/matvec.json")" -eq 2
test "$(grep -c '"ratio_to_read"' "$work/matvec.json")" -eq 22
test "$(grep -c '"stream_ratio_to_read"' "$work/matvec.json")" -eq 22
awk -F': ' '/"(read_bytes|read_us|ratio_to_read|stream_ratio_to_read|GBps|ratio_to_copy)"/ {
        n++; if ($2 + 0 <= 0) { print "not positive: " $0; bad++ } }
    END { exit !(n > 0 && !bad) }' "$work/matvec.json"
# --fast: each product also as the D9 fast products, named, within their bound of the
# oracle's D8 result (the command fails beyond it); a usage error on other benchmarks.
"$cli" bench --backend vulkan --op matvec --shape 70x200 --batch 3 --repeat 2 --fast \
    --json > "$work/fast.json"
test "$(grep -c '"products": "D8"' "$work/fast.json")" -eq 4
test "$(grep -c '"products": "D9-fast"' "$work/fast.json")" -eq 4
test "$(grep -c '"within_bound": true' "$work/fast.json")" -eq 4
test "$(grep -c '"bit_identical": true' "$work/fast.json")" -eq 4
status=0
"$cli" bench --backend vulkan --op variants --size 64 --fast > /dev/null 2>&1 || status=$?
test $status -eq 2
for op in gemv repeat; do
    status=0
    "$cli" bench --backend vulkan --op $op > /dev/null 2>&1 || status=$?
    test $status -eq 2
done
status=0
"$cli" bench --op matvec --shape 64x64 --fast > /dev/null 2>&1 || status=$?
test $status -eq 2
echo "bench --backend vulkan: variants and matvec ran"
