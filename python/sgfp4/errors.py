# SPDX-License-Identifier: MIT
"""One exception class per sgfp4_status, under one base class, `sgfp4.Error`.

Every failure the library reports is raised as the class of its status. The classes are
grouped by what went wrong, and those that mean "a bad value" also derive from the built-in
exception a Python caller would expect (ValueError, MemoryError, OSError, KeyError):

    Error
    +-- ArgumentError (ValueError)            ERR_ARGUMENT
    +-- DstTooSmallError (ValueError)         ERR_DST_TOO_SMALL
    +-- OutputRefusedError (OSError)          ERR_OUTPUT_REFUSED
    +-- OutOfMemoryError (MemoryError)        ERR_NOMEM
    +-- UnsupportedError                      ERR_UNSUPPORTED
    +-- UnavailableError                      ERR_UNAVAILABLE
    +-- LimitError                            ERR_LIMIT
    +-- InputOutputError (OSError)            ERR_IO
    +-- InternalError                         ERR_INTERNAL
    +-- ShapeError (ValueError)               ERR_SHAPE
    +-- ContainerError (ValueError)           a container broke an acceptance rule
    |   +-- TruncatedError, V1LengthError, ... V2TrailingBytesError
    +-- ModelFileError (ValueError)           a malformed safetensors file or manifest
    |   +-- ModelFormatError, ModelJsonError, ... ModelManifestError, ModelIndexError
    +-- HashMismatchError                     ERR_HASH_MISMATCH
    +-- NotFoundError (KeyError)              ERR_NOT_FOUND
    +-- VulkanError                           ERR_VK_*
    +-- CancelledError                        ERR_CANCELLED

The values and names are the library's (include/sgfp4.h, SGFP4_STATUS_LIST); a test checks
this table against the loaded library's sgfp4_status_name() for every value.
"""

from ._lib import lib, text


class Error(Exception):
    """A libsgfp4 failure.

    Attributes: ``status`` (the sgfp4_status value), ``status_name`` (its identifier,
    e.g. ``"V2_LAYOUT"``), ``message`` (the library's diagnostic: the block / record / leaf
    and byte offset for untrusted input, else the status's description), and ``offset``,
    ``block``, ``leaf`` as numbers (None where the library gave none).
    """

    def __init__(self, status, message, offset=None, block=None, leaf=None):
        super().__init__(message)
        self.status = status
        self.status_name = status_name(status)
        self.message = message
        self.offset = offset
        self.block = block
        self.leaf = leaf

    def __str__(self):
        return f"{self.message} [{self.status_name}]"

    def __reduce__(self):
        return (_rebuild, (self.status, self.message, self.offset, self.block, self.leaf))


class ArgumentError(Error, ValueError):
    pass


class DstTooSmallError(Error, ValueError):
    pass


class OutOfMemoryError(Error, MemoryError):
    pass


class UnsupportedError(Error):
    pass


class UnavailableError(Error):
    pass


class LimitError(Error):
    pass


class InputOutputError(Error, OSError):
    pass


class OutputRefusedError(Error, OSError):
    """An output the output rules refuse (docs/python.md, "Outputs"): one of the job's
    inputs, an existing file without force=True, a folder, a missing folder, a link to
    nothing, a terminal."""


class InternalError(Error):
    pass


class ShapeError(Error, ValueError):
    pass


class ContainerError(Error, ValueError):
    """The container bytes break an acceptance rule (docs/format.md, "Acceptance")."""


class ModelFileError(Error, ValueError):
    """The safetensors file or its sgfp4 manifest is malformed (docs/model.md)."""


class HashMismatchError(Error):
    pass


class NotFoundError(Error, KeyError):
    pass


class VulkanError(Error):
    pass


class CancelledError(Error):
    """A cancel hook stopped the call. The binding's own calls turn a Ctrl-C into
    KeyboardInterrupt instead (docs/python.md, "Interrupting")."""


def _sub(name, base, doc):
    return type(name, (base,), {"__doc__": doc, "__module__": __name__})


