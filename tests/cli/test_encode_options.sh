#!/usr/bin/env bash
# The encoder's objective options on the command line (docs/cli.md, encode): --fit fast gives
# other bytes than best and both verify; --metric row changes the bytes and is refused where
# it does not apply; --importance FILE changes exactly the tensors it names (and a vector of
# the wrong length is an error naming the tensor, no output), and the tool says for how many
# of the quantized tensors the file had vectors, warning when not all; its input Hessians
# calibrate exactly the tensors they belong to (an alias too), which the summary counts;
# --rates is checked, needs --importance for sensitivity and changes nothing without both
# vectors; the low-rate warning of the policy appears in one line with the count (-v: once
# per quantized tensor) and in the closing summary below 4.125 bits per weight, and not at
# 4.5; -v says what was done to each tensor of a whole-model encode and decode; the manifest
# records what was used.
# usage: test_encode_options.sh SGFP4 SCRATCH_DIR
# SPDX-License-Identifier: MIT
set -u
sgfp4=$1
scratch=$2
. "$(dirname "${BASH_SOURCE[0]}")/prelude.sh"
differ() { # A B WHAT
    if cmp -s "$1" "$2"; then fail "$3: $1 and $2 are identical"; else ok; fi
}

q=model.layers.0.self_attn.q_proj.weight
up=model.layers.0.mlp.up_proj.weight
o=model.layers.0.self_attn.o_proj.weight
run example -o m.safetensors --layers 1 --dim 128 --ffn 256 --vocab 256 --dtype f32 --seed 5
expect_rc 0 "example model"

# ---- one tensor: --fit and --metric ----
run encode m.safetensors --tensor "$up" -o best.sgfp4
expect_rc 0 "encode --fit best"
run encode m.safetensors --tensor "$up" -o fast.sgfp4 --fit fast
expect_rc 0 "encode --fit fast"
run encode m.safetensors --tensor "$up" -o row.sgfp4 --metric row
expect_rc 0 "encode --metric row"
run encode m.safetensors --tensor "$up" -o sse.sgfp4 --metric sse --fit best
expect_rc 0 "encode --metric sse --fit best"
differ best.sgfp4 fast.sgfp4 "--fit fast"
differ best.sgfp4 row.sgfp4 "--metric row"
if cmp -s best.sgfp4 sse.sgfp4; then ok; else fail "--metric sse --fit best are not the defaults"; fi
for f in best fast row; do
    run verify "$f.sgfp4" --shape 256x128 --strict
    expect_rc 0 "verify $f.sgfp4"
done
# the fast preset's error (the encode's own report) is the larger one, by a little
# (docs/encoder.md: within 10%)
rel_l2() { "$sgfp4" encode m.safetensors --tensor "$up" -o - $1 2>&1 >/dev/null |
    sed -n 's/.*rel-L2 \([0-9.]*\).*/\1/p'; }
best=$(rel_l2 "--fit best") fast=$(rel_l2 "--fit fast")
if python3 -c "import sys; b, f = map(float, sys.argv[1:]); sys.exit(not (b < f < 1.1 * b))" \
    "$best" "$fast"; then ok; else
    fail "rel-L2 best '$best', fast '$fast': want best < fast < 1.1 best"
fi
run encode m.safetensors --tensor "$up" -o x.sgfp4 --fit quick
expect_rc 2 "--fit quick"
expect_err "--fit wants best, fast or reference" "--fit quick"
run encode m.safetensors --tensor "$up" -o x.sgfp4 --metric l1
expect_rc 2 "--metric l1"
expect_err "--metric wants sse or row" "--metric l1"
run encode m.safetensors --tensor "$up" -o x.sgfp4 --metric row --policy threshold
expect_rc 2 "--metric with the threshold policy"
expect_err "--metric applies to the v2 rate policy" "--metric --policy threshold"
run encode m.safetensors --tensor "$up" -o x.fp4 --metric row
expect_rc 2 "--metric with v1"
run encode m.safetensors --tensor "$up" -o x.sgfp4 --importance m.safetensors
expect_rc 2 "--importance for one tensor"
expect_err "--importance does not apply to a single tensor" "--importance for one tensor"
[ ! -e x.sgfp4 ] && [ ! -e x.fp4 ] && ok || fail "a refused encode left an output"

