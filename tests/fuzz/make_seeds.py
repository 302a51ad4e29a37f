#!/usr/bin/env python3
"""Writes the generated seed inputs of the decode fuzz targets (tests/fuzz/corpus/).

Written from the format description (spec chapter 22, DECISIONS D2-D5), independently of
the library, so that the seeds are valid containers a fuzzer can mutate from. Each input is
the 4-byte fuzz prefix of tests/fuzz/fuzz_common.h followed by the container.
Deterministic: re-running it rewrites the same files.
"""
import hashlib
import json
import os
import random
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
rng = random.Random(20261129)


def half_bits(value):
    return struct.unpack("<H", struct.pack("<e", value))[0]


def payload(size, mode):
    n = size * size // (4 if mode else 2)
    return bytes(rng.randrange(256) for _ in range(n))


def v1_container(blocks, modes, shared=False):
    headers, offsets, blob = b"", b"", b""
    for b in range(blocks):
        mode = modes[b % len(modes)]
        header = half_bits(rng.choice([0.5, 0.0078125, 2.0**-24, 1.0])) << 16 | half_bits(
            rng.choice([0.0, -0.25, 0.125]))
        headers += struct.pack("<I", header)
        offset = 0 if shared else b * 2048
        hint = 2 if b % 3 == 2 else 0
        offsets += struct.pack("<I", offset | mode | hint)
        body = payload(64, 1) + bytes(1024) if mode else payload(64, 0)
        blob += body
    return headers + offsets + blob


def split_tree(depth_bias):
    """A random quadtree: returns (bits, leaves) with leaves (y, x, size) in DFS order."""
    bits, leaves = [], []

    def node(y, x, size):
        if size >= 8:
            split = rng.random() < depth_bias
            bits.append(1 if split else 0)
            if not split:
                leaves.append((y, x, size))
                return
        elif size == 4:
            leaves.append((y, x, size))
            return
        h = size // 2
        for dy, dx in ((0, 0), (0, h), (h, 0), (h, h)):
            node(y + dy, x + dx, h)

    node(0, 0, 64)
    return bits, leaves


