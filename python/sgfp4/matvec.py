# SPDX-License-Identifier: MIT
"""Matrix-vector products on compressed weights (DECISIONS D8; the C API's sgfp4_matvec_*).

y = W x straight from an opened container, numpy in and numpy out, bit for bit the library's
(every kernel set, thread count and row split gives the same float32 bits). Two classes of
activations: Class A quantizes x first (quantize(), once per x, reused by every matrix
that reads it) and the products are exact integer sums; Class B uses float32 / float16
activations as they are.

Available when the loaded library has the matvec API (`sgfp4.has_matvec()`).
"""

import ctypes
import functools

import numpy as np

from . import _lib
from ._lib import lib, text
from ._types import Backend, DType, argument_error, thread_count, to_enum
from .errors import check

#: Most vectors one C product call takes; longer batches are split (same bits: each vector
#: of a batch is computed alone).
MAX_BATCH = 16


class MatvecOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("backend", ctypes.c_int),
                ("threads", ctypes.c_uint), ("pool", ctypes.c_void_p), ("fast", ctypes.c_int)]


_PROTOTYPES = [
    ("sgfp4_matvec_options_init_sized", ctypes.c_int, ctypes.POINTER(MatvecOptions),
     ctypes.c_size_t),
    ("sgfp4_matvec_backend_name", ctypes.c_char_p, ctypes.c_int),
    ("sgfp4_matvec_plan_create", ctypes.c_int, ctypes.c_void_p,
     ctypes.POINTER(ctypes.c_void_p)),
    ("sgfp4_matvec_plan_free", None, ctypes.c_void_p),
    ("sgfp4_matvec_plan_bytes", ctypes.c_size_t, ctypes.c_void_p),
    ("sgfp4_matvec_q8_bytes", ctypes.c_size_t, ctypes.c_uint64, ctypes.c_uint),
    ("sgfp4_matvec_quantize", ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64,
     ctypes.c_uint, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t,
     ctypes.POINTER(MatvecOptions), ctypes.POINTER(_lib.Diag)),
    ("sgfp4_matvec_q8", ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
     ctypes.c_uint, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t,
     ctypes.c_size_t, ctypes.POINTER(MatvecOptions)),
    ("sgfp4_matvec_float", ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int,
     ctypes.c_uint, ctypes.c_size_t, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_void_p,
     ctypes.c_size_t, ctypes.c_size_t, ctypes.POINTER(MatvecOptions)),
    ("sgfp4_thread_pool_create", ctypes.c_int, ctypes.c_uint, ctypes.POINTER(ctypes.c_void_p)),
    ("sgfp4_thread_pool_free", None, ctypes.c_void_p),
    ("sgfp4_thread_pool_threads", ctypes.c_uint, ctypes.c_void_p),
]

AVAILABLE = all(_lib.has(p[0]) for p in _PROTOTYPES)
if AVAILABLE:
    for _p in _PROTOTYPES:
        _lib._proto(*_p)


def _require():
    if not AVAILABLE:
        raise argument_error(f"the loaded libsgfp4 ({_lib.library_path}) has no matvec API")


@functools.lru_cache(maxsize=256, typed=True)
def _options(threads, backend, fast=False):
    o = _lib.init_struct(MatvecOptions, "sgfp4_matvec_options_init")
    o.backend = to_enum(Backend, backend, "backend")
    o.threads = thread_count(threads)
    if not isinstance(fast, (bool, np.bool_)):
        raise argument_error(f"fast: {fast!r} is not True or False")
    o.fast = int(fast)
    return o


def _call_options(threads, backend, pool=None, fast=False):
    _require()
    try:
        o = _options(threads, backend, fast)
    except TypeError:
        o = _options.__wrapped__(threads, backend, fast)
    if pool is None:
        return o
    if not isinstance(pool, ThreadPool):
        raise argument_error(f"pool: expected a sgfp4.matvec.ThreadPool, not {pool!r}")
    pooled = MatvecOptions.from_buffer_copy(o)  # the cached struct stays without a pool
    pooled.pool = pool._pool()
    pooled._keep = pool._h  # the workers stay alive while a call holds these options
    return pooled


class _Owner:
    """What ThreadPool and MatvecPlan share: they own one C object through a _Handle
    (`self._h`), released by close(), on leaving a `with` block or by the garbage collector;
    `_ptr()` is the object, or ArgumentError naming `_what` once closed."""

    _what = "object"

    def close(self):
        self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _ptr(self):
        if self._h is None:
            raise argument_error(f"the {self._what} is closed")
        return self._h.ptr


