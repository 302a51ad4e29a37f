#!/bin/bash
# A/B of the matrix-vector products on the lent GPU machine in one short command: build each
# source tree (an "arm") in /tmp, run the products' test on the arms named in SGFP4_AB_TEST,
# then the matvec bench at one shape for every arm in turn (twice, alternating), then the full
# matvec table of the arm named in SGFP4_AB_TABLE (none if empty): the tables in OUT/*.txt.
# usage: tools/gpu/run_matvec_ab.sh OUT_DIR NAME=SOURCE_DIR...   e.g. base=../base new=.
# Run it after `source .gpu/env.sh` (../shared/tools/gpu/README.md). Each step has its own
# time limit and the run a deadline (SGFP4_RUN_DEADLINE seconds, default 540).
# SGFP4_RUN_SMALL=1 shrinks the sizes (a rehearsal on lavapipe); SGFP4_AB_VARIANTS names the
# kernel variants of the A/B (default: default,noprefetch,slices2,slices16), and
# SGFP4_AB_TABLE_VARIANTS those of the table (default: the default kernel only).
# SGFP4_AB_PREBUILT=1 uses /tmp/sgfp4-NAME as they are (a rehearsal).
# SPDX-License-Identifier: MIT
set -u
out=$1
shift
names=() dirs=()
for arm in "$@"; do
    names+=("${arm%%=*}")
    dirs+=("$(cd "${arm#*=}" && pwd)")
done
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
for i in "${!names[@]}"; do
    n=${names[$i]} d=${dirs[$i]}
    if [ "${SGFP4_AB_PREBUILT:-0}" != 1 ]; then
        step 200 "build-$n" bash -c 'build "$@"' build "$d" "/tmp/sgfp4-$n" sgfp4 test_vulkan_matvec || { echo "the build of $n failed"; exit 1; }
    fi
done
for i in "${!names[@]}"; do
    n=${names[$i]} d=${dirs[$i]}
    case " ${SGFP4_AB_TEST:-} " in *" $n "*) ;; *) continue ;; esac
    step 150 "test-matvec-$n" sh -c "cd /tmp/sgfp4-$n && SGFP4_SOURCE_DIR='$d' SGFP4_SHARED_DIR='$d/../shared' tests/test_vulkan_matvec > '$out/test_matvec-$n.txt' 2>&1; rc=\$?; grep -E 'FAILED|ERROR|PASSED' '$out/test_matvec-$n.txt'; exit \$rc"
done
for round in 1 2; do
    for n in "${names[@]}"; do
        step 60 "ab-$n-$round" sh -c "/tmp/sgfp4-$n/sgfp4 bench --backend vulkan --op matvec $ab --variant $variants --json > /dev/null 2> '$out/ab-$n-$round.txt'; rc=\$?; grep -E 'default' '$out/ab-$n-$round.txt'; exit \$rc"
    done
done
if [ -n "${SGFP4_AB_TABLE:-}" ]; then
    tv=${SGFP4_AB_TABLE_VARIANTS:+--variant $SGFP4_AB_TABLE_VARIANTS}
    step 240 "table-$SGFP4_AB_TABLE" sh -c "/tmp/sgfp4-$SGFP4_AB_TABLE/sgfp4 bench --backend vulkan --op matvec $table $tv --json > /dev/null 2> '$out/matvec.txt'; rc=\$?; cat '$out/matvec.txt'; exit \$rc"
fi
