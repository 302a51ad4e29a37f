#!/bin/bash
# A/B of the matrix-vector products on the lent GPU machine in one short command: build two
# source trees (NEW and BASE) in /tmp, run the products' test on NEW, then the matvec bench
# at one shape for BASE and NEW in turn (twice, alternating), then NEW's full matvec table.
# usage: tools/gpu/run_matvec_ab.sh NEW_SRC BASE_SRC OUT_DIR
# Run it after `source .gpu/env.sh` (../shared/tools/gpu/README.md). Each step has its own
# time limit and the run a deadline (SGFP4_RUN_DEADLINE seconds, default 540).
# SGFP4_RUN_SMALL=1 shrinks the sizes (a rehearsal on lavapipe); SGFP4_AB_VARIANTS names the
# kernel variants of the A/B (default: default,noprefetch,slices2,slices16). SGFP4_AB_PREBUILT=1
# uses /tmp/sgfp4-new and /tmp/sgfp4-base as they are and skips the test (a rehearsal).
# SPDX-License-Identifier: MIT
set -u
new=$(cd "$1" && pwd) base=$(cd "$2" && pwd) out=$3
deadline=$((SECONDS + ${SGFP4_RUN_DEADLINE:-540}))
variants=${SGFP4_AB_VARIANTS:-default,noprefetch,slices2,slices16}
if [ "${SGFP4_RUN_SMALL:-0}" = 1 ]; then
    ab="--shape 256x512" table="--shape 128x256"
else
    ab="--shape 8192x8192" table=""
fi
mkdir -p "$out"
exec > >(tee -a "$out/log.txt") 2>&1
step() { # step LIMIT_SECONDS NAME COMMAND...: runs and logs one step, within the deadline
    local limit=$1 name=$2
    shift 2
    local left=$((deadline - SECONDS))
    [ "$limit" -gt "$left" ] && limit=$left
    if [ "$limit" -le 0 ]; then
        echo "=== $name: skipped (deadline)"
        return 1
    fi
    echo "=== $name ($(date +%s), limit $limit s)"
    local t0=$SECONDS
    timeout "$limit" "$@"
    local rc=$?
    echo "=== $name: exit $rc after $((SECONDS - t0)) s"
    return $rc
}
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
build() { # build SRC DIR TARGETS...
    local src=$1 dir=$2
    shift 2
    cmake -S "$src" -B "$dir" -DCMAKE_BUILD_TYPE=Release -DSGFP4_WERROR=OFF -DSGFP4_VULKAN=ON > "$dir.cmake.log" 2>&1 || { cat "$dir.cmake.log"; return 1; }
    cmake --build "$dir" -j"$(nproc)" --target "$@" > "$dir.build.log" 2>&1 || { tail -20 "$dir.build.log"; return 1; }
}
export -f build # timeout runs it in a child bash
if [ "${SGFP4_AB_PREBUILT:-0}" != 1 ]; then
step 200 build-new bash -c 'build "$@"' build "$new" /tmp/sgfp4-new sgfp4 test_vulkan_matvec || { echo "the NEW build failed"; exit 1; }
step 200 build-base bash -c 'build "$@"' build "$base" /tmp/sgfp4-base sgfp4 || { echo "the BASE build failed"; exit 1; }
step 150 test-matvec sh -c "cd /tmp/sgfp4-new && SGFP4_SOURCE_DIR='$new' SGFP4_SHARED_DIR='$new/../shared' tests/test_vulkan_matvec > '$out/test_matvec.txt' 2>&1; rc=\$?; grep -E 'FAILED|ERROR|PASSED' '$out/test_matvec.txt'; exit \$rc"
fi
for round in 1 2; do
    for arm in base new; do
        step 60 "ab-$arm-$round" sh -c "/tmp/sgfp4-$arm/sgfp4 bench --backend vulkan --op matvec $ab --variant $variants --json > '$out/ab-$arm-$round.json' 2> '$out/ab-$arm-$round.txt'; rc=\$?; grep -v '^ *$' '$out/ab-$arm-$round.txt' | tail -40; exit \$rc"
    done
done
step 120 table-new sh -c "/tmp/sgfp4-new/sgfp4 bench --backend vulkan --op matvec $table --json > '$out/matvec.json' 2> '$out/matvec.txt'; rc=\$?; cat '$out/matvec.txt'; exit \$rc"
