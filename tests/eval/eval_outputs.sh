#!/usr/bin/env bash
# sgfp4-eval's outputs keep the output rules of every writer (docs/eval.md, "Outputs";
# docs/cli.md, "Outputs"), here for --imatrix-out:
#   - the model it reads (by name, or through a link) is refused as the output, even with -f;
#   - an existing file is refused without -f and replaced with it;
#   - a folder and an existing file are refused before any work (the model given here does
#     not exist: a message about the output proves the output was checked first);
#   - a FIFO is written in place (and stays a FIFO), a symbolic link is written through;
#   - a name ending in .index.json gets a set: the file and its index;
#   - no temporary file is left.
# usage: eval_outputs.sh SGFP4_EVAL WEIGHTS_DIR WORK_DIR
# SPDX-License-Identifier: MIT
set -u
eval_bin=$(realpath "$1") weights=$(realpath "$2") work=$3
shared_model=$weights/stories260K/stories260K.safetensors
[ -f "$shared_model" ] || { echo "stories260K not found: skipped"; exit 77; }
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
failures=0 checks=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { checks=$((checks + 1)); }
calib=(--calib-sequences 1 --calib-length 8)
run() { "$eval_bin" "$@" >stdout.txt 2>err.txt; rc=$?; }
digest() { sha256sum "$@" | cut -d' ' -f1; }
cp "$shared_model" m.safetensors
model_digest=$(digest m.safetensors)

# refused: WANT ARGS...: exit 1, WANT on stderr, the model unchanged
refused() {
    local want=$1
    shift
    run "$@"
    if [ "$rc" -ne 1 ]; then fail "sgfp4-eval $*: exit $rc, want 1: $(cat err.txt)"; return; fi
    grep -q -- "$want" err.txt || { fail "sgfp4-eval $*: no '$want' in: $(cat err.txt)"; return; }
    [ "$(digest m.safetensors)" = "$model_digest" ] || { fail "sgfp4-eval $*: the model changed"; return; }
    ok
}

# ---- never an input ----
ln -s m.safetensors link.safetensors
refused "same file as the input" --imatrix-out m.safetensors "${calib[@]}" m.safetensors
refused "same file as the input" --imatrix-out m.safetensors -f "${calib[@]}" m.safetensors
refused "same file as the input" --imatrix-out link.safetensors -f "${calib[@]}" m.safetensors
refused "same file as the input" --imatrix-out ./m.safetensors -f "${calib[@]}" link.safetensors

# ---- existing files, folders: refused before any work ----
echo keep >keep.safetensors
refused "already exists" --imatrix-out keep.safetensors "${calib[@]}" missing.safetensors
[ "$(cat keep.safetensors)" = keep ] && ok || fail "an existing output changed without -f"
mkdir -p folder
refused "is a directory" --imatrix-out folder "${calib[@]}" missing.safetensors
refused "no such folder" --imatrix-out missing/imp.safetensors "${calib[@]}" missing.safetensors
run --imatrix-out keep.safetensors -f "${calib[@]}" m.safetensors
[ "$rc" -eq 0 ] && ! cmp -s keep.safetensors <(echo keep) && ok ||
    fail "-f did not replace an existing output: exit $rc: $(cat err.txt)"
cp keep.safetensors reference.safetensors # the calibration is deterministic

# ---- written in place, links written through ----
mkfifo pipe
cat pipe >from-fifo.safetensors &
reader=$!
run --imatrix-out pipe "${calib[@]}" m.safetensors
# A writer that never opened the FIFO (it failed, or replaced the FIFO) leaves cat waiting:
# open and close the FIFO for it (an end of file), or stop cat when the FIFO is gone.
if [ -p pipe ]; then exec 3<>pipe; exec 3>&-; else kill $reader 2>/dev/null; fi
wait $reader
[ "$rc" -eq 0 ] && [ -p pipe ] && cmp -s from-fifo.safetensors reference.safetensors && ok ||
    fail "a FIFO output: exit $rc, or it was replaced, or other bytes: $(cat err.txt)"
echo old >target.safetensors
ln -s target.safetensors out-link.safetensors
refused "already exists" --imatrix-out out-link.safetensors "${calib[@]}" m.safetensors
run --imatrix-out out-link.safetensors -f "${calib[@]}" m.safetensors
[ "$rc" -eq 0 ] && [ -L out-link.safetensors ] && cmp -s target.safetensors reference.safetensors &&
    ok || fail "a link output: exit $rc, or the link was replaced: $(cat err.txt)"

# ---- a set for a name ending in .index.json ----
mkdir -p set
run --imatrix-out set/imp.safetensors.index.json "${calib[@]}" m.safetensors
[ "$rc" -eq 0 ] && cmp -s set/imp.safetensors reference.safetensors &&
    python3 - set/imp.safetensors.index.json <<'PY' && ok || fail "the set: exit $rc: $(cat err.txt)"
import json, sys
index = json.load(open(sys.argv[1]))
assert set(index["weight_map"].values()) == {"imp.safetensors"}, index
assert index["metadata"]["total_size"] > 0
PY

[ -z "$(find . -name '.*sgfp4-tmp-*')" ] && ok || fail "temporary files left: $(find . -name '.*sgfp4-tmp-*')"
echo "eval_outputs: $checks passed, $failures failed"
[ "$failures" -eq 0 ]
