#!/bin/bash
# The Vulkan work on the lent GPU machine in one command: build libsgfp4 in /tmp, run the
# Vulkan tests on the device, then the GPU benchmarks, writing a log and JSON files to OUT.
# usage: tools/gpu/run_vulkan.sh SOURCE_DIR OUT_DIR [explore|final]
#   final:   the products' test and the other Vulkan tests on the device, the matrix-vector
#            table (default kernels, checked: 4 shapes, batch 1 and 4, Class A and B, v1 and
#            encoder output at 4.5 bpw) with the copy and the plain read, the decode table at
#            8192 (checked) and 16384.
#   explore: the same, then every kernel variant of the products at 8192x8192.
# Run it after `source .gpu/env.sh` (../shared/tools/gpu/README.md). Each step has its own
# time limit and the run a deadline (SGFP4_RUN_DEADLINE seconds, default 560), so one hang
# costs its limit, not the run, and what finished comes back. SGFP4_RUN_SMALL=1 shrinks every
# size (a rehearsal on lavapipe); SGFP4_RUN_BUILD names the build folder (/tmp/sgfp4-build).
# SPDX-License-Identifier: MIT
set -u
src=$(cd "$1" && pwd) out=$2 mode=${3:-final}
deadline=$((SECONDS + ${SGFP4_RUN_DEADLINE:-560}))
if [ "${SGFP4_RUN_SMALL:-0}" = 1 ]; then
    big="--size 512" mid="--size 256" shapes="--shape 256x512" wide="--shape 256x512"
else
    big="--size 16384" mid="" shapes="" wide="--shape 8192x8192"
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
        return
    fi
    echo "=== $name ($(date +%s.%N), limit $limit s)"
    local t0=$SECONDS
    timeout "$limit" "$@"
    local rc=$?
    echo "=== $name: exit $rc after $((SECONDS - t0)) s"
    return $rc
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,temperature.memory,power.draw,clocks_throttle_reasons.active --format=csv
# Clocks, throttle reasons, load and power every 100 ms (clocks_event_reasons: 0x1 = idle).
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,clocks_event_reasons.active,utilization.gpu,power.draw --format=csv,noheader -lms 100 > "$out/clocks.csv" 2>&1 &
clocks=$!
b=${SGFP4_RUN_BUILD:-/tmp/sgfp4-build}
step 300 build sh -c "cmake -S '$src' -B $b -DCMAKE_BUILD_TYPE=Release -DSGFP4_WERROR=OFF -DSGFP4_VULKAN=ON > $b.cmake.log 2>&1 || { cat $b.cmake.log; exit 1; }; cmake --build $b -j16 --target sgfp4 test_vulkan_decode test_vulkan_matvec docs_vulkan_example > $b.build.log 2>&1; rc=\$?; tail -3 $b.build.log; exit \$rc" || { echo "the build failed: nothing to run"; kill "$clocks" 2>/dev/null; exit 1; }
step 15 devices $b/sgfp4 info --devices
test_matvec="cd $b && SGFP4_SOURCE_DIR='$src' SGFP4_SHARED_DIR='$src/../shared' tests/test_vulkan_matvec > '$out/test_matvec.txt' 2>&1; rc=\$?; grep -E 'FAILED|ERROR|PASSED|golden|real|corpus' '$out/test_matvec.txt'; exit \$rc"
step 120 test-matvec sh -c "$test_matvec"
step 150 matvec sh -c "$b/sgfp4 bench --backend vulkan --op matvec $shapes --json > '$out/matvec.json' 2> '$out/matvec.txt'"
step 40 variants sh -c "$b/sgfp4 bench --backend vulkan --op variants $mid --variant default --json > '$out/variants.json'"
step 60 variants-16k sh -c "$b/sgfp4 bench --backend vulkan --op variants $big --no-check --variant default --repeat 10 --json > '$out/variants16k.json'"
step 90 tests sh -c "ctest --test-dir $b -L vulkan -E '^vulkan\.matvec$' --output-on-failure > '$out/ctest.txt' 2>&1; rc=\$?; tail -12 '$out/ctest.txt'; exit \$rc"
if [ "$mode" = explore ]; then
    step 120 matvec-variants sh -c "$b/sgfp4 bench --backend vulkan --op matvec $wide --variant all --json > '$out/matvec_variants.json' 2> '$out/matvec_variants.txt'"
fi
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,temperature.memory,power.draw,clocks_throttle_reasons.active --format=csv
kill "$clocks" 2>/dev/null
python3 - "$out" <<'PY'
# A short summary for the end of the log (the tool returns the log's tail).
import json, os, sys
o = sys.argv[1]
def load(n):
    try:
        return json.load(open(os.path.join(o, n)))
    except Exception as e:
        print(n, "unreadable:", e); return None
for name in ("variants.json", "variants16k.json"):
    v = load(name)
    if v:
        print(name, v["size"])
        for r in v["results"]:
            print("%-16s %-15s %-4s ratio %.3f  %7.1f GB/s  copy %6.0f  slow %d  settle %s  %s" % (r["variant"], r["tensor"], r["dtype"], r["ratio_to_copy"], r["decode_GBps"], r["copy_GBps"], r["time"]["slow"], r["settle"]["settled"], r["bit_identical"]))
for name in ("matvec.json", "matvec_variants.json"):
  m = load(name)
  if not m and os.path.exists(os.path.join(o, name.replace(".json", ".txt"))):
    print(open(os.path.join(o, name.replace(".json", ".txt"))).read()[-6000:])
  if m:
    print(name)
    for r in m["results"]:
          if r["op"] == "read":
              print("read %5dx%-5d %-12s %9d B %8.2f us %7.0f GB/s ratio %.3f stream %.2f us ratio %.3f settled %s" % (r["rows"], r["cols"], r["tensor"], r["read_bytes"], r["time"]["median_us"], r["GBps"], r["ratio_to_copy"], r["other_times"]["stream"]["median_us"], r["stream_ratio_to_copy"], r["settle"]["settled"]))
          else:
              print("mv %5dx%-5d %-12s %s b%-2d %-18s %8.2f us %7.0f GB/s ratio %.3f of read %.3f stream %.3f %s slow %d settled %s" % (r["rows"], r["cols"], r["tensor"], r["class"], r["batch"], r["variant"], r["time"]["median_us"], r["GBps"], r["ratio_to_copy"], r["ratio_to_read"], r["stream_ratio_to_read"], r["bit_identical"], r["time"]["slow"], r["settle"]["settled"]))
PY
