# SPDX-License-Identifier: MIT
"""Containers from Python: every kind of buffer, zero-copy where promised, info against the
CLI, row ranges, gathers and out= arrays against the whole decode, and the error paths."""

import json
import mmap

import numpy as np
import pytest

import sgfp4
from conftest import SOURCE_DIR

GOLDEN = SOURCE_DIR / "golden" / "decode"
V2 = GOLDEN / "v2_mixed_random_trees.sgfp4"   # 128 x 192, every layout mixed
V2_SHAPE = (128, 192)
V1 = GOLDEN / "v1_error_hint.fp4"             # 128 x 128, ERROR_HINT blocks
V1_SHAPE = (128, 128)


@pytest.fixture(scope="module")
def big():
    """A 300 x 520 encoded matrix (5 x 9 blocks, partial edges) and its decode."""
    w = np.random.default_rng(7).standard_normal((300, 520)).astype(np.float32)
    blob = sgfp4.encode(w, target_bpw=3.5)
    with sgfp4.open(blob, w.shape) as t:
        return blob, w.shape, t.decode()


def _address(a):
    return a.__array_interface__["data"][0]


# ---- buffers -----------------------------------------------------------------------------

def test_every_buffer_kind_decodes_the_same(big):
    blob, shape, ref = big
    arr = np.frombuffer(blob, dtype=np.uint8)
    with open(V2, "rb") as f:
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    kinds = [blob, bytearray(blob), memoryview(blob), arr, arr.copy(),
             memoryview(bytearray(blob)).toreadonly(), memoryview(blob)[0:len(blob)]]
    for data in kinds:
        with sgfp4.open(data, shape) as t:
            assert np.array_equal(t.decode(), ref), type(data)
    with sgfp4.open(mm, V2_SHAPE) as t, sgfp4.open(str(V2), V2_SHAPE) as u:
        assert t.decode().tobytes() == u.decode().tobytes()
    mm.close()


def test_read_only_buffers_are_borrowed_and_writable_ones_copied(big):
    blob, shape, _ = big
    t = sgfp4.open(blob, shape)
    assert _address(t._h.keep) == _address(np.frombuffer(blob, np.uint8))  # zero-copy
    ba = bytearray(blob)
    t2 = sgfp4.open(ba, shape)
    assert _address(t2._h.keep) != _address(np.frombuffer(ba, np.uint8))   # copied
    ba[:] = b"\0" * len(ba)      # changing the caller's buffer cannot reach the view
    assert np.array_equal(t2.decode(), t.decode())
    ba2 = bytearray(blob)
    t4 = sgfp4.open(ba2, shape, copy=False)
    assert _address(t4._h.keep) == _address(np.frombuffer(ba2, np.uint8))  # borrowed
    with pytest.raises(BufferError):  # the view pins the bytearray's size
        ba2.extend(b"x")
    t4.close()
    t5 = sgfp4.open(blob, shape, copy=True)
    assert _address(t5._h.keep) != _address(np.frombuffer(blob, np.uint8))


def test_the_view_keeps_its_bytes_alive(big):
    blob, shape, ref = big
    t = sgfp4.open(bytes(blob), shape)      # the only reference to these bytes
    import gc
    gc.collect()
    assert np.array_equal(t.decode(), ref)
    mm_path_view = sgfp4.open(str(V1), V1_SHAPE, "v1")
    gc.collect()
    assert mm_path_view.decode().shape == V1_SHAPE


def test_a_mapping_cannot_be_closed_under_an_open_view():
    with open(V2, "rb") as f:
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    t = sgfp4.open(mm, V2_SHAPE)
    with pytest.raises(BufferError):
        mm.close()
    t.close()
    import gc
    gc.collect()
    mm.close()


