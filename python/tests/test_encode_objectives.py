# SPDX-License-Identifier: MIT
"""The encoder's objectives from Python (docs/python.md, "Encoding"): fit="fast" and
metric="row" give the CLI's bytes, importance vectors move the error where they say (and
all-equal ones change nothing), wrong lengths are refused before the library reads them, and
whole models take an importance file exactly as `sgfp4 encode --importance` does; a Hessian
calibrates an encode (smaller output error, same size, same bytes on any thread count) and a
bad one is refused; an importance file's Hessians calibrate whole models as the CLI does, and
rates by sensitivity give the bits to the tensor whose errors cost more, as the CLI does."""

import json
import struct

import numpy as np
import pytest

import sgfp4


def _matrix(rows=128, cols=192, seed=11):
    rng = np.random.default_rng(seed)
    # rows of very different norms share leaves: what the objectives are about
    scale = np.exp(rng.uniform(-2, 1, size=(rows, 1)))
    return (rng.standard_normal((rows, cols)) * scale).astype(np.float32)


def _decode(blob, shape):
    with sgfp4.open(blob, shape) as t:
        return t.decode()


def test_fit_and_metric_options_mirror_the_c_enums():
    d = sgfp4.EncodeOptions()
    assert d.metric == sgfp4.Metric.SSE and d.column_importance is None
    assert int(sgfp4.Fit.FAST) == 2 and int(sgfp4.Metric.ROW_RELATIVE) == 1
    o = sgfp4.EncodeOptions(fit="fast", metric="row")
    assert (o.fit, o.metric) == (sgfp4.Fit.FAST, sgfp4.Metric.ROW_RELATIVE)
    c = o.to_c()
    assert (c.fit, c.metric) == (2, 1)
    assert sgfp4.EncodeOptions.from_c(c) == o
    assert sgfp4.EncodeOptions(metric="row_relative") == o.with_(fit="best")
    for bad in ({"metric": "l1"}, {"fit": "quick"}, {"column_importance": [[1.0]]},
                {"row_importance": []}, {"column_importance": "abc"}):
        with pytest.raises(sgfp4.ArgumentError):
            sgfp4.EncodeOptions(**bad)


def test_fast_and_row_are_other_encodings_and_decode(cli, tmp_path):
    w = _matrix()
    src = tmp_path / "w.f32"
    src.write_bytes(w.tobytes())
    blobs = {}
    for args, opts in [([], {}), (["--fit", "fast"], {"fit": "fast"}),
                       (["--metric", "row"], {"metric": "row"}),
                       (["--fit", "fast", "--metric", "row"], {"fit": "fast", "metric": "row"})]:
        out = tmp_path / "w.sgfp4"
        cli("encode", src, "--shape", "128x192", "-o", out, "-q", "-f", "--threads", "1", *args)
        blobs[tuple(args)] = sgfp4.encode(w, **opts)
        assert blobs[tuple(args)] == out.read_bytes(), args
    assert len(set(blobs.values())) == 4
    err = {k: _decode(b, w.shape) - w for k, b in blobs.items()}
    sse = {k: float(np.sum(e * e)) for k, e in err.items()}
    best, fast = sse[()], sse[("--fit", "fast")]
    assert best < fast < 1.1 * best
    # row: each row's error relative to its norm; its worst row is better than sse's
    rel = {k: np.sum(e * e, axis=1) / np.sum(w * w, axis=1) for k, e in err.items()}
    assert rel[("--metric", "row")].max() < rel[()].max()
    assert sse[("--metric", "row")] > best


