#!/usr/bin/env bash
# A real sharded set through the CLI: the model split into SHARDS shards with an index
# (make_set.py, at test time; with FP8 matrices and tensors of every other dtype), then
# `sgfp4 encode -> verify -> decode` as a set and as one file, each result checked by the
# independent reader (st_check.py: names, dtypes, shapes, bytes); the FP8 matrices quantized
# and restored to FP8, every other dtype passed through; verify --json and info over the
# set (shards, totals, --against a set); decode/info --tensor of one tensor; the closing
# summary on a non-terminal stderr; --ignore-total-size; no temporary file anywhere.
# usage: set_cli.sh SGFP4 SOURCE.safetensors WORKDIR SHARDS
# SPDX-License-Identifier: MIT
set -euo pipefail
sgfp4=$1 src=$2 work=$3 shards=$4
here=$(cd "$(dirname "$0")" && pwd)
[ -f "$src" ] || { echo "no $src: skipping"; exit 77; }
rm -rf "$work" && mkdir -p "$work/src" "$work/q" "$work/d"
cd "$work"
python3 "$here/make_set.py" "$src" src "$shards" --fp8
si=src/model.safetensors.index.json
qi=q/model.sgfp4.safetensors.index.json
di=d/model.safetensors.index.json

# As a set: the output names follow the input's (NAME.safetensors <-> NAME.sgfp4.safetensors).
"$sgfp4" encode "$si" -o "$qi" 2>encode.txt
grep -Eq "^encode: [0-9]+ tensors \([0-9]+ quantized\), .* MB -> .* MB, [0-9.]+ bits/weight, $((shards + 1)) files, [0-9.]+ s$" encode.txt ||
  { echo "FAIL: no closing summary on a non-terminal stderr:"; cat encode.txt; exit 1; }
for k in $(seq 1 "$shards"); do
  name=$(printf 'model-%05d-of-%05d.sgfp4.safetensors' "$k" "$shards")
  [ -f "q/$name" ] || { echo "FAIL: no q/$name"; ls q; exit 1; }
done
"$sgfp4" verify "$qi"
"$sgfp4" verify "$qi" --json >verify.json
python3 - "$shards" <<'PY'
import json, sys
v = json.load(open("verify.json"))
assert v["ok"] is True and v["set"] is True and v["shards"] == int(sys.argv[1]), v
assert v["quantized"] is True and v["quantized_v2"] > 0 and v["d6_aligned"] is True, v
PY
python3 "$here/st_check.py" set-quantized "$si" "$qi"
"$sgfp4" decode "$qi" -o "$di" -q
python3 "$here/st_check.py" set-decoded "$si" "$qi" "$di"
# The FP8 matrices were quantized (the manifest records their FP8 dtype; st_check saw them
# restored to it); the MX, FNUZ and other tensors passed through.
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
for name in ("mx.block_scales", "mx.f4_weight", "extra.f8_vector", "extra.fnuz_a", "extra.u64"):
    if name in quantized:
        sys.exit(f"{name} was quantized")
dtypes = sorted(set(quantized.values()))
if "F8_E4M3" not in dtypes or "F8_E5M2" not in dtypes:
    sys.exit(f"no FP8 matrix was quantized: {dtypes}")
print(f"fp8 check OK: quantized source dtypes {dtypes}")
PY

# As one file, each way: the same containers, so the same restored bytes.
"$sgfp4" encode "$si" -o one.sgfp4.safetensors -q
"$sgfp4" verify one.sgfp4.safetensors
python3 "$here/st_check.py" quantized "$si" one.sgfp4.safetensors
"$sgfp4" decode "$qi" -o one.safetensors -q
python3 "$here/st_check.py" decoded "$si" one.sgfp4.safetensors one.safetensors
"$sgfp4" decode one.sgfp4.safetensors -o one-again.safetensors -q
cmp one.safetensors one-again.safetensors
"$sgfp4" decode "$qi" -o one-bf16.safetensors --dtype bf16 -q
python3 "$here/st_check.py" decoded "$si" one.sgfp4.safetensors one-bf16.safetensors --dtype bf16
# A set of one file: a single model written as a set.
mkdir -p single
"$sgfp4" encode one.safetensors -o single/one.sgfp4.safetensors.index.json -q
"$sgfp4" verify single/one.sgfp4.safetensors.index.json -q
[ -f single/one.sgfp4.safetensors ] || { echo "FAIL: a set of one: $(ls single)"; exit 1; }

# info over the set: each tensor's shard, per-shard totals, --against a set; the bytes
# before of F4 / F6 tensors counted (the unquantized set's total is its index's total_size).
"$sgfp4" info "$qi" --json --against "$si" >info.json
"$sgfp4" info "$si" --json >info-src.json
"$sgfp4" info "$qi" >info.txt
grep -q '^shard ' info.txt || { echo "FAIL: info has no shard table"; exit 1; }
python3 - "$si" "$shards" <<'PY'
import json, sys
index = json.load(open(sys.argv[1]))
info, plain = json.load(open("info.json")), json.load(open("info-src.json"))
shards = info["shards"]
assert len(shards) == int(sys.argv[2]), shards
assert sum(s["tensors"] for s in shards) == info["summary"]["tensors"] == len(index["weight_map"])
for row in info["tensors"]:
    assert index["weight_map"][row["name"]] .replace(".safetensors", ".sgfp4.safetensors") == row["shard"], row
