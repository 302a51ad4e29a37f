#!/usr/bin/env bash
# A real sharded set through the library's set API: the model split into SHARDS shards with an
# index (make_set.py, at test time; with FP8 matrices and tensors of every other dtype), then
# encode -> verify -> independent check (st_check.py) -> decode -> independent check, as a
# set and as one file each way.
# usage: set_roundtrip.sh SET_DRIVER SOURCE.safetensors WORKDIR SHARDS
set -euo pipefail
driver=$1 src=$2 work=$3 shards=$4
here=$(dirname "$0")
[ -f "$src" ] || { echo "no $src: skipping"; exit 77; }
rm -rf "$work" && mkdir -p "$work/src" "$work/q" "$work/d"
python3 "$here/make_set.py" "$src" "$work/src" "$shards" --fp8
si=$work/src/model.safetensors.index.json
qi=$work/q/model.sgfp4.safetensors.index.json
di=$work/d/model.safetensors.index.json

"$driver" encode-set "$si" "$work/q"
"$driver" verify "$qi"
python3 "$here/st_check.py" set-quantized "$si" "$qi"
"$driver" decode-set "$qi" "$work/d"
python3 "$here/st_check.py" set-decoded "$si" "$qi" "$di"
# The FP8 matrices were quantized (their manifest dtype is the FP8 one; st_check saw them
# restored to it), and FP8 / MX / other tensors passed through.
python3 - "$qi" <<'PY'
import json, struct, sys
index = json.load(open(sys.argv[1]))
folder = sys.argv[1].rsplit("/", 1)[0]
quantized = {}
for shard in sorted(set(index["weight_map"].values())):
    with open(f"{folder}/{shard}", "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    quantized.update({k: v["dtype"] for k, v in
                      json.loads(header["__metadata__"]["sgfp4"])["tensors"].items()})
    for name in ("mx.block_scales", "mx.f4_weight", "extra.f8_vector", "extra.fnuz_a"):
        if name in header and name in quantized:
            sys.exit(f"{name} was quantized")
dtypes = sorted(set(quantized.values()))
if "F8_E4M3" not in dtypes or "F8_E5M2" not in dtypes:
    sys.exit(f"no FP8 matrix was quantized: {dtypes}")
print(f"fp8 check OK: quantized source dtypes {dtypes}")
PY

# One file each way: the same containers, so the same restored bytes.
"$driver" encode "$si" "$work/one.sgfp4.safetensors"
"$driver" verify "$work/one.sgfp4.safetensors"
python3 "$here/st_check.py" quantized "$si" "$work/one.sgfp4.safetensors"
"$driver" decode "$qi" "$work/one.safetensors"
python3 "$here/st_check.py" decoded "$si" "$work/one.sgfp4.safetensors" "$work/one.safetensors"
"$driver" decode "$work/one.sgfp4.safetensors" "$work/one-again.safetensors"
cmp "$work/one.safetensors" "$work/one-again.safetensors"
"$driver" decode "$qi" "$work/one-bf16.safetensors" --dtype bf16
python3 "$here/st_check.py" decoded "$si" "$work/one.sgfp4.safetensors" \
        "$work/one-bf16.safetensors" --dtype bf16
if ls "$work"/*.tmp "$work"/*/*.tmp 2>/dev/null | grep -q .; then
  echo "temporary files left behind"; exit 1
fi
echo "set roundtrip OK: $src in $shards shards"