# ---- one tensor: the low-rate warning ----
run encode m.safetensors --tensor "$up" -o low.sgfp4 --bpw 4
expect_rc 0 "encode --bpw 4"
expect_err "warning: 4 bits per weight is below 4.125: part of the weights will be ternary" \
    "--bpw 4 warning"
run encode m.safetensors --tensor "$up" -o low.sgfp4 --bpw 4 -f -q
[ ! -s "$err" ] && ok || fail "-q still warns: $(cat "$err")"
run encode m.safetensors --tensor "$up" -o ok.sgfp4 --bpw 4.125
if grep -q "below 4.125" "$err"; then fail "--bpw 4.125 warns"; else ok; fi

# ---- whole models: --importance changes exactly the tensors it names ----
python3 - "$q" "$up" "$o" <<'EOF'
import json, random, struct, sys
q, up, o = sys.argv[1:]
random.seed(7)
def write(path, vectors):
    header, blobs, at = {}, [], 0
    for name, values in vectors.items():
        blob = struct.pack("<%df" % len(values), *values)
        header[name] = {"dtype": "F32", "shape": [len(values)], "data_offsets": [at, at + len(blob)]}
        blobs.append(blob)
        at += len(blob)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    open(path, "wb").write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
skewed = lambda n: [random.choice([0.05, 1.0, 20.0]) for _ in range(n)]
# q: columns only; up: rows only (256 rows); a vector for a tensor the model lacks is unused
write("imp.safetensors", {q: skewed(128), up + ":rows": skewed(256), "no.such.tensor": [1.0] * 7})
write("bad.safetensors", {o: skewed(127)})
write("other.safetensors", {"encoder.block.0.weight": skewed(64)})  # another model's names
EOF
run encode m.safetensors -o plain.sgfp4.safetensors
expect_rc 0 "model encode"
run encode m.safetensors -o imp.sgfp4.safetensors --importance imp.safetensors
expect_rc 0 "model encode --importance"
python3 - "$q" "$up" <<'EOF' >cmp.txt 2>&1
import json, struct, sys
named = set(sys.argv[1:])
def read(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    header = json.loads(b[8:8 + n])
    meta = json.loads(header.pop("__metadata__")["sgfp4"])["tensors"]
    return {k: b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]]
            for k, v in header.items()}, meta
plain, plain_meta = read("plain.sgfp4.safetensors")
imp, imp_meta = read("imp.sgfp4.safetensors")
assert plain.keys() == imp.keys(), "tensor names differ"
for name in sorted(plain):
    changed = plain[name] != imp[name]
    if changed != (name in named):
        print("tensor %s: changed=%s, named=%s" % (name, changed, name in named))
want = {sys.argv[1]: "columns", sys.argv[2]: "rows"}
for name, m in imp_meta.items():
    if m["encoder"].get("importance") != want.get(name):
        print("manifest %s: importance %r" % (name, m["encoder"].get("importance")))
for name, m in plain_meta.items():
    if "importance" in m["encoder"]:
        print("manifest of the plain encode %s: importance" % name)
print("compared %d tensors" % len(plain))
EOF
if grep -q "^compared 12 tensors" cmp.txt && [ "$(wc -l <cmp.txt)" -eq 1 ]; then ok; else
    fail "--importance: $(cat cmp.txt)"