def v2_record(layout, depth_bias=0.5, mode_pick=None):
    if layout == 4:
        bits, leaves = split_tree(depth_bias)
        words = [0, 0, 0]
        for k, bit in enumerate(bits):
            words[k // 32] |= bit << (k % 32)
        head = struct.pack("<IIII", 4, *words)
    else:
        size = {0: 64, 1: 32, 2: 16, 3: 8, 5: 4}[layout]
        leaves = [(y, x, size) for y in range(0, 64, size) for x in range(0, 64, size)]
        head = struct.pack("<I", layout)
    headers, payloads = b"", b""
    for i, (_, _, size) in enumerate(leaves):
        mode = mode_pick(i) if mode_pick else rng.randrange(2)
        scale = half_bits(rng.choice([0.25, 1.0, 2.0**-20, 0.0]))
        bias = half_bits(rng.choice([0.0, -0.5, 0.0625])) & 0xFFF0
        headers += struct.pack("<I", scale << 16 | bias | mode)
        p = payload(size, mode)
        payloads += p + bytes(-len(p) % 16)
    record = head + headers
    record += bytes(-len(record) % 16)
    return record + payloads


def v2_container(records):
    blocks = len(records)
    out = b"SGF4" + bytes([2]) + struct.pack("<I", blocks) + bytes(7)
    base = 16 + 4 * blocks
    base += -base % 16
    offsets, body = [], b""
    for r in records:
        offsets.append(len(body))
        body += r
    table = b"".join(struct.pack("<I", o) for o in offsets)
    out += table + bytes(base - 16 - len(table))
    return out + body


def write(target, name, prefix, container):
    folder = os.path.join(HERE, "corpus", target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(bytes(prefix) + container)


def divisors(blocks):
    """The divisors in the order fuzz_carve_shape() lists them."""
    out, d = [], 1
    while d * d <= blocks and len(out) < 254:
        if blocks % d == 0:
            out.append(d)
            if d != blocks // d:
                out.append(blocks // d)
        d += 1
    return out


def golden_seeds(max_bytes=8192):
    """The small golden vectors (must-decode and must-reject), each with the prefix that
    carves its shape (when the target can: the block count read from the container must
    give the vector's tiles)."""
    root = os.path.join(HERE, "..", "..", "golden")
    with open(os.path.join(root, "manifest.json")) as f:
        manifest = json.load(f)
    for v in manifest["vectors"]:
        path = os.path.join(root, v["file"])
        if os.path.getsize(path) > max_bytes:
            continue
        with open(path, "rb") as f:
            container = f.read()
        rows, cols = v["shape"]
        ty, tx = max(1, -(-rows // 64)), max(1, -(-cols // 64))
        divs = divisors(ty * tx)
        pick = divs.index(ty) if ty in divs else 0
        flags = 0x04 if v["expect"] == "decode" else 0
        prefix = [pick, (64 * ty - rows) % 64, (64 * tx - cols) % 64, flags]
        target = "v1_decode" if v["profile"] == "v1" else "v2_decode"
        write(target, "golden-" + v["name"], prefix, container)


def safetensors(tensors, metadata=None):
    """A safetensors file: tensors is a list of (name, dtype, shape, bytes) in data order;
    the header is padded with spaces so the data starts on a 64-byte boundary (D6)."""
    header, offset = {}, 0
    if metadata:
        header["__metadata__"] = metadata
    for name, dtype, shape, data in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-(8 + len(text)) % 64)
    return struct.pack("<Q", len(text)) + text + b"".join(t[3] for t in tensors)


def quantized_model(containers, passthrough):
    """A D6 quantized model: containers is a list of (name, profile, rows, cols, bytes),
    v2 ones first, then v1, then the pass-through tensors."""
    entries = {}
    for name, profile, rows, cols, data in containers:
        entries[name] = {"profile": profile, "shape": [rows, cols], "original_shape": [rows, cols],
                         "dtype": "F32", "sha256": hashlib.sha256(data).hexdigest(),
                         "encoder": {"policy": "rate"}}
    manifest = {"format": "sgfp4-manifest", "version": 1, "tensors": entries}
    tensors = [(n, "U8", [len(d)], d) for n, _, _, _, d in containers] + passthrough
    return safetensors(tensors, {"sgfp4": json.dumps(manifest), "source": "fuzz seed"})


def model_seeds():
    f32 = lambda n: b"".join(struct.pack("<f", rng.uniform(-1, 1)) for _ in range(n))
    plain = safetensors([("w", "F32", [4, 4], f32(16)), ("h", "F16", [8], bytes(16)),
                         ("b", "BF16", [2, 3], bytes(12)), ("i", "I32", [3], bytes(12)),
                         ("u", "U8", [5], bytes(5)), ("s", "F32", [], f32(1))],
                        {"format": "pt"})
    write("model", "gen-plain", [0], plain)
    write("model", "gen-plain-small-header-limit", [1], plain)
    write("model", "gen-empty", [0], safetensors([]))
    v2 = v2_container([v2_record(1)])
    v1 = v1_container(1, [1])
    write("model", "gen-quantized-v2-v1", [0], quantized_model(
        [("layers.0.q.weight", "v2", 64, 64, v2), ("layers.0.k.weight", "v1", 60, 33, v1)],
        [("layers.0.norm.weight", "F32", [8], f32(8))]))
    write("model", "gen-quantized-bad-hash", [0], quantized_model(
        [("x.weight", "v2", 64, 64, v2)], [])[:-1] + b"\x01")
    write("model", "policy-full", [0xF0], json.dumps(
        {"version": 1, "defaults": {"bpw": 3.5}, "embeddings": "skip", "min_elements": 4096,
         "rules": [{"match": "*.mlp.*", "profile": "v1"},
                   {"match": ["*.k_proj.*", "*.v_proj.*"], "bpw": 6, "policy": "rate"},
                   {"match": "experts", "action": "quantize", "fit": "reference", "delta": 0.2},
                   {"match": "*norm*", "action": "skip"}]}).encode())
    write("model", "policy-threshold", [0xF1], b'{"defaults":{"policy":"threshold","threshold":2}}')


def main():
    golden_seeds()
    # v1: one block of each mode, cropped shapes, several blocks, shared payloads
    write("v1_decode", "gen-1block-fp4", [0, 0, 0, 0], v1_container(1, [0]))
    write("v1_decode", "gen-1block-t158-crop", [0, 5, 60, 1], v1_container(1, [1]))
    write("v1_decode", "gen-2x3-mixed-modes", [1, 17, 3, 0x06], v1_container(6, [0, 1]))
    write("v1_decode", "gen-4-shared-payload", [2, 0, 9, 0x0a], v1_container(4, [0], True))
    write("v1_decode", "gen-2-hint-f16", [0, 63, 63, 0x01], v1_container(2, [1, 0]))
    # v2: every layout, mixed trees, several records, a cropped shape
    for layout in (0, 1, 2, 3, 5):
        write("v2_decode", f"gen-layout{layout}", [0, 0, 0, layout & 3],
              v2_container([v2_record(layout)]))
    write("v2_decode", "gen-mixed-shallow", [0, 7, 1, 0], v2_container([v2_record(4, 0.4)]))
    write("v2_decode", "gen-mixed-deep", [0, 0, 33, 0x05], v2_container([v2_record(4, 0.8)]))
    write("v2_decode", "gen-3records-crop", [1, 20, 40, 0x0e],
          v2_container([v2_record(0), v2_record(4, 0.5), v2_record(1)]))
    write("v2_decode", "gen-2records-t158", [0, 0, 0, 0x02],
          v2_container([v2_record(2, mode_pick=lambda i: 1), v2_record(3, mode_pick=lambda i: 1)]))
    write("v2_decode", "gen-v1-through-auto", [0, 0, 0, 0], v1_container(1, [0]))
    model_seeds()
    return 0


if __name__ == "__main__":
    sys.exit(main())
