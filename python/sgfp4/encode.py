# SPDX-License-Identifier: MIT
"""Encoding a numpy float matrix into a container (sgfp4_encode)."""

import ctypes
import warnings
from dataclasses import dataclass, field, fields, replace

import numpy as np

from . import _lib
from ._interrupt import Interruptible
from ._lib import lib
from ._types import Fit, Metric, Policy, Profile, argument_error, thread_count, to_enum
from .errors import check


class Hessian:
    """An input's Hessian prepared for calibrated encoding (sgfp4_hessian_create,
    docs/encoder.md "Calibrated encoding"): `Hessian(h)` from a square float array
    h = E[x x^T] over the activations x that a matrix's columns multiply (any positive
    multiple gives the same result; only (h + h.T) / 2 is used). Factored once; pass it as
    `hessian=` to every encode() of a matrix that reads that input. damping: added to the
    diagonal as damping * mean(diag h), in (0, 1000], default 0.01. threads: as encode()'s
    (the result does not depend on it). ArgumentError for a matrix that is not square,
    finite, symmetric (to 1e-3 of sqrt(h_ii h_jj)) and positive semidefinite.
    close() (or leaving a `with` block, or garbage collection) releases it."""

    def __init__(self, h, *, damping=None, threads=0):
        a = np.asarray(h)
        if a.ndim != 2 or a.shape[0] != a.shape[1] or a.shape[0] == 0 or \
                a.dtype.kind not in "fiu":
            raise argument_error(f"Hessian: expected a square non-empty matrix of numbers, "
                                 f"got shape {a.shape} of {a.dtype}")
        a = np.ascontiguousarray(a, dtype=np.float32)
        if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or \
                threads < 0:
            raise argument_error(f"threads: {threads!r} is not a count >= 0")
        o = _lib.init_struct(_lib.HessianOptions, "sgfp4_hessian_options_init")
        if damping is not None:
            o.damping = float(damping)
        o.threads = min(int(threads), 2**32 - 1)
        ptr = ctypes.c_void_p()
        diag = _lib.Diag()
        status = lib.sgfp4_hessian_create(a.ctypes.data, a.shape[0], a.shape[0],
                                          ctypes.byref(o), ctypes.byref(ptr), ctypes.byref(diag))
        check(status, f"prepare a {a.shape[0]}x{a.shape[0]} Hessian", diag)
        from .tensor import _Handle
        self._h = _Handle(ptr.value, lib.sgfp4_hessian_free)

    @property
    def dim(self):
        """The columns of the matrices it calibrates."""
        return lib.sgfp4_hessian_dim(self._ptr())

    def close(self):
        self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _ptr(self):
        if self._h is None:
            raise argument_error("the Hessian is closed")
        return self._h.ptr

    def __repr__(self):
        return "Hessian(closed)" if self._h is None else f"Hessian(dim={self.dim})"