def test_non_contiguous_buffers_are_copied(big):
    blob, shape, ref = big
    doubled = np.repeat(np.frombuffer(blob, np.uint8), 2)[::2]    # strided view, same bytes
    assert not doubled.flags.c_contiguous
    with sgfp4.open(doubled, shape) as t:
        assert np.array_equal(t.decode(), ref)
    with pytest.raises(sgfp4.ArgumentError):
        sgfp4.open(doubled, shape, copy=False)


# ---- info --------------------------------------------------------------------------------

@pytest.mark.parametrize("path,shape", [(V2, V2_SHAPE), (V1, V1_SHAPE)])
def test_info_matches_the_cli(path, shape, cli):
    p = cli("info", path, "--shape", f"{shape[0]}x{shape[1]}", "--json")
    j = json.loads(p.stdout)
    with sgfp4.open(path, shape) as t:
        i = t.info
        assert i.profile.name.lower() == j["profile"]
        assert (i.rows, i.cols) == tuple(j["shape"]) == t.shape
        assert i.blocks == j["blocks"] and i.tiles_y * i.tiles_x == i.blocks
        assert i.container_bytes == j["container_bytes"] == path.stat().st_size
        assert i.bits_per_weight == pytest.approx(j["bits_per_weight"])
        assert i.leaves == j["leaves"] and i.leaves_by_mode == (j["leaves_fp4"], j["leaves_t158"])
        for k, size in enumerate(j["leaf_sizes"]):
            assert i.leaves_by_size[k] == size["leaves"]
            assert i.leaves_by_size_mode[k] == (size["fp4"], size["t158"])
        if i.profile == sgfp4.Profile.V2:
            assert list(i.records_by_layout) == list(j["layouts"].values())
        else:
            assert i.error_hint_blocks == j["error_hint_blocks"]
        leaves = [leaf for b in range(i.blocks) for leaf in t.block_leaves(b)]
        assert len(leaves) == i.leaves
        assert sum(leaf.mode for leaf in leaves) == i.leaves_by_mode[1]
        assert all(leaf.size in (4, 8, 16, 32, 64) for leaf in leaves)
        assert "bits per weight" in repr(t)


def test_reserved_symbols_are_counted():
    with sgfp4.open(GOLDEN / "v1_t158_reserved_symbol.fp4", (64, 64), "v1") as t:
        assert t.reserved_symbols() > 0
    with sgfp4.open(GOLDEN / "v1_fp4.fp4", (64, 64), "v1") as t:
        assert t.reserved_symbols() == 0


# ---- decode variants ---------------------------------------------------------------------

def test_row_ranges_and_gathers_equal_slices_of_the_whole(big):
    blob, shape, ref = big
    rng = np.random.default_rng(3)
    with sgfp4.open(blob, shape) as t:
        for begin, end in [(0, 1), (0, 300), (63, 65), (64, 128), (299, 300), (17, 250)]:
            assert np.array_equal(t.decode_rows(begin, end), ref[begin:end])
        for rows in [[0], [299, 0, 299], list(range(300))[::-1], rng.integers(0, 300, 1000)]:
            assert np.array_equal(t.gather(rows), ref[np.asarray(rows)])
        assert np.array_equal(t.gather(np.array([5, 6], dtype=np.int32)), ref[5:7])
        for dtype, conv in [("f16", lambda a: a.astype(np.float16)),
                            ("bf16", sgfp4.float32_to_bf16)]:
            assert np.array_equal(t.decode_rows(10, 90, dtype), conv(ref[10:90]))
            assert np.array_equal(t.gather([4, 200], dtype), conv(ref[[4, 200]]))


def test_dtype_spellings_and_bf16_widening(big):
    blob, shape, ref = big
    with sgfp4.open(blob, shape) as t:
        for spelling in ("f32", "float32", np.float32, sgfp4.DType.F32, 0):
            assert t.decode(spelling).dtype == np.float32
        for spelling in ("f16", "float16", "half", np.float16, sgfp4.DType.F16):
            assert t.decode(spelling).dtype == np.float16
        bf = t.decode("bf16")
        assert bf.dtype == np.uint16
        wide = sgfp4.bf16_to_float32(bf)
        assert wide.dtype == np.float32
        # widening is exact: rounding it again gives the same bits, and it is within 2^-8
        assert np.array_equal(sgfp4.float32_to_bf16(wide), bf)
        assert np.all(np.abs(wide - ref) <= np.abs(ref) * 2.0**-8)
        assert np.array_equal(np.asarray(t), ref)


