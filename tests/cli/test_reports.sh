#!/usr/bin/env bash
# What the tool says about inputs it cannot take as they are, and what it compares:
# - weights beyond the binary16 range: encoded as +-65504 and warned about with their count,
#   for one tensor and per tensor of a whole model (the library's count); a constant block
#   of 1e6 decodes to 65024 in v2 (the largest v2 bias) and to 65504 in v1 (format.md,
#   "Value range").
# - a --shape with the container's block count but another grid: a v2 container whose edge
#   leaves lie in the given shape's padding warns; the right shape, and a shape without
#   padding (which the bytes cannot tell), do not.
# - info --against: a plain model against its source (every float tensor's error, the other
#   tensors byte for byte), and a reference that does not match refused before anything is
#   printed (models and single containers).
# usage: test_reports.sh SGFP4 SCRATCH_DIR
# SPDX-License-Identifier: MIT
set -u
sgfp4=$1
scratch=$2
. "$(dirname "${BASH_SOURCE[0]}")/prelude.sh"
out=$scratch/stdout.txt
expect_quiet() { # WHAT: nothing on stderr
    if [ -s "$err" ]; then fail "$1: stderr: $(head -c 400 "$err")"; else ok; fi
}

python3 - <<'PY'
import json, random, struct
random.seed(3)
def npy(path, rows, cols, values):
    head = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % (rows, cols)
    head += " " * (63 - (10 + len(head)) % 64) + "\n"
    open(path, "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head.encode() +
                           struct.pack("<%df" % len(values), *values))
big = [random.gauss(0, 1) for _ in range(256 * 256)]
big[3 * 256 + 7] = 1e5
big[9 * 256 + 1] = -7e4
npy("big.npy", 256, 256, big)
npy("const.npy", 64, 64, [1e6] * 4096)
npy("w768.npy", 768, 768, [random.gauss(0, 1) for _ in range(768 * 768)])
# a model: one matrix with a weight beyond the range, one without, a norm, an int tensor
def model(path, tensors):
    header, data = {}, b""
    for name, dtype, shape, blob in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(blob)]}
        data += blob
    text = json.dumps(header).encode()
    open(path, "wb").write(struct.pack("<Q", len(text)) + text + data)
f32 = lambda v: struct.pack("<%df" % len(v), *v)
clean = [random.gauss(0, 1) for _ in range(128 * 64)]
model("big.safetensors", [("w.big", "F32", [256, 256], f32(big)),
                          ("w.clean", "F32", [128, 64], f32(clean)),
                          ("norm", "F32", [64], f32([1.0] * 64)),
                          ("step", "I64", [1], struct.pack("<q", 7))])
model("other.safetensors", [("w.other", "F32", [128, 64], f32(clean))])
model("sub.safetensors", [("w.clean", "F32", [128, 64], f32(clean))])
PY

# ---- weights beyond the binary16 range ----------------------------------------------------
run encode big.npy -o big.sgfp4
expect_rc 0 "encode big.npy"
expect_err "warning: big.npy: 2 weights beyond the binary16 range \\(largest \\|w\\| 100000\\) encoded as \\+-65504" \
    "one tensor: the count"
run encode big.npy -o big2.sgfp4 -q
expect_quiet "encode -q"
run encode big.safetensors -o big.sgfp4.safetensors
expect_rc 0 "encode a model"
expect_err "warning: 1 quantized tensor has 2 weights beyond the binary16 range, encoded as \\+-65504.*\\('w.big' 2 weights\\)" \
    "a model: the tensor and its count"