class ThreadPool(_Owner):
    """Worker threads started once for many products (sgfp4_thread_pool):
    `ThreadPool(threads)` counts the calling thread, as `threads=` does. Pass it as
    `pool=` to q8() and float(): a product then starts no thread (without one, a call
    with threads > 1 starts and joins its threads each time). One product at a time per
    pool: calls from several Python threads on one pool take turns. Same bits either way.
    close() (or leaving a `with` block, or garbage collection) stops the workers.
    """

    _what = "thread pool"

    def __init__(self, threads):
        _require()
        if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or \
                threads < 0:
            raise argument_error(f"threads: {threads!r} is not a count >= 0")
        ptr = ctypes.c_void_p()
        check(lib.sgfp4_thread_pool_create(min(int(threads), 2**32 - 1), ctypes.byref(ptr)),
              "create a thread pool")
        from .tensor import _Handle
        self._h = _Handle(ptr.value, lib.sgfp4_thread_pool_free)

    @property
    def threads(self):
        """Threads a product on the pool can use, the caller's included."""
        return lib.sgfp4_thread_pool_threads(self._pool())

    def _pool(self):
        return self._ptr()


def backend_name(backend="auto"):
    """The kernels products run with for `backend` on this machine, or None."""
    _require()
    return text(lib.sgfp4_matvec_backend_name(to_enum(Backend, backend, "backend")))


def q8_bytes(cols, batch=1):
    """Bytes of the Class A activations of `batch` vectors of `cols` elements."""
    _require()
    return lib.sgfp4_matvec_q8_bytes(cols, batch) if batch <= MAX_BATCH else \
        batch * lib.sgfp4_matvec_q8_bytes(cols, 1)


def _activations(x, what):
    """x as a 2-D (batch, cols) float32 / float16 array with contiguous rows, its DType,
    its row stride in elements, and whether the caller gave one vector (1-D)."""
    a = np.asarray(x)
    single = a.ndim == 1
    if single:
        a = a[np.newaxis, :]
    if a.ndim != 2 or a.shape[0] == 0 or a.shape[1] == 0:
        raise argument_error(f"{what}: x must be (cols,) or (batch, cols), got {np.shape(x)}")
    if a.dtype == np.float32:
        dt = DType.F32
    elif a.dtype == np.float16:
        dt = DType.F16
    else:
        raise argument_error(f"{what}: x must be float32 or float16, not {a.dtype}")
    item = a.dtype.itemsize
    if a.strides[1] != item or a.strides[0] % item or (a.shape[0] > 1 and
                                                       a.strides[0] < a.shape[1] * item):
        a = np.ascontiguousarray(a)
    stride = a.strides[0] // item if a.shape[0] > 1 else a.shape[1]
    return a, dt, stride, single


