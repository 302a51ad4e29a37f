# SPDX-License-Identifier: MIT
"""Whole models from Python: reading against an independent header parse, zero-copy views,
per-tensor decodes and whole-file jobs byte-identical to the CLI, progress, cancellation
without leftovers, policies, writing, and malformed files."""

import gc
import json
import os
import struct

import numpy as np
import pytest

import sgfp4
from conftest import SANITIZED, SOURCE_DIR


def _header(path):
    """An independent safetensors header reader (8-byte length + JSON)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return json.loads(f.read(n)), 8 + n


def _leftovers(folder):
    return [p for p in os.listdir(folder) if ".sgfp4-tmp-" in p]


@pytest.fixture(scope="module")
def quantized(stories, tmp_path_factory, cli):
    """stories260K quantized by the CLI (default policy, one thread)."""
    out = tmp_path_factory.mktemp("q") / "stories.sgfp4.safetensors"
    cli("encode", stories, "-o", out, "-q", "--threads", "1")
    return out


def test_reading_matches_an_independent_header_parse(stories):
    header, data_start = _header(stories)
    meta = header.pop("__metadata__", {})
    with sgfp4.open_model(stories) as m:
        assert not m.quantized and m.manifest is None and not m.was_compressed
        assert m.metadata == meta
        assert m.file_bytes == stories.stat().st_size and m.data_offset == data_start
        assert sorted(m.names()) == sorted(header) and len(m) == len(header)
        offsets = [t.offset for t in m]
        assert offsets == sorted(offsets)          # file order
        raw = stories.read_bytes()
        for t in m:
            h = header[t.name]
            assert t.dtype == h["dtype"] and list(t.shape) == h["shape"]
            begin, end = h["data_offsets"]
            assert t.offset == data_start + begin and t.nbytes == end - begin
            assert t.raw().tobytes() == raw[t.offset:t.offset + t.nbytes]
            a = t.array()
            assert a.shape == t.shape and not a.flags.writeable
            assert np.array_equal(a, np.frombuffer(raw, "<f4", t.elements, t.offset)
                                  .reshape(t.shape))
            assert np.array_equal(t.decode(), a) and t.name in m and m[t.name].name == t.name
            assert not t.quantized and t.quant is None
        with pytest.raises(sgfp4.NotFoundError) as e:
            m["no such tensor"]
        assert isinstance(e.value, KeyError)


def test_views_keep_the_mapping_alive_after_close(stories):
    name = "layers.0.attention.wq.weight"
    m = sgfp4.open_model(stories)
    a = m[name].array()
    expected = a.copy()
    m.close()
    assert m.closed and "closed" in repr(m)
    for call in (m.names, lambda: m.tensors, lambda: len(m), lambda: m[name], lambda: list(m),
                 lambda: name in m, lambda: next(m.decoded())):
        with pytest.raises(sgfp4.ArgumentError, match="closed"):
            call()
    gc.collect()
    assert np.array_equal(a, expected)            # the mapping is still there
    real = os.path.realpath(stories)
    with open("/proc/self/maps") as f:
        assert real in f.read()
    del a
    gc.collect()
    with open("/proc/self/maps") as f:
        assert real not in f.read()


def test_quantized_models_decode_like_the_cli(quantized, stories, cli, tmp_path):
    restored = tmp_path / "restored.safetensors"
    cli("decode", quantized, "-o", restored, "-q", "--threads", "1")
    with sgfp4.open_model(quantized) as q, sgfp4.open_model(restored) as r, \
            sgfp4.open_model(stories) as s:
        assert q.quantized and q.manifest["format"] == "sgfp4-manifest"
        listed = q.manifest["tensors"]
        assert {t.name for t in q if t.quantized} == set(listed)
        for t in q:
            ref = r[t.name]
            if t.quantized:
                info = listed[t.name]
                assert t.quant.profile.name.lower() == info["profile"]
                assert list(t.quant.shape) == info["shape"]
                assert list(t.quant.original_shape) == info["original_shape"]
                assert t.quant.sha256 == info["sha256"] and t.quant.encoder == info["encoder"]
                assert t.dtype == "U8" and t.shape == (t.nbytes,)
                t.verify()
                d = t.decode(verify=True)
                assert d.shape == s[t.name].shape == ref.shape
                assert d.tobytes() == ref.raw().tobytes()
                with t.open() as c:
                    assert c.shape == t.quant.shape and c.decode().tobytes() == d.tobytes()
                    assert c.decode("f16").tobytes() == d.astype(np.float16).tobytes()
            else:
                assert t.raw().tobytes() == ref.raw().tobytes() == s[t.name].raw().tobytes()
        names = [n for n, _ in q.decoded()]
        assert names == [t.name for t in q if t.quantized or t.dtype in ("F32", "F16", "BF16")]


def test_whole_model_jobs_are_byte_identical_to_the_cli(stories, quantized, cli, tmp_path):
    ours = tmp_path / "ours.sgfp4.safetensors"
    sgfp4.encode_model(stories, ours)
    assert ours.read_bytes() == quantized.read_bytes()
    cli_dec, our_dec = tmp_path / "cli.safetensors", tmp_path / "ours.safetensors"
    for args, kwargs in [([], {}), (["--dtype", "f16"], {"dtype": "f16"}),
                         (["--dtype", "bf16"], {"dtype": "bf16"})]:
        cli("decode", quantized, "-o", cli_dec, "-q", "-f", "--threads", "1", *args)
        sgfp4.decode_model(quantized, our_dec, force=True, **kwargs)
        assert our_dec.read_bytes() == cli_dec.read_bytes(), args
    # options and a policy file, as the CLI's flags
    policy = {"rules": [{"match": "layers.0.*", "profile": "v1"},
                        {"match": "layers.1.*", "action": "skip"},
                        {"match": "tok_embeddings.weight", "bpw": 3.0}]}
    pfile = tmp_path / "policy.json"
    pfile.write_text(json.dumps(policy))
    cli_q = tmp_path / "cli2.sgfp4.safetensors"
    cli("encode", stories, "-o", cli_q, "-q", "--threads", "1", "--policy", pfile,
        "--bpw", "4.0", "--embeddings", "skip")
    for pol in (policy, str(pfile), pfile, json.dumps(policy)):
        ours2 = tmp_path / "ours2.sgfp4.safetensors"
        sgfp4.encode_model(stories, ours2, pol, target_bpw=4.0, embeddings=False, force=True)
        assert ours2.read_bytes() == cli_q.read_bytes(), pol
    ours3 = tmp_path / "ours3.sgfp4.safetensors"
    sgfp4.encode_model(stories, ours3,
                       sgfp4.Policy(policy, embeddings=False, target_bpw=4.0, threads=2))
    assert ours3.read_bytes() == cli_q.read_bytes()
    assert _leftovers(tmp_path) == []


@pytest.mark.skipif(SANITIZED, reason="the larger model takes minutes under ASan")
def test_gpt2_with_the_mixed_policy_like_the_cli(weights_dir, cli, tmp_path):
    src = weights_dir / "gpt2-small-attn" / "gpt2-small-attn-L0-L5-L11.safetensors"
    if not src.exists():
        pytest.skip(f"{src} is absent")
    policy = SOURCE_DIR / "tests" / "model" / "gpt2_mixed_policy.json"
    theirs, ours = tmp_path / "cli.safetensors", tmp_path / "ours.safetensors"
    cli("encode", src, "-o", theirs, "-q", "--policy", policy)
    sgfp4.encode_model(src, ours, policy, threads=2)
    assert ours.read_bytes() == theirs.read_bytes()
    with sgfp4.open_model(ours) as m:
        profiles = {t.quant.profile for t in m if t.quantized}
        assert profiles == {sgfp4.Profile.V1, sgfp4.Profile.V2}


def test_zstd_in_and_out(quantized, tmp_path, cli):
    z = tmp_path / "restored.safetensors.zst"
    plain = tmp_path / "restored.safetensors"
    sgfp4.decode_model(quantized, z, zstd_level=5)
    sgfp4.decode_model(quantized, plain)
    assert z.read_bytes()[:4] == b"\x28\xb5\x2f\xfd" and z.stat().st_size < plain.stat().st_size
    with sgfp4.open_model(z, temp_dir=tmp_path) as m, sgfp4.open_model(plain) as p:
        assert m.was_compressed and m.names() == p.names()
        assert all(a.raw().tobytes() == b.raw().tobytes() for a, b in zip(m, p))
    cli("verify", z, "-q")
    qz = tmp_path / "q.sgfp4.safetensors.zst"
    sgfp4.encode_model(plain, qz)
    with sgfp4.open_model(qz) as m:
        assert m.quantized and m.was_compressed


def test_progress_is_reported_and_can_cancel(stories, tmp_path):
    seen = []
    out = tmp_path / "q.safetensors"
    sgfp4.encode_model(stories, out, progress=seen.append)
    assert seen[0].tensors_done == 0 and seen[0].current is None
    assert seen[-1].tensors_done == seen[-1].tensors_total == 47
    assert seen[-1].bytes_done == seen[-1].bytes_total
    done = [p.tensors_done for p in seen]
    assert done == sorted(done) and all(p.current for p in seen[1:])
    before = out.read_bytes()

    class Stop(Exception):
        pass

    def stop_at_ten(p):
        if p.tensors_done == 10:
            raise Stop()
    for exc, job in [(Stop, lambda: sgfp4.encode_model(stories, out, progress=stop_at_ten,
                                                       target_bpw=3, force=True)),
                     (Stop, lambda: sgfp4.decode_model(out, tmp_path / "d.st",
                                                       progress=stop_at_ten)),
                     (KeyboardInterrupt, lambda: sgfp4.encode_model(
                         stories, out, force=True, progress=lambda p: (_ for _ in ()).throw(
                             KeyboardInterrupt())))]:
        with pytest.raises(exc):
            job()
        assert out.read_bytes() == before          # the earlier output is untouched
        assert not (tmp_path / "d.st").exists()
        assert _leftovers(tmp_path) == []


def test_the_input_is_never_replaced(stories, tmp_path):
    copy = tmp_path / "m.safetensors"
    copy.write_bytes(stories.read_bytes())
    with pytest.raises(sgfp4.OutputRefusedError, match="same file as the input"):
        sgfp4.encode_model(copy, copy, force=True)
    link = tmp_path / "link.safetensors"
    os.link(copy, link)
    with pytest.raises(sgfp4.OutputRefusedError):
        sgfp4.encode_model(copy, link, force=True)
    assert copy.read_bytes() == stories.read_bytes()


def test_policies(stories):
    with sgfp4.open_model(stories) as m:
        emb, norm = m["tok_embeddings.weight"], m["layers.0.attention_norm.weight"]
        p = sgfp4.Policy()
        d = p.decide(emb)
        assert d.quantize and (d.rows, d.cols) == (512, 64) and "embedding" in d.reason
        assert not p.decide(norm).quantize
        assert not sgfp4.Policy(embeddings=False).decide(emb).quantize
        p2 = sgfp4.Policy({"defaults": {"bpw": 3.25}, "rules": [
            {"match": "layers.0.*", "action": "quantize", "profile": "v1"}]})
        assert p2.defaults.target_bpw == 3.25 and p2.decide(emb).options.target_bpw == 3.25
        d2 = p2.decide(norm)
        assert d2.quantize and d2.options.profile == sgfp4.Profile.V1
        p2.set_defaults(target_bpw=5.0, fit="reference")
        assert p2.decide(emb).options.target_bpw == 5.0
        assert p2.decide(emb).options.fit == sgfp4.Fit.REFERENCE
    with pytest.raises(sgfp4.ArgumentError) as e:
        sgfp4.Policy({"rulez": []})
    assert "rulez" in e.value.message
    with pytest.raises(sgfp4.Error):
        sgfp4.Policy('{"rules": [')
    with pytest.raises(sgfp4.ArgumentError):
        sgfp4.Policy(bpw=4)
    with pytest.raises(FileNotFoundError):
        sgfp4.Policy("/no/such/policy.json")


def test_write_safetensors_round_trip(tmp_path, cli):
    rng = np.random.default_rng(2)
    tensors = {"w": rng.standard_normal((128, 64)).astype(np.float32),
               "h": rng.standard_normal((3, 5)).astype(np.float16),
               "i": np.arange(12, dtype=np.int64).reshape(3, 4),
               "b": np.array([True, False]), "s": np.float32(2.5),
               "bf": (sgfp4.float32_to_bf16(rng.standard_normal(7).astype(np.float32)), "BF16"),
               "e": np.zeros((0, 4), np.float32),
               "big_endian": np.arange(6, dtype=">i4").reshape(2, 3)}
    path = tmp_path / "m.safetensors"
    sgfp4.write_safetensors(path, tensors, {"who": "test", "n": 3})
    header, start = _header(path)
    assert header["__metadata__"] == {"who": "test", "n": "3"} and start % 64 == 0
    with sgfp4.open_model(path) as m:
        for name, value in tensors.items():
            arr, dtype = value if isinstance(value, tuple) else (value, None)
            t = m[name]
            assert t.shape == np.shape(arr)
            assert np.array_equal(t.array(), np.asarray(arr))
            if dtype:
                assert t.dtype == dtype
        assert np.array_equal(m["bf"].decode(), sgfp4.bf16_to_float32(tensors["bf"][0]))
        assert m["bf"].decode("bf16").tobytes() == tensors["bf"][0].tobytes()
        with pytest.raises(sgfp4.ArgumentError):
            m["i"].decode()
    cli("info", path)
    q = tmp_path / "m.sgfp4.safetensors"
    sgfp4.encode_model(path, q)
    with sgfp4.open_model(q) as m:
        assert [t.name for t in m if t.quantized] == ["w"]
    for bad in ({"x": np.ones(3, np.complex128)}, {"x": (np.ones(3, np.float32), "BF16")},
                {"x": (np.ones(3, np.uint16), "F99")}):
        with pytest.raises(sgfp4.ArgumentError):
            sgfp4.write_safetensors(tmp_path / "bad.safetensors", bad)
    assert not (tmp_path / "bad.safetensors").exists() and _leftovers(tmp_path) == []


def test_models_from_memory(stories):
    data = stories.read_bytes()
    with sgfp4.open_model(data) as m, sgfp4.open_model(stories) as f:
        assert m.names() == f.names()
        assert m["tok_embeddings.weight"].raw().tobytes() == \
            f["tok_embeddings.weight"].raw().tobytes()
    with sgfp4.open_model(bytearray(data)) as m:
        assert len(m) == 47


def test_malformed_models_raise_their_status(stories, quantized, tmp_path):
    good = stories.read_bytes()
    n = struct.unpack("<Q", good[:8])[0]
    cases = [
        (good[:4], sgfp4.Error),
        (good[:-1], sgfp4.TruncatedError),
        (struct.pack("<Q", 2**40) + good[8:], sgfp4.Error),
        (good[:8] + b"[" + good[9:], sgfp4.ModelFileError),
        (good[:8] + good[8:8 + n].replace(b'"F32"', b'"F33"', 1) + good[8 + n:],
         sgfp4.ModelDtypeError),
    ]
    for data, cls in cases:
        with pytest.raises(cls) as e:
            sgfp4.open_model(data)
        assert e.value.message and e.value.status_name != "OK"
        p = tmp_path / "bad.safetensors"
        p.write_bytes(data)
        with pytest.raises(cls):
            sgfp4.open_model(p)
    with pytest.raises(sgfp4.LimitError):
        sgfp4.open_model(stories, limits={"max_header_bytes": 100})
    with pytest.raises(sgfp4.InputOutputError) as e:
        sgfp4.open_model(tmp_path / "absent.safetensors")
    assert isinstance(e.value, OSError) and "absent.safetensors" in e.value.message
    # a quantized model whose container bytes were changed: the hash no longer matches
    data = bytearray(quantized.read_bytes())
    with sgfp4.open_model(quantized) as m:
        t = next(t for t in m if t.quantized)
        name, at = t.name, t.offset + t.nbytes - 1
    data[at] ^= 0x10
    bad = tmp_path / "tampered.sgfp4.safetensors"
    bad.write_bytes(bytes(data))
    with sgfp4.open_model(bad) as m:
        with pytest.raises(sgfp4.HashMismatchError) as e:
            m[name].verify()
        assert name in e.value.message
        with pytest.raises(sgfp4.HashMismatchError):
            m[name].decode(verify=True)
        m[name].decode()     # still a valid container: decodes without the hash check
    out = tmp_path / "out.safetensors"
    with pytest.raises(sgfp4.HashMismatchError):
        sgfp4.decode_model(bad, out)
    assert not out.exists() and _leftovers(tmp_path) == []


def test_job_summaries_and_tensor_reports(stories, tmp_path):
    reports = []
    out = tmp_path / "q.sgfp4.safetensors"
    summary = sgfp4.encode_model(stories, out, report=reports.append, target_bpw=4.0)
    with sgfp4.open_model(out) as q:
        quantized = [t for t in q if t.quantized]
        container_bytes = sum(t.nbytes for t in quantized)
        weights = sum(int(np.prod(t.quant.original_shape)) for t in quantized)
    assert (summary.tensors, summary.quantized, summary.files) == (47, len(quantized), 1)
    assert summary.quantized_bytes == container_bytes and summary.quantized_weights == weights
    assert summary.bits_per_weight == pytest.approx(8 * container_bytes / weights)
    assert summary.file_bytes_out == out.stat().st_size and summary.seconds > 0
    assert len(reports) == 47 and [r.index for r in reports] == sorted(r.index for r in reports)
    assert {r.name for r in reports if r.quantized} == {t.name for t in quantized}
    assert all(r.reason for r in reports) and all(r.count == 47 for r in reports)
    assert all(0 < r.bits_per_weight for r in reports if r.quantized)
    back = sgfp4.decode_model(out, tmp_path / "d.safetensors")
    assert back.tensors == 47 and back.quantized == len(quantized)


def test_encode_model_warns_of_clipped_weights_and_importance_coverage(tmp_path):
    """What the tool warns about, from the same library reports: weights beyond the fp16
    range per tensor (TensorReport.clipped), an importance file's coverage of the quantized
    tensors (TensorReport.importance)."""
    rng = np.random.default_rng(2)
    big = rng.standard_normal((128, 128)).astype(np.float32)
    big[1, 2] = 7e4
    src = tmp_path / "m.safetensors"
    sgfp4.write_safetensors(src, {"a.weight": big,
                                  "b.weight": rng.standard_normal((128, 64)).astype(np.float32),
                                  "norm": np.ones(64, np.float32)})
    imp = tmp_path / "imp.safetensors"
    sgfp4.write_safetensors(imp, {"b.weight": np.ones(64, np.float32)})
    reports = []
    with pytest.warns(sgfp4.ClippedWeightsWarning, match="tensor 'a.weight': 1 weight beyond"):
        sgfp4.encode_model(src, tmp_path / "q.safetensors", report=reports.append)
    by_name = {r.name: r for r in reports}
    assert by_name["a.weight"].clipped == 1 and by_name["b.weight"].clipped == 0
    with pytest.warns(sgfp4.ImportanceWarning, match="vectors for 1 of the 2 quantized"):
        sgfp4.encode_model(src, tmp_path / "qi.safetensors", importance=imp,
                           report=reports.append)
    assert {r.name: r.importance for r in reports[-3:]} == {"a.weight": 0, "b.weight": 1,
                                                             "norm": 0}


def test_fp8_tensors_decode_exactly(tmp_path):
    e4m3 = np.array([0x38, 0x40, 0xB8, 0x01, 0x7E, 0x00, 0x80], np.uint8)
    e4m3_values = [1.0, 2.0, -1.0, 2.0**-9, 448.0, 0.0, -0.0]
    e5m2 = np.arange(0, 256, 7, dtype=np.uint8)
    e5m2 = e5m2[(e5m2 & 0x7C) != 0x7C]                    # finite values only
    path = tmp_path / "f8.safetensors"
    sgfp4.write_safetensors(path, {"a": (e4m3, "F8_E4M3"), "b": (e5m2, "F8_E5M2")})
    with sgfp4.open_model(path) as m:
        a = m["a"].decode()
        assert a.tobytes() == np.array(e4m3_values, np.float32).tobytes()
        # E5M2 is the top byte of an IEEE binary16
        widened = (e5m2.astype(np.uint16) << 8).view(np.float16).astype(np.float32)
        assert m["b"].decode().tobytes() == widened.tobytes()
        assert m["b"].decode("f16").tobytes() == widened.astype(np.float16).tobytes()
        assert m["a"].array().tobytes() == e4m3.tobytes()


def test_sharded_sets_open_as_one_model(tmp_path):
    rng = np.random.default_rng(21)
    parts = [{"a.weight": rng.standard_normal((64, 128)).astype(np.float32)},
             {"b.weight": rng.standard_normal((128, 64)).astype(np.float32),
              "b.bias": np.ones(64, np.float32)}]
    names = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    weight_map, total = {}, 0
    for name, part in zip(names, parts):
        sgfp4.write_safetensors(tmp_path / name, part)
        for k, v in part.items():
            weight_map[k] = name
            total += v.nbytes
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}))
    with sgfp4.open_model(index) as m:
        assert m.is_set and m.shards == names
        assert sorted(m.names()) == sorted(weight_map)
        for k, name in weight_map.items():
            assert m.shards[m[k].shard] == name
            assert np.array_equal(m[k].array(), parts[names.index(name)][k])
    out = tmp_path / "one.sgfp4.safetensors"
    summary = sgfp4.encode_model(index, out)     # a set encodes into one file
    with sgfp4.open_model(out) as q:
        assert not q.is_set and q.shards == [] and summary.quantized == 2
        assert {t.name for t in q if t.quantized} == {"a.weight", "b.weight"}
    index.write_text(json.dumps({"metadata": {"total_size": total + 1},
                                 "weight_map": weight_map}))
    with pytest.raises(sgfp4.ModelIndexError):
        sgfp4.open_model(index)