def test_float32_to_bf16_is_the_librarys_rounding():
    import ctypes
    from sgfp4._lib import lib
    lib.sgfp4_float_to_bf16.restype = ctypes.c_uint16
    lib.sgfp4_float_to_bf16.argtypes = [ctypes.c_float]
    rng = np.random.default_rng(11)
    bits = np.concatenate([rng.integers(0, 2**32, 20000, dtype=np.uint64).astype(np.uint32),
                           np.array([0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000,
                                     0x7F800001, 0xFFFFFFFF, 0x7F7FFFFF, 0x3F808000,
                                     0x3F818000, 0x00008000, 0x00018000], dtype=np.uint32)])
    f = bits.view(np.float32)
    ours = sgfp4.float32_to_bf16(f)
    theirs = np.array([lib.sgfp4_float_to_bf16(float(x)) for x in f.tolist()], np.uint16)
    # ctypes passes NaNs through a C double; compare NaNs by class, the rest bit for bit
    nan = np.isnan(f)
    assert np.array_equal(ours[~nan], theirs[~nan])
    assert np.all((ours[nan] & 0x7F80) == 0x7F80) and np.all(ours[nan] & 0x7F)


def test_out_arrays_are_written_in_place(big):
    blob, shape, ref = big
    rows, cols = shape
    with sgfp4.open(blob, shape) as t:
        out = np.full(shape, 7, dtype=np.float32)
        got = t.decode(out=out)
        assert got is out and np.array_equal(out, ref)
        wide = np.full((rows, cols + 33), -1, dtype=np.float32)  # a column slice: row stride
        t.decode(out=wide[:, 5:5 + cols])
        assert np.array_equal(wide[:, 5:5 + cols], ref)
        assert np.all(wide[:, :5] == -1) and np.all(wide[:, 5 + cols:] == -1)
        half = np.empty((40, cols), dtype=np.float16)
        t.decode_rows(100, 140, "f16", out=half)
        assert np.array_equal(half, ref[100:140].astype(np.float16))
        g = np.empty((3, cols), dtype=np.uint16)
        t.gather([1, 2, 3], "bf16", out=g)
        assert np.array_equal(g, sgfp4.float32_to_bf16(ref[1:4]))
        one = np.empty((1, cols), np.float32)
        t.gather([9], out=one)
        assert np.array_equal(one[0], ref[9])


def test_every_backend_thread_count_and_store_gives_the_same_bits(big):
    blob, shape, ref = big
    with sgfp4.open(blob, shape) as t:
        for backend in ("auto", "scalar"):
            for threads in (0, 1, 2, 3):
                for store in ("auto", "cached", "streaming"):
                    a = t.decode(backend=backend, threads=threads, store=store)
                    assert a.tobytes() == ref.tobytes(), (backend, threads, store)
        assert sgfp4.backend_name("scalar") == "scalar"
        assert sgfp4.backend_name() in ("avx512", "avx2", "neon", "generic")


# ---- errors ------------------------------------------------------------------------------

