#!/usr/bin/env python3
"""Splits a safetensors model into a Hugging Face style sharded set, for tests, with the
Python standard library only (no libsgfp4 code):

  make_set.py SOURCE.safetensors OUTDIR SHARDS [--fp8]

writes OUTDIR/model-0000K-of-0000N.safetensors (the tensors in file order, cut into SHARDS
contiguous groups of about equal bytes; each shard keeps the source's __metadata__ plus
"format": "pt") and OUTDIR/model.safetensors.index.json ({"metadata": {"total_size": ...,
"total_parameters": ...}, "weight_map": {...}}, keys sorted, as transformers writes it).

--fp8 also rounds two matrices to F8_E4M3 and F8_E5M2 (nearest even, saturating; written
here from the formats' definitions) and adds, to the last shard, tensors of every other
safetensors dtype with random bytes (F8_E8M0 block scales, F4, F6_E2M3, F6_E3M2, C64, U16,
U32, U64, BOOL, I8, the FNUZ FP8s, a rank-1 F8_E4M3 vector): what a real FP8 or MX
checkpoint carries beside its weights.
"""
import json
import math
import random
import struct
import sys

BITS = {"BOOL": 8, "U8": 8, "I8": 8, "F8_E4M3": 8, "F8_E5M2": 8, "F8_E8M0": 8,
        "F8_E4M3FNUZ": 8, "F8_E5M2FNUZ": 8, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6,
        "I16": 16, "U16": 16, "F16": 16, "BF16": 16, "I32": 32, "U32": 32, "F32": 32,
        "I64": 64, "U64": 64, "F64": 64, "C64": 64}

FP8_TO = {"layers.0.feed_forward.w1.weight": "F8_E4M3",
          "layers.1.feed_forward.w3.weight": "F8_E5M2",
          "decoder1/att.query.w": "F8_E4M3",
          "decoder1/att.key.w": "F8_E5M2"}


def read(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    meta = header.pop("__metadata__", {})
    tensors = []
    for name, t in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        b, e = t["data_offsets"]
        tensors.append((name, t["dtype"], t["shape"], blob[8 + n + b:8 + n + e]))
    return meta, tensors


def nbytes(dtype, shape):
    bits = math.prod(shape) * BITS[dtype]
    assert bits % 8 == 0
    return bits // 8


def write(path, meta, tensors):
    header, offset = {}, 0
    if meta:
        header["__metadata__"] = meta
    for name, dtype, shape, data in tensors:
        assert len(data) == nbytes(dtype, shape), name
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-(8 + len(text)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for t in tensors:
            f.write(t[3])
    return offset


def to_fp8(x, mbits, bias, largest):
    """Nearest-even rounding of a finite float to an FP8 format, saturating."""
    sign = 0x80 if math.copysign(1.0, x) < 0 else 0
    a = min(abs(x), largest)
    if a < 2.0 ** (1 - bias):          # subnormal: multiples of 2^(1 - bias - mbits)
        q = round(a / 2.0 ** (1 - bias - mbits))     # Python rounds half to even
        return sign | q
    e = math.floor(math.log2(a))
    while 2.0 ** e > a:
        e -= 1
    while 2.0 ** (e + 1) <= a:
        e += 1
    m = round((a / 2.0 ** e - 1) * 2 ** mbits)
    if m == 2 ** mbits:
        m, e = 0, e + 1
    code = (e + bias) << mbits | m
    limit = {3: 0x7E, 2: 0x7B}[mbits]
    return sign | min(code, limit)


def fp8_tensor(name, dtype, shape, data, target):
    values = struct.unpack(f"<{len(data) // 4}f", data)
    if target == "F8_E4M3":
        out = bytes(to_fp8(v, 3, 7, 448.0) for v in values)
    else:
        out = bytes(to_fp8(v, 2, 15, 57344.0) for v in values)
    return (name, target, shape, out)


def exotic_tensors(seed):
    rng = random.Random(seed)
    specs = [("mx.block_scales", "F8_E8M0", [4, 2]), ("mx.f4_weight", "F4", [64, 64]),
             ("mx.f6a_weight", "F6_E2M3", [64, 64]), ("mx.f6b_weight", "F6_E3M2", [32, 64]),
             ("extra.complex", "C64", [8, 8]), ("extra.u16", "U16", [64, 64]),
             ("extra.u32", "U32", [64, 64]), ("extra.u64", "U64", [64, 64]),
             ("extra.mask", "BOOL", [64, 64]), ("extra.i8", "I8", [64, 64]),
             ("extra.fnuz_a", "F8_E4M3FNUZ", [64, 64]), ("extra.fnuz_b", "F8_E5M2FNUZ", [64, 64]),
             ("extra.f8_vector", "F8_E4M3", [300]), ("extra.empty_f4", "F4", [0, 7])]
    out = []
    for name, dtype, shape in specs:
        data = bytes(rng.randrange(256) for _ in range(nbytes(dtype, shape)))
        if dtype == "BOOL":
            data = bytes(b & 1 for b in data)
        if dtype == "F8_E4M3":   # finite values only (no 0x7F / 0xFF NaN codes)
            data = bytes(b if b & 0x7F != 0x7F else b & 0xFE for b in data)
        out.append((name, dtype, shape, data))
    return out


def main():
    args = sys.argv[1:]
    fp8 = "--fp8" in args
    args = [a for a in args if a != "--fp8"]
    if len(args) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    src, out, count = args[0], args[1], int(args[2])
    meta, tensors = read(src)
    if fp8:
        tensors = [fp8_tensor(*t, FP8_TO[t[0]]) if t[0] in FP8_TO else t for t in tensors]
    total = sum(len(t[3]) for t in tensors)
    groups, current, done = [], [], 0
    for t in tensors:
        current.append(t)
        done += len(t[3])
        if done >= total * (len(groups) + 1) / count and len(groups) < count - 1:
            groups.append(current)
            current = []
    groups.append(current)
    if fp8:
        groups[-1] += exotic_tensors(1234)
    assert len(groups) == count and all(groups)
    weight_map, total_size, parameters = {}, 0, 0
    for k, group in enumerate(groups):
        name = f"model-{k + 1:05d}-of-{count:05d}.safetensors"
        total_size += write(f"{out}/{name}", dict(meta, format="pt"), group)
        for t in group:
            weight_map[t[0]] = name
            parameters += math.prod(t[2])
    index = {"metadata": {"total_parameters": parameters, "total_size": total_size},
             "weight_map": weight_map}
    with open(f"{out}/model.safetensors.index.json", "w") as f:
        f.write(json.dumps(index, indent=2, sort_keys=True) + "\n")
    print(f"make_set: {len(weight_map)} tensors in {count} shards, {total_size} bytes")


if __name__ == "__main__":
    main()