# (value, status name, class). Leaf classes of the three groups are made here so that each
# status has exactly one class; their names are the status name in CamelCase + "Error".
_TABLE = [
    (1, "ARGUMENT", ArgumentError),
    (2, "NOMEM", OutOfMemoryError),
    (3, "UNSUPPORTED", UnsupportedError),
    (4, "UNAVAILABLE", UnavailableError),
    (5, "LIMIT", LimitError),
    (6, "IO", InputOutputError),
    (7, "INTERNAL", InternalError),
    (8, "DST_TOO_SMALL", DstTooSmallError),
    (9, "OUTPUT_REFUSED", OutputRefusedError),
    (10, "SHAPE", ShapeError),
    (46, "HASH_MISMATCH", HashMismatchError),
    (47, "NOT_FOUND", NotFoundError),
    (50, "CANCELLED", CancelledError),
]
_GROUPS = [
    (ContainerError, [
        (11, "TRUNCATED", "TruncatedError"), (12, "V1_LENGTH", "V1LengthError"),
        (13, "V1_RESERVED_FLAGS", "V1ReservedFlagsError"),
        (14, "V1_OFFSET_RANGE", "V1OffsetRangeError"), (15, "V1_T158_TAIL", "V1T158TailError"),
        (16, "SCALE_NONFINITE", "ScaleNonfiniteError"),
        (17, "SCALE_NEGATIVE", "ScaleNegativeError"),
        (18, "BIAS_NONFINITE", "BiasNonfiniteError"), (20, "V2_MAGIC", "V2MagicError"),
        (21, "V2_VERSION", "V2VersionError"), (22, "V2_HEADER_PAD", "V2HeaderPadError"),
        (23, "V2_BLOCK_COUNT", "V2BlockCountError"), (24, "V2_TABLE_PAD", "V2TablePadError"),
        (25, "V2_OFFSET_ALIGN", "V2OffsetAlignError"),
        (26, "V2_OFFSET_ORDER", "V2OffsetOrderError"),
        (27, "V2_RECORD_BOUNDS", "V2RecordBoundsError"),
        (28, "V2_SB_RESERVED", "V2SbReservedError"), (29, "V2_LAYOUT", "V2LayoutError"),
        (30, "V2_SPLIT_OVERRUN", "V2SplitOverrunError"),
        (31, "V2_SPLIT_TRAILING", "V2SplitTrailingError"),
        (32, "V2_LEAF_FLAGS", "V2LeafFlagsError"),
        (33, "V2_LEAF_HEADER_PAD", "V2LeafHeaderPadError"),
        (34, "V2_PAYLOAD_PAD", "V2PayloadPadError"),
        (35, "V2_TRAILING_BYTES", "V2TrailingBytesError")]),
    (ModelFileError, [
        (40, "MODEL_FORMAT", "ModelFormatError"), (41, "MODEL_JSON", "ModelJsonError"),
        (42, "MODEL_DTYPE", "ModelDtypeError"), (43, "MODEL_OFFSETS", "ModelOffsetsError"),
        (44, "MODEL_DUPLICATE", "ModelDuplicateError"),
        (45, "MODEL_MANIFEST", "ModelManifestError"), (48, "MODEL_INDEX", "ModelIndexError")]),
    (VulkanError, [
        (60, "VK_DEVICE_LOST", "VkDeviceLostError"),
        (61, "VK_OUT_OF_MEMORY", "VkOutOfMemoryError"),
        (62, "VK_NO_DEVICE", "VkNoDeviceError"), (63, "VK", "VkError")]),
]

#: status value -> exception class
CLASSES = {}
#: status value -> status name (without the ERR_ prefix, as sgfp4_status_name gives it)
NAMES = {0: "OK"}
for _value, _name, _cls in _TABLE:
    CLASSES[_value] = _cls
    NAMES[_value] = _name
for _base, _members in _GROUPS:
    for _value, _name, _clsname in _members:
        _cls = _sub(_clsname, _base, f"Status ERR_{_name} ({_value}).")
        globals()[_clsname] = _cls
        CLASSES[_value] = _cls
        NAMES[_value] = _name

#: Every exception class, by class name (what `from sgfp4.errors import *` exports).
__all__ = sorted({c.__name__ for c in CLASSES.values()} |
                 {"Error", "ContainerError", "ModelFileError", "VulkanError"})


def status_name(status):
    """The status's identifier, e.g. "V2_LAYOUT" (the library's sgfp4_status_name)."""
    return text(lib.sgfp4_status_name(status))


def status_str(status):
    """The status's one-line English description (the library's sgfp4_status_str)."""
    return text(lib.sgfp4_status_str(status))


def make_error(status, message=None, diag=None, context=None):
    """The exception for `status`: the diag's message when it has one (after `context`, what
    the call was, when given), else `message` (what the binding knows of the call), else the
    status's description."""
    offset = block = leaf = None
    if diag is not None and diag.message:
        message = text(diag.message)
        if context:
            message = f"{context}: {message}"
        offset = diag.offset if diag.offset >= 0 else None
        block = diag.block if diag.block >= 0 else None
        leaf = diag.leaf if diag.leaf >= 0 else None
    elif message is None:
        message = status_str(status)
    else:
        message = f"{message}: {status_str(status)}"
    return CLASSES.get(status, Error)(status, message, offset, block, leaf)


def check(status, message=None, diag=None, context=None):
    """Raises the status's exception unless status is OK (0)."""
    if status != 0:
        raise make_error(status, message, diag, context)


def _rebuild(status, message, offset, block, leaf):
    return CLASSES.get(status, Error)(status, message, offset, block, leaf)
