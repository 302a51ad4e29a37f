#!/usr/bin/env bash
# Quick checks of the model-level benchmark on stories260K (docs/eval.md):
# - the float32 forward pass reproduces llama2.c's greedy reference text (test_all.py's
#   expected_stdout, 200 tokens from BOS: stories260K_greedy200.txt);
# - the float32 candidate scores KL 0 and agrees everywhere; the baselines and SGFP4 score
#   plausible, non-zero KL at about 4.5 bits per weight;
# - a quantized model written by `sgfp4 encode` and read back through the model API scores
#   exactly what the same encoding done in process scores (same bytes, D7);
# - the numbers do not depend on the thread count;
# - an importance file can be written and used, and its KL prediction is 0 for float32; it
#   holds every matrix's vectors and input Hessian as docs/encoder.md defines them
#   (importance_check.py), over the calibration's token count; one drawn from the
#   evaluation's own random streams is refused;
# - GPTQ with identity Hessians is round to nearest bit for bit; with the model's Hessians
#   it beats round to nearest at the same bits for every baseline of the standard table,
#   which counts whole groups (4.62 bits a weight for Q4_0 on this model's default set) and
#   gives SGFP4 the same bits.
# - an importance file with a vector of the wrong length fails the run, one without vectors
#   for the quantized tensors is said so.
# usage: eval_check.sh SGFP4_EVAL SGFP4_CLI WEIGHTS_DIR WORK_DIR
set -euo pipefail
eval_bin=$1 cli=$2 weights=$3 work=$4
here=$(cd "$(dirname "$0")" && pwd)
model=$weights/stories260K/stories260K.safetensors
tok=$weights/stories260K/tok512.bin
[ -f "$model" ] && [ -f "$tok" ] || { echo "stories260K not found: skipped"; exit 77; }
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }

"$eval_bin" --tokenizer "$tok" --check-text "$here/stories260K_greedy200.txt" --sequences 1 \
    --length 8 --prompt 4 --continuation 4 --candidate f32 "$model" > /dev/null 2> "$work/text.log" ||
    { cat "$work/text.log"; fail "the float32 greedy text differs from llama2.c's"; }

"$cli" encode "$model" -o "$work/q.safetensors" -q
common=(--sequences 8 --length 64 --greedy-steps 64 --prompt 8 --continuation 24 --tsv)
cands=(--candidate f32 --candidate q4_0 --candidate affine:bits=4,group=64 --candidate sgfp4
       --candidate "file:$work/q.safetensors" --candidate sgfp4:fit=fast)
"$eval_bin" "${common[@]}" --threads 1 "${cands[@]}" "$model" > "$work/t1.tsv"
"$eval_bin" "${common[@]}" --threads 2 "${cands[@]}" "$model" > "$work/t2.tsv"
cmp -s "$work/t1.tsv" "$work/t2.tsv" || { diff "$work/t1.tsv" "$work/t2.tsv"; fail "results depend on threads"; }
cat "$work/t1.tsv"

# field FILE ROW COLUMN-NAME: the cell of the row whose first cell is ROW.
field() {
    awk -F'\t' -v row="$2" -v name="$3" \
        'NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) col = i } $1 == row { print $col }' "$1"
}
t1=$work/t1.tsv
q=file:$work/q.safetensors
[ "$(field "$t1" f32 'mean KL')" = "0.0000" ] && [ "$(field "$t1" f32 'top-1 agree')" = "1.0000" ] &&
    [ "$(field "$t1" f32 'greedy match')" = "64" ] || fail "float32 against itself is not exact"
awk -v k="$(field "$t1" q4_0 'mean KL')" 'BEGIN { exit !(k > 0.01 && k < 1) }' ||
    fail "Q4_0-style KL implausible"
awk -v k="$(field "$t1" sgfp4 'mean KL')" -v b="$(field "$t1" sgfp4 'bits/weight')" \
    'BEGIN { exit !(k > 0.01 && k < 1 && b > 4.4 && b <= 4.5) }' || fail "SGFP4 KL or bits implausible"
for col in 'mean KL' 'top-1 agree' 'rel-L2 (set)' 'bits/weight'; do
    [ "$(field "$t1" sgfp4 "$col")" = "$(field "$t1" "$q" "$col")" ] ||
        fail "the quantized file scores differently ($col) from the same encoding in process"
done

"$eval_bin" --imatrix-out "$work/imp.safetensors" --calib-sequences 2 --calib-length 32 "$model"
python3 "$here/importance_check.py" "$work/imp.safetensors" "$model" 64
# Calibration streams (seed 1001, k < 2) must not be evaluation streams: sequence k of seed s
# starts from s + G (k + 1), G = 0x9E3779B97F4A7C15, so seed 1001 + G's stream 0 is 1001's
# stream 1, and seed 1001 - G's stream 1 is 1001's stream 0.
tiny=(--length 4 --greedy-steps 2 --prompt 2 --continuation 1 --candidate f32
      --predict "$work/imp.safetensors" "$model")
for refused in "1001 1" "11400714819323199486 1" "7046029254386354132 2"; do
    set -- $refused
    if "$eval_bin" --seed "$1" --sequences "$2" "${tiny[@]}" > /dev/null 2> "$work/err.log" ||
        ! grep -q "shares random streams" "$work/err.log"; then
        fail "an importance file from the evaluation's own streams was accepted (seed $1, $2)"
    fi
done
"$eval_bin" --seed 7046029254386354132 --sequences 1 "${tiny[@]}" > /dev/null ||
    fail "an importance file from other streams was refused"
