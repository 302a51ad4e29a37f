#!/usr/bin/env bash
# Tensors of every kind the default policy passes through (F16 rank 3, BF16 rank 1, a scalar,
# an I64 vector, an empty tensor), forced by policy rules where the format allows: rank != 2
# is quantized as [prod(leading dims), last dim] with the original shape restored on decode;
# integers and empty tensors pass through even when a rule says quantize.
# usage: odd_tensors.sh SGFP4 WORKDIR
set -euo pipefail
sgfp4=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work" && cd "$work"
python3 - <<'PY'
import json, random, struct
random.seed(1)
tensors = {"conv.weight": ("F16", [4, 64, 96]), "vec": ("BF16", [3000]), "ids": ("I64", [10]),
           "scalar": ("F32", []), "empty": ("F32", [0, 5]), "norm.weight": ("F32", [64, 64])}
hdr = {"__metadata__": {"source": "odd_tensors.sh"}}
data = b""
for name, (dt, shape) in tensors.items():
    n = 1
    for d in shape:
        n *= d
    if dt == "F16":
        raw = struct.pack(f"<{n}e", *[random.gauss(0, 0.02) for _ in range(n)])
    elif dt == "BF16":
        raw = b"".join(struct.pack("<f", random.gauss(0, 1))[2:] for _ in range(n))
    elif dt == "I64":
        raw = struct.pack(f"<{n}q", *range(n))
    else:
        raw = struct.pack(f"<{n}f", *[1.0 + random.random() for _ in range(n)])
    hdr[name] = {"dtype": dt, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
    data += raw
h = json.dumps(hdr).encode()
open("odd.safetensors", "wb").write(struct.pack("<Q", len(h)) + h + data)
json.dump({"rules": [{"match": "conv.*", "action": "quantize", "profile": "v1"},
                     {"match": ["vec", "scalar", "ids", "empty"], "action": "quantize"}]},
          open("odd.json", "w"))
PY
"$sgfp4" encode odd.safetensors -o odd.sgfp4.safetensors --policy odd.json -q
"$sgfp4" verify odd.sgfp4.safetensors
"$sgfp4" decode odd.sgfp4.safetensors -o odd.decoded.safetensors -q
python3 "$here/st_check.py" decoded odd.safetensors odd.sgfp4.safetensors odd.decoded.safetensors
python3 - <<'PY'
import json, struct
b = open("odd.sgfp4.safetensors", "rb").read()
n = struct.unpack("<Q", b[:8])[0]
m = json.loads(json.loads(b[8:8 + n])["__metadata__"]["sgfp4"])["tensors"]
want = {"conv.weight": ("v1", [256, 96], [4, 64, 96], "F16"), "vec": ("v2", [1, 3000], [3000], "BF16"),
        "scalar": ("v2", [1, 1], [], "F32")}
got = {k: (v["profile"], v["shape"], v["original_shape"], v["dtype"]) for k, v in m.items()}
assert got == want, got   # ids (I64), empty and norm.weight (a norm) pass through
print("odd tensors OK")
PY