def test_bad_arguments_raise_argument_error(big):
    blob, shape, _ = big
    rows, cols = shape
    t = sgfp4.open(blob, shape)
    t.decode(threads=1)       # (caches the options of threads=1: True and 1.0 must not hit it)
    bad_calls = [
        lambda: t.decode(threads=True), lambda: t.decode(dtype=False),
        lambda: t.decode_rows(5, 5), lambda: t.decode_rows(-1, 3),
        lambda: t.decode_rows(0, rows + 1), lambda: t.decode_rows(3, 2),
        lambda: t.gather([rows]), lambda: t.gather([-1]), lambda: t.gather([]),
        lambda: t.gather([[1, 2]]), lambda: t.gather([1.5]),
        lambda: t.decode("f64"), lambda: t.decode(7), lambda: t.decode(backend="gpu"),
        lambda: t.decode(store="fast"), lambda: t.decode(threads=-1),
        lambda: t.decode(threads=1.0),
        lambda: t.decode(out=np.empty(shape, np.float64)),
        lambda: t.decode(out=np.empty((rows, cols + 1), np.float32)),
        lambda: t.decode(out=np.empty(shape, np.float32).T.copy().T),
        lambda: t.decode(out=np.empty(shape, np.float32)[::-1]),
        lambda: t.decode(out=[0.0] * (rows * cols)),
        lambda: t.block_leaves(10**6), lambda: t.block_leaves(-1),
        lambda: sgfp4.open(blob, (rows,)), lambda: sgfp4.open(blob, (rows, -1)),
        lambda: sgfp4.open(blob, ("a", cols)), lambda: sgfp4.open(blob, shape, "v3"),
        lambda: sgfp4.open(12345, shape), lambda: sgfp4.open(blob, shape, limits={"x": 1}),
    ]
    for call in bad_calls:
        with pytest.raises(sgfp4.ArgumentError) as e:
            call()
        assert isinstance(e.value, ValueError) and e.value.status_name == "ARGUMENT"
    ro = np.empty(shape, np.float32)
    ro.flags.writeable = False
    with pytest.raises(sgfp4.ArgumentError):
        t.decode(out=ro)
    # more threads than SGFP4_MAX_THREADS: the error names the argument
    with pytest.raises(sgfp4.ArgumentError, match="threads: 257 is above 256"):
        t.decode(threads=257)


def test_a_closed_tensor_refuses_every_call(big):
    blob, shape, _ = big
    with sgfp4.open(blob, shape) as t:
        pass
    assert t.closed and "closed" in repr(t)
    for call in (t.decode, lambda: t.decode_rows(0, 1), lambda: t.gather([0]),
                 lambda: t.info, t.reserved_symbols):
        with pytest.raises(sgfp4.ArgumentError, match="closed"):
            call()
    t.close()  # closing twice is fine


def test_container_errors_name_the_place():
    data = bytearray(V2.read_bytes())
    data[16 + 4 * 0] ^= 0x01   # the first record offset: no longer a multiple of 16
    with pytest.raises(sgfp4.ContainerError) as e:
        sgfp4.open(bytes(data), V2_SHAPE)
    assert e.value.status_name in ("V2_OFFSET_ALIGN", "V2_OFFSET_ORDER", "V2_BLOCK_COUNT",
                                   "V2_TABLE_PAD", "V2_HEADER_PAD", "TRUNCATED")
    assert e.value.offset is not None and f"byte {e.value.offset}" in e.value.message
    with pytest.raises(sgfp4.TruncatedError) as e:
        sgfp4.open(V2.read_bytes()[:8], V2_SHAPE)
    with pytest.raises(sgfp4.ContainerError):
        sgfp4.open(b"", V2_SHAPE)
    with pytest.raises(sgfp4.V1LengthError):
        sgfp4.open(V1.read_bytes()[:-1], V1_SHAPE, "v1")
    with pytest.raises(sgfp4.ShapeError):
        sgfp4.open(V2.read_bytes(), (0, 5))
    with pytest.raises(sgfp4.V2BlockCountError):
        sgfp4.open(V2.read_bytes(), (64, 64))
    with pytest.raises(sgfp4.LimitError):
        sgfp4.open(V2.read_bytes(), V2_SHAPE, limits={"max_elements": 1000})
    with pytest.raises(FileNotFoundError):
        sgfp4.open(str(V2) + ".absent", V2_SHAPE)
    with pytest.raises(sgfp4.ContainerError):
        sgfp4.open(V2, V2_SHAPE, "v1")  # a v2 file read as v1
