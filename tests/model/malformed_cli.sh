#!/usr/bin/env bash
# Malformed model files through the CLI: each command fails with exit 1 and one clear line
# on stderr that names the problem (and the tensor where there is one), and leaves no output
# file and no temporary file behind.
# usage: malformed_cli.sh SGFP4 WORKDIR SOURCE.safetensors
set -euo pipefail
sgfp4=$1 work=$2 src=$3
[ -f "$src" ] || { echo "no $src: skipping"; exit 77; }
rm -rf "$work" && mkdir -p "$work/out"
cd "$work"

# name | header JSON (python literal) | data bytes | expected text in the error
python3 - <<'PY'
import json, struct
def write(name, header, data=b"", raw_len=None):
    text = header.encode() if isinstance(header, str) else header
    n = len(text) if raw_len is None else raw_len
    open(name, "wb").write(struct.pack("<Q", n) + text + data)
t = '"t":{"dtype":"F32","shape":[64,64],"data_offsets":[0,16384]}'
write("dup.safetensors", "{" + t + "," + t + "}", bytes(16384))
write("dtype.safetensors", '{"t":{"dtype":"Q4","shape":[64,64],"data_offsets":[0,16384]}}', bytes(16384))
write("size.safetensors", '{"t":{"dtype":"F32","shape":[64,64],"data_offsets":[0,16000]}}', bytes(16000))
write("hole.safetensors", '{"t":{"dtype":"F32","shape":[64,64],"data_offsets":[64,16448]}}', bytes(16448))
write("trail.safetensors", "{" + t + "}", bytes(16390))
write("trunc.safetensors", "{" + t + "}", bytes(100))
write("huge.safetensors", '{"t":{"dtype":"F64","shape":[4294967296,4294967296,16],"data_offsets":[0,8]}}', bytes(8))
write("hlen.safetensors", "{" + t + "}", bytes(16384), raw_len=1 << 62)
write("json.safetensors", '{"t":{"dtype":"F32",', bytes(0))
write("short.safetensors", b"", b"")
open("short.safetensors", "wb").write(b"\x01\x02")
PY

check() { # file expected-text
  local f=$1 want=$2
  for cmd in "verify $f" "encode $f -o out/x.sgfp4.safetensors" "info $f" \
             "decode $f -o out/y.safetensors"; do
    set +e
    "$sgfp4" $cmd 2>err.txt >/dev/null
    rc=$?
    set -e
    if [ $rc -ne 1 ]; then echo "FAIL: sgfp4 $cmd exited $rc"; cat err.txt; exit 1; fi
    if ! grep -q -- "$want" err.txt; then
      echo "FAIL: sgfp4 $cmd: expected '$want' in:"; cat err.txt; exit 1
    fi
    if [ "$(wc -l <err.txt)" -ne 1 ]; then echo "FAIL: more than one line:"; cat err.txt; exit 1; fi
  done
  if [ -n "$(ls -A out)" ]; then echo "FAIL: output left behind for $f:"; ls -la out; exit 1; fi
  echo "ok: $f -> $(cat err.txt)"
}
check dup.safetensors "MODEL_DUPLICATE"
check dtype.safetensors "unknown dtype 'Q4'"
check size.safetensors "tensor 't'"
check hole.safetensors "hole"
check trail.safetensors "after the last tensor"
check trunc.safetensors "truncated"
check huge.safetensors "2^64"
check hlen.safetensors "limit"
check json.safetensors "MODEL_JSON"
check short.safetensors "shorter than the 8-byte"

# A quantized model with one container byte flipped: verify names the tensor; decode refuses.
"$sgfp4" encode "$src" -o good.sgfp4.safetensors -q --profile v1
python3 - <<'PY'
import json, struct
b = bytearray(open("good.sgfp4.safetensors", "rb").read())
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
name = next(k for k in json.loads(h["__metadata__"]["sgfp4"])["tensors"])
start = 8 + n + h[name]["data_offsets"][0]
b[start + 100] ^= 0x40                  # inside the headers[] of the v1 container
open("flip.sgfp4.safetensors", "wb").write(b)
open("flip.name", "w").write(name)
PY
name=$(cat flip.name)
set +e
"$sgfp4" verify flip.sgfp4.safetensors 2>err.txt; rc1=$?
"$sgfp4" decode flip.sgfp4.safetensors -o out/z.safetensors 2>>err.txt; rc2=$?
set -e
[ $rc1 -eq 1 ] && [ $rc2 -eq 1 ] || { echo "FAIL: corrupt container accepted"; exit 1; }
grep -q "tensor '$name'" err.txt || { echo "FAIL: tensor not named"; cat err.txt; exit 1; }
[ -z "$(ls -A out)" ] || { echo "FAIL: output left behind"; exit 1; }
echo "ok: flipped byte -> $(head -1 err.txt)"

# A truncated zstd stream.
"$sgfp4" encode "$src" -o good.sgfp4.safetensors.zst -q --profile v1
head -c 3000 good.sgfp4.safetensors.zst > cut.sgfp4.safetensors.zst
set +e
"$sgfp4" verify cut.sgfp4.safetensors.zst 2>err.txt; rc=$?
set -e
[ $rc -eq 1 ] && grep -q "truncated" err.txt || { echo "FAIL: truncated zstd"; cat err.txt; exit 1; }
echo "ok: truncated zstd -> $(cat err.txt)"
echo "malformed OK"
