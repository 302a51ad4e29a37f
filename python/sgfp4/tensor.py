# SPDX-License-Identifier: MIT
"""Containers: open (validate once), inspect, decode to numpy arrays."""

import ctypes
import functools
import threading
from dataclasses import dataclass
from typing import Tuple

import numpy as np

from . import _lib
from ._buffers import input_bytes, output_array
from ._lib import lib
from ._types import (NUMPY_OF, Backend, DType, Profile, Store, argument_error, thread_count,
                     to_enum)
from .errors import check


_HANDLES_LOCK = threading.RLock()  # reentrant: a garbage collection may run a __del__ inside


class _Handle:
    """Owns one C object. The C release function runs when the last reference goes: a
    Python object holding the handle (a tensor, a call in flight on another thread, an
    array borrowing memory) keeps the C object alive, so close() never frees memory that
    is still in use.

    `keep` is what the C object borrows (container bytes, or the handle of the object it
    was made from: a model for its tensors, a tensor for its matvec plan). Reference counts
    alone free a borrowed handle after its borrower; but the garbage collector finalizes
    the objects of a reference cycle in any order, so a handle also counts the handles that
    borrow it and, finalized while some are alive, leaves its release to the last of them.
    """

    __slots__ = ("ptr", "_release", "keep", "_borrowers", "_finalized")

    def __init__(self, ptr, release, keep=None):
        self.ptr = ptr
        self._release = release
        self.keep = keep
        self._borrowers = 0
        self._finalized = False
        if isinstance(keep, _Handle):
            with _HANDLES_LOCK:
                keep._borrowers += 1

    def __del__(self):
        with _HANDLES_LOCK:
            self._finalized = True
            self._free()

    def _free(self):
        if self._borrowers or not self.ptr:
            return
        self._release(self.ptr)
        self.ptr = None
        owner = self.keep
        if isinstance(owner, _Handle):
            owner._borrowers -= 1
            if owner._finalized:
                owner._free()


def open_options(limits=None, copy=False):
    """A C sgfp4_open_options from a `limits` mapping (max_elements, max_container_bytes,
    max_header_bytes; absent or 0 = the library default) and the copy option, or None for
    all defaults."""
    if not limits and not copy:
        return None
    o = _lib.init_struct(_lib.OpenOptions, "sgfp4_open_options_init")
    o.copy = 1 if copy else 0
    for key, value in dict(limits or {}).items():
        if key not in ("max_elements", "max_container_bytes", "max_header_bytes"):
            raise argument_error(f"limits: unknown key {key!r}")
        setattr(o.limits, key, int(value))
    return o


def decode_options(threads=0, backend=Backend.AUTO, store=Store.AUTO):
    """A C sgfp4_decode_options (threads: 0 or 1 = the calling thread only)."""
    o = _lib.init_struct(_lib.DecodeOptions, "sgfp4_decode_options_init")
    o.backend = to_enum(Backend, backend, "backend")
    o.store = to_enum(Store, store, "store")
    o.threads = thread_count(threads)
    return o


_decode_options_cached = functools.lru_cache(maxsize=256, typed=True)(decode_options)
_dtype_cached = functools.lru_cache(maxsize=64, typed=True)(lambda d: to_enum(DType, d, "dtype"))


def _call_options(threads, backend, store):
    """decode_options() for one call: the struct is shared between calls with the same
    arguments (the library only reads it), which keeps per-call overhead to microseconds."""
    try:
        return _decode_options_cached(threads, backend, store)
    except TypeError:  # an unhashable argument: let decode_options() say what is wrong
        return decode_options(threads, backend, store)


def _dtype(dtype):
    try:
        return _dtype_cached(dtype)
    except TypeError:
        return to_enum(DType, dtype, "dtype")


@dataclass(frozen=True)
class TensorInfo:
    """What an opened container holds (sgfp4_tensor_info)."""
    profile: Profile
    rows: int
    cols: int
    tiles_y: int
    tiles_x: int
    blocks: int
    container_bytes: int
    bits_per_weight: float
    leaves: int
    leaves_by_size: Tuple[int, ...]              # [0] = 64x64 .. [4] = 4x4
    leaves_by_size_mode: Tuple[Tuple[int, int], ...]  # [size][mode]: (fp4, t158)
    leaves_by_mode: Tuple[int, int]              # (fp4, t158)
    records_by_layout: Tuple[int, ...]           # v2 only: records per layout 0..5
    error_hint_blocks: int                       # v1 only


