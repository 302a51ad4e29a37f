#!/usr/bin/env python3
"""Independent checks of sgfp4's whole-model outputs, written from the safetensors format's
rules and DECISIONS D6 with the Python standard library only (no libsgfp4 code).

  st_check.py quantized SOURCE QUANTIZED   the encoder's output against its source
  st_check.py decoded SOURCE QUANTIZED DECODED [--dtype f32|f16|bf16]
                                           the decoder's output against both
  st_check.py set-quantized SOURCE_INDEX QUANTIZED_INDEX
  st_check.py set-decoded SOURCE_INDEX QUANTIZED_INDEX DECODED_INDEX [--dtype ...]
                                           the same shard by shard for sharded sets (shard k
                                           of the output holds the tensors of source shard
                                           k), and each output index against its shards
A SOURCE (or the DECODED of `decoded`) may be a set's index: its shards are read as one model.
Exits 0 when every check passes, 1 with a message otherwise.
"""
import array
import hashlib
import json
import math
import struct
import sys

# Bits per element of every dtype of the safetensors format (its Rust source's Dtype).
BITS = {"BOOL": 8, "U8": 8, "I8": 8, "F8_E4M3": 8, "F8_E5M2": 8, "F8_E8M0": 8,
        "F8_E4M3FNUZ": 8, "F8_E5M2FNUZ": 8, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6,
        "I16": 16, "U16": 16, "F16": 16, "BF16": 16, "I32": 32, "U32": 32, "F32": 32,
        "I64": 64, "U64": 64, "F64": 64, "C64": 64}
SIZES = {k: v // 8 for k, v in BITS.items() if v % 8 == 0}


def fail(msg):
    print("st_check: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        fail("duplicate JSON key")
    return dict(pairs)


def is_index(path):
    with open(path, "rb") as f:
        return f.read(64).lstrip().startswith(b"{")


def read_index(path):
    with open(path, "rb") as f:
        index = json.loads(f.read().decode("utf-8"), object_pairs_hook=no_duplicates)
    if not isinstance(index.get("weight_map"), dict) or not index["weight_map"]:
        fail(f"{path}: no weight_map")
    shards = sorted(set(index["weight_map"].values()))
    folder = path.rsplit("/", 1)[0] + "/" if "/" in path else ""
    return index, [(name, folder + name) for name in shards]


def read_set(path):
    """A set as one model: the shards' tensors, data sections joined, offsets rebased;
    checks the index against the shards on the way."""
    index, shards = read_index(path)
    header, meta, blob, order, data_bytes = {}, {}, b"", [], 0
    for name, shard_path in shards:
        h, m, start, b, o = read_safetensors(shard_path)
        for t in o:
            if t in header:
                fail(f"{path}: tensor {t} in two shards")
            if index["weight_map"].get(t) != name:
                fail(f"{path}: weight_map does not put {t} in {name}")
            e = dict(h[t])
            e["data_offsets"] = [x + len(blob) for x in e["data_offsets"]]
            header[t] = e
        meta.update({k: v for k, v in m.items() if k != "sgfp4"})
        blob += b[start:]
        data_bytes += len(b) - start
        order += o
    if set(header) != set(index["weight_map"]):
        fail(f"{path}: weight_map names tensors the shards do not hold")
    total = index.get("metadata", {}).get("total_size")
    if total is not None and total != data_bytes:
        fail(f"{path}: total_size {total} but the shards hold {data_bytes} data bytes")
    return header, meta, 0, blob, order


def read_safetensors(path):
    """Parses a safetensors file by the format's rules (or a set, read_set); returns
    (header, metadata, data_start, blob, names in data order)."""
    if is_index(path):
        return read_set(path)
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
        if t["dtype"] not in BITS:
            fail(f"{path}: {name}: dtype {t['dtype']}")
        count = 1
        for d in t["shape"]:
            if not isinstance(d, int) or d < 0:
                fail(f"{path}: {name}: bad shape")
            count *= d
        b, e = t["data_offsets"]
        if (count * BITS[t["dtype"]]) % 8 or e - b != count * BITS[t["dtype"]] // 8:
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


def fp8_value(code, mbits, bias):
    """An FP8 code's value from the format's definition (E4M3FN: mbits 3, bias 7; E5M2:
    mbits 2, bias 15); these files hold finite codes only."""
    sign = -1.0 if code & 0x80 else 1.0
    e, m = (code & 0x7F) >> mbits, code & ((1 << mbits) - 1)
    if e == 0:
        return sign * m * 2.0 ** (1 - bias - mbits)
    return sign * (1 + m / 2 ** mbits) * 2.0 ** (e - bias)


def to_floats(raw, dtype):
    if dtype == "F32":
        return array.array("f", raw)
    if dtype in ("F8_E4M3", "F8_E5M2"):
        mbits, bias = (3, 7) if dtype == "F8_E4M3" else (2, 15)
        return [fp8_value(c, mbits, bias) for c in raw]
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


def check_set_index(src_index, out_index, out_shards):
    """An output index: the source index's metadata but total_size, every tensor mapped to
    the output shard that holds it (read_set checks that and total_size)."""
    src, _ = read_index(src_index)
    out, _ = read_index(out_index)
    want = {k: v for k, v in src.get("metadata", {}).items() if k != "total_size"}
    got = {k: v for k, v in out.get("metadata", {}).items() if k != "total_size"}
    if want != got or "total_size" not in out.get("metadata", {}):
        fail(f"{out_index}: metadata {got} is not the source's {want} plus total_size")
    read_set(out_index)
    if len(out_shards) != len(read_index(src_index)[1]):
        fail(f"{out_index}: {len(out_shards)} shards, the source has another count")


def check_set(src_index, q_index, d_index, dtype):
    _, src_shards = read_index(src_index)
    _, q_shards = read_index(q_index)
    check_set_index(src_index, q_index, q_shards)
    if d_index:
        _, d_shards = read_index(d_index)
        check_set_index(src_index, d_index, d_shards)
    # Shard k of an output holds the tensors of source shard k: the names sort alike.
    for k, (_, src_path) in enumerate(src_shards):
        if d_index:
            check_decoded(src_path, q_shards[k][1], d_shards[k][1], dtype)
        else:
            check_quantized(src_path, q_shards[k][1])
    print(f"st_check: set OK: {len(src_shards)} shards")


def main():
    args = sys.argv[1:]
    dtype = None
    if len(args) >= 2 and args[-2] == "--dtype":
        dtype = {"f32": "F32", "f16": "F16", "bf16": "BF16"}[args[-1]]
        args = args[:-2]
    if len(args) == 3 and args[0] == "quantized":
        check_quantized(args[1], args[2])
    elif len(args) == 4 and args[0] == "decoded":
        check_decoded(args[1], args[2], args[3], dtype)
    elif len(args) == 3 and args[0] == "set-quantized":
        check_set(args[1], args[2], None, None)
    elif len(args) == 4 and args[0] == "set-decoded":
        check_set(args[1], args[2], args[3], dtype)
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