class Q8:
    """Class A activations (the quantizer's output): `batch` vectors of `cols` elements in
    the q8 layout of docs/matvec.md, as one uint8 array `data`. `q` and `d` show each
    vector's int8 codes per 64-column block and the blocks' power-of-two scales."""

    def __init__(self, data, cols, batch, single):
        self.data, self.cols, self.batch, self._single = data, cols, batch, single

    @property
    def vector_bytes(self):
        return self.data.size // self.batch

    @property
    def q(self):
        """int8 codes, (batch, 64 * ceil(cols / 64)): padding columns are 0."""
        blocks = -(-self.cols // 64)
        v = self.data.reshape(self.batch, self.vector_bytes)
        return v[:, :64 * blocks].view(np.int8)

    @property
    def d(self):
        """Block scales, (batch, ceil(cols / 64)) float32: 0 or exactly 2^e."""
        blocks = -(-self.cols // 64)
        v = self.data.reshape(self.batch, self.vector_bytes)
        return v[:, 64 * blocks:64 * blocks + 4 * blocks].copy().view("<f4")

    def __repr__(self):
        return f"<sgfp4.Q8 {self.batch} x {self.cols}, {self.data.size} bytes>"


def quantize(x, *, backend="auto"):
    """The Class A quantizer (sgfp4_matvec_quantize): x (cols,) or (batch, cols), float32 or
    float16 -> Q8. NaN or infinite x raises ArgumentError naming the vector and column."""
    a, dt, stride, single = _activations(x, "quantize")
    batch, cols = a.shape
    opts = _call_options(0, backend)
    per = lib.sgfp4_matvec_q8_bytes(cols, 1)
    if per == 0:
        raise argument_error(f"quantize: no q8 layout for {cols} columns")
    data = np.empty(batch * per, dtype=np.uint8)
    for k in range(0, batch, MAX_BATCH):
        n = min(MAX_BATCH, batch - k)
        diag = _lib.Diag()
        check(lib.sgfp4_matvec_quantize(a[k:].ctypes.data, dt, cols, n, stride,
                                        data[k * per:].ctypes.data, n * per,
                                        ctypes.byref(opts), ctypes.byref(diag)), diag=diag)
    return Q8(data, cols, batch, single)


class MatvecPlan(_Owner):
    """A tensor prepared for products (sgfp4_matvec_plan): `MatvecPlan(tensor)`.

    Immutable: any number of threads may run products on one plan at once. It keeps the
    tensor's view alive. Products: q8(), float(), and `plan @ x` (Class B).
    """

    def __init__(self, tensor):
        _require()
        th = tensor._handle()
        ptr = ctypes.c_void_p()
        check(lib.sgfp4_matvec_plan_create(th.ptr, ctypes.byref(ptr)), "create a matvec plan")
        from .tensor import _Handle
        self._h = _Handle(ptr.value, lib.sgfp4_matvec_plan_free, th)
        self.shape = tensor.shape

    @property
    def nbytes(self):
        """Memory the plan holds (sgfp4_matvec_plan_bytes)."""
        return lib.sgfp4_matvec_plan_bytes(self._plan())

    _what = "matvec plan"

    def _plan(self):
        return self._ptr()

    def _rows(self, rows):
        total = self.shape[0]
        if rows is None:
            return 0, total
        if isinstance(rows, range):
            rows = slice(rows.start, rows.stop, rows.step)
        if isinstance(rows, slice):
            begin, end, step = rows.indices(total)
            if step != 1:
                raise argument_error("rows: only contiguous row ranges (step 1)")
            rows = (begin, end)
        try:
            begin, end = (int(v) for v in rows)
        except (TypeError, ValueError):
            raise argument_error(f"rows: {rows!r} is not (begin, end), a slice or a range") \
                from None
        if not 0 <= begin < end <= total:
            raise argument_error(f"rows [{begin}, {end}) are not a non-empty range within "
                                 f"[0, {total})")
        return begin, end

    def _out(self, out, batch, n):
        from ._buffers import output_array
        arr, stride, cap = output_array(out, batch, n, np.dtype(np.float32), "matvec")
        return arr, stride, cap

    def q8(self, q8, rows=None, *, out=None, threads=0, backend="auto", pool=None,
           fast=False):
        """Class A product: y = W[rows] x for the quantized activations `q8` (a Q8 of
        quantize(), made for this tensor's cols). rows: None (all), (begin, end), a slice
        or a range. pool: a ThreadPool for the threads (None: started per call). fast: the
        D9 fast products, which the CPU backends do not offer (True raises
        UnsupportedError, never a D8 result in their place). Returns float32 (n,) for a Q8
        of one 1-D vector, else (batch, n)."""
        plan = self._plan()
        if not isinstance(q8, Q8):
            raise argument_error("q8: expected the Q8 that sgfp4.matvec.quantize() returns")
        if q8.cols != self.shape[1]:
            raise argument_error(f"q8: made for {q8.cols} columns, the tensor has "
                                 f"{self.shape[1]}")
        begin, end = self._rows(rows)
        y, stride, cap = self._out(_as_2d(out, q8._single), q8.batch, end - begin)
        opts = _call_options(threads, backend, pool, fast)
        per = q8.vector_bytes
        for k in range(0, q8.batch, MAX_BATCH):
            n = min(MAX_BATCH, q8.batch - k)
            check(lib.sgfp4_matvec_q8(plan, q8.data[k * per:].ctypes.data, n * per, n, begin,
                                      end, y[k:].ctypes.data, stride,
                                      ((n - 1) * stride + (end - begin)) * 4,
                                      ctypes.byref(opts)),
                  f"matvec_q8 rows [{begin}, {end})")
        return y[0] if q8._single else y

    def float(self, x, rows=None, *, out=None, threads=0, backend="auto", pool=None,
              fast=False):
        """Class B product: y = W[rows] x for float32 / float16 activations x, (cols,) or
        (batch, cols). rows, pool, fast and the result as q8()."""
        plan = self._plan()
        a, dt, xstride, single = _activations(x, "matvec")
        batch, cols = a.shape
        if cols != self.shape[1]:
            raise argument_error(f"matvec: x has {cols} columns, the tensor {self.shape[1]}")
        begin, end = self._rows(rows)
        y, stride, cap = self._out(_as_2d(out, single), batch, end - begin)
        opts = _call_options(threads, backend, pool, fast)
        for k in range(0, batch, MAX_BATCH):
            n = min(MAX_BATCH, batch - k)
            check(lib.sgfp4_matvec_float(plan, a[k:].ctypes.data, dt, n, xstride, begin, end,
                                         y[k:].ctypes.data, stride,
                                         ((n - 1) * stride + (end - begin)) * 4,
                                         ctypes.byref(opts)),
                  f"matvec_float rows [{begin}, {end})")
        return y[0] if single else y

    def __matmul__(self, x):
        return self.float(x)


def _as_2d(out, single):
    if out is None or not single:
        return out
    if not isinstance(out, np.ndarray) or out.ndim != 1:
        raise argument_error("out: for one vector, a 1-D float32 array of the row count")
    return out[np.newaxis, :]
