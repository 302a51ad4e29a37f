# SPDX-License-Identifier: MIT
"""Ctrl-C during the binding's long calls (docs/python.md, "Interrupting"): SIGINT while the
library encodes raises KeyboardInterrupt within the tensor being encoded, leaves neither the
output nor a temporary file, and puts the program's SIGINT handler back; a handler the
program installed itself is left alone."""

import os
import signal
import threading

import numpy as np
import pytest

import sgfp4


def _model(path, rows=4096, cols=2048, count=2):
    rng = np.random.default_rng(5)
    sgfp4.write_safetensors(path, {
        f"layers.{k}.mlp.weight": (rng.standard_normal((rows, cols)) * 0.02).astype(np.float32)
        for k in range(count)})


def _sigint_after(seconds):
    timer = threading.Timer(seconds, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    return timer


def test_sigint_during_encode_model(tmp_path):
    src = tmp_path / "m.safetensors"
    _model(src)
    spool = tmp_path / "spool"
    spool.mkdir()
    out = tmp_path / "q.safetensors"
    seen, timers = [], []

    def progress(p):
        seen.append(p.tensors_done)
        if p.tensors_done == 0:  # the job starts: Ctrl-C 50 ms into the first tensor
            timers.append(_sigint_after(0.05))

    with pytest.raises(KeyboardInterrupt):
        sgfp4.encode_model(src, out, progress=progress, temp_dir=spool, threads=1)
    timers[0].join()
    # Stopped within the first tensor (8M weights: far longer than 50 ms to encode), not
    # after it, and not turned into a library error.
    assert seen == [0]
    assert not out.exists()
    assert sorted(os.listdir(tmp_path)) == ["m.safetensors", "spool"]
    assert os.listdir(spool) == []
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_sigint_during_encode():
    rng = np.random.default_rng(6)
    w = (rng.standard_normal((4096, 2048)) * 0.02).astype(np.float32)
    timer = _sigint_after(0.05)
    with pytest.raises(KeyboardInterrupt):
        sgfp4.encode(w, threads=2)
    timer.join()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert len(sgfp4.encode(w[:64, :64])) > 0  # the library is as it was


def test_a_program_handler_is_left_alone(tmp_path):
    src = tmp_path / "m.safetensors"
    _model(src, 128, 128, 1)
    calls = []

    def handler(signum, frame):
        calls.append(signum)

    def progress(p):
        if p.tensors_done == 0:
            os.kill(os.getpid(), signal.SIGINT)

    previous = signal.signal(signal.SIGINT, handler)
    try:
        sgfp4.encode_model(src, tmp_path / "q.safetensors", progress=progress)
        assert signal.getsignal(signal.SIGINT) is handler
    finally:
        signal.signal(signal.SIGINT, previous)
    assert calls == [signal.SIGINT]
    assert (tmp_path / "q.safetensors").exists()
