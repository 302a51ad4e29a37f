# SPDX-License-Identifier: MIT
"""Every golden vector (golden/manifest.json) through Python: decoded vectors equal
`sgfp4 decode` byte for byte in each dtype and the manifest's independent sha256; rejected
vectors raise the exception class of their status with the CLI's diagnostic."""

import hashlib
import json

import numpy as np
import pytest

import sgfp4
from conftest import SOURCE_DIR

with open(SOURCE_DIR / "golden" / "manifest.json") as _f:
    _VECTORS = json.load(_f)["vectors"]
DECODE = [v for v in _VECTORS if v["expect"] == "decode"]
REJECT = [v for v in _VECTORS if v["expect"] == "reject"]


def test_the_manifest_has_both_kinds():
    assert len(DECODE) >= 40 and len(REJECT) >= 40


@pytest.mark.parametrize("vector", DECODE, ids=[v["name"] for v in DECODE])
def test_decode_matches_the_cli_and_the_manifest(vector, golden, cli, tmp_path):
    folder, _ = golden
    path = folder / vector["file"]
    rows, cols = vector["shape"]
    shape = f"{rows}x{cols}"
    with sgfp4.open(path, (rows, cols), vector["profile"]) as t:
        f32 = t.decode()
        assert f32.dtype == np.float32 and f32.shape == (rows, cols)
        # the manifest's hash comes from the generator, not from the decoder
        assert hashlib.sha256(f32.tobytes()).hexdigest() == vector["sha256"]
        for dtype in ("f32", "f16", "bf16"):
            out = tmp_path / f"out.{dtype}"
            cli("decode", path, "-o", out, "--shape", shape, "--profile", vector["profile"],
                "--dtype", dtype, "--threads", "1")
            ours = t.decode(dtype)
            assert ours.tobytes() == out.read_bytes(), dtype
            assert np.array_equal(t.decode(dtype, backend="scalar").view(np.uint8),
                                  ours.view(np.uint8))
        # the same bytes given as bytes (zero-copy) and as a bytearray (copied)
        data = path.read_bytes()
        with sgfp4.open(data, (rows, cols), vector["profile"]) as t2:
            assert t2.decode().tobytes() == f32.tobytes()
        with sgfp4.open(bytearray(data), (rows, cols), vector["profile"]) as t3:
            assert t3.decode().tobytes() == f32.tobytes()


@pytest.mark.parametrize("vector", REJECT, ids=[v["name"] for v in REJECT])
def test_reject_raises_the_status_class_with_the_cli_message(vector, golden, cli):
    folder, _ = golden
    path = folder / vector["file"]
    rows, cols = vector["shape"]
    with pytest.raises(sgfp4.Error) as info:
        sgfp4.open(path, (rows, cols), vector["profile"])
    e = info.value
    assert e.status_name == vector["status"]
    assert type(e) is sgfp4.errors.CLASSES[e.status]
    assert type(e).__name__ != "Error"
    p = cli("decode", path, "-o", "/dev/null", "--shape", f"{rows}x{cols}",
            "--profile", vector["profile"], check=False)
    stderr = p.stderr.decode()
    if p.returncode == 2:  # the tool refuses a zero shape as a usage error, before opening
        assert vector["status"] == "SHAPE" and 0 in (rows, cols), stderr
    else:
        assert p.returncode == 1
        assert f"{e.message} [{vector['status']}]" in stderr, (stderr, str(e))
    assert str(e) == f"{e.message} [{vector['status']}]"
    if e.offset is not None:
        assert f"byte {e.offset}" in e.message or str(e.offset) in e.message
