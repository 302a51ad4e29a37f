# SPDX-License-Identifier: MIT
"""Matrix-vector products from Python (sgfp4.matvec): the golden matvec vectors
(golden/matvec/manifest.json, whose expected bytes the generator computes with its own
statement of D8) bit for bit, for both classes and the quantizer; row ranges, batches longer
than one C call, threads and backends against the whole product; numpy's W @ x within
float32 error; error paths. Skipped where the loaded library has no matvec API."""

import json
import threading

import numpy as np
import pytest

import sgfp4
from conftest import SOURCE_DIR

pytestmark = pytest.mark.skipif(not sgfp4.has_matvec(),
                                reason="the loaded libsgfp4 has no matvec API")

MANIFEST = SOURCE_DIR / "golden" / "matvec" / "manifest.json"
VECTORS = json.loads(MANIFEST.read_text())["vectors"] if MANIFEST.exists() else []


def _same_bits(ours, expected, nan_results):
    """Equal bits; where the vector has NaN results, any NaN matches a NaN (D8 leaves a
    NaN's sign and payload unspecified)."""
    ours, expected = np.asarray(ours, np.float32).ravel(), np.asarray(expected).ravel()
    if nan_results:
        both = np.isnan(ours) & np.isnan(expected)
        assert int(np.isnan(expected).sum()) == nan_results
        ours, expected = ours[~both], expected[~both]
    return ours.view(np.uint32).tobytes() == expected.view(np.uint32).tobytes()


@pytest.mark.skipif(not VECTORS, reason="no golden/matvec vectors in this tree")
@pytest.mark.parametrize("v", VECTORS, ids=[v["name"] for v in VECTORS])
def test_golden_matvec_vectors(v):
    folder = SOURCE_DIR / "golden"
    rows, cols = v["shape"]
    x = np.fromfile(folder / v["x"], dtype="<f4" if v["x_dtype"] == "f32" else "<f2")
    x = x.reshape(v["batch"], cols)
    y_expected = np.fromfile(folder / v["y"], dtype="<f4").reshape(v["batch"], rows)
    with sgfp4.open(folder / v["container"], (rows, cols), v["profile"]) as t:
        plan = sgfp4.MatvecPlan(t)
    if v["class"] == "a":
        q = sgfp4.matvec.quantize(x)
        assert q.data.tobytes() == (folder / v["q8"]).read_bytes()
        y = plan.q8(q)
    else:
        y = plan.float(x)
    assert y.shape == (v["batch"], rows) and y.dtype == np.float32
    assert _same_bits(y, y_expected, v["nan_results"])
    if v["batch"] == 1:    # one 1-D vector gives a 1-D result, the same bits
        one = plan.q8(sgfp4.matvec.quantize(x[0])) if v["class"] == "a" else plan @ x[0]
        assert one.shape == (rows,) and _same_bits(one, y_expected[0], v["nan_results"])


@pytest.fixture(scope="module")
def plan_and_weights():
    rng = np.random.default_rng(12)
    w = rng.standard_normal((200, 330)).astype(np.float32)
    t = sgfp4.open(sgfp4.encode(w, target_bpw=4.0), w.shape)
    return sgfp4.MatvecPlan(t), t.decode(), rng


def test_products_against_numpy_and_themselves(plan_and_weights):
    plan, wd, rng = plan_and_weights
    x = rng.standard_normal((37, 330)).astype(np.float32)   # 37 > 16: three C calls
    y = plan.float(x)
    ref = x.astype(np.float64) @ wd.T.astype(np.float64)
    assert np.allclose(y, ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())
    # each vector alone gives the same bits as in the batch
    assert all(np.array_equal(plan @ x[k], y[k]) for k in (0, 15, 16, 36))
    q = sgfp4.matvec.quantize(x)
    assert q.batch == 37 and q.data.size == 37 * sgfp4.matvec.q8_bytes(330)
    ya = plan.q8(q)
    assert np.allclose(ya, ref, rtol=2e-2, atol=2e-2 * np.abs(ref).max())  # x quantized
    assert np.array_equal(plan.q8(sgfp4.matvec.quantize(x[5:6])), ya[5:6])
    # row ranges are slices of the whole, as (begin, end), a slice or a range
    for rows in [(0, 1), (63, 130), slice(199, None), range(10, 200)]:
        r = range(200)[rows] if isinstance(rows, slice) else (
            rows if isinstance(rows, range) else range(*rows))
        assert np.array_equal(plan.float(x, rows), y[:, r.start:r.stop])
        assert np.array_equal(plan.q8(q, rows), ya[:, r.start:r.stop])
    for threads in (0, 1, 2, 3):
        for backend in ("auto", "scalar"):
            assert np.array_equal(plan.float(x, threads=threads, backend=backend), y)
            assert np.array_equal(plan.q8(q, threads=threads, backend=backend), ya)
    # float16 activations are converted exactly
    h = x.astype(np.float16)
    assert np.array_equal(plan.float(h), plan.float(h.astype(np.float32)))
    assert sgfp4.matvec.quantize(h).data.tobytes() == \
        sgfp4.matvec.quantize(h.astype(np.float32)).data.tobytes()
    # the quantizer's layout: power-of-two scales, |q| <= 127, q * d close to x
    d, codes = q.d, q.q
    assert d.shape == (37, 6) and codes.shape == (37, 384)
    assert np.all(np.abs(codes) <= 127) and np.all(codes[:, 330:] == 0)
    assert np.all((d == 0) | (np.frexp(d)[0] == 0.5))
    approx = (codes.reshape(37, 6, 64) * d[:, :, None]).reshape(37, 384)[:, :330]
    assert np.all(np.abs(approx - x) <= np.repeat(d, 64, axis=1)[:, :330] / 2)


