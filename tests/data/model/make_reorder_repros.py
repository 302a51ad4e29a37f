#!/usr/bin/env python3
"""Writes the three-tensor safetensors files whose JSON key order differs from their data
order (the reader once pointed each tensor's shape at the entry that moved into its place
when it sorted the entries by offset):

  reorder3-policy-divide.safetensors  'b.weight' [64, 64] is listed first but stored second,
      after the empty 'a.empty' [64, 0]: b.weight took a.empty's shape and the default policy
      divided by its last dimension, 0 (SIGFPE in `sgfp4 info` / `encode`).
  reorder3-writer-short.safetensors   three pass-through tensors listed in reverse data order
      with different sizes: the writer laid the output out from the wrong shapes and
      stopped short ("safetensors writer: ... data bytes written").

Values are deterministic (a fixed-seed generator); run from this folder to rewrite them.
"""
import json
import random
import struct


def write(path, tensors, data_order):
    """tensors: list of (name, dtype, shape) in JSON order; data_order: names in data order."""
    size = {"F32": 4, "F16": 2, "U8": 1}
    by_name = {t[0]: t for t in tensors}
    offsets, at = {}, 0
    for name in data_order:
        _, dtype, shape = by_name[name]
        n = size[dtype]
        for d in shape:
            n *= d
        offsets[name] = (at, at + n)
        at += n
    header = {name: {"dtype": dtype, "shape": shape, "data_offsets": list(offsets[name])}
              for name, dtype, shape in tensors}
    text = json.dumps(header).encode()
    rng = random.Random(path)
    data = bytearray()
    for name in data_order:
        begin, end = offsets[name]
        _, dtype, _ = by_name[name]
        if dtype == "F32":
            for _ in range((end - begin) // 4):
                data += struct.pack("<f", rng.uniform(-1, 1))
        else:
            data += bytes(rng.randrange(256) for _ in range(end - begin))
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + bytes(data))


write("reorder3-policy-divide.safetensors",
      [("b.weight", "F32", [64, 64]), ("a.empty", "F32", [64, 0]), ("c.bias", "F32", [64])],
      ["a.empty", "b.weight", "c.bias"])
write("reorder3-writer-short.safetensors",
      [("c.norm", "F32", [16]), ("b.norm", "F16", [4096]), ("a.ids", "U8", [37])],
      ["a.ids", "b.norm", "c.norm"])
