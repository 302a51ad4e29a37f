#!/usr/bin/env bash
# Crash-safe outputs: starts `sgfp4 decode`, `sgfp4 encode` and their
# whole-model forms (each once it exists) on an input big enough to take a moment, SIGKILLs it at a random moment,
# and checks that the output path then holds nothing or the previous complete file (by
# sha256), never a partial one. A run that finished before the kill must have left the new
# complete file.
#
# usage: crash_safe_output.sh SGFP4_CLI [ITERATIONS] [MODES]
#   ITERATIONS per mode (default 20); MODES: some of "decode encode model-encode
#   model-decode" (default: those available).
#   SGFP4_CRASH_ENCODE_SHAPE: shape of the encode input (default 256x1024).
# SPDX-License-Identifier: MIT
set -euo pipefail
cli=$1
iterations=${2:-20}
modes=${3:-}
work=$(mktemp -d "${TMPDIR:-/tmp}/sgfp4-crash-safe.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Two different v1 containers of 48x64 blocks (3072x4096 = 12.6M weights), written from the
# v1 framing (DECISIONS D3): constant valid headers, offsets b*2048 (FP4), random codes.
make_v1() {
    python3 - "$1" "$2" <<'PY'
import os, random, struct, sys
path, seed = sys.argv[1], int(sys.argv[2])
blocks = 48 * 64
rng = random.Random(seed)
with open(path, "wb") as f:
    f.write(struct.pack("<I", 0x2C003800 + seed) * blocks)
    f.write(b"".join(struct.pack("<I", b * 2048) for b in range(blocks)))
    f.write(rng.randbytes(blocks * 2048))
PY
}
shape=3072x4096
make_v1 "$work/a.fp4" 1
make_v1 "$work/b.fp4" 2

hash() { sha256sum "$1" | cut -d' ' -f1; }

# The previous complete output (from input a) and the complete output of input b.
"$cli" decode "$work/a.fp4" --shape $shape -o "$work/prev.bin" -q
"$cli" decode "$work/b.fp4" --shape $shape -o "$work/new.bin" -q
prev=$(hash "$work/prev.bin")
new=$(hash "$work/new.bin")
[ "$prev" != "$new" ] || { echo "FAIL: the two reference outputs are identical"; exit 1; }

# Encode inputs, once the encoder is there: the first rows of the decoded tensors above as
# raw f32 (smaller: encoding is much slower than decoding, above all under the sanitizers).
encode_shape=${SGFP4_CRASH_ENCODE_SHAPE:-256x1024}
encode_bytes=$(( ${encode_shape%x*} * ${encode_shape#*x} * 4 ))
head -c $encode_bytes "$work/prev.bin" > "$work/prev.f32"
head -c $encode_bytes "$work/new.bin" > "$work/new.f32"
encode_ok=false
if "$cli" encode "$work/prev.f32" --shape $encode_shape -o "$work/prev.sgfp4" -q 2>/dev/null; then
    "$cli" encode "$work/new.f32" --shape $encode_shape -o "$work/new.sgfp4" -q
    prev_enc=$(hash "$work/prev.sgfp4")
    new_enc=$(hash "$work/new.sgfp4")
    encode_ok=true
fi
# Whole models (safetensors), once the model commands exist: two models of the same tensor
# names (the raw inputs above as 2-D F32 tensors plus a norm), quantized.
make_model() {
    python3 - "$1" "$2" "$encode_shape" <<'PY'
import json, struct, sys
src, path, shape = sys.argv[1], sys.argv[2], [int(v) for v in sys.argv[3].split("x")]
weights = open(src, "rb").read()
half = len(weights) // 2
tensors = [("layers.0.mlp.weight", "F32", [shape[0] // 2, shape[1]], weights[:half]),
           ("layers.0.attn.weight", "F32", [shape[0] // 2, shape[1]], weights[half:]),
           ("layers.0.norm.weight", "F32", [shape[1]], weights[:4 * shape[1]])]
header, offset = {"__metadata__": {"source": "crash_safe_output.sh"}}, 0
for name, dtype, dims, data in tensors:
    header[name] = {"dtype": dtype, "shape": dims, "data_offsets": [offset, offset + len(data)]}
    offset += len(data)
text = json.dumps(header).encode()
text += b" " * (-(8 + len(text)) % 64)
with open(path, "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + b"".join(t[3] for t in tensors))
PY
}
model_ok=false
if $encode_ok; then
    make_model "$work/prev.f32" "$work/prev.safetensors"
    make_model "$work/new.f32" "$work/new.safetensors"
    if "$cli" encode "$work/prev.safetensors" -o "$work/prev.sgfp4.safetensors" -q 2>/dev/null
    then
        "$cli" encode "$work/new.safetensors" -o "$work/new.sgfp4.safetensors" -q
        "$cli" decode "$work/prev.sgfp4.safetensors" -o "$work/prev.restored.safetensors" -q
        "$cli" decode "$work/new.sgfp4.safetensors" -o "$work/new.restored.safetensors" -q
        model_ok=true
    fi
fi
if [ -z "$modes" ]; then
    modes=decode
    $encode_ok && modes="decode encode"
    $model_ok && modes="$modes model-encode model-decode"
fi

# Seconds one run takes, to spread the kill moments over the whole run.
elapsed() {
    local start end
    start=$(date +%s%N)
    "$@" >/dev/null
    end=$(date +%s%N)
    echo $(( (end - start) / 1000000 ))
}

failures=0
for mode in $modes; do
    if [ "$mode" = decode ]; then
        cmd=("$cli" decode "$work/b.fp4" --shape $shape -q -f -o)
        ext=bin; old=$prev; fresh=$new; source_old="$work/prev.bin"
    elif [ "$mode" = encode ]; then
        $encode_ok || { echo "FAIL: sgfp4 encode does not work here"; exit 1; }
        cmd=("$cli" encode "$work/new.f32" --shape $encode_shape -q -f -o)
        ext=sgfp4; old=$prev_enc; fresh=$new_enc; source_old="$work/prev.sgfp4"
    else
        $model_ok || { echo "FAIL: the model commands do not work here"; exit 1; }
        if [ "$mode" = model-encode ]; then
            cmd=("$cli" encode "$work/new.safetensors" -q -f -o)
            ext=sgfp4.safetensors; source_old="$work/prev.sgfp4.safetensors"
            fresh=$(hash "$work/new.sgfp4.safetensors")
        else
            cmd=("$cli" decode "$work/new.sgfp4.safetensors" -q -f -o)
            ext=restored.safetensors; source_old="$work/prev.restored.safetensors"
            fresh=$(hash "$work/new.restored.safetensors")
        fi
        old=$(hash "$source_old")
    fi
    out="$work/out.$ext"
    run_ms=0
    for _ in 1 2 3; do
        run_ms=$(( run_ms + $(elapsed "${cmd[@]}" "$work/timing.$ext") / 3 ))
        rm -f "$work/timing.$ext"
    done
    n_nothing=0 n_previous=0 n_new=0
    for ((i = 1; i <= iterations; i++)); do
        rm -f "$out"
        # Odd iterations start with no output, even ones with the previous complete file.
        if (( i % 2 == 0 )); then cp "$source_old" "$out"; fi
        delay_ms=$(( RANDOM % (run_ms * 12 / 10 + 1) ))
        "${cmd[@]}" "$out" &
        pid=$!
        sleep "$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))"
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        if [ ! -e "$out" ]; then
            state=nothing
            (( i % 2 == 1 )) || state=bad-missing
        else
            h=$(hash "$out")
            if [ "$h" = "$fresh" ]; then state=new
            elif [ "$h" = "$old" ] && (( i % 2 == 0 )); then state=previous
            else state=bad-partial; fi
        fi
        case $state in
            nothing) n_nothing=$((n_nothing + 1)) ;;
            previous) n_previous=$((n_previous + 1)) ;;
            new) n_new=$((n_new + 1)) ;;
            *) echo "FAIL: $mode iteration $i (kill after ${delay_ms} ms): $state," \
                    "$(stat -c %s "$out" 2>/dev/null || echo 0) bytes"
               failures=$((failures + 1)) ;;
        esac
        # A killed run may leave its temporary file beside the output (the next run over that
        # output removes it), never the output.
        rm -f "$work"/.out."$ext".sgfp4-tmp-*
    done
    echo "$mode: $iterations kills over a ${run_ms} ms run: nothing=$n_nothing" \
         "previous=$n_previous new=$n_new failures=$failures"
done
[ "$failures" -eq 0 ]
