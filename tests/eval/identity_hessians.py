#!/usr/bin/env python3
"""Writes an importance file (docs/encoder.md) in which every matrix of MODEL has the
identity as its input Hessian: a tensor NAME:hessian for wq, wo, w1, w2 and the embedding,
a metadata alias for wk and wv (to wq's) and w3 (to w1's). GPTQ with it feeds no error
forward, so it must reproduce round to nearest exactly.
usage: identity_hessians.py MODEL OUT"""
import json
import struct
import sys

with open(sys.argv[1], "rb") as f:
    b = f.read()
n = struct.unpack("<Q", b[:8])[0]
header = json.loads(b[8:8 + n])
header.pop("__metadata__", None)
shared = {".wk.": ".wq.", ".wv.": ".wq.", ".w3.": ".w1."}
meta, tensors, data = {"tokens": "1"}, {}, []
offset = 0
for name, t in sorted(header.items()):
    if len(t["shape"]) != 2:
        continue
    owner = [name.replace(k, v) for k, v in shared.items() if k in name]
    if owner:
        meta[name + ":hessian"] = owner[0] + ":hessian"
        continue
    i = t["shape"][1]
    tensors[name + ":hessian"] = {"dtype": "F32", "shape": [i, i],
                                  "data_offsets": [offset, offset + 4 * i * i]}
    data.append(struct.pack("<%df" % (i * i), *[float(r == c) for r in range(i)
                                                 for c in range(i)]))
    offset += 4 * i * i
tensors["__metadata__"] = meta
h = json.dumps(tensors).encode()
h += b" " * (-len(h) % 8)
with open(sys.argv[2], "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h + b"".join(data))
