#!/usr/bin/env bash
# The CLI's conventions (docs/cli.md): messages that say what a file is (by content), paths
# without '//' or 'line -1', rate targets that cannot be met said so (one tensor, a model),
# the closing summary of whole-model jobs (also when stderr is no terminal, and not erased by
# the progress bar on one), verify --json, info/decode --tensor of a model's tensor, and the
# limitations --help states.
# usage: test_conventions.sh SGFP4 SCRATCH_DIR SOURCE_DIR
# SPDX-License-Identifier: MIT
set -u
sgfp4=$1
scratch=$2
source_dir=$3
. "$(dirname "${BASH_SOURCE[0]}")/prelude.sh"

python3 - <<'EOF'
import random, struct
random.seed(3)
w = [random.gauss(0, 0.02) for _ in range(256 * 256)]
open("w.f32", "wb").write(struct.pack("<%df" % len(w), *w))
v = [random.gauss(0, 0.02) for _ in range(4096)]
header = "{'descr': '<f4', 'fortran_order': False, 'shape': (4096,), }"
header += " " * (64 - (10 + len(header) + 1) % 64) + "\n"
open("vec.npy", "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) +
                            header.encode() + struct.pack("<4096f", *v))
open("bad.npy", "wb").write(b"not numpy at all" * 100)
EOF
"$sgfp4" example -o m.safetensors --layers 1 --dim 128 --ffn 256 --vocab 512 -q || fail example

# ---- messages ------------------------------------------------------------------------------
run encode bad.npy -o bad.sgfp4
[ "$rc" -eq 1 ] && grep -q '^sgfp4: encode: bad.npy: not a NumPy file' "$err" && ok ||
    fail "bad.npy: exit $rc: $(cat "$err")"
run verify --golden "$scratch/nowhere/"
[ "$rc" -eq 1 ] && ! grep -q '//\|line -1' "$err" && ok || fail "golden paths: $(cat "$err")"
mkdir -p g && echo '{"vectors": [' >g/manifest.json
run verify --golden g/
[ "$rc" -eq 1 ] && grep -q 'g/manifest.json: line 2' "$err" && ! grep -q '//' "$err" && ok ||
    fail "golden JSON error: $(cat "$err")"
echo zzzzzzzzzzzzzzzz >fake.safetensors.zst
run verify fake.safetensors.zst
[ "$rc" -eq 1 ] && grep -q 'no zstd magic' "$err" && ok || fail "fake .zst: $(cat "$err")"
cp m.safetensors model.weights                 # a model under any name
run info model.weights --json
[ "$rc" -eq 0 ] && grep -q '"tensors"' stdout.txt && ok || fail "a model by content: $(cat "$err")"

# ---- rate targets --------------------------------------------------------------------------
run encode w.f32 --shape 256x256 --bpw 1 -o low.sgfp4
[ "$rc" -eq 0 ] && grep -q 'warning: --bpw 1 cannot be met: the container takes' "$err" && ok ||
    fail "--bpw 1 on one tensor: $(cat "$err")"
run encode w.f32 --shape 256x256 --bpw 4.5 -o fine.sgfp4
[ "$rc" -eq 0 ] && ! grep -q 'warning' "$err" && ok || fail "a met target warns: $(cat "$err")"
run encode vec.npy -o vec.sgfp4
[ "$rc" -eq 0 ] && grep -q 'warning: --bpw 4.5 cannot be met' "$err" &&
    grep -q 'note: 1 row fills 2% of each 64-row block' "$err" && ok ||
    fail "a 1-D .npy: $(cat "$err")"
run encode m.safetensors --bpw 1 -o low.sgfp4.safetensors
[ "$rc" -eq 0 ] && grep -q "warning: [0-9]* quantized tensors\? \(are\|is\) larger than" "$err" &&
    grep -q "(worst: '" "$err" && ok || fail "--bpw 1 on a model: $(cat "$err")"
run encode m.safetensors --bpw 16 -o high.sgfp4.safetensors
[ "$rc" -eq 0 ] && grep -q "more than 1% below" "$err" && ok || fail "--bpw 16 on a model: $(cat "$err")"
run encode w.f32 --shape 256x256 --bpw 40 -o x.sgfp4
[ "$rc" -eq 2 ] && grep -q '(0, 32]' "$err" && ok || fail "--bpw 40: exit $rc"

# ---- the closing summary -------------------------------------------------------------------
run encode m.safetensors -o q.sgfp4.safetensors
[ "$rc" -eq 0 ] && grep -Eq '^encode: [0-9]+ tensors \([0-9]+ quantized\), [0-9.]+ MB -> [0-9.]+ MB, [0-9.]+ bits/weight, [0-9.]+ s$' "$err" &&
    ok || fail "no encode summary on a non-terminal stderr: $(cat "$err")"
run decode q.sgfp4.safetensors -o d.safetensors
[ "$rc" -eq 0 ] && grep -Eq '^decode: [0-9]+ tensors \([0-9]+ decoded from containers\), ' "$err" &&
    ok || fail "no decode summary: $(cat "$err")"