@dataclass(frozen=True)
class Leaf:
    """One leaf of a block as stored (sgfp4_leaf): corner (y, x) within the 64x64 block,
    size, mode (0 FP4, 1 T158), the header word, exact scale and bias, payload offset."""
    y: int
    x: int
    size: int
    mode: int
    header: int
    scale: float
    bias: float
    payload_offset: int


class Tensor:
    """An opened, fully validated, immutable container view (sgfp4_tensor).

    Made by :func:`sgfp4.open` (or ``ModelTensor.open()``). It keeps the bytes it borrows
    alive. Decoding only reads it: one tensor may be decoded from several threads at once.
    ``close()`` (or a ``with`` block) releases it; a call still running on another thread
    keeps it alive until that call returns.
    """

    def __init__(self, handle, shape):
        self._h = handle
        self._shape = shape
        self._info = None

    # ---- opening -------------------------------------------------------------------------

    @classmethod
    def _open(cls, data, shape, profile=Profile.AUTO, *, limits=None, copy=None):
        rows, cols = _shape2(shape)
        profile = to_enum(Profile, profile, "profile")
        buf = input_bytes(data, copy)
        ptr = ctypes.c_void_p()
        diag = _lib.Diag()
        opts = open_options(limits)
        status = lib.sgfp4_tensor_open(buf.ctypes.data, buf.size,
                                       profile, rows, cols, ctypes.byref(ptr),
                                       ctypes.byref(opts) if opts else None,
                                       ctypes.byref(diag))
        check(status, diag=diag)
        return cls(_Handle(ptr.value, lib.sgfp4_tensor_close, buf), (rows, cols))

    # ---- lifetime ------------------------------------------------------------------------

    def close(self):
        """Releases the view (and, once nothing else uses them, the bytes it borrows)."""
        self._h = None

    @property
    def closed(self):
        return self._h is None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _handle(self):
        h = self._h
        if h is None:
            raise argument_error("the tensor is closed")
        return h

    # ---- inspecting ----------------------------------------------------------------------

    @property
    def shape(self):
        """The logical shape (rows, cols) = (O, I)."""
        return self._shape

    @property
    def rows(self):
        return self._shape[0]

    @property
    def cols(self):
        return self._shape[1]

    @property
    def info(self):
        """TensorInfo: profile, grid, size, bits per weight, leaf counts."""
        if self._info is None:
            h = self._handle()
            i = _lib.TensorInfo()
            check(lib.sgfp4_tensor_get_info(h.ptr, ctypes.byref(i)), "tensor info")
            self._info = TensorInfo(
                Profile(i.profile), i.rows, i.cols, i.tiles_y, i.tiles_x, i.blocks,
                i.container_bytes, i.bits_per_weight, i.leaves, tuple(i.leaves_by_size),
                tuple(tuple(r) for r in i.leaves_by_size_mode), tuple(i.leaves_by_mode),
                tuple(i.records_by_layout), i.error_hint_blocks)
        return self._info

    @property
    def profile(self):
        return self.info.profile

    def reserved_symbols(self):
        """How many T158 symbols hold the reserved 0b11 (they decode as 0)."""
        return lib.sgfp4_tensor_reserved_symbols(self._handle().ptr)

    def block_leaves(self, block):
        """The leaves of block `block` (row-major index) in storage order, as Leaf."""
        h = self._handle()
        if not 0 <= block < self.info.blocks:
            raise argument_error(f"block {block} is outside 0..{self.info.blocks - 1}")
        leaves = (_lib.Leaf * 256)()
        n = lib.sgfp4_tensor_block_leaves(h.ptr, block, leaves, 256)
        return [Leaf(v.y, v.x, v.size, v.mode, v.header, v.scale, v.bias, v.payload_offset)
                for v in leaves[:n]]

    # ---- decoding ------------------------------------------------------------------------

    def decode(self, dtype="f32", *, out=None, threads=0, backend="auto", store="auto"):
        """The whole tensor as a (rows, cols) numpy array.

        dtype: "f32" (float32, normative), "f16" (float16) or "bf16" (uint16 holding the
        bfloat16 bit patterns; :func:`sgfp4.bf16_to_float32` widens them exactly). Both
        16-bit types are rounded to nearest even from the exact float32.
        out: an array to decode into instead of a new one (zero-copy: the library writes
        it directly): writable, shape (rows, cols), the dtype above, contiguous rows (any
        row stride). threads: 0 or 1 = the calling thread; N = N threads in all.
        backend: "auto" (the fastest kernels) or "scalar" (the reference).
        store: "auto", "cached" or "streaming" (speed only; the bits are the same).
        """
        return self.decode_rows(0, self.rows, dtype, out=out, threads=threads,
                                backend=backend, store=store)

    def decode_rows(self, begin, end, dtype="f32", *, out=None, threads=0, backend="auto",
                    store="auto"):
        """Rows [begin, end) as an (end - begin, cols) array (options as decode())."""
        h = self._handle()
        if not (_is_int(begin) and _is_int(end) and 0 <= begin < end <= self.rows):
            raise argument_error(f"decode_rows: rows [{begin}, {end}) are not a non-empty "
                                 f"range within [0, {self.rows})")
        dt = _dtype(dtype)
        arr, stride, cap = output_array(out, int(end) - int(begin), self.cols, NUMPY_OF[dt],
                                        "decode")
        opts = _call_options(threads, backend, store)
        status = lib.sgfp4_decode_rows(h.ptr, begin, end, dt, arr.ctypes.data, stride, cap,
                                       ctypes.byref(opts))
        check(status, f"decode rows [{begin}, {end}) of a {self.rows}x{self.cols} tensor")
        return arr

    def gather(self, rows, dtype="f32", *, out=None, threads=0, backend="auto",
               store="auto"):
        """Rows rows[0], rows[1], ... (any order, repeats allowed: an embedding lookup) as a
        (len(rows), cols) array (options as decode())."""
        h = self._handle()
        idx = np.asarray(rows)
        if idx.ndim != 1 or (idx.size and idx.dtype.kind not in "iu"):
            raise argument_error("gather: rows must be a 1-D sequence of integers")
        if idx.size == 0:
            raise argument_error("gather: no rows")
        if idx.min() < 0 or idx.max() >= self.rows:
            raise argument_error(f"gather: row {idx.min() if idx.min() < 0 else idx.max()} "
                                 f"is outside [0, {self.rows})")
        idx = np.ascontiguousarray(idx, dtype=np.uint64)
        dt = _dtype(dtype)
        arr, stride, cap = output_array(out, idx.size, self.cols, NUMPY_OF[dt], "gather")
        opts = _call_options(threads, backend, store)
        status = lib.sgfp4_decode_gather(
            h.ptr, idx.ctypes.data_as(ctypes.POINTER(ctypes.c_uint64)), idx.size, dt,
            arr.ctypes.data, stride, cap, ctypes.byref(opts))
        check(status, f"gather {idx.size} rows of a {self.rows}x{self.cols} tensor")
        return arr

    def __array__(self, dtype=None, copy=None):
        a = self.decode()  # always a new array
        return a if dtype is None else a.astype(dtype, copy=False)

    def __repr__(self):
        if self._h is None:
            return "<sgfp4.Tensor (closed)>"
        i = self.info
        return (f"<sgfp4.Tensor {i.profile.name.lower()} {self.rows}x{self.cols}, "
                f"{i.container_bytes} bytes, {i.bits_per_weight:.4f} bits per weight>")


