# SPDX-License-Identifier: MIT
"""The C enums as Python IntEnums, and how the API's string / numpy spellings map to them."""

import enum

import numpy as np

from .errors import ArgumentError


class Profile(enum.IntEnum):
    """sgfp4_profile. AUTO: v2 if the bytes begin with 'SGF4', else v1."""
    AUTO = 0
    V1 = 1
    V2 = 2


class DType(enum.IntEnum):
    """sgfp4_dtype: the decode output types. F32 is normative."""
    F32 = 0
    F16 = 1
    BF16 = 2


class Backend(enum.IntEnum):
    """sgfp4_backend. GENERIC, AVX2, AVX512 and NEON force one kernel set: they are the C
    API's experimental tier (sgfp4_experimental.h), for tests and benchmarks."""
    AUTO = 0
    SCALAR = 1
    GENERIC = 3
    AVX2 = 4
    AVX512 = 5
    NEON = 6


class Store(enum.IntEnum):
    """sgfp4_store: how decode writes its output (every choice gives the same bits)."""
    AUTO = 0
    CACHED = 1
    STREAMING = 2


class Policy(enum.IntEnum):
    """sgfp4_policy: how the v2 encoder shapes the quadtree."""
    RATE = 0
    THRESHOLD = 1


class Fit(enum.IntEnum):
    """sgfp4_fit: how each leaf's scale and bias are fitted. FAST: the faster preset (the
    best fitting's search from fewer starts and rounds)."""
    BEST = 0
    REFERENCE = 1
    FAST = 2


class Metric(enum.IntEnum):
    """sgfp4_error_metric: what rate control and the leaf fits minimize. SSE: the squared
    error; ROW_RELATIVE ("row"): each output row's squared error over its squared norm."""
    SSE = 0
    ROW_RELATIVE = 1


# numpy dtype of the decoded array for each DType (bf16 values are their 16-bit patterns).
NUMPY_OF = {DType.F32: np.dtype(np.float32), DType.F16: np.dtype(np.float16),
            DType.BF16: np.dtype(np.uint16)}

_ALIASES = {
    DType: {"f32": DType.F32, "float32": DType.F32, "f16": DType.F16, "float16": DType.F16,
            "half": DType.F16, "bf16": DType.BF16, "bfloat16": DType.BF16},
    Metric: {"row": Metric.ROW_RELATIVE},
}


def to_enum(cls, value, what):
    """`value` as a member of `cls`: a member, its int value, or its name in any case
    ("v2", "scalar"); for DType also "float32", "f16", "bfloat16" and numpy float32/float16."""
    if isinstance(value, cls):
        return value
    if isinstance(value, str):
        key = value.lower()
        alias = _ALIASES.get(cls, {}).get(key)
        if alias is not None:
            return alias
        for member in cls:
            if member.name.lower() == key:
                return member
    elif isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        try:
            return cls(int(value))
        except ValueError:
            pass
    elif cls is DType:
        try:
            dt = np.dtype(value)
        except TypeError:
            dt = None
        if dt == np.float32:
            return DType.F32
        if dt == np.float16:
            return DType.F16
    names = ", ".join(m.name.lower() for m in cls)
    raise argument_error(f"{what}: {value!r} is not one of {names}")


def argument_error(message):
    """An ArgumentError raised by the binding itself (a bad Python-side argument)."""
    return ArgumentError(1, message)


#: SGFP4_MAX_THREADS of sgfp4.h: the most threads any call takes (a test checks the header).
MAX_THREADS = 256


def thread_count(threads, what="threads"):
    """`threads` of a call as an int: 0 (the default: the calling thread) .. MAX_THREADS;
    else an ArgumentError naming the argument (the library's own refusal names nothing)."""
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 0:
        raise argument_error(f"{what}: {threads!r} is not a count >= 0")
    if threads > MAX_THREADS:
        raise argument_error(f"{what}: {threads} is above {MAX_THREADS}, the most threads a "
                             f"call takes")
    return int(threads)
