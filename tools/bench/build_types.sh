#!/usr/bin/env bash
# Release against RelWithDebInfo, the hot paths side by side (docs/benchmarks.md, "Build
# types"). A benchmark, not a test: it builds both configurations from this checkout, then
# runs every measurement in alternating processes pinned to one CPU and prints, per hot path,
# the median and range of each build and the ratio of the medians (Release / RelWithDebInfo,
# above 1: Release faster). It also encodes a real tensor with both builds and checks that
# the bytes are the same (DECISIONS D7).
#
#   tools/bench/build_types.sh [--rounds N] [--cpu C] [--build-root DIR] [--weights DIR]
#
# --rounds N      alternating rounds (default 5)
# --cpu C         the CPU every process is pinned to (default: the last online one)
# --build-root D  where the two builds go (default build/build-types)
# --weights D     the real weights (default ../shared/weights beside the checkout)
# SPDX-License-Identifier: MIT
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=5
cpu=$(($(nproc) - 1))
root=build/build-types
weights=../shared/weights
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --cpu) cpu=$2; shift 2 ;;
    --build-root) root=$2; shift 2 ;;
    --weights) weights=$2; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "build_types.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
models=("$weights"/stories260K/stories260K.safetensors
        "$weights"/gpt2-small-attn/gpt2-small-attn-L0-L5-L11.safetensors
        "$weights"/gpt-neo-125m-attn/gpt-neo-125m-attn-L0-L11.safetensors)
for m in "${models[@]}"; do
  [ -f "$m" ] || { echo "build_types.sh: $m is missing (--weights DIR)" >&2; exit 2; }
done

configs=(Release RelWithDebInfo)
for c in "${configs[@]}"; do
  echo "== building $c in $root/$c" >&2
  cmake -S . -B "$root/$c" -DCMAKE_BUILD_TYPE="$c" >/dev/null
  cmake --build "$root/$c" -j"$(nproc)" --target sgfp4 sgfp4-encode-bench >/dev/null
done

results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT
pin=(taskset -c "$cpu")

# One round of every measurement for build $1, appending "metric value" lines to $2.
measure() {
  local bin=$root/$1 out=$2
  "${pin[@]}" "$bin/tests/sgfp4-encode-bench" --bpw 4.5 --threads 1 "${models[@]}" |
    awk -F'|' '/M weights per CPU-second/ {gsub(/ /, "", $4); print "encode_Mw_per_cpu_s", $4}' >>"$out"
  for dtype in f32 f16; do
    "${pin[@]}" "$bin/sgfp4" bench --threads 1 --runs 5 --dtype "$dtype" --json |
      python3 -c 'import json,sys; d=sys.argv[1]; r=json.load(sys.stdin)["results"][0]
print("decode_%s_GBps" % d, r["decode_gbps"]); print("gather_%s_rows_per_s" % d, r["gather_rows_per_s"])' "$dtype" >>"$out"
  done
  "${pin[@]}" "$bin/sgfp4" bench --op matvec --threads 1 --runs 5 --json |
    python3 -c 'import json,sys
for r in json.load(sys.stdin)["results"]:
    if r["op"] != "plain read":
        print("matvec_%s_%s_Gw_per_s" % (r["cache"], r["op"].replace("class ", "").replace(", batch ", "b")), r["gweights_per_s"])' >>"$out"
  "${pin[@]}" "$bin/sgfp4" bench --op open --threads 1 --runs 9 --json |
    python3 -c 'import json,sys; print("open_per_s", 1e3 / json.load(sys.stdin)["open_ms"])' >>"$out"
  if "$bin/sgfp4" bench --backend vulkan --op decode --size 2048 --repeat 3 --json >"$results/vk.json" 2>/dev/null; then
    python3 -c 'import json,sys
up=[r["upload_seconds"] for r in json.load(open(sys.argv[1]))["results"] if r["profile"] == "v2"]
print("vulkan_v2_uploads_per_s", len(up) / sum(up))' "$results/vk.json" >>"$out"
  fi
}

for ((i = 1; i <= rounds; i++)); do
  for c in "${configs[@]}"; do
    echo "== round $i/$rounds: $c" >&2
    measure "$c" "$results/$c"
  done
done

# Same bytes from both builds: one real tensor encoded by each.
tensor=$results/tensor.npy
"$root/Release/sgfp4" decode "${models[1]}" --tensor decoder1/att.query.w -o "$tensor"
for c in "${configs[@]}"; do
  "$root/$c/sgfp4" encode "$tensor" -o "$results/$c.sgfp4" --bpw 4.5 -q
done
if cmp -s "$results/Release.sgfp4" "$results/RelWithDebInfo.sgfp4"; then same=yes; else same=NO; fi

python3 - "$results" "$same" "$rounds" "$(lscpu | sed -n 's/^Model name: *//p')" <<'EOF'
import statistics, sys
folder, same, rounds, cpu = sys.argv[1:5]
def load(c):
    d = {}
    for line in open(f"{folder}/{c}"):
        k, v = line.split()
        d.setdefault(k, []).append(float(v))
    return d
rel, rwd = load("Release"), load("RelWithDebInfo")
print(f"CPU: {cpu}; {rounds} alternating rounds, one pinned thread; higher is faster")
print("| hot path | Release | RelWithDebInfo | Release / RelWithDebInfo |")
print("|---|---|---|---|")
for k in rel:
    a, b = rel[k], rwd.get(k, [float("nan")])
    ma, mb = statistics.median(a), statistics.median(b)
    fmt = lambda v: f"{v:.4g}"
    print(f"| {k} | {fmt(ma)} [{fmt(min(a))}-{fmt(max(a))}] | {fmt(mb)} [{fmt(min(b))}-{fmt(max(b))}] | {ma / mb:.3f} |")
print(f"same encoded bytes from both builds: {same}")
EOF
[ "$same" = yes ]