def test_importance_moves_the_error_and_equal_weights_change_nothing():
    w = _matrix(seed=12)
    rows, cols = w.shape
    plain = sgfp4.encode(w)
    assert sgfp4.encode(w, column_importance=np.ones(cols)) == plain   # scaled to mean 1
    assert sgfp4.encode(w, row_importance=[3.0] * rows) == plain
    important = np.full(cols, 0.01, np.float32)
    important[:48] = 100.0
    blob = sgfp4.encode(w, column_importance=important)
    budget = 4.5 * rows * cols / 8                        # rate control stays exact
    assert blob != plain and 0.99 * budget <= len(blob) <= budget

    def column_error(b, c):
        e = _decode(b, w.shape) - w
        return float(np.sum(e[:, c] ** 2))
    assert column_error(blob, slice(0, 48)) < 0.8 * column_error(plain, slice(0, 48))
    assert column_error(blob, slice(48, None)) > column_error(plain, slice(48, None))
    rows_important = np.where(np.arange(rows) % 2 == 0, 50.0, 0.02)
    blob_r = sgfp4.encode(w, sgfp4.EncodeOptions(row_importance=rows_important))
    e_r, e_p = _decode(blob_r, w.shape) - w, _decode(plain, w.shape) - w
    assert np.sum(e_r[0::2] ** 2) < np.sum(e_p[0::2] ** 2)
    assert sgfp4.encode(w, threads=3, column_importance=important) == blob


def test_importance_is_checked():
    w = _matrix(64, 64, seed=13)
    with pytest.raises(sgfp4.ArgumentError, match="63 values for 64 columns"):
        sgfp4.encode(w, column_importance=np.ones(63))
    with pytest.raises(sgfp4.ArgumentError, match="65 values for 64 rows"):
        sgfp4.encode(w, row_importance=np.ones(65))
    for bad in (np.zeros(64), -np.ones(64), np.full(64, np.nan)):   # the library's checks
        with pytest.raises(sgfp4.ArgumentError):
            sgfp4.encode(w, column_importance=bad)
    with pytest.raises(sgfp4.ArgumentError, match="importance file"):
        sgfp4.Policy(column_importance=np.ones(64))


def _importance_file(path, vectors):
    sgfp4.write_safetensors(path, {k: np.asarray(v, np.float32) for k, v in vectors.items()})


