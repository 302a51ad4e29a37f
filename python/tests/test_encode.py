# SPDX-License-Identifier: MIT
"""Encoding from numpy: the bytes equal `sgfp4 encode` for the same options on real
tensors, Python decodes of them equal `sgfp4 decode`, the options mirror the C struct, and
bad input is refused."""

import numpy as np
import pytest

import sgfp4
from conftest import SANITIZED

# (CLI arguments, the same options for sgfp4.encode)
OPTION_SETS = [
    ([], {}),
    (["--bpw", "3.0"], {"target_bpw": 3.0}),
    (["--profile", "v1"], {"profile": "v1"}),
    (["--profile", "v1", "--delta", "0.3", "--fit", "reference"],
     {"profile": "v1", "delta": 0.3, "fit": "reference"}),
    (["--policy", "threshold", "--threshold", "1.5"],
     {"policy": "threshold", "threshold": 1.5}),
    (["--fit", "fast"], {"fit": "fast"}),
    (["--metric", "row", "--bpw", "4.0"], {"metric": "row", "target_bpw": 4.0}),
]


def _real_tensors(weights_dir):
    """(file, tensor name) of real matrices: every stories260K matrix class and, in plain
    builds, gpt2 and gpt-neo attention matrices (768 x 768)."""
    stories = weights_dir / "stories260K" / "stories260K.safetensors"
    picks = [(stories, "tok_embeddings.weight"), (stories, "layers.0.attention.wq.weight"),
             (stories, "layers.0.attention.wk.weight"),
             (stories, "layers.2.feed_forward.w2.weight")]
    if not SANITIZED:
        picks += [(weights_dir / "gpt2-small-attn" / "gpt2-small-attn-L0-L5-L11.safetensors",
                   "decoder1/att.query.w"),
                  (weights_dir / "gpt-neo-125m-attn" / "gpt-neo-125m-attn-L0-L11.safetensors",
                   "decoder12/att.value.w")]
    return [p for p in picks if p[0].exists()]


def test_real_tensors_encode_and_decode_like_the_cli(weights_dir, cli, tmp_path):
    picks = _real_tensors(weights_dir)
    assert picks
    for path, name in picks:
        with sgfp4.open_model(path) as m:
            w = m[name].decode()
        rows, cols = w.shape
        for k, (args, opts) in enumerate(OPTION_SETS):
            if k and w.size > 100000 and SANITIZED:
                continue
            out = tmp_path / f"t{k}.bin"
            cli("encode", path, "--tensor", name, "-o", out, "-q", "-f", "--threads", "1", *args)
            ours = sgfp4.encode(w, **opts)
            assert ours == out.read_bytes(), (name, args)
            profile = "v1" if "v1" in args else "v2"
            dec = tmp_path / f"t{k}.f32"
            cli("decode", out, "-o", dec, "-f", "--shape", f"{rows}x{cols}", "--profile", profile)
            with sgfp4.open(ours, w.shape, profile) as t:
                d = t.decode()
                assert d.tobytes() == dec.read_bytes()
                assert np.linalg.norm(d - w) < np.linalg.norm(w)  # it is an approximation


def test_threads_do_not_change_the_bytes():
    w = np.random.default_rng(5).standard_normal((256, 320)).astype(np.float32)
    one = sgfp4.encode(w, threads=1)
    assert sgfp4.encode(w, threads=2) == one == sgfp4.encode(w, threads=0)


def test_float16_strided_and_fortran_inputs():
    rng = np.random.default_rng(6)
    w16 = rng.standard_normal((70, 130)).astype(np.float16)
    assert sgfp4.encode(w16) == sgfp4.encode(w16.astype(np.float32))
    wide = rng.standard_normal((70, 300)).astype(np.float32)
    view = wide[:, 17:147]                       # rows contiguous, row stride 300
    assert sgfp4.encode(view) == sgfp4.encode(np.ascontiguousarray(view))
    fortran = np.asfortranarray(wide[:, :130])
    assert sgfp4.encode(fortran) == sgfp4.encode(np.ascontiguousarray(wide[:, :130]))
    assert sgfp4.encode(wide[::2, :130]) == sgfp4.encode(np.ascontiguousarray(wide[::2, :130]))


