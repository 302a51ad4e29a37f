#!/usr/bin/env bash
# Round trip of one real model through the CLI: encode -> verify -> independent check
# (st_check.py) -> decode -> independent check; with --zst also the zstd transport.
# usage: roundtrip.sh SGFP4 SOURCE.safetensors WORKDIR [--zst] [-- ENCODE_ARGS...]
set -euo pipefail
sgfp4=$1 src=$2 work=$3
shift 3
zst=0
if [ "${1:-}" = "--zst" ]; then zst=1; shift; fi
if [ "${1:-}" = "--" ]; then shift; fi
here=$(dirname "$0")
[ -f "$src" ] || { echo "no $src: skipping"; exit 77; }
rm -rf "$work" && mkdir -p "$work"
q=$work/model.sgfp4.safetensors
"$sgfp4" encode "$src" -o "$q" -q "$@"
"$sgfp4" verify "$q"
python3 "$here/st_check.py" quantized "$src" "$q"
"$sgfp4" decode "$q" -o "$work/decoded.safetensors" -q
python3 "$here/st_check.py" decoded "$src" "$q" "$work/decoded.safetensors"
"$sgfp4" decode "$q" -o "$work/decoded-bf16.safetensors" --dtype bf16 -q
python3 "$here/st_check.py" decoded "$src" "$q" "$work/decoded-bf16.safetensors" --dtype bf16
"$sgfp4" info "$q" --against "$src" >"$work/info.txt"
grep -q "quantized" "$work/info.txt"
if [ "$zst" = 1 ]; then
  # Deterministic whatever the thread count (D7): the same bytes with one thread.
  "$sgfp4" encode "$src" -o "$work/one-thread.sgfp4.safetensors" -q --threads 1 "$@"
  cmp "$q" "$work/one-thread.sgfp4.safetensors"
  # The encoder writes the same model through zstd; the .zst input reads back transparently
  # and decodes to the very same bytes as the plain file.
  "$sgfp4" encode "$src" -o "$q.zst" -q "$@"
  "$sgfp4" verify "$q.zst"
  "$sgfp4" decode "$q.zst" -o "$work/decoded-from-zst.safetensors" -q
  cmp "$work/decoded.safetensors" "$work/decoded-from-zst.safetensors"
  "$sgfp4" decode "$q" -o "$work/decoded.safetensors.zst" -q
  "$sgfp4" verify "$work/decoded.safetensors.zst"
  if command -v zstd >/dev/null; then   # a standard zstd stream, readable by the zstd tool
    zstd -q -d -c "$q.zst" | cmp - "$q"
  fi
fi
ls "$work" | grep -q 'tmp-' && { echo "temporary files left behind"; exit 1; }
echo "roundtrip OK: $src"