@dataclass(frozen=True)
class EncodeOptions:
    """sgfp4_encode_options, field for field (docs/encoder.md). The defaults are the
    library's own (sgfp4_encode_options_init), read when the package is imported.

    profile: "v2" (default; "auto" means v2) or "v1". policy: "rate" (hit target_bpw,
    default) or "threshold" (the spec's reference split policy). target_bpw: bits per
    weight for the rate policy, in (0, 64], default 4.5. delta: the dual-mode rule's margin,
    >= 0, default 0.10. threshold: scale of the threshold policy's split thresholds, > 0,
    default 1.0. fit: "best" (default), "fast" (the faster preset) or "reference". threads:
    0 or 1 = the calling thread; N = N threads in all (the bytes do not depend on it).
    metric: "sse" (default) or "row" (each output row's error relative to its norm; v2 rate
    policy only). column_importance / row_importance: None (default) or one value per input
    column / output row of the matrix encode() gets (finite, >= 0, not all 0), the error
    weights of docs/encoder.md, "Error metrics"; kept as float32 tuples. They belong to one
    matrix: whole models take an importance file instead (encode_model(importance=...)).
    hessian: None (default) or a Hessian (or a square array, prepared for the call) of the
    matrix's input, whose dimension is its column count: the calibrated encode
    (docs/encoder.md, "Calibrated encoding"); it too belongs to one matrix.
    """
    profile: Profile = None
    policy: Policy = None
    target_bpw: float = None
    delta: float = None
    threshold: float = None
    fit: Fit = None
    threads: int = None
    metric: Metric = None
    column_importance: tuple = field(default=None, repr=False)
    row_importance: tuple = field(default=None, repr=False)
    hessian: Hessian = field(default=None, repr=False)

    def __post_init__(self):
        d = _DEFAULTS
        set_ = object.__setattr__
        set_(self, "profile", to_enum(Profile, d.profile if self.profile is None
                                      else self.profile, "profile"))
        set_(self, "policy", to_enum(Policy, d.policy if self.policy is None
                                     else self.policy, "policy"))
        set_(self, "fit", to_enum(Fit, d.fit if self.fit is None else self.fit, "fit"))
        set_(self, "metric", to_enum(Metric, d.metric if self.metric is None
                                     else self.metric, "metric"))
        for name in ("column_importance", "row_importance"):
            v = getattr(self, name)
            if v is not None:
                a = np.asarray(v)
                if a.ndim != 1 or a.size == 0 or a.dtype.kind not in "fiu":
                    raise argument_error(f"{name}: expected a non-empty 1-D array of numbers")
                set_(self, name, tuple(float(x) for x in a.astype(np.float32)))
        if self.hessian is not None and not isinstance(self.hessian, Hessian):
            set_(self, "hessian", Hessian(self.hessian))
        for name in ("target_bpw", "delta", "threshold"):
            v = getattr(self, name)
            set_(self, name, float(getattr(d, name) if v is None else v))
        set_(self, "threads", thread_count(d.threads if self.threads is None
                                           else self.threads))

    def to_c(self, rows=None, cols=None):
        """The C struct (sgfp4_encode_options_init, then these fields). With importance
        vectors, the shape they must fit (their float32 copies live as long as the
        struct)."""
        o = _lib.init_struct(_lib.EncodeOptions, "sgfp4_encode_options_init")
        self._write_fields(o)
        keep = []
        for name, n, what in (("column_importance", cols, "columns"),
                              ("row_importance", rows, "rows")):
            v = getattr(self, name)
            if v is None:
                continue
            if n is None or len(v) != n:
                raise argument_error(f"{name}: {len(v)} values for {n} {what}")
            a = np.array(v, dtype=np.float32)
            keep.append(a)
            setattr(o, name, a.ctypes.data_as(ctypes.POINTER(ctypes.c_float)))
        if self.hessian is not None:
            if cols is None or self.hessian.dim != cols:
                raise argument_error(f"hessian: dimension {self.hessian.dim} for {cols} "
                                     "columns")
            o.hessian = self.hessian._ptr()
            keep.append(self.hessian._h)  # the factor lives while the struct does
        o._importance = keep
        return o

    def copy_into(self, o):
        """Writes these fields into an initialised C struct (keeps its allocator). The
        importance vectors are the one field it does not copy (to_c sets them for one
        matrix); options that have them are refused here."""
        if self.column_importance is not None or self.row_importance is not None or \
                self.hessian is not None:
            raise argument_error("column_importance, row_importance and hessian belong to one "
                                 "matrix (encode()); a whole model takes an importance file "
                                 "(encode_model(importance=...))")
        self._write_fields(o)

    def _write_fields(self, o):
        o.profile, o.policy, o.fit = int(self.profile), int(self.policy), int(self.fit)
        o.target_bpw, o.delta, o.threshold = self.target_bpw, self.delta, self.threshold
        o.threads = self.threads
        o.metric = int(self.metric)

    @classmethod
    def from_c(cls, o):
        return cls(Profile(o.profile), Policy(o.policy), o.target_bpw, o.delta, o.threshold,
                   Fit(o.fit), o.threads, Metric(o.metric))

    def with_(self, **changes):
        """A copy with some fields changed (None leaves a field as it is)."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})


class ClippedWeightsWarning(UserWarning):
    """Weights beyond the binary16 range (|w| > 65504), which the format cannot store, were
    encoded as +-65504. The count comes from the library (sgfp4_encode_report.clipped), as
    the `sgfp4` tool's warning does."""


