#!/usr/bin/env python3
"""Independent checks of sgfp4's whole-model outputs, written from the safetensors format's
rules and DECISIONS D6 with the Python standard library only (no libsgfp4 code).

  st_check.py quantized SOURCE QUANTIZED   the encoder's output against its source
  st_check.py decoded SOURCE QUANTIZED DECODED [--dtype f32|f16|bf16]
                                           the decoder's output against both
Exits 0 when every check passes, 1 with a message otherwise.
"""
import array
import hashlib
import json
import math
import struct
import sys

SIZES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1, "I16": 2, "U16": 2,
         "F16": 2, "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8}


def fail(msg):
    print("st_check: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        fail("duplicate JSON key")
    return dict(pairs)


def read_safetensors(path):
    """Parses a safetensors file by the format's rules; returns (header, data_start, blob)."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        fail(f"{path}: shorter than 8 bytes")
    (n,) = struct.unpack("<Q", blob[:8])
    if 8 + n > len(blob):
        fail(f"{path}: header length past the end")
    text = blob[8:8 + n]
    if not text.startswith(b"{"):
        fail(f"{path}: header does not start with '{{'")
    header = json.loads(text.decode("utf-8"), object_pairs_hook=no_duplicates)
    meta = header.pop("__metadata__", {})
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in meta.items()):
        fail(f"{path}: __metadata__ is not str -> str")
    spans = []
    for name, t in header.items():
        if set(t) != {"dtype", "shape", "data_offsets"}:
            fail(f"{path}: {name}: keys {sorted(t)}")
        if t["dtype"] not in SIZES:
            fail(f"{path}: {name}: dtype {t['dtype']}")
        count = 1
        for d in t["shape"]:
            if not isinstance(d, int) or d < 0:
                fail(f"{path}: {name}: bad shape")
            count *= d
        b, e = t["data_offsets"]
        if e - b != count * SIZES[t["dtype"]]:
            fail(f"{path}: {name}: size {e - b} != shape x dtype")
        spans.append((b, e, name))
    spans.sort()
    pos = 0
    for b, e, name in spans:
        if b != pos:
            fail(f"{path}: {name}: begins at {b}, expected {pos} (hole or overlap)")
        pos = e
    if 8 + n + pos != len(blob):
        fail(f"{path}: file is {len(blob)} bytes, tensors end at {8 + n + pos}")
    return header, meta, 8 + n, blob, [s[2] for s in spans]


def tensor_bytes(st, name):
    header, _, start, blob, _ = st
    b, e = header[name]["data_offsets"]
    return blob[start + b:start + e]


def to_floats(raw, dtype):
    if dtype == "F32":
        return array.array("f", raw)
    halves = array.array("H", raw)
    if dtype == "BF16":
        return array.array("f", struct.pack(f"<{len(halves)}I", *[h << 16 for h in halves]))
    return array.array("f", struct.unpack(f"<{len(halves)}e", raw))


def check_quantized(src_path, q_path):
    src = read_safetensors(src_path)
    q = read_safetensors(q_path)
    header, meta, start, blob, order = q
    if start % 64:
        fail(f"data section starts at {start}, not a multiple of 64")
    if "sgfp4" not in meta:
        fail("no sgfp4 manifest")
    manifest = json.loads(meta["sgfp4"], object_pairs_hook=no_duplicates)
    if manifest.get("format") != "sgfp4-manifest" or manifest.get("version") != 1:
        fail("manifest format/version")
    for k, v in src[1].items():
        if meta.get(k) != v:
            fail(f"source metadata key {k} not kept")
    entries = manifest["tensors"]
    if set(header) != set(src[0]):
        fail("tensor names differ from the source")
    groups = []
    for name in order:
        t = header[name]
        if name in entries:
            e = entries[name]
            s = src[0][name]
            if t["dtype"] != "U8" or len(t["shape"]) != 1:
                fail(f"{name}: quantized tensor not stored as U8 [n]")
            raw = tensor_bytes(q, name)
            if hashlib.sha256(raw).hexdigest() != e["sha256"]:
                fail(f"{name}: sha256 does not match the manifest")
            if e["original_shape"] != s["shape"] or e["dtype"] != s["dtype"]:
                fail(f"{name}: original shape/dtype not recorded")
            rows = math.prod(s["shape"][:-1]) if s["shape"] else 1
            if e["shape"] != [rows, s["shape"][-1] if s["shape"] else 1]:
                fail(f"{name}: shape {e['shape']} is not [prod(leading), last]")
            blocks = -(-e["shape"][0] // 64) * -(-e["shape"][1] // 64)
            if e["profile"] == "v2":
                if raw[:4] != b"SGF4" or (start + t["data_offsets"][0]) % 16:
                    fail(f"{name}: v2 container without magic or not 16-byte aligned")
                groups.append(0)
            elif e["profile"] == "v1":
                if len(raw) != blocks * 2056:
                    fail(f"{name}: v1 container is not B * 2056 bytes")
                groups.append(1)
            else:
                fail(f"{name}: profile {e['profile']}")
        else:
            if tensor_bytes(q, name) != tensor_bytes(src, name) or header[name]["dtype"] != src[0][name]["dtype"] \
                    or header[name]["shape"] != src[0][name]["shape"]:
                fail(f"{name}: pass-through tensor changed")
            groups.append(2)
    if groups != sorted(groups):
        fail("tensors are not ordered v2, then v1, then pass-through (D6)")
    if not entries:
        fail("nothing was quantized")
    print(f"st_check: quantized OK: {len(header)} tensors, {len(entries)} quantized "
          f"(v2 {groups.count(0)}, v1 {groups.count(1)}), data at {start}")
    return src, q, entries


def check_decoded(src_path, q_path, d_path, dtype):
    src, q, entries = check_quantized(src_path, q_path)
    d = read_safetensors(d_path)
    if set(d[0]) != set(src[0]):
        fail("decoded names differ from the source")
    if "sgfp4" in d[1]:
        fail("decoded file still has a manifest")
    worst = 0.0
    for name, s in src[0].items():
        t = d[0][name]
        if t["shape"] != s["shape"]:
            fail(f"{name}: decoded shape {t['shape']} != {s['shape']}")
        if name not in entries:
            if t["dtype"] != s["dtype"] or tensor_bytes(d, name) != tensor_bytes(src, name):
                fail(f"{name}: pass-through tensor changed by decode")
            continue
        want = dtype or s["dtype"]
        if t["dtype"] != want:
            fail(f"{name}: decoded dtype {t['dtype']}, expected {want}")
        a = to_floats(tensor_bytes(src, name)[:65536 * SIZES[s["dtype"]]], s["dtype"])
        b = to_floats(tensor_bytes(d, name)[:65536 * SIZES[want]], want)
        sig = sum(x * x for x in a)
        err = sum((x - y) ** 2 for x, y in zip(a, b))
        rel = math.sqrt(err / sig) if sig else 0.0
        worst = max(worst, rel)
        # Tensors smaller than one 64x64 macroblock are mostly padding: a looser sanity bound.
        if not rel < (0.9 if len(a) >= 4096 else 1.5):
            fail(f"{name}: decoded tensor is far from the source (rel-L2 {rel:.3f})")
    print(f"st_check: decoded OK: {len(d[0])} tensors, worst rel-L2 (first 64K weights) {worst:.4f}")


def main():
    args = sys.argv[1:]
    if len(args) == 3 and args[0] == "quantized":
        check_quantized(args[1], args[2])
    elif len(args) in (4, 6) and args[0] == "decoded":
        dtype = None
        if len(args) == 6 and args[4] == "--dtype":
            dtype = {"f32": "F32", "f16": "F16", "bf16": "BF16"}[args[5]]
        check_decoded(args[1], args[2], args[3], dtype)
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
