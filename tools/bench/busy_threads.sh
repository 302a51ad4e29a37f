#!/bin/sh
# Threads on a busy machine (docs/benchmarks.md, "Threads on a busy machine"): a whole-model
# encode with the tool's default thread count (every online CPU) against --threads 1, and the
# products (sgfp4 bench --op matvec) on a 2-thread pool against 1 thread, while BUSY
# processes (default 2) spin on the CPUs, or with --busy 0 on a machine left alone. Encodes
# alternate (default first in odd rounds, --threads 1 first in even ones) and every output
# must have the same bytes. Prints medians and [fastest, slowest] over the rounds.
#
#   tools/bench/busy_threads.sh [--sgfp4 PATH] [--model FILE] [--busy N] [--rounds N]
#                               [--matvec-runs N] [--priority]
#
# The spinners and the runs share one session, so the scheduler's automatic session groups
# (Linux autogroup) share the processors between them thread by thread, as between the
# processes of one user. --priority (root) gives that session nice -20, for a machine
# where other sessions compete too (a shared build machine): the spinners then remain the
# load the runs meet. Needs python3 for the statistics.
# SPDX-License-Identifier: MIT
set -eu

here=$(cd "$(dirname "$0")/../.." && pwd)
sgfp4=$here/build/release/sgfp4
model=$here/../shared/weights/gpt2-small-attn/gpt2-small-attn-L0-L5-L11.safetensors
busy=2
rounds=9
matvec_runs=5
priority=0
while [ $# -gt 0 ]; do
    case $1 in
    --sgfp4) sgfp4=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    --busy) busy=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --matvec-runs) matvec_runs=$2; shift 2 ;;
    --priority) priority=1; shift ;;
    *) echo "usage: $0 [--sgfp4 PATH] [--model FILE] [--busy N] [--rounds N]" \
            "[--matvec-runs N] [--priority]" >&2; exit 2 ;;
    esac
done
[ -x "$sgfp4" ] || { echo "$0: no sgfp4 at $sgfp4 (build it, or give --sgfp4)" >&2; exit 2; }
[ -r "$model" ] || { echo "$0: cannot read $model (give --model)" >&2; exit 2; }

# One session for the spinners and the runs (see above).
if [ -z "${BUSY_THREADS_SESSION:-}" ]; then
    BUSY_THREADS_SESSION=1 exec setsid --wait "$0" --sgfp4 "$sgfp4" --model "$model" \
        --busy "$busy" --rounds "$rounds" --matvec-runs "$matvec_runs" \
        $( [ "$priority" = 1 ] && echo --priority )
fi
if [ "$priority" = 1 ]; then
    echo -20 > /proc/self/autogroup
fi

work=$(mktemp -d)
spinners=
cleanup() {
    for pid in $spinners; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

i=0
while [ "$i" -lt "$busy" ]; do
    sh -c 'while :; do :; done' &
    spinners="$spinners $!"
    i=$((i + 1))
done

# encode ARGS...: nanoseconds of one whole-model encode, output in $work/out.safetensors
encode() {
    t0=$(date +%s%N)
    "$sgfp4" encode "$model" -o "$work/out.safetensors" -f -q "$@"
    t1=$(date +%s%N)
    echo $((t1 - t0))
}

: > "$work/encode.txt"
r=1
while [ "$r" -le "$rounds" ]; do
    if [ $((r % 2)) -eq 1 ]; then order="default one"; else order="one default"; fi
    for arm in $order; do
        if [ "$arm" = default ]; then s=$(encode); else s=$(encode --threads 1); fi
        if [ -f "$work/first.safetensors" ]; then
            cmp -s "$work/first.safetensors" "$work/out.safetensors" ||
                { echo "$0: the $arm encode of round $r has other bytes" >&2; exit 1; }
        else
            mv "$work/out.safetensors" "$work/first.safetensors"
        fi
        echo "$r $arm $s" >> "$work/encode.txt"
    done
    r=$((r + 1))
done

: > "$work/matvec.jsonl"
r=1
while [ "$r" -le "$rounds" ]; do
    "$sgfp4" bench --op matvec --threads 2 --runs "$matvec_runs" --json |
        python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin)))' \
        >> "$work/matvec.jsonl"
    r=$((r + 1))
done

python3 - "$work/encode.txt" "$work/matvec.jsonl" "$busy" "$(nproc)" <<'EOF'
import json, statistics, sys

enc, mv, busy, cpus = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
t = {"default": {}, "one": {}}
for line in open(enc):
    r, arm, s = line.split()
    t[arm][int(r)] = int(s) * 1e-9

def span(v):
    return f"{statistics.median(v):.3f} [{min(v):.3f}, {max(v):.3f}]"

print(f"{cpus} CPUs, {busy} busy processes; {len(t['one'])} alternating rounds")
print(f"encode, seconds: default threads {span(list(t['default'].values()))}, "
      f"--threads 1 {span(list(t['one'].values()))}")
ratios = [t["default"][r] / t["one"][r] for r in t["one"]]
print(f"encode, default / --threads 1 per round: {span(ratios)}; bytes identical")

rows = {}
for line in open(mv):
    for e in json.loads(line)["results"]:
        if e["op"] == "plain read":
            continue
        rows.setdefault((e["cache"], e["op"]), {}).setdefault(e["threads"], []).append(
            e["gweights_per_s"])
print("products, G weights/s (median of each run's median, [lowest, highest]); "
      "2 threads / 1 per run")
for (cache, op), by in sorted(rows.items()):
    one, two = by[1], by[2]
    ratio = [b / a for a, b in zip(one, two)]
    print(f"  {cache:4} {op:17}  1 thread {span(one)}  2 threads {span(two)}  "
          f"ratio {span(ratio)}")
EOF