fi
run verify imp.sgfp4.safetensors
expect_rc 0 "verify the model encoded with importance"
# how many of the quantized tensors the file weighted: 2 of 9 here, warned, naming others
run encode m.safetensors -o imp.sgfp4.safetensors --importance imp.safetensors -f
expect_err "warning: importance imp.safetensors has vectors for 2 of the 9 quantized tensors: the other 7 were encoded without it \\('model" "importance coverage"
run encode m.safetensors -o imp.sgfp4.safetensors --importance imp.safetensors -f -v
expect_err "'$q' \\[128, 128\\] F32: quantized .*importance columns," "-v: the columns weighted $q"
expect_err "'$o' \\[128, 128\\] F32: quantized .*importance none," "-v: nothing weighted $o"
# a file for another model: it weights none of them
run encode m.safetensors -o other.sgfp4.safetensors --importance other.safetensors
expect_rc 0 "--importance of another model's names"
expect_err "has vectors for 0 of the 9 quantized tensors" "importance matching nothing"
run encode m.safetensors -o bad.sgfp4.safetensors --importance bad.safetensors
expect_rc 1 "--importance of a wrong length"
expect_err "importance '$o': 127 values for 128 columns of tensor '$o'" "wrong length"
[ ! -e bad.sgfp4.safetensors ] && ok || fail "a failed encode left its output"
# input Hessians: q's stored, k's an alias of it; the summary counts the calibrated tensors
k=model.layers.0.self_attn.k_proj.weight
python3 - "$q" "$k" <<'EOF'
import json, struct, sys
q, k = sys.argv[1:]
n = 128
values = [0.5 ** abs(i - j) for i in range(n) for j in range(n)]  # an AR(1) covariance
blob = struct.pack("<%df" % len(values), *values)
header = {q + ":hessian": {"dtype": "F32", "shape": [n, n], "data_offsets": [0, len(blob)]},
          "__metadata__": {k + ":hessian": q + ":hessian", "tokens": "1000"}}
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
open("hess.safetensors", "wb").write(struct.pack("<Q", len(text)) + text + blob)
EOF
run encode m.safetensors -o hess.sgfp4.safetensors --importance hess.safetensors
expect_rc 0 "model encode --importance with Hessians"
expect_err "quantized, 2 calibrated with their input's Hessian\)" "summary of the calibrated"
run verify hess.sgfp4.safetensors
expect_rc 0 "verify the calibrated model"
python3 - "$q" "$k" <<'EOF' >cal.txt 2>&1
import json, struct, sys
named = set(sys.argv[1:])
def read(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    header = json.loads(b[8:8 + n])
    meta = json.loads(header.pop("__metadata__")["sgfp4"])["tensors"]
    return {k: b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]]
            for k, v in header.items()}, meta
plain, _ = read("plain.sgfp4.safetensors")
cal, meta = read("hess.sgfp4.safetensors")
for name in sorted(plain):
    if (plain[name] != cal[name]) != (name in named):
        print("tensor %s: changed=%s" % (name, plain[name] != cal[name]))
for name, m in meta.items():
    if (m["encoder"].get("calibration") == "hessian") != (name in named):
        print("manifest %s: %r" % (name, m["encoder"]))
print("compared %d tensors" % len(plain))
EOF
if grep -q "^compared 12 tensors" cal.txt && [ "$(wc -l <cal.txt)" -eq 1 ]; then ok; else
    fail "--importance with Hessians: $(cat cal.txt)"
fi
run encode m.safetensors -o none.sgfp4.safetensors --importance missing.safetensors
expect_rc 1 "--importance FILE that is not there"
expect_err "missing.safetensors" "missing importance file"

# ---- whole models: --rates ----
run encode m.safetensors -o r.sgfp4.safetensors --rates fast
expect_rc 2 "--rates fast"
expect_err "wants auto, uniform or sensitivity" "--rates fast"
run encode m.safetensors --tensor "$up" -o x.sgfp4 --rates sensitivity
expect_rc 2 "--rates for one tensor"
expect_err "--rates does not apply to a single tensor" "--rates for one tensor"
run encode m.safetensors -o r.sgfp4.safetensors --rates sensitivity
expect_rc 1 "--rates sensitivity without --importance"
expect_err "rates by sensitivity need an importance file" "--rates sensitivity alone"
[ -e r.sgfp4.safetensors ] && fail "--rates sensitivity without --importance wrote" || ok
# no tensor of imp.safetensors has both vectors: nothing is rated, the bytes stay
run encode m.safetensors -o r.sgfp4.safetensors --rates sensitivity --importance imp.safetensors
expect_rc 0 "--rates sensitivity with importance"
if grep -q "rates by sensitivity" "$err"; then fail "rated without both vectors: $(cat "$err")"; else ok; fi
cmp -s imp.sgfp4.safetensors r.sgfp4.safetensors && ok || fail "--rates sensitivity changed untouched tensors"
run encode m.safetensors -o u.sgfp4.safetensors --rates uniform --importance imp.safetensors
cmp -s imp.sgfp4.safetensors u.sgfp4.safetensors && ok || fail "--rates uniform: other bytes"
run encode m.safetensors -o a.sgfp4.safetensors --rates auto --importance imp.safetensors
expect_rc 0 "--rates auto with importance"
cmp -s imp.sgfp4.safetensors a.sgfp4.safetensors && ok || fail "--rates auto is not the default"