run decode q.sgfp4.safetensors -o d2.safetensors -q
[ "$rc" -eq 0 ] && [ ! -s "$err" ] && ok || fail "-q prints: $(cat "$err")"
# on a terminal: the progress bar is erased, the summary stays after it
script -qec "$sgfp4 encode m.safetensors -o tty.sgfp4.safetensors" /dev/null >tty.txt 2>&1
python3 - <<'EOF' && ok || fail "the progress bar erased the summary: $(cat -v tty.txt)"
t = open("tty.txt", "rb").read().decode("utf-8", "replace")
last = t.split("\x1b[K")[-1]
assert "encode: " in last and "bits/weight" in last, repr(t[-300:])
EOF

# ---- verify --json -------------------------------------------------------------------------
"$sgfp4" encode w.f32 --shape 256x256 -o w.sgfp4 -q
run verify w.sgfp4 --shape 256x256
text_container=$(sed -n 's/^container sha256: //p' stdout.txt)
text_decoded=$(sed -n 's/^decoded f32 sha256: //p' stdout.txt)
run verify w.sgfp4 --shape 256x256 --json
[ "$rc" -eq 0 ] && python3 - "$text_container" "$text_decoded" "$(sha256sum w.sgfp4 | cut -d' ' -f1)" <<'EOF' && ok || fail "verify --json"
import json, sys
v = json.load(open("stdout.txt"))
assert v["ok"] is True and v["shape"] == [256, 256] and v["profile"] == "v2", v
assert v["container_sha256"] == sys.argv[1] == sys.argv[3], v
assert v["decoded_f32_sha256"] == sys.argv[2], v
EOF
head -c 1000 w.sgfp4 >cut.sgfp4
run verify cut.sgfp4 --shape 256x256 --json
[ "$rc" -eq 1 ] && [ "$(wc -l <"$err")" -eq 1 ] && python3 - <<'EOF' && ok || fail "verify --json of a bad file: exit $rc"
import json
v = json.load(open("stdout.txt"))
assert v["ok"] is False and v["file"] == "cut.sgfp4" and "TRUNCATED" in v["error"] or v["error"], v
EOF
run verify q.sgfp4.safetensors --json
[ "$rc" -eq 0 ] && grep -q '"d6_aligned": true' stdout.txt && ok || fail "verify --json of a model"

# ---- one tensor of a model -----------------------------------------------------------------
t=model.layers.0.mlp.up_proj.weight
run info q.sgfp4.safetensors --tensor "$t" --json --map up.png
[ "$rc" -eq 0 ] && python3 - <<'EOF' && ok || fail "info --tensor --json --map: $(cat "$err")"
import json
v = json.load(open("stdout.txt"))
assert v["shape"] == [256, 128] and v["leaves"] > 0, v
assert open("up.png", "rb").read(8) == b"\x89PNG\r\n\x1a\n"
EOF
run info q.sgfp4.safetensors --tensor no.such.tensor
[ "$rc" -eq 1 ] && grep -q "no tensor named 'no.such.tensor'" "$err" && ok || fail "info --tensor missing"
run decode q.sgfp4.safetensors --tensor "$t" -o up.npy
run decode q.sgfp4.safetensors --tensor "$t" -o up.bf16 --dtype bf16
"$sgfp4" decode q.sgfp4.safetensors -o d32.safetensors --dtype f32 -q
python3 - "$t" <<'EOF' && ok || fail "decode --tensor"
import json, struct, sys
b = open("d32.safetensors", "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
s, e = h[sys.argv[1]]["data_offsets"]
want = b[8 + n + s:8 + n + e]
npy = open("up.npy", "rb").read()
assert npy[-len(want):] == want and b"(256, 128)" in npy[:128]
bf = open("up.bf16", "rb").read()
assert len(bf) == len(want) // 2
EOF
run decode m.safetensors --tensor model.norm.weight -o norm.npy
[ "$rc" -eq 0 ] && grep -q "(128,)" norm.npy && ok || fail "decode --tensor of a plain model's vector"
run decode q.sgfp4.safetensors --tensor "$t" -o up.npy --shape 1x1 -f
[ "$rc" -eq 2 ] && ok || fail "decode --tensor --shape: exit $rc"

# ---- help states the limitations -----------------------------------------------------------
run verify --help
grep -q 'same number of 64x64 blocks' stdout.txt && ok || fail "verify --help: no wrong-shape note"
grep -q 'block grid' stdout.txt && fail "verify --help: still says only the same block grid verifies" || ok
run decode --help
grep -q 'FP8' stdout.txt && grep -q -- '--tensor' stdout.txt && ok || fail "decode --help"
run encode --help
grep -q -- '--force' stdout.txt && grep -q -- '--ignore-total-size' stdout.txt && ok ||
    fail "encode --help lacks -f / --ignore-total-size"

if [ -n "$(find . -name '.*sgfp4-tmp-*')" ]; then fail "temporary files left"; fi
finish conventions
