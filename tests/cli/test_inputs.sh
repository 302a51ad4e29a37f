#!/usr/bin/env bash
# verify --golden --json (one JSON object with every vector's result, also when a vector
# fails or the set cannot be run), and models given as streams (standard input, a pipe, a
# FIFO under a model's name): refused with one line that says why (a model is mapped and read
# more than once), where a bare container from a stream needs --shape; the limits on model
# inputs refused for a raw tensor, which has none of what they bound.
# usage: test_inputs.sh SGFP4 SCRATCH_DIR SOURCE_DIR
# SPDX-License-Identifier: MIT
set -u
sgfp4=$1
scratch=$2
source_dir=$3
. "$(dirname "${BASH_SOURCE[0]}")/prelude.sh"
check() { # WHAT WANT_RC TEXT: the last run's exit status and its stderr
    checks=$((checks + 1))
    if [ "$rc" -ne "$2" ] || { [ -n "$3" ] && ! grep -q -- "$3" err.txt; }; then
        fail "$1: exit $rc (want $2), want '$3' in: $(cat err.txt)"
    fi
}

# ---- verify --golden --json ------------------------------------------------------------------
golden=$source_dir/golden
"$sgfp4" verify --golden "$golden" --json >all.json 2>err.txt
rc=$?
check "golden --json" 0 ""
python3 - "$golden/manifest.json" <<'PY' || fail "golden --json: $(head -c 300 all.json)"
import json, os, sys
want = [v["name"] for v in json.load(open(sys.argv[1]))["vectors"]]
matvec = os.path.join(os.path.dirname(sys.argv[1]), "matvec", "manifest.json")
if os.path.exists(matvec):  # the matrix-vector vectors follow, as matvec/NAME
    want += ["matvec/" + v["name"] for v in json.load(open(matvec))["vectors"]]
got = json.load(open("all.json"))
assert got["ok"] is True and got["passed"] == len(want) and got["failed"] == 0, got
assert [v["name"] for v in got["vectors"]] == want and all(v["ok"] for v in got["vectors"])
PY
# a copy of the set with one vector's file changed: that vector fails, the others pass
cp -r "$golden" g
python3 - <<'PY'
import json
m = json.load(open("g/manifest.json"))
v = next(v for v in m["vectors"] if v["expect"] == "decode")
data = bytearray(open("g/" + v["file"], "rb").read())
data[-1] ^= 0x01                         # a payload byte: still valid, decodes differently
open("g/" + v["file"], "wb").write(data)
open("changed.txt", "w").write(v["name"])
PY
"$sgfp4" verify --golden g --json >g.json 2>err.txt
rc=$?
check "golden --json, one vector changed" 1 ""
python3 - "$(cat changed.txt)" <<'PY' || fail "golden --json, one changed: $(head -c 600 g.json)"
import json, sys
got = json.load(open("g.json"))
bad = [v for v in got["vectors"] if not v["ok"]]
assert got["ok"] is False and got["failed"] == 1 and len(bad) == 1, got
assert bad[0]["name"] == sys.argv[1] and "sha256" in bad[0]["error"], bad
PY
"$sgfp4" verify --golden nowhere --json >n.json 2>err.txt
rc=$?
check "golden --json, no set" 1 "nowhere/manifest.json: cannot open"
python3 -c '
import json; d = json.load(open("n.json"))
assert d["ok"] is False and "manifest.json" in d["error"], d' || fail "golden --json, no set: $(cat n.json)"

# ---- models as streams -------------------------------------------------------------------------
"$sgfp4" example -o m.safetensors --layers 1 --dim 64 --ffn 128 --vocab 256 -q
for cmd in "info -" "verify -" "info /dev/stdin" "verify /dev/stdin" "decode - -o out.safetensors"; do
    "$sgfp4" $cmd <m.safetensors >/dev/null 2>err.txt # a file behind stdin can be mapped
    rc=$?
    case "$cmd" in # '-' and /dev/stdin redirected from a file are that file: a model
    *-o*) check "$cmd < a file" 1 "not a quantized model" ;; # read as one: plain, not quantized
    *) check "$cmd < a file" 0 "" ;;
    esac
    cat m.safetensors | "$sgfp4" $cmd >/dev/null 2>err.txt
    rc=$?
    check "$cmd from a pipe" 1 "a model on a pipe or another stream cannot be read"
    [ "$(wc -l <err.txt)" -eq 1 ] || fail "$cmd from a pipe: more than one line: $(cat err.txt)"
done
rm -f fifo.safetensors && mkfifo fifo.safetensors
(cat m.safetensors >fifo.safetensors 2>/dev/null &)
"$sgfp4" verify fifo.safetensors >/dev/null 2>err.txt
rc=$?
check "a FIFO named as a model" 1 "fifo.safetensors: a model on a pipe"
cat fifo.safetensors >/dev/null 2>&1 & # lets the writer finish if the tool did not open it
wait
cat m.safetensors | "$sgfp4" encode - -o q.sgfp4.safetensors >/dev/null 2>err.txt
rc=$?
check "encode of a model from a pipe" 1 "a model on a pipe or another stream cannot be read"
[ -e q.sgfp4.safetensors ] && fail "encode from a pipe wrote an output"
head -c 16384 /dev/zero >z.f32
"$sgfp4" encode z.f32 --shape 64x64 --max-tensors 5 -o z.sgfp4 >/dev/null 2>err.txt
rc=$?
check "a model-input limit on a raw tensor" 2 "--max-tensors does not apply to a raw or .npy input"
head -c 4096 /dev/zero | "$sgfp4" verify - >/dev/null 2>err.txt
rc=$?
check "raw bytes from a pipe without --shape" 2 "is a stream: --shape OxI is required"
[ -e out.safetensors ] && fail "an output was written"
finish inputs