def _tensor_bytes(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    meta = json.loads(header.pop("__metadata__")["sgfp4"])["tensors"]
    return {k: data[v["data_offsets"][0]:v["data_offsets"][1]] for k, v in header.items()}, meta


def test_model_importance_like_the_cli(stories, cli, tmp_path):
    rng = np.random.default_rng(14)
    wq, w1 = "layers.0.attention.wq.weight", "layers.2.feed_forward.w1.weight"
    imp = tmp_path / "imp.safetensors"
    _importance_file(imp, {wq: rng.choice([0.05, 1.0, 20.0], 64),
                           w1 + ":rows": rng.choice([0.05, 1.0, 20.0], 172)})
    cli_out = tmp_path / "cli.sgfp4.safetensors"
    cli("encode", stories, "-o", cli_out, "-q", "--threads", "1", "--importance", imp,
        "--metric", "row", "--fit", "fast")
    ours = tmp_path / "ours.sgfp4.safetensors"
    sgfp4.encode_model(stories, ours, importance=imp, metric="row", fit="fast")
    assert ours.read_bytes() == cli_out.read_bytes()
    with sgfp4.open_model(imp) as m:                      # an open Model works the same
        again = tmp_path / "again.sgfp4.safetensors"
        sgfp4.encode_model(stories, again, importance=m, metric="row", fit="fast")
        assert not m.closed
    assert again.read_bytes() == ours.read_bytes()
    plain = tmp_path / "plain.sgfp4.safetensors"
    sgfp4.encode_model(stories, plain, metric="row", fit="fast")
    a, meta = _tensor_bytes(ours)
    b, plain_meta = _tensor_bytes(plain)
    assert {k for k in a if a[k] != b[k]} == {wq, w1}
    assert meta[wq]["encoder"]["importance"] == "columns"
    assert meta[w1]["encoder"]["importance"] == "rows"
    assert all("importance" not in v["encoder"] for v in plain_meta.values())
    assert {v["encoder"]["metric"] for v in meta.values()} == {"row"}


def test_model_importance_errors(stories, tmp_path):
    wo = "layers.1.attention.wo.weight"
    bad = tmp_path / "bad.safetensors"
    _importance_file(bad, {wo: np.ones(63)})
    out = tmp_path / "out.sgfp4.safetensors"
    with pytest.raises(sgfp4.ArgumentError) as e:
        sgfp4.encode_model(stories, out, importance=bad)
    assert wo in e.value.message and "63 values" in e.value.message
    assert not out.exists()
    with pytest.raises(sgfp4.InputOutputError, match="none.safetensors"):
        sgfp4.encode_model(stories, out, importance=tmp_path / "none.safetensors")
    m = sgfp4.open_model(bad)
    m.close()
    with pytest.raises(sgfp4.ArgumentError):
        sgfp4.encode_model(stories, out, importance=m)
    assert not out.exists()


def test_decisions_carry_the_low_rate_warning(stories):
    with sgfp4.open_model(stories) as m:
        t = m["layers.0.attention.wq.weight"]
        assert sgfp4.Policy().decide(t).warning == ""
        d = sgfp4.Policy(target_bpw=3.5).decide(t)
        assert d.quantize and "below 4.125" in d.warning and "ternary" in d.warning
        assert sgfp4.Policy(target_bpw=3.5, profile="v1").decide(t).warning == ""


def _hessian(cols, seed, tokens=None):
    """E[x x^T] of correlated activations (a few shared factors, per-column scales)."""
    rng = np.random.default_rng(seed)
    tokens = tokens or 4 * cols
    x = rng.standard_normal((tokens, cols // 4)) @ rng.standard_normal((cols // 4, cols))
    x = (x + 0.3 * rng.standard_normal((tokens, cols))) * rng.uniform(0.5, 2, cols)
    return (x.T @ x / tokens).astype(np.float32)


def test_hessian_calibrates_the_encode():
    w = _matrix(96, 128, 3)
    h = _hessian(128, 4)
    out_err = lambda blob: float(np.einsum("ij,jk,ik->", w - _decode(blob, w.shape), h,
                                           w - _decode(blob, w.shape)))
    plain = sgfp4.encode(w, column_importance=np.diag(h))
    with sgfp4.Hessian(h, threads=2) as prepared:
        assert prepared.dim == 128 and repr(prepared) == "Hessian(dim=128)"
        calibrated = sgfp4.encode(w, hessian=prepared)
        assert sgfp4.encode(w, hessian=prepared, threads=3) == calibrated
        assert sgfp4.encode(w, hessian=h) == calibrated       # an array is prepared per call
        assert len(calibrated) == len(plain)
        assert out_err(calibrated) < 0.9 * out_err(plain)
        with pytest.raises(sgfp4.ArgumentError, match="dimension 128 for 96 columns"):
            sgfp4.encode(w[:, :96], hessian=prepared)
        opts = sgfp4.EncodeOptions(hessian=prepared)
        with pytest.raises(sgfp4.ArgumentError, match="belong to one matrix"):
            opts.copy_into(sgfp4._lib.init_struct(sgfp4._lib.EncodeOptions,
                                                  "sgfp4_encode_options_init"))
    assert repr(prepared) == "Hessian(closed)"
    with pytest.raises(sgfp4.ArgumentError, match="closed"):
        sgfp4.encode(w, hessian=prepared)


def test_bad_hessians_are_refused():
    h = _hessian(64, 5)
    for bad, message in ((np.ones((3, 4)), "square"), (np.zeros((0, 0)), "square"),
                         (np.array([["a"]]), "square")):
        with pytest.raises(sgfp4.ArgumentError, match=message):
            sgfp4.Hessian(bad)
    skewed = h.copy()
    skewed[2, 9] += 1
    with pytest.raises(sgfp4.ArgumentError, match=r"not symmetric: \[2\]\[9\]"):
        sgfp4.Hessian(skewed)
    nan = h.copy()
    nan[5, 5] = np.nan
    with pytest.raises(sgfp4.ArgumentError, match=r"\[5\]\[5\]"):
        sgfp4.Hessian(nan)
    indefinite = np.eye(8, dtype=np.float32)
    indefinite[0, 1] = indefinite[1, 0] = -2
    with pytest.raises(sgfp4.ArgumentError, match="not positive semidefinite"):
        sgfp4.Hessian(indefinite)
    for damping in (0, -1, 2000):
        with pytest.raises(sgfp4.ArgumentError, match="options"):
            sgfp4.Hessian(h, damping=damping)
    with pytest.raises(sgfp4.ArgumentError, match="threads"):
        sgfp4.Hessian(h, threads=-1)


def test_model_hessians_like_the_cli(stories, cli, tmp_path):
    wq, wk = "layers.0.attention.wq.weight", "layers.0.attention.wk.weight"
    imp = tmp_path / "hess.safetensors"
    h = _hessian(64, 6)
    blob = h.tobytes()
    header = {wq + ":hessian": {"dtype": "F32", "shape": [64, 64],
                                "data_offsets": [0, len(blob)]},
              "__metadata__": {wk + ":hessian": wq + ":hessian", "tokens": "256"}}
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    imp.write_bytes(struct.pack("<Q", len(text)) + text + blob)
    reports = []
    ours = tmp_path / "ours.sgfp4.safetensors"
    summary = sgfp4.encode_model(stories, ours, importance=imp, report=reports.append)
    # wk (32x64) is mostly padding and passes through: only wq is calibrated
    assert summary.calibrated == 1
    assert [r.name for r in reports if r.calibrated] == [wq]
    cli_out = tmp_path / "cli.sgfp4.safetensors"
    r = cli("encode", stories, "-o", cli_out, "--threads", "1", "--importance", imp)
    assert "1 calibrated with their input's Hessian" in r.stderr.decode()
    assert ours.read_bytes() == cli_out.read_bytes()
    a, meta = _tensor_bytes(ours)
    assert meta[wq]["encoder"]["calibration"] == "hessian"
    assert sum("calibration" in v["encoder"] for v in meta.values()) == 1


def test_model_rates_by_sensitivity_like_the_cli(stories, cli, tmp_path):
    rng = np.random.default_rng(15)
    w1, w2 = "layers.0.feed_forward.w1.weight", "layers.0.feed_forward.w2.weight"
    imp = tmp_path / "fisher.safetensors"
    # w1's errors are predicted to cost 30 times w2's: it gets the bits
    _importance_file(imp, {w1: np.ones(64), w1 + ":rows": rng.uniform(20, 40, 172),
                           w2: np.ones(172), w2 + ":rows": rng.uniform(0.5, 1.5, 64)})
    reports = []
    ours = tmp_path / "ours.sgfp4.safetensors"
    summary = sgfp4.encode_model(stories, ours, importance=imp, rates="sensitivity",
                                 report=reports.append)
    assert summary.rated == 2
    bpw = {r.name: r.bits_per_weight for r in reports if r.rated}
    assert bpw[w1] > 4.5 > bpw[w2]
    cli_out = tmp_path / "cli.sgfp4.safetensors"
    r = cli("encode", stories, "-o", cli_out, "--threads", "1", "--importance", imp,
            "--rates", "sensitivity")
    assert "2 at rates by sensitivity" in r.stderr.decode()
    assert ours.read_bytes() == cli_out.read_bytes()
    again = tmp_path / "again.sgfp4.safetensors"
    sgfp4.encode_model(stories, again, sgfp4.Policy(rates="sensitivity"), importance=imp)
    assert again.read_bytes() == ours.read_bytes()
    # the default (auto) with an importance file: by sensitivity, as the CLI's default
    by_default = tmp_path / "default.sgfp4.safetensors"
    assert sgfp4.encode_model(stories, by_default, importance=imp).rated == 2
    assert by_default.read_bytes() == ours.read_bytes()
    cli_default = tmp_path / "cli-default.sgfp4.safetensors"
    r = cli("encode", stories, "-o", cli_default, "--threads", "1", "--importance", imp)
    assert "2 at rates by sensitivity" in r.stderr.decode()
    assert cli_default.read_bytes() == ours.read_bytes()
    uniform = tmp_path / "uniform.sgfp4.safetensors"
    assert sgfp4.encode_model(stories, uniform, importance=imp, rates="uniform").rated == 0
    assert uniform.read_bytes() != ours.read_bytes()
    with pytest.raises(sgfp4.ArgumentError, match="need an importance file"):
        sgfp4.encode_model(stories, tmp_path / "no.sgfp4.safetensors", rates="sensitivity")
    with pytest.raises(sgfp4.ArgumentError, match="rates"):
        sgfp4.Policy(rates="fast")
