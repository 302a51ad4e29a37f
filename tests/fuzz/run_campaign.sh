#!/usr/bin/env bash
# One libFuzzer campaign of a target, then its corpus minimized (docs/security.md, "Fuzzing").
#   tests/fuzz/run_campaign.sh BUILD TARGET SECONDS [WORK]
# BUILD is a build folder configured with CC=clang -DSGFP4_FUZZ=ON
# -DSGFP4_SANITIZE=address,undefined. The campaign starts from a copy of the committed seeds
# and findings (tests/fuzz/corpus/TARGET, crashers/TARGET) in WORK (default
# /tmp/sgfp4-fuzz-TARGET), so the committed files are not touched; it prints libFuzzer's final
# statistics, any findings (WORK/artifacts), and leaves the minimized corpus in WORK/min (copy
# it over tests/fuzz/corpus/TARGET to keep it).
set -euo pipefail
if [ $# -lt 3 ]; then
  echo "usage: $0 BUILD TARGET SECONDS [WORK]" >&2
  exit 2
fi
build=$1 target=$2 seconds=$3
work=${4:-/tmp/sgfp4-fuzz-$target}
here=$(cd "$(dirname "$0")" && pwd)
binary=$build/tests/fuzz_$target
[ -x "$binary" ] || { echo "$binary: not built (cmake --build $build --target fuzz_$target)" >&2; exit 2; }
# Input sizes: a few blocks of container, a model of a few small tensors, a small matrix.
case $target in
  v1_decode|v2_decode) max_len=20000 ;;
  model) max_len=65536 ;;
  roundtrip) max_len=9000 ;;
  *) max_len=4096 ;;
esac
rm -rf "$work"
mkdir -p "$work/corpus" "$work/artifacts" "$work/min"
cp "$here/corpus/$target"/* "$work/corpus/"
if [ -d "$here/crashers/$target" ]; then cp "$here/crashers/$target"/* "$work/corpus/"; fi
"$binary" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len="$max_len" \
          -print_final_stats=1 -artifact_prefix="$work/artifacts/" "$work/corpus" \
          > "$work/log" 2>&1 || true
grep -E "^#[0-9]+ +DONE|^stat::" "$work/log" || tail -20 "$work/log"
echo "findings: $(ls "$work/artifacts" | wc -l) in $work/artifacts"
"$binary" -merge=1 -max_len="$max_len" -rss_limit_mb=2048 -timeout=10 "$work/min" "$work/corpus" \
          > "$work/merge.log" 2>&1
echo "minimized corpus: $(ls "$work/min" | wc -l) files, $(du -sk "$work/min" | cut -f1) KB in $work/min"
