# SPDX-License-Identifier: MIT
"""The output rules of every writer (docs/python.md, "Outputs"; the library's
sgfp4_model_output, which the `sgfp4` tool runs too) from Python: encode_model, decode_model
and write_safetensors never replace an input, replace an existing file only with force=True,
write FIFOs and /dev/fd/N descriptors in place, write through symbolic links, give a set for
a name ending in .index.json, and refuse a folder before any work, leaving nothing behind.

No test here writes to a real device: a FIFO and a pipe's descriptor stand for them."""

import json
import os
import stat
import threading
import time

import numpy as np
import pytest

import sgfp4


def _leftovers(folder):
    return sorted(p for _, _, files in os.walk(folder) for p in files if ".sgfp4-tmp-" in p)


def _tensors():
    rng = np.random.default_rng(7)
    return {"layers.0.mlp.up.weight": rng.standard_normal((128, 256)).astype(np.float32),
            "layers.0.norm.weight": np.ones(256, np.float32)}


@pytest.fixture
def model(tmp_path):
    """A small plain model and its quantized form, in tmp_path/src."""
    src = tmp_path / "src"
    src.mkdir()
    m = src / "m.safetensors"
    sgfp4.write_safetensors(m, _tensors())
    q = src / "m.sgfp4.safetensors"
    sgfp4.encode_model(m, q)
    return m, q


class Reader:
    """Reads everything written into a FIFO or a pipe on a thread, so that the writer never
    blocks. Never hangs: a FIFO is opened without blocking, and reading stops a few seconds
    after done() if no writer ever came (as when a FIFO is replaced instead of written)."""

    def __init__(self, fd):
        self.fd, self.data, self._done = fd, bytearray(), threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        seen_writer, quiet_since = False, None
        while True:
            try:
                chunk = os.read(self.fd, 1 << 16)
            except BlockingIOError:                 # a writer, no data yet
                seen_writer, chunk = True, None
            if chunk:
                seen_writer = True
                self.data += chunk
                continue
            if chunk == b"" and seen_writer:        # the writer closed
                return
            if self._done.is_set():
                quiet_since = quiet_since or time.monotonic()
                if time.monotonic() - quiet_since > 3:
                    return
            time.sleep(0.005)

    def done(self):
        self._done.set()
        self.thread.join(30)
        os.close(self.fd)
        return bytes(self.data)


def test_an_existing_file_is_replaced_only_with_force(model, tmp_path):
    m, q = model
    out = tmp_path / "out.safetensors"
    out.write_bytes(b"keep")
    os.chmod(out, 0o640)
    for job in (lambda **f: sgfp4.write_safetensors(out, _tensors(), **f),
                lambda **f: sgfp4.encode_model(m, out, **f),
                lambda **f: sgfp4.decode_model(q, out, **f)):
        with pytest.raises(sgfp4.OutputRefusedError,
                           match="already exists: not replaced \\(force=True replaces it\\)"):
            job()
        assert out.read_bytes() == b"keep"
    sgfp4.write_safetensors(out, _tensors(), force=True)
    with sgfp4.open_model(out) as back:
        assert sorted(back.names()) == sorted(_tensors())
    assert stat.S_IMODE(out.stat().st_mode) == 0o640      # a replaced file keeps its mode
    sgfp4.decode_model(q, out, force=True)
    assert _leftovers(tmp_path) == []


def test_an_input_is_never_the_output(model, tmp_path):
    m, q = model
    before = m.read_bytes(), q.read_bytes()
    link = tmp_path / "link.safetensors"
    link.symlink_to(m)
    refusals = [lambda: sgfp4.encode_model(m, m, force=True),
                lambda: sgfp4.encode_model(m, link, force=True),
                lambda: sgfp4.encode_model(link, "./" + os.path.relpath(m), force=True),
                lambda: sgfp4.decode_model(q, q, force=True),
                # the importance file is an input too
                lambda: sgfp4.encode_model(m, q, importance=q, force=True)]
    with sgfp4.open_model(m) as opened:                    # a Model object as the source
        refusals.append(lambda: sgfp4.encode_model(opened, m, force=True))
        for job in refusals:
            with pytest.raises(sgfp4.OutputRefusedError, match="same file as the input"):
                job()
    assert (m.read_bytes(), q.read_bytes()) == before
    assert _leftovers(tmp_path) == []