def test_options_mirror_the_c_struct():
    d = sgfp4.EncodeOptions()
    assert (d.profile, d.policy, d.target_bpw, d.delta, d.threshold, d.fit, d.threads) == \
        (sgfp4.Profile.V2, sgfp4.SplitPolicy.RATE, 4.5, 0.10, 1.0, sgfp4.Fit.BEST, 0)
    o = sgfp4.EncodeOptions(profile="v1", fit="reference", delta=0.25)
    c = o.to_c()
    assert (c.profile, c.fit, c.delta, c.target_bpw) == (1, 1, 0.25, 4.5)
    assert sgfp4.EncodeOptions.from_c(c) == o
    assert o.with_(delta=0.5).delta == 0.5 and o.with_(delta=None) == o
    w = np.random.default_rng(8).standard_normal((64, 128)).astype(np.float32)
    assert sgfp4.encode(w, o) == sgfp4.encode(w, profile="v1", fit="reference", delta=0.25)
    assert sgfp4.encode(w, o, delta=0.5) == sgfp4.encode(w, o.with_(delta=0.5))
    blob = sgfp4.encode(w, target_bpw=2.5)
    assert len(blob) * 8 / w.size <= 2.5 and len(blob) <= sgfp4.encode_bound("v2", 64, 128)
    with sgfp4.open(blob, w.shape) as t:
        assert t.profile == sgfp4.Profile.V2


def test_bad_input_is_refused():
    w = np.ones((64, 64), np.float32)
    for bad in (np.ones(64, np.float32), np.ones((2, 2, 2), np.float32),
                np.ones((4, 4), np.float64), np.ones((4, 4), np.int32)):
        with pytest.raises(sgfp4.ArgumentError):
            sgfp4.encode(bad)
    nan = w.copy()
    nan[3, 5] = np.nan
    with pytest.raises(sgfp4.ArgumentError):
        sgfp4.encode(nan)
    with pytest.raises(sgfp4.ArgumentError):
        sgfp4.encode(w, target_bpw=-1)   # the library's check of the options
    with pytest.raises(sgfp4.ArgumentError):
        sgfp4.encode(w, target_bpw=0)
    with pytest.raises(sgfp4.ArgumentError):
        sgfp4.encode(w, bpw=3)           # not an option name
    with pytest.raises(sgfp4.ArgumentError):
        sgfp4.encode(w, profile="v9")
    with pytest.raises(sgfp4.ArgumentError):
        sgfp4.encode(w, options={"target_bpw": 3})
    with pytest.raises(sgfp4.ShapeError):
        sgfp4.encode(np.ones((0, 4), np.float32))


def test_errors_name_the_option_or_value():
    """The library's diagnostic of the call (its sgfp4_diag), not a bare
    "invalid argument": the option, or the first non-finite value's row and column."""
    w = np.ones((64, 64), np.float32)
    cases = [({"target_bpw": 100}, "target_bpw 100 is outside (0, 64]"),
             ({"delta": -1}, "delta -1 is outside [0, 1e6]"),
             ({"policy": "threshold", "threshold": -2}, "threshold -2 is outside (0, 1e12]"),
             ({"threads": 257}, "threads: 257 is above 256")]
    for options, words in cases:
        with pytest.raises(sgfp4.ArgumentError) as e:
            sgfp4.encode(w, **options)
        assert words in str(e.value) and "invalid argument" not in str(e.value), options
    inf = w.copy()
    inf[3, 5] = -np.inf
    with pytest.raises(sgfp4.ArgumentError, match=r"64x64 matrix: input row 3, column 5 is "
                                                  r"infinite") as e:
        sgfp4.encode(inf)
    assert e.value.offset == (3 * 64 + 5) * 4
    t = sgfp4.open(sgfp4.encode(w), w.shape)
    for call in (lambda: t.decode(threads=300), lambda: t.gather([0], threads=300),
                 lambda: sgfp4.MatvecPlan(t).float(np.ones(64, np.float32), threads=300)):
        with pytest.raises(sgfp4.ArgumentError, match="threads: 300 is above 256"):
            call()


def test_weights_beyond_the_fp16_range_are_warned_about():
    """Clipped to +-65504 with a ClippedWeightsWarning giving the library's count; none
    for weights in range (65504 itself is in range)."""
    rng = np.random.default_rng(4)
    w = rng.standard_normal((256, 256)).astype(np.float32)
    w[0, 0], w[5, 9] = 65504.0, -65504.0
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sgfp4.encode(w)
    w[7, 7], w[200, 3] = 1e5, -3e38
    with pytest.warns(sgfp4.ClippedWeightsWarning,
                      match=r"256x256 matrix: 2 weights beyond the binary16 range "
                            r"\(largest \|w\| 3e\+38\)"):
        blob = sgfp4.encode(w)
    with sgfp4.open(blob, w.shape) as t:
        assert np.abs(t.decode()).max() < 65600
