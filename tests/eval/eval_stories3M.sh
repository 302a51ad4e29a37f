#!/usr/bin/env bash
# Quick checks of the model-level benchmark on stories3M (docs/eval.md), a GQA model (6 query
# heads, 2 key/value heads) with a 4096-token vocabulary whose every matrix is 64-aligned:
# - the float32 forward pass gives the greedy text the weights' README verified with a numpy
#   forward pass (171 tokens from BOS: stories3M_greedy171.txt, whose 708 bytes and a newline
#   are the README's 709 bytes of sha256 af38c8dd...), the tokenizer found beside the model;
# - the importance file holds every matrix's vectors and input Hessian as docs/encoder.md
#   defines them, over the calibration's token count (importance_check.py);
# - with those Hessians (4 x 256 calibration tokens), GPTQ lowers the mean KL of the
#   Q4_0-style and the 4- and 3-bit affine baselines below their round-to-nearest versions,
#   at the same bits (at 2 bits, where both break the model, it needs more calibration
#   text: docs/benchmarks.md);
# - every matrix quantized (--set all), the baselines cost their nominal bits exactly
#   (4.5, 3.5) and SGFP4 at equal bits stays within them.
# usage: eval_stories3M.sh SGFP4_EVAL WEIGHTS_DIR WORK_DIR
# SPDX-License-Identifier: MIT
set -euo pipefail
eval_bin=$1 weights=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)
model=$weights/stories3M/stories3M.safetensors
[ -f "$model" ] && [ -f "$weights/stories3M/tok4096.bin" ] ||
    { echo "stories3M not found: skipped"; exit 77; }
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }

"$eval_bin" --check-text "$here/stories3M_greedy171.txt" --greedy-steps 171 --sequences 1 \
    --length 8 --prompt 4 --continuation 4 --candidate f32 "$model" > /dev/null 2> "$work/text.log" ||
    { cat "$work/text.log"; fail "the float32 greedy text differs from the README's"; }

"$eval_bin" --imatrix-out "$work/imp.safetensors" --calib-sequences 4 --calib-length 256 "$model"
python3 "$here/importance_check.py" "$work/imp.safetensors" "$model" 1024

imp=$work/imp.safetensors
cands=(--candidate f32
       --candidate "q4_0:label=q4_0" --candidate "q4_0:gptq=$imp,label=q4_0 gptq"
       --candidate "affine:bits=4,label=affine4" --candidate "affine:bits=4,gptq=$imp,label=affine4 gptq"
       --candidate "affine:bits=3,label=affine3" --candidate "affine:bits=3,gptq=$imp,label=affine3 gptq"
       --candidate "sgfp4:equal=q4_0,label=sgfp4 q4_0"
       --candidate "sgfp4:equal=affine3,label=sgfp4 affine3")
"$eval_bin" --set all --sequences 6 --length 64 --greedy-steps 16 --prompt 8 --continuation 8 \
    --tsv "${cands[@]}" "$model" > "$work/table.tsv" 2> /dev/null
cat "$work/table.tsv"
field() {
    awk -F'\t' -v row="$2" -v name="$3" \
        'NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) col = i } $1 == row { print $col }' "$1"
}
t=$work/table.tsv
[ "$(field "$t" f32 'mean KL')" = "0.0000" ] || fail "float32 against itself is not exact"
for base in "q4_0 4.5000" "affine4 4.5000" "affine3 3.5000"; do
    set -- $base
    k_rtn=$(field "$t" "$1" 'mean KL') k_gptq=$(field "$t" "$1 gptq" 'mean KL')
    echo "$1: round to nearest $k_rtn, GPTQ $k_gptq"
    awk -v r="$k_rtn" -v g="$k_gptq" 'BEGIN { exit !(g > 0 && g < r) }' ||
        fail "$1: GPTQ ($k_gptq) does not beat round to nearest ($k_rtn)"
    [ "$(field "$t" "$1" 'bits/weight')" = "$2" ] && [ "$(field "$t" "$1 gptq" 'bits/weight')" = "$2" ] ||
        fail "$1: not at $2 bits a weight"
done
for row in "q4_0 4.5" "affine3 3.5"; do
    set -- $row
    b=$(field "$t" "sgfp4 $1" 'bits/weight')
    awk -v b="$b" -v want="$2" 'BEGIN { exit !(b > want - 0.01 && b <= want) }' ||
        fail "SGFP4 at $1's bits: $b bits a weight"
done
echo "stories3M checks passed"