def test_folders_are_refused_before_any_work(model, tmp_path):
    m, q = model
    (tmp_path / "folder").mkdir()
    for out, why in [(tmp_path, "is a directory"), (tmp_path / "folder", "is a directory"),
                     (str(tmp_path / "folder") + "/", "is a directory"),
                     (tmp_path / "missing" / "x.safetensors", "no such folder"),
                     (tmp_path / "missing" / "x.safetensors.index.json", "no such folder")]:
        seen = []
        with pytest.raises(sgfp4.OutputRefusedError, match=why):
            sgfp4.encode_model(m, out, progress=seen.append)
        assert seen == [], "the job started before the output was checked"
        with pytest.raises(sgfp4.OutputRefusedError, match=why):
            sgfp4.decode_model(q, out, progress=seen.append)
        assert seen == []
        with pytest.raises(sgfp4.OutputRefusedError, match=why):
            sgfp4.write_safetensors(out, _tensors())
    assert not (tmp_path / "missing").exists() and _leftovers(tmp_path) == []
    assert issubclass(sgfp4.OutputRefusedError, OSError)


def test_fifos_and_descriptors_are_written_in_place(model, tmp_path):
    m, q = model
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for job in (lambda out: sgfp4.decode_model(q, out),
                lambda out: sgfp4.write_safetensors(out, _tensors())):
        expected = _written(tmp_path, job)
        reader = Reader(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
        try:
            job(fifo)
        finally:
            got = reader.done()
        assert stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO was replaced"
        assert got == expected
    # a descriptor: the write end of a pipe, as /dev/fd/N
    r, w = os.pipe()
    reader = Reader(r)
    try:
        sgfp4.decode_model(q, f"/dev/fd/{w}")
    finally:
        os.close(w)
        got = reader.done()
    assert got == _written(tmp_path, lambda out: sgfp4.decode_model(q, out))
    assert _leftovers(tmp_path) == []


def _written(folder, job):
    """The bytes a job writes into a new regular file."""
    path = folder / "plain-reference.safetensors"
    job(path)
    data = path.read_bytes()
    path.unlink()
    return data


def test_symbolic_links_are_written_through(model, tmp_path):
    m, q = model
    target = tmp_path / "target.safetensors"
    target.write_bytes(b"old")
    link = tmp_path / "out-link.safetensors"
    link.symlink_to(target)
    with pytest.raises(sgfp4.OutputRefusedError, match="already exists"):
        sgfp4.decode_model(q, link)
    assert target.read_bytes() == b"old"
    sgfp4.decode_model(q, link, force=True)
    assert link.is_symlink() and os.readlink(link) == str(target)
    with sgfp4.open_model(target) as back:
        assert sorted(back.names()) == sorted(_tensors())
    dangling = tmp_path / "dangling.safetensors"
    dangling.symlink_to(tmp_path / "nowhere" / "x.safetensors")
    with pytest.raises(sgfp4.OutputRefusedError, match="missing file"):
        sgfp4.write_safetensors(dangling, _tensors(), force=True)
    assert _leftovers(tmp_path) == []


def test_an_index_name_gives_a_set(model, tmp_path):
    m, q = model
    out = tmp_path / "set"
    out.mkdir()
    summary = sgfp4.encode_model(m, out / "q.sgfp4.safetensors.index.json")
    assert summary.files == 2
    assert sorted(os.listdir(out)) == ["m.sgfp4.safetensors", "q.sgfp4.safetensors.index.json"]
    index = json.loads((out / "q.sgfp4.safetensors.index.json").read_text())
    assert set(index["weight_map"].values()) == {"m.sgfp4.safetensors"}
    with sgfp4.open_model(out / "q.sgfp4.safetensors.index.json") as s:
        assert s.is_set and s.quantized and sorted(s.names()) == sorted(_tensors())
    back = tmp_path / "back"
    back.mkdir()
    sgfp4.decode_model(out / "q.sgfp4.safetensors.index.json", back / "r.safetensors.index.json")
    assert sorted(os.listdir(back)) == ["m.safetensors", "r.safetensors.index.json"]
    assert (back / "m.safetensors").read_bytes() == _written(
        tmp_path, lambda path: sgfp4.decode_model(q, path))
    # write_safetensors: a set of one shard, named as the index without .index.json
    sgfp4.write_safetensors(tmp_path / "w.safetensors.index.json", _tensors())
    assert (tmp_path / "w.safetensors").read_bytes() == _written(
        tmp_path, lambda path: sgfp4.write_safetensors(path, _tensors()))
    with sgfp4.open_model(tmp_path / "w.safetensors.index.json") as s:
        assert s.is_set and s.shards == ["w.safetensors"]
    assert _leftovers(tmp_path) == []