def test_thread_pool(plan_and_weights):
    plan, _, rng = plan_and_weights
    x = rng.standard_normal((5, 330)).astype(np.float32)
    q = sgfp4.matvec.quantize(x)
    y, ya = plan.float(x, backend="scalar"), plan.q8(q, backend="scalar")
    with sgfp4.matvec.ThreadPool(3) as pool:
        assert pool.threads == 3
        for _ in range(50):  # workers found awake and asleep: the same bits
            for threads in (0, 2, 3, 8):
                assert np.array_equal(plan.float(x, threads=threads, pool=pool), y)
                assert np.array_equal(plan.q8(q, (63, 130), threads=threads, pool=pool),
                                      ya[:, 63:130])
        results = []
        workers = [threading.Thread(target=lambda: results.append(
            np.array_equal(plan.float(x, threads=3, pool=pool), y))) for _ in range(4)]
        for th in workers:
            th.start()
        for th in workers:
            th.join()
        assert results == [True] * 4  # callers sharing one pool take turns
    assert sgfp4.matvec.ThreadPool(0).threads == 1
    with pytest.raises(sgfp4.Error):
        plan.float(x, pool=pool)  # closed
    for bad in (-1, True, 2.0):
        with pytest.raises(sgfp4.Error):
            sgfp4.matvec.ThreadPool(bad)
    with pytest.raises(sgfp4.Error):
        sgfp4.matvec.ThreadPool(257)  # the library's own check
    with pytest.raises(sgfp4.Error):
        plan.float(x, pool="four")


def test_out_arrays_and_strides(plan_and_weights):
    plan, _, rng = plan_and_weights
    x = rng.standard_normal((3, 330)).astype(np.float32)
    y = plan.float(x)
    wide = np.full((3, 260), -7, np.float32)
    got = plan.float(x, (50, 150), out=wide[:, 10:110])
    assert np.array_equal(wide[:, 10:110], y[:, 50:150]) and np.all(wide[:, :10] == -7)
    assert got.base is wide or got is wide[:, 10:110].base or np.shares_memory(got, wide)
    one = np.empty(200, np.float32)
    plan.q8(sgfp4.matvec.quantize(x[1]), out=one)
    assert np.array_equal(one, plan.q8(sgfp4.matvec.quantize(x[1:2]))[0])
    xs = np.zeros((3, 400), np.float32)
    xs[:, :330] = x
    assert np.array_equal(plan.float(xs[:, :330]), y)        # a strided batch


def test_plans_keep_their_tensor_and_run_from_threads(plan_and_weights):
    _, wd, rng = plan_and_weights
    w = rng.standard_normal((128, 256)).astype(np.float32)
    t = sgfp4.open(sgfp4.encode(w), w.shape)
    plan = sgfp4.MatvecPlan(t)
    assert plan.nbytes > 0
    x = rng.standard_normal((4, 256)).astype(np.float32)
    ref = plan.float(x)
    t.close()                        # the plan holds the view
    results = []
    threads = [threading.Thread(target=lambda: results.append(
        np.array_equal(plan.float(x), ref))) for _ in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert results == [True] * 6
    plan.close()
    with pytest.raises(sgfp4.ArgumentError, match="closed"):
        plan.float(x)


def test_matvec_errors(plan_and_weights):
    plan, _, rng = plan_and_weights
    x = rng.standard_normal(330).astype(np.float32)
    bad = x.copy()
    bad[77] = np.inf
    with pytest.raises(sgfp4.ArgumentError) as e:
        sgfp4.matvec.quantize(bad)
    assert "77" in e.value.message
    for call in (lambda: plan.float(x[:-1]), lambda: plan.float(x.astype(np.float64)),
                 lambda: plan.float(x, (5, 5)), lambda: plan.float(x, (0, 201)),
                 lambda: plan.float(x, slice(0, 10, 2)), lambda: plan.float(x, "all"),
                 lambda: plan.q8(x), lambda: plan.q8(sgfp4.matvec.quantize(x[:300])),
                 lambda: plan.float(x, out=np.empty(199, np.float32)),
                 lambda: plan.float(x, threads=-1), lambda: plan.float(x, backend="gpu"),
                 lambda: sgfp4.matvec.quantize(np.ones((2, 0), np.float32))):
        with pytest.raises(sgfp4.ArgumentError):
            call()
    with pytest.raises(sgfp4.ArgumentError):
        plan.float(x, threads=257)           # the library's own check
    assert sgfp4.matvec.backend_name("scalar") == "scalar"


def test_fast_products_not_offered_on_the_cpu(plan_and_weights):
    """fast=True asks for the D9 fast products, which the CPU backends do not offer: an
    UnsupportedError, never a D8 result in their place; fast=False is the default."""
    plan, _, rng = plan_and_weights
    x = rng.standard_normal((2, 330)).astype(np.float32)
    q = sgfp4.matvec.quantize(x)
    assert np.array_equal(plan.float(x, fast=False), plan.float(x))
    assert np.array_equal(plan.q8(q, fast=False), plan.q8(q))
    out = np.full((2, 200), 7.0, np.float32)
    for backend in ("auto", "scalar"):
        with pytest.raises(sgfp4.UnsupportedError):
            plan.float(x, backend=backend, fast=True, out=out)
        with pytest.raises(sgfp4.UnsupportedError):
            plan.q8(q, backend=backend, fast=True, out=out)
    assert np.all(out == 7.0)                # nothing written
    for bad in ("yes", 1, None):
        with pytest.raises(sgfp4.ArgumentError):
            plan.float(x, fast=bad)