def clipped_message(what, clipped, max_abs=None):
    """The words of a ClippedWeightsWarning for `clipped` weights of `what`."""
    largest = f" (largest |w| {max_abs:.6g})" if max_abs else ""
    return (f"{what}: {clipped} weight{'s' if clipped > 1 else ''} beyond the binary16 range"
            f"{largest} encoded as +-65504, the largest value the format stores")


_DEFAULTS = _lib.init_struct(_lib.EncodeOptions, "sgfp4_encode_options_init")
OPTION_NAMES = tuple(f.name for f in fields(EncodeOptions))


def encode(array, options=None, **overrides):
    """Encodes a 2-D float32 or float16 array (rows, cols) = (O, I); returns the container
    as bytes, which sgfp4.open(container, array.shape) reads back.

    options: an EncodeOptions (default: the library's defaults); keyword arguments
    (profile, policy, target_bpw, delta, threshold, fit, threads, metric,
    column_importance, row_importance, hessian) override its fields; importance vectors
    must have one value per column / row of the array, a Hessian the column count as its
    dimension.
    float16 input is widened exactly to float32 first. A float32 array whose rows are
    contiguous (any row stride, e.g. a column slice) is read in place. NaN or infinite
    values raise ArgumentError naming the first one's row and column, an option out of
    range one naming the option; values beyond the fp16 range are encoded as +-65504 and
    warned about (ClippedWeightsWarning, with their count).
    """
    unknown = set(overrides) - set(OPTION_NAMES)
    if unknown:
        raise argument_error(f"encode: unknown option(s) {', '.join(sorted(unknown))}")
    if options is None:
        options = EncodeOptions(**overrides)
    elif not isinstance(options, EncodeOptions):
        raise argument_error("encode: options must be an EncodeOptions")
    elif overrides:
        options = options.with_(**overrides)
    a = np.asarray(array)
    if a.ndim != 2:
        raise argument_error(f"encode: expected a 2-D array, got shape {a.shape}")
    if a.dtype == np.float16:
        a = a.astype(np.float32)
    elif a.dtype != np.float32:
        raise argument_error(f"encode: expected float32 or float16, got {a.dtype}")
    rows, cols = a.shape
    if rows and cols and not (a.strides[1] == 4 and a.strides[0] >= 4 * cols
                              and a.strides[0] % 4 == 0):
        a = np.ascontiguousarray(a)
    stride = a.strides[0] // 4 if rows > 1 else cols
    c_opts = options.to_c(rows, cols)
    report = _lib.EncodeReport()
    diag = _lib.Diag()
    c_opts.report = ctypes.pointer(report)
    out = ctypes.c_void_p()
    size = ctypes.c_size_t()
    try:
        with Interruptible() as interrupt:
            c_opts.cancel = interrupt.hook
            status = lib.sgfp4_encode_alloc(a.ctypes.data, rows, cols, stride,
                                            ctypes.byref(out), ctypes.byref(size),
                                            ctypes.byref(c_opts), ctypes.byref(diag))
        what = f"encode a {rows}x{cols} matrix"
        check(status, what, diag=diag, context=what)
        if report.clipped:
            warnings.warn(clipped_message(f"encode a {rows}x{cols} matrix", report.clipped,
                                          report.max_abs), ClippedWeightsWarning, stacklevel=2)
        return ctypes.string_at(out.value, size.value)
    finally:
        lib.sgfp4_free(out.value)


def encode_bound(profile, rows, cols):
    """The largest container encode() can produce for this profile and shape."""
    return lib.sgfp4_encode_bound(to_enum(Profile, profile, "profile"), rows, cols)