"$eval_bin" "${common[@]}" --predict "$work/imp.safetensors" --candidate f32 \
    --candidate "sgfp4:importance=$work/imp.safetensors" "$model" > "$work/imp.tsv"
cat "$work/imp.tsv"
imp=$work/imp.tsv cand=sgfp4:importance=$work/imp.safetensors
[ "$(field "$imp" f32 'predicted KL')" = "0.0000" ] || fail "f32's predicted KL is not 0"
awk -v k="$(field "$imp" "$cand" 'mean KL')" -v p="$(field "$imp" "$cand" 'predicted KL')" \
    'BEGIN { exit !(k > 0 && p > 0) }' || fail "the importance candidate did not score"
# importance files that do not fit: a vector of the wrong length fails the run, naming it;
# a file without a vector for a quantized tensor is said to have covered only some of them
python3 - "$work" <<'EOF'
import json, struct, sys
def vectors(path, tensors):
    header, data = {}, b""
    for name, n in tensors:
        header[name] = {"dtype": "F32", "shape": [n], "data_offsets": [len(data), len(data) + 4 * n]}
        data += struct.pack("<%df" % n, *[1.0] * n)
    text = json.dumps(header).encode()
    open(path, "wb").write(struct.pack("<Q", len(text)) + text + data)
vectors(sys.argv[1] + "/short.safetensors", [("layers.0.attention.wq.weight", 63)])
vectors(sys.argv[1] + "/other.safetensors", [("no.such.tensor", 64)])
EOF
if "$eval_bin" "${common[@]}" --candidate "sgfp4:importance=$work/short.safetensors" "$model" \
        > /dev/null 2> "$work/short.log"; then
    fail "an importance vector of 63 values for 64 columns was accepted"
fi
grep -q "importance 'layers.0.attention.wq.weight': 63 values for 64 columns" "$work/short.log" ||
    { cat "$work/short.log"; fail "the wrong-length importance vector is not named"; }
"$eval_bin" "${common[@]}" --candidate "sgfp4:importance=$work/other.safetensors" "$model" \
    > /dev/null 2> "$work/other.log" || { cat "$work/other.log"; fail "the run failed"; }
grep -q "warning: .*has the vectors it uses .* for 0 of the [0-9]* quantized tensors" "$work/other.log" ||
    { cat "$work/other.log"; fail "an importance file that matches no tensor is not said so"; }

# GPTQ. With identity Hessians (wk, wv and w3 by alias) no error is fed forward: every
# baseline with GPTQ is its round-to-nearest self, bit for bit.
id=$work/identity.safetensors
python3 "$here/identity_hessians.py" "$model" "$id"
"$eval_bin" "${common[@]}" --set all --candidate q4_0 --candidate "q4_0:gptq=$id,label=q4_0 id" \
    --candidate affine:bits=3 --candidate "affine:bits=3,gptq=$id,label=affine3 id" \
    "$model" > "$work/identity.tsv"
cat "$work/identity.tsv"
for pair in "q4_0|q4_0 id" "affine:bits=3|affine3 id"; do
    for col in 'mean KL' 'top-1 agree' 'rel-L2 (set)' 'bits/weight'; do
        [ "$(field "$work/identity.tsv" "${pair%|*}" "$col")" = \
          "$(field "$work/identity.tsv" "${pair#*|}" "$col")" ] ||
            fail "GPTQ with identity Hessians differs from round to nearest ($pair, $col)"
    done
done

# The standard table with calibration data (8 x 128 tokens): GPTQ beats round to nearest at
# the same bits, the padded groups of the 172-wide rows counted (4.62 bits a weight).
"$eval_bin" --imatrix-out "$work/calib.safetensors" --calib-sequences 8 --calib-length 128 "$model"
"$eval_bin" "${common[@]}" --calibration "$work/calib.safetensors" "$model" > "$work/std.tsv" 2> /dev/null
cat "$work/std.tsv"
std=$work/std.tsv
[ "$(field "$std" 'Q4_0-style (reimpl.)' 'bits/weight')" = "4.6206" ] || fail "Q4_0-style bits"
for base in "Q4_0-style|" "affine 4-bit g64|MLX-style " "affine 3-bit g64|MLX-style " \
    "affine 2-bit g64|MLX-style "; do
    name=${base%|*} tag=${base#*|}
    rtn=$(field "$std" "$name (${tag}reimpl.)" 'mean KL')
    gptq=$(field "$std" "$name + GPTQ (${tag}reimpl.)" 'mean KL')
    echo "$name: round to nearest $rtn, GPTQ $gptq"
    awk -v r="$rtn" -v g="$gptq" 'BEGIN { exit !(g > 0 && g < r) }' ||
        fail "$name: GPTQ ($gptq) does not beat round to nearest ($rtn)"
done
for row in "SGFP4 (Q4_0's bits)|SGFP4 + importance (Q4_0's bits)|4.62" \
    "SGFP4 (affine 3-bit's bits)|SGFP4 + importance (affine 3-bit's bits)|3.59"; do
    IFS='|' read -r plain imp want <<<"$row"
    for r in "$plain" "$imp"; do
        b=$(field "$std" "$r" 'bits/weight')
        awk -v b="$b" -v w="$want" 'BEGIN { exit !(b > w - 0.02 && b <= w + 0.001) }' ||
            fail "$r: $b bits a weight, want about $want"
    done
done
echo "eval checks passed"