[ "$(grep -c "beyond the binary16" "$err")" -eq 1 ] && ok || fail "a model: not one line: $(cat "$err")"
run encode big.safetensors -o big-v.sgfp4.safetensors -v
expect_err "'w.big' \\[256, 256\\] F32: quantized .*, 2 weights clipped to \\+-65504" "-v: the tensor's count"
# the value range: a constant block of 1e6 is clipped to 65504; v2 keeps 65024 of it, v1 65504
for profile in v2 v1; do
    run encode const.npy -o "const.$profile" --profile "$profile" -q
    run decode "const.$profile" --shape 64x64 --profile "$profile" -o "const-$profile.f32"
    got=$(python3 -c "import struct; print(set(struct.unpack('<4096f', open('const-$profile.f32', 'rb').read())))")
    want=$([ "$profile" = v2 ] && echo "{65024.0}" || echo "{65504.0}")
    [ "$got" = "$want" ] && ok || fail "a constant block of 1e6 in $profile decodes to $got, want $want"
done

# ---- a --shape with the same number of blocks ---------------------------------------------
run encode w768.npy -o w768.sgfp4 -q
for shape in 768x768 64x9216 9216x64; do
    run verify w768.sgfp4 --shape "$shape"
    expect_rc 0 "verify as $shape"
    expect_quiet "verify as $shape (no padding: nothing to tell)"
done
for cmd in verify info "decode -o w705.f32"; do
    run $cmd w768.sgfp4 --shape 705x705
    expect_rc 0 "$cmd as 705x705"
    expect_err "warning: w768.sgfp4: --shape 705x705 looks wrong: [0-9]+ leaves wholly outside it" \
        "$cmd as 705x705: the warning"
done
run verify w768.sgfp4 --shape 705x705 -q
expect_quiet "verify as 705x705 -q"
# said after a run that succeeds: a failure stays its one line
run decode w768.sgfp4 --shape 705x705 -o missing/w705.f32
expect_rc 1 "decode as 705x705 into a missing folder"
[ "$(wc -l <"$err")" -eq 1 ] && ok || fail "a failure with the warning: not one line: $(cat "$err")"

# ---- info --against ---------------------------------------------------------------------------
run decode big.sgfp4.safetensors -o restored.safetensors -q
run info restored.safetensors --against big.safetensors
expect_rc 0 "info PLAIN --against its source"
grep -Eq "^w\.big .* [0-9]+\.[0-9]{5} +[0-9.]+ " "$out" && ok ||
    fail "info PLAIN --against: no error for w.big: $(cat "$out")"
grep -Eq "^norm .* 0\.00000 +inf" "$out" && ok || fail "info PLAIN --against: norm not exact: $(cat "$out")"
grep -Eq "^step .* same bytes" "$out" && ok || fail "info PLAIN --against: step not compared: $(cat "$out")"
grep -q "mean rel-L2 over float tensors" "$out" && ok || fail "info PLAIN --against: no mean: $(cat "$out")"
run info restored.safetensors --against big.safetensors --json
python3 -c '
import json, sys
d = {t["name"]: t for t in json.load(open(sys.argv[1]))["tensors"]}
assert 0 < d["w.big"]["rel_l2"] < 1 and d["norm"]["rel_l2"] == 0 and d["norm"]["snr_db"] is None
assert d["step"]["same_bytes"] is True and "rel_l2" not in d["step"]' "$out" && ok ||
    fail "info PLAIN --against --json: $(head -c 600 "$out")"
for model in restored.safetensors big.sgfp4.safetensors; do
    run info "$model" --against other.safetensors
    expect_rc 1 "info $model --against an unrelated model"
    expect_err "other.safetensors does not match $model: it has no tensor 'norm'|other.safetensors does not match $model: it has no tensor 'w\\.big'" \
        "info $model --against an unrelated model: the message"
    [ -s "$out" ] && fail "info $model --against an unrelated model printed: $(head -c 300 "$out")" || ok
done
run info sub.safetensors --against big.safetensors
expect_rc 1 "info --against a model with more tensors"
expect_err "it has tensor '[a-z.]+', which sub.safetensors has not" "more tensors: the message"
# a container's --against of the wrong size: refused before its description is printed
for cmd in verify info; do
    run $cmd w768.sgfp4 --shape 768x768 --against big.npy
    expect_rc 1 "$cmd --against a reference of another shape"
    [ -s "$out" ] && fail "$cmd --against a reference of another shape printed: $(head -c 300 "$out")" || ok
done

finish reports
