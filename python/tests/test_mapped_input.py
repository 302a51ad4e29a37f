# SPDX-License-Identifier: MIT
"""Files that change after they were opened, as when another program rewrites or truncates
them (`cp new old` truncates first): a mapped view keeps every place it reads at (the
library copied them at open), so rewritten offsets move no read and the decode stays the
same; copy=True reads the file into memory, so a truncated file changes nothing."""

import os
import struct

import numpy as np

import sgfp4


def _weights(rows, cols, seed):
    return np.random.default_rng(seed).standard_normal((rows, cols)).astype(np.float32)


def _rewrite_u32(path, offsets, value):
    with open(path, "r+b") as f:
        for at in offsets:
            f.seek(at)
            f.write(struct.pack("<I", value))


def test_rewritten_offsets_of_a_mapped_file_move_no_read(tmp_path):
    for profile in ("v1", "v2"):
        w = _weights(130, 200, 3)
        path = tmp_path / f"w.{profile}"
        path.write_bytes(sgfp4.encode(w, profile=profile))
        with sgfp4.open(str(path), w.shape, profile) as t:
            before = t.decode()
            blocks = t.info.blocks
            # v1: the payload offsets after the headers; v2: the record offsets after the
            # 16-byte stream header; each now points 4 GiB away
            first = 4 * blocks if profile == "v1" else 16
            _rewrite_u32(path, [first + 4 * b for b in range(blocks)], 0xFFFFFFF0)
            assert t.decode().tobytes() == before.tobytes()
            assert t.gather([129, 0, 64]).tobytes() == before[[129, 0, 64]].tobytes()


def test_copy_reads_a_container_file_once(tmp_path):
    w = _weights(150, 260, 5)
    path = tmp_path / "w.sgfp4"
    path.write_bytes(sgfp4.encode(w))
    with sgfp4.open(str(path), w.shape) as mapped:
        want = mapped.decode()
    t = sgfp4.open(str(path), w.shape, copy=True)
    os.truncate(path, 0)        # a view on the mapping would take SIGBUS now
    assert t.decode().tobytes() == want.tobytes()
    t.close()


def test_copy_reads_a_model_file_once(tmp_path):
    plain = tmp_path / "plain.safetensors"
    sgfp4.write_safetensors(plain, {"a.weight": _weights(128, 192, 1),
                                    "b.weight": _weights(96, 320, 2),
                                    "norm": np.ones(64, np.float32)})
    quantized = tmp_path / "q.sgfp4.safetensors"
    sgfp4.encode_model(plain, quantized)
    with sgfp4.open_model(quantized) as m:
        want = {name: a.tobytes() for name, a in m.decoded(verify=True, evict=False)}
    m = sgfp4.open_model(quantized, copy=True)
    tensor = m["a.weight"].open()
    own = m["b.weight"].open(copy=True)
    os.truncate(quantized, 0)
    assert tensor.decode().tobytes() == want["a.weight"]
    assert own.decode().tobytes() == want["b.weight"]
    got = {name: a.tobytes() for name, a in m.decoded(verify=True, evict=True)}
    assert got == want
    tensor.close()
    own.close()
    m.close()