# ---- whole models: --fit, --metric reach every tensor and the manifest ----
run encode m.safetensors -o fast.sgfp4.safetensors --fit fast --metric row
expect_rc 0 "model encode --fit fast --metric row"
python3 - <<'EOF' >meta.txt 2>&1
import json, struct
b = open("fast.sgfp4.safetensors", "rb").read()
n = struct.unpack("<Q", b[:8])[0]
meta = json.loads(json.loads(b[8:8 + n])["__metadata__"]["sgfp4"])["tensors"]
bad = [k for k, v in meta.items() if (v["encoder"]["fit"], v["encoder"]["metric"]) != ("fast", "row")]
print("bad:", bad, "of", len(meta))
EOF
grep -q "^bad: \[\] of 9" meta.txt && ok || fail "manifest of --fit fast --metric row: $(cat meta.txt)"
differ plain.sgfp4.safetensors fast.sgfp4.safetensors "model --fit fast --metric row"

# ---- whole models: the low-rate warning, one line (-v: per tensor) and in the summary ----
run encode m.safetensors -o low.sgfp4.safetensors --bpw 3.5
expect_rc 0 "model encode --bpw 3.5"
n=$(grep -c "below 4.125" "$err")
[ "$n" -eq 1 ] && ok || fail "--bpw 3.5: $n warning lines, want 1: $(cat "$err")"
expect_err "warning: 9 quantized tensors: 3.5 bits per weight is below 4.125: .*; -v names each\\)" \
    "--bpw 3.5: one line with the count"
expect_err "warning: 9 quantized tensors got a policy warning" "--bpw 3.5 summary"
run encode m.safetensors -o low-v.sgfp4.safetensors --bpw 3.5 -v
n=$(grep -c "warning: '[^']*': 3.5 bits per weight is below 4.125" "$err")
[ "$n" -eq 9 ] && ok || fail "--bpw 3.5 -v: $n tensor warnings, want 9 (one per quantized tensor)"
grep -q "'$q': 3.5 bits" "$err" && ok || fail "-v: no warning names $q"
n=$(grep -c "encode: \\[[0-9]*/12\\] '" "$err")
[ "$n" -eq 12 ] && ok || fail "-v: $n lines about tensors, want 12 (one per tensor)"
run encode m.safetensors -o low2.sgfp4.safetensors --bpw 3.5 --embeddings skip
n=$(grep -c "below 4.125" "$err")
[ "$n" -eq 1 ] && ok || fail "--bpw 3.5 --embeddings skip: $n warning lines, want 1"
expect_err "warning: 7 quantized tensors: 3.5 bits" "--embeddings skip: the count"
expect_err "warning: 7 quantized tensors got a policy warning" "--embeddings skip summary"
run decode low.sgfp4.safetensors -o low.safetensors -v
expect_rc 0 "decode -v"
n=$(grep -c "decode: \\[[0-9]*/12\\] '" "$err")
[ "$n" -eq 12 ] && ok || fail "decode -v: $n lines about tensors, want 12"
expect_err "'$q' \\[128, 128\\] F32: v2 container decoded to F32" "decode -v names what it did"
run encode m.safetensors -o high.sgfp4.safetensors --bpw 4.5
if grep -q "warning" "$err"; then fail "--bpw 4.5 warns: $(cat "$err")"; else ok; fi

finish encode_options
