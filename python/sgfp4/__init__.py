# SPDX-License-Identifier: MIT
"""sgfp4: Python access to libsgfp4 (SGFP4 4-bit / ternary weight containers) with numpy.

    import sgfp4
    blob = sgfp4.encode(weights)                  # a 2-D float32 / float16 numpy array
    with sgfp4.open(blob, weights.shape) as t:    # validated once, strictly
        w = t.decode()                            # float32, bit-exact with `sgfp4 decode`

A pure-Python (ctypes) binding over the installed libsgfp4 (libsgfp4_model.so): docs/python.md
in the source tree describes it. Errors are raised as subclasses of sgfp4.Error, one per status.
"""

from . import _lib
from ._lib import LibraryNotFound
from ._types import Backend, DType, Fit, Metric, Policy as SplitPolicy, Profile, Store
from ._version import __version__
from .encode import ClippedWeightsWarning, EncodeOptions, Hessian, encode, encode_bound
from .errors import *  # noqa: F401,F403 - the exception classes
from .errors import Error, status_name, status_str
from .model import (Decision, ImportanceWarning, Model, ModelTensor, Policy, Progress,
                    QuantInfo, Summary, TensorReport, decode_model, encode_model,
                    float32_to_bf16, open_model, write_safetensors)
from .tensor import Leaf, Tensor, TensorInfo, bf16_to_float32, open  # noqa: A004
from . import matvec
from .matvec import MatvecPlan, Q8


class VersionMismatch(ImportError):
    """The loaded libsgfp4 is not the major.minor release this binding was written for."""


def library_version():
    """The loaded library's version string, "major.minor.patch" (sgfp4_version_string)."""
    return _lib.text(_lib.lib.sgfp4_version_string())


def library_path():
    """Where the loaded libsgfp4_model.so came from."""
    return _lib.library_path


def backend_name(backend="auto"):
    """The kernels a decode backend runs on this machine ("avx512", "avx2", "neon",
    "generic", "scalar"), or None where it cannot run."""
    from ._types import to_enum
    return _lib.text(_lib.lib.sgfp4_decode_backend_name(to_enum(Backend, backend, "backend")))


def has_matvec():
    """Whether the loaded library has the matrix-vector API (sgfp4.matvec, MatvecPlan)."""
    return matvec.AVAILABLE


def _check_version():
    number = _lib.lib.sgfp4_version()
    lib_mm = (number // 10000, number // 100 % 100)
    ours = tuple(int(p) for p in __version__.split(".")[:2])
    if lib_mm != ours:
        raise VersionMismatch(
            f"libsgfp4 {library_version()} at {_lib.library_path} is not the {ours[0]}."
            f"{ours[1]} release this binding ({__version__}) was written for: install "
            f"matching versions of the library and the sgfp4 package (0.x releases may change "
            f"the C API between minor versions)")


_check_version()