assert "mean_rel_l2" in info["summary"] and info["summary"]["mean_rel_l2"] < 0.2, info["summary"]
assert plain["summary"]["bytes_before"] == index["metadata"]["total_size"], (
    plain["summary"]["bytes_before"], index["metadata"]["total_size"])
print("info over the set OK")
PY

# One tensor: a quantized matrix decoded alone equals its decode in the whole model; a
# pass-through tensor comes out as its bytes; info --tensor describes and maps its container.
name=$(python3 - <<'PY'
import json
print([r["name"] for r in json.load(open("info.json"))["tensors"] if r["kind"] == "v2"][0])
PY
)
"$sgfp4" decode "$qi" -o one-f32.safetensors --dtype f32 -q
"$sgfp4" decode "$qi" --tensor "$name" -o tensor.npy -q
"$sgfp4" decode "$qi" --tensor extra.u64 -o u64.raw -q
"$sgfp4" decode "$qi" --tensor extra.u64 -o u64.npy -q
python3 - "$name" "$si" <<'PY'
import ast, json, struct, sys
def tensor(path, name):
    with open(path, "rb") as f:
        blob = f.read()
    n = struct.unpack("<Q", blob[:8])[0]
    h = json.loads(blob[8:8 + n])
    b, e = h[name]["data_offsets"]
    return h[name], blob[8 + n + b:8 + n + e]
def npy(path):
    d = open(path, "rb").read()
    assert d[:8] == b"\x93NUMPY\x01\x00"
    hl = int.from_bytes(d[8:10], "little")
    return ast.literal_eval(d[10:10 + hl].decode("latin1")), d[10 + hl:]
name, si = sys.argv[1:]
meta, raw = tensor("one-f32.safetensors", name)
h, data = npy("tensor.npy")
assert h["descr"] == "<f4" and list(h["shape"]) == meta["shape"] and data == raw, (h, meta)
index = json.load(open(si))
_, u64 = tensor("src/" + index["weight_map"]["extra.u64"], "extra.u64")
assert open("u64.raw", "rb").read() == u64
h, data = npy("u64.npy")
assert h["descr"] == "<u8" and list(h["shape"]) == [64, 64] and data == u64, h
print("decode --tensor OK")
PY
set +e
"$sgfp4" decode "$qi" --tensor mx.f4_weight -o f4.npy 2>err.txt; rc=$?
set -e
[ $rc -eq 2 ] && grep -q 'NumPy has no F4' err.txt && [ ! -e f4.npy ] ||
  { echo "FAIL: an F4 tensor to .npy: exit $rc: $(cat err.txt)"; exit 1; }
"$sgfp4" info "$qi" --tensor "$name" --map tensor.png >tensor-info.txt
grep -q '^leaves: ' tensor-info.txt && [ "$(head -c 4 tensor.png | od -An -tx1 | tr -d ' ')" = 89504e47 ] ||
  { echo "FAIL: info --tensor --map"; cat tensor-info.txt; exit 1; }
"$sgfp4" info "$qi" --tensor extra.u64 --json | grep -q '"quantized": false'

# total_size: a mismatch is an error, accepted with --ignore-total-size.
cp -r src bad
python3 - <<'PY'
import json
p = "bad/model.safetensors.index.json"
d = json.load(open(p))
d["metadata"]["total_size"] += 8
json.dump(d, open(p, "w"), indent=2)
PY
set +e
"$sgfp4" verify bad/model.safetensors.index.json 2>err.txt; rc=$?
set -e
[ $rc -eq 1 ] && grep -q 'MODEL_INDEX' err.txt || { echo "FAIL: total_size: $rc $(cat err.txt)"; exit 1; }
"$sgfp4" verify bad/model.safetensors.index.json --ignore-total-size -q
"$sgfp4" encode bad/model.safetensors.index.json -o bad.sgfp4.safetensors --ignore-total-size -q

# Inputs are recognised by content, not by name.
cp "$src" model.bin
"$sgfp4" verify model.bin -q
cp src/model.safetensors.index.json src/index.txt
"$sgfp4" verify src/index.txt -q
"$sgfp4" encode model.bin -o model.bin.sgfp4.safetensors.zst -q
cp model.bin.sgfp4.safetensors.zst model-zst.bin
"$sgfp4" verify model-zst.bin -q

if [ -n "$(find . -name '.*sgfp4-tmp-*')" ]; then
  echo "FAIL: temporary files left behind: $(find . -name '.*sgfp4-tmp-*')"; exit 1
fi
echo "set CLI OK: $src in $shards shards"