def open(data, shape, profile="auto", *, limits=None, copy=None):  # noqa: A001
    """Opens and validates an SGFP4 container; returns a Tensor.

    data: the container bytes (bytes, bytearray, memoryview, mmap, numpy array: anything
    with the buffer protocol) or a file path (mapped read-only). Read-only buffers and files
    are used in place (zero-copy); writable ones are copied unless copy=False; copy=True
    always copies, and reads a file into memory instead of mapping it, so that nothing done
    to the file afterwards (rewriting, truncating) reaches the tensor (see docs/python.md,
    "Buffers" and "Mapped files"). shape: (rows, cols), the logical (O, I): a bare container
    does not store it. profile: "auto" (v2 if the bytes begin with 'SGF4'), "v1" or "v2".
    limits: {"max_elements": N, "max_container_bytes": N} (0 or absent = the defaults).
    Raises the Error subclass of the rule the bytes break, naming block, leaf and offset.
    """
    return Tensor._open(data, shape, profile, limits=limits, copy=copy)


def _is_int(v):
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _shape2(shape):
    try:
        rows, cols = shape
    except (TypeError, ValueError):
        raise argument_error(f"shape: {shape!r} is not (rows, cols)") from None
    if not (_is_int(rows) and _is_int(cols)) or rows < 0 or cols < 0 \
            or rows >= 2**64 or cols >= 2**64:
        raise argument_error(f"shape: {shape!r} is not two integers >= 0")
    return int(rows), int(cols)


def bf16_to_float32(bits):
    """bfloat16 bit patterns (a uint16 array, as decode(dtype="bf16") returns) widened
    exactly to float32."""
    bits = np.asarray(bits)
    if bits.dtype != np.uint16:
        raise argument_error(f"bf16_to_float32: expected uint16 bit patterns, not {bits.dtype}")
    return (bits.astype(np.uint32) << 16).view(np.float32)
