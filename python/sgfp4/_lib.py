# SPDX-License-Identifier: MIT
"""Finding and loading libsgfp4_model.so, and the ctypes declarations of the C API.

libsgfp4_model.so is the model component (include/sgfp4_model.h); it links libsgfp4.so (the
core, include/sgfp4.h), found beside it, and the symbols of both are reached through it.

Everything here mirrors include/sgfp4.h and include/sgfp4_model.h one to one: the structs
have the C field order and types, the functions their C prototypes. Nothing else in the
package calls ctypes on the library directly except through `lib`.

Where the library is looked for, first match wins (docs/python.md, "Finding the library"):

1. ``$SGFP4_LIBRARY``: the path of ``libsgfp4_model.so`` itself, or a folder holding it (a
   build folder such as ``build/release``, or an installed ``lib`` folder);
2. the Python environment's prefix (``sys.prefix``: ``lib/``, ``lib/<multiarch>/``, ``lib64/``),
   where ``cmake --install BUILD --prefix "$VIRTUAL_ENV"`` puts it;
3. the dynamic loader (``LD_LIBRARY_PATH``, the ld.so cache, the system folders);
4. ``/usr/local/lib`` and its multiarch and lib64 folders: ``cmake --install``'s default
   prefix, which the loader does not search until ``ldconfig`` has run.
"""

import ctypes
import os
import sys
import sysconfig

from ._version import __version__ as _binding_version

LIBRARY = "libsgfp4_model.so"
# While the version is 0.x the soname carries the minor version (docs/api.md, "Libraries").
_major, _minor = _binding_version.split(".")[:2]
SONAME = f"{LIBRARY}.{_major}.{_minor}" if _major == "0" else f"{LIBRARY}.{_major}"
ENV_VAR = "SGFP4_LIBRARY"

c_size_t = ctypes.c_size_t
c_u8 = ctypes.c_uint8
c_u32 = ctypes.c_uint32
c_i32 = ctypes.c_int32
c_u64 = ctypes.c_uint64
c_i64 = ctypes.c_int64
c_int = ctypes.c_int  # every C enum of the API
c_uint = ctypes.c_uint
c_double = ctypes.c_double
c_float = ctypes.c_float
c_char_p = ctypes.c_char_p
c_void_p = ctypes.c_void_p
POINTER = ctypes.POINTER


class LibraryNotFound(ImportError):
    """libsgfp4_model.so could not be found or loaded (the message lists every place tried)."""


def _lib_dirs(prefix):
    multiarch = sysconfig.get_config_var("MULTIARCH") or ""
    dirs = [os.path.join(prefix, "lib")]
    if multiarch:
        dirs.append(os.path.join(prefix, "lib", multiarch))
    dirs.append(os.path.join(prefix, "lib64"))
    return dirs


def _candidates():
    """(description, path or soname) pairs in search order."""
    found = []
    env = os.environ.get(ENV_VAR)
    if env:
        if os.path.isdir(env):
            found.append((ENV_VAR, os.path.join(env, LIBRARY)))
        else:
            found.append((ENV_VAR, env))
        return found  # an explicit choice is never silently replaced by another library
    for d in _lib_dirs(sys.prefix):
        found.append(("sys.prefix", os.path.join(d, LIBRARY)))
    found.append(("dynamic loader", SONAME))
    for d in _lib_dirs("/usr/local"):
        found.append(("/usr/local", os.path.join(d, LIBRARY)))
    return found


def load():
    """Loads the library; returns (CDLL, path it came from). Raises LibraryNotFound."""
    tried = []
    for how, path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(f"{path} ({how}: no such file)")
            continue
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            tried.append(f"{path} ({how}: {e})")
    raise LibraryNotFound(
        f"{LIBRARY} not found. Install libsgfp4 (cmake --install BUILD --prefix PREFIX, into this "
        f"environment's prefix {sys.prefix} or /usr/local) or set {ENV_VAR} to the library or "
        "to a build folder. Tried: " + "; ".join(tried))


lib, library_path = load()

# ---- structs (include/sgfp4.h) -----------------------------------------------------------


class Diag(ctypes.Structure):
    _fields_ = [("status", c_int), ("offset", c_i64), ("block", c_i64), ("leaf", c_i32),
                ("row", c_i64), ("col", c_i64), ("message", ctypes.c_char * 256)]


ALLOC_FN = ctypes.CFUNCTYPE(c_void_p, c_void_p, c_size_t)
FREE_FN = ctypes.CFUNCTYPE(None, c_void_p, c_void_p)


class Allocator(ctypes.Structure):
    _fields_ = [("alloc", ALLOC_FN), ("free", FREE_FN), ("user", c_void_p)]


class Limits(ctypes.Structure):
    _fields_ = [("max_elements", c_u64), ("max_container_bytes", c_u64),
                ("max_header_bytes", c_u64)]


class OpenOptions(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("limits", Limits), ("allocator", Allocator),
                ("copy", c_int)]


class ResultStruct(ctypes.Structure):
    """A struct the library fills (sgfp4.h, "Result structs"): made with struct_size = the
    size of this mirror, as the C header's sgfp4_<x>_init() does; the library refuses a
    size it does not know and writes nothing past it."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.struct_size = ctypes.sizeof(self)


class TensorInfo(ResultStruct):
    _fields_ = [("struct_size", c_size_t), ("profile", c_int), ("rows", c_u64), ("cols", c_u64), ("tiles_y", c_u64),
                ("tiles_x", c_u64), ("blocks", c_u64), ("container_bytes", c_u64),
                ("bits_per_weight", c_double), ("leaves", c_u64),
                ("leaves_by_size", c_u64 * 5), ("leaves_by_size_mode", (c_u64 * 2) * 5),
                ("leaves_by_mode", c_u64 * 2), ("records_by_layout", c_u64 * 6),
                ("error_hint_blocks", c_u64)]


class Leaf(ctypes.Structure):
    _fields_ = [("y", c_u8), ("x", c_u8), ("size", c_u8), ("mode", c_u8), ("header", c_u32),
                ("scale", c_float), ("bias", c_float), ("payload_offset", c_u64)]


class DecodeOptions(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("backend", c_int), ("threads", c_uint),
                ("store", c_int)]


class EncodeReport(ResultStruct):
    _fields_ = [("struct_size", c_size_t), ("clipped", c_u64), ("max_abs", c_double)]


CANCEL_FN = ctypes.CFUNCTYPE(c_int, c_void_p)


class EncodeOptions(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("profile", c_int), ("policy", c_int),
                ("target_bpw", c_double), ("delta", c_double), ("threshold", c_double),
                ("fit", c_int), ("threads", c_uint), ("allocator", Allocator),
                ("metric", c_int), ("column_importance", POINTER(ctypes.c_float)),
                ("row_importance", POINTER(ctypes.c_float)),
                ("report", POINTER(EncodeReport)), ("cancel", CANCEL_FN),
                ("cancel_user", c_void_p), ("hessian", c_void_p)]


class HessianOptions(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("damping", c_double), ("threads", c_uint),
                ("allocator", Allocator)]


# ---- structs (include/sgfp4_model.h) -----------------------------------------------------


class ModelQuant(ctypes.Structure):
    _fields_ = [("profile", c_int), ("rows", c_u64), ("cols", c_u64),
                ("original_rank", c_size_t), ("original_shape", POINTER(c_u64)),
                ("source_dtype", c_int), ("sha256", ctypes.c_char * 65),
                ("encoder_json", c_char_p)]


class ModelTensor(ctypes.Structure):
    _fields_ = [("name", c_char_p), ("dtype", c_int), ("rank", c_size_t),
                ("shape", POINTER(c_u64)), ("elements", c_u64), ("offset", c_u64),
                ("nbytes", c_u64), ("data", c_void_p), ("quant", POINTER(ModelQuant)),
                ("shard", c_size_t)]


class ModelOpenOptions(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("limits", Limits), ("temp_dir", c_char_p),
                ("max_decompressed_bytes", c_u64), ("ignore_index_total_size", c_int),
                ("max_tensors", c_u64), ("max_decompression_ratio", c_u64),
                ("max_temp_space_percent", ctypes.c_uint), ("copy", c_u64)]


SINK_WRITE_FN = ctypes.CFUNCTYPE(c_int, c_void_p, c_void_p, c_size_t)


class Sink(ctypes.Structure):
    _fields_ = [("write", SINK_WRITE_FN), ("user", c_void_p)]


class StEntry(ctypes.Structure):
    _fields_ = [("name", c_char_p), ("dtype", c_int), ("rank", c_size_t),
                ("shape", POINTER(c_u64))]


class ModelDecision(ResultStruct):
    _fields_ = [("struct_size", c_size_t), ("quantize", ctypes.c_bool), ("rows", c_u64), ("cols", c_u64),
                ("profile", c_int), ("policy", c_int), ("target_bpw", c_double),
                ("threshold", c_double), ("delta", c_double), ("fit", c_int), ("metric", c_int),
                ("reason", ctypes.c_char * 96), ("warning", ctypes.c_char * 160)]


class ModelProgress(ctypes.Structure):
    _fields_ = [("tensors_done", c_size_t), ("tensors_total", c_size_t),
                ("bytes_done", c_u64), ("bytes_total", c_u64), ("current", c_char_p)]


PROGRESS_FN = ctypes.CFUNCTYPE(None, c_void_p, POINTER(ModelProgress))


class ModelSummary(ResultStruct):
    _fields_ = [("struct_size", c_size_t), ("tensors", c_size_t), ("quantized", c_size_t), ("bytes_in", c_u64),
                ("bytes_out", c_u64), ("file_bytes_out", c_u64), ("quantized_weights", c_u64),
                ("quantized_bytes", c_u64), ("bits_per_weight", c_double),
                ("above_target", c_size_t), ("below_target", c_size_t), ("files", c_size_t),
                ("seconds", c_double), ("calibrated", c_size_t), ("rated", c_size_t)]


class ModelTensorReport(ctypes.Structure):
    _fields_ = [("tensor", POINTER(ModelTensor)), ("index", c_size_t), ("count", c_size_t),
                ("quantized", c_int), ("bytes_in", c_u64), ("bytes_out", c_u64),
                ("bits_per_weight", c_double), ("target_bpw", c_double),
                ("target_miss", c_int), ("reason", c_char_p), ("seconds", c_double),
                ("clipped", c_u64), ("importance", c_int), ("calibrated", c_int),
                ("rated", c_int)]


REPORT_FN = ctypes.CFUNCTYPE(None, c_void_p, POINTER(ModelTensorReport))


class ModelWriteOptions(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("temp_dir", c_char_p), ("progress", PROGRESS_FN),
                ("progress_user", c_void_p), ("decode_dtype", POINTER(c_int)),
                ("decode", POINTER(DecodeOptions)), ("tensor_report", REPORT_FN),
                ("summary", POINTER(ModelSummary)), ("max_output_elements", c_u64),
                ("importance", c_void_p), ("cancel", CANCEL_FN), ("cancel_user", c_void_p)]


class OutputOptions(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("flags", c_uint), ("inputs", c_void_p),
                ("force_name", c_char_p), ("zstd_level", c_int), ("zstd_threads", c_uint)]


OUTPUT_FORCE = 1
MODEL_OUTPUT_ENCODE, MODEL_OUTPUT_DECODE, MODEL_OUTPUT_WRITE = 0, 1, 2


# ---- prototypes --------------------------------------------------------------------------

P = POINTER


def _proto(name, restype, *argtypes):
    fn = getattr(lib, name)
    fn.restype = restype
    fn.argtypes = list(argtypes)


_PROTOTYPES = [
    # version, status
    ("sgfp4_version", c_uint),
    ("sgfp4_version_string", c_char_p),
    ("sgfp4_status_str", c_char_p, c_int),
    ("sgfp4_status_name", c_char_p, c_int),
    # containers
    ("sgfp4_open_options_init_sized", c_int, P(OpenOptions), c_size_t),
    ("sgfp4_tensor_open", c_int, c_void_p, c_size_t, c_int, c_u64, c_u64, P(c_void_p),
     P(OpenOptions), P(Diag)),
    ("sgfp4_tensor_close", None, c_void_p),
    ("sgfp4_tensor_get_info", c_int, c_void_p, P(TensorInfo)),
    ("sgfp4_tensor_reserved_symbols", c_u64, c_void_p),
    ("sgfp4_tensor_block_leaves", c_size_t, c_void_p, c_u64, P(Leaf), c_size_t),
    # decode
    ("sgfp4_dtype_size", c_size_t, c_int),
    ("sgfp4_decode_backend_name", c_char_p, c_int),
    ("sgfp4_decode_options_init_sized", c_int, P(DecodeOptions), c_size_t),
    ("sgfp4_decode_rows", c_int, c_void_p, c_u64, c_u64, c_int, c_void_p, c_size_t, c_size_t,
     P(DecodeOptions)),
    ("sgfp4_decode", c_int, c_void_p, c_int, c_void_p, c_size_t, c_size_t, P(DecodeOptions)),
    ("sgfp4_decode_gather", c_int, c_void_p, P(c_u64), c_size_t, c_int, c_void_p, c_size_t,
     c_size_t, P(DecodeOptions)),
    # encode
    ("sgfp4_encode_options_init_sized", c_int, P(EncodeOptions), c_size_t),
    ("sgfp4_encode_bound", c_size_t, c_int, c_u64, c_u64),
    ("sgfp4_encode_alloc", c_int, c_void_p, c_u64, c_u64, c_size_t, P(c_void_p), P(c_size_t),
     P(EncodeOptions), P(Diag)),
    ("sgfp4_free", None, c_void_p),
    ("sgfp4_hessian_options_init_sized", c_int, P(HessianOptions), c_size_t),
    ("sgfp4_hessian_create", c_int, c_void_p, c_u64, c_size_t, P(HessianOptions), P(c_void_p),
     P(Diag)),
    ("sgfp4_hessian_dim", c_u64, c_void_p),
    ("sgfp4_hessian_free", None, c_void_p),
    # models: reading
    ("sgfp4_st_dtype_name", c_char_p, c_int),
    ("sgfp4_st_dtype_size", c_size_t, c_int),
    ("sgfp4_st_dtype_parse", c_int, c_char_p, P(c_int)),
    ("sgfp4_model_open_options_init_sized", c_int, P(ModelOpenOptions), c_size_t),
    ("sgfp4_model_open", c_int, c_char_p, P(c_void_p), P(ModelOpenOptions), P(Diag)),
    ("sgfp4_model_open_memory", c_int, c_void_p, c_size_t, P(c_void_p), P(ModelOpenOptions),
     P(Diag)),
    ("sgfp4_model_close", None, c_void_p),
    ("sgfp4_model_tensor_count", c_size_t, c_void_p),
    ("sgfp4_model_tensor_at", P(ModelTensor), c_void_p, c_size_t),
    ("sgfp4_model_tensor_find", P(ModelTensor), c_void_p, c_char_p),
    ("sgfp4_model_metadata_count", c_size_t, c_void_p),
    ("sgfp4_model_metadata_at", c_int, c_void_p, c_size_t, P(c_char_p), P(c_char_p)),
    ("sgfp4_model_is_quantized", ctypes.c_bool, c_void_p),
    ("sgfp4_model_data_offset", c_u64, c_void_p),
    ("sgfp4_model_file_bytes", c_u64, c_void_p),
    ("sgfp4_model_was_compressed", ctypes.c_bool, c_void_p),
    ("sgfp4_model_is_set", ctypes.c_bool, c_void_p),
    ("sgfp4_model_shard_count", c_size_t, c_void_p),
    ("sgfp4_model_shard_name", c_char_p, c_void_p, c_size_t),
    ("sgfp4_st_dtype_bits", c_size_t, c_int),
    ("sgfp4_st_dtype_is_quantizable", ctypes.c_bool, c_int),
    ("sgfp4_model_tensor_evict", None, c_void_p, P(ModelTensor)),
    ("sgfp4_model_tensor_open", c_int, c_void_p, P(ModelTensor), P(c_void_p), P(OpenOptions),
     P(Diag)),
    ("sgfp4_model_tensor_verify", c_int, c_void_p, P(ModelTensor), P(Diag)),
    ("sgfp4_model_tensor_to_f32", c_int, P(ModelTensor), c_int, c_void_p, c_size_t, P(Diag)),
    # models: writing
    ("sgfp4_zstd_sink_begin", c_int, P(Sink), c_int, c_uint, P(c_void_p)),
    ("sgfp4_zstd_sink_get", Sink, c_void_p),
    ("sgfp4_zstd_sink_finish", c_int, c_void_p),
    ("sgfp4_zstd_sink_free", None, c_void_p),
    ("sgfp4_st_writer_begin", c_int, P(StEntry), c_size_t, P(c_char_p), P(c_char_p), c_size_t,
     P(Sink), P(c_void_p), P(Diag)),
    ("sgfp4_st_writer_write", c_int, c_void_p, c_void_p, c_size_t),
    ("sgfp4_st_writer_finish", c_int, c_void_p, P(Diag)),
    ("sgfp4_st_writer_free", None, c_void_p),
    ("sgfp4_model_policy_create", c_int, P(c_void_p)),
    ("sgfp4_model_policy_parse", c_int, c_char_p, c_size_t, P(c_void_p), P(Diag)),
    ("sgfp4_model_policy_defaults", P(EncodeOptions), c_void_p),
    ("sgfp4_model_policy_set_embeddings", None, c_void_p, c_int),
    ("sgfp4_model_policy_set_rates", c_int, c_void_p, c_int),
    ("sgfp4_model_policy_free", None, c_void_p),
    ("sgfp4_model_policy_decide", c_int, c_void_p, P(ModelTensor), P(ModelDecision)),
    ("sgfp4_model_decision_options", c_int, c_void_p, P(ModelDecision), P(EncodeOptions)),
    ("sgfp4_model_write_options_init_sized", c_int, P(ModelWriteOptions), c_size_t),
    ("sgfp4_model_encode", c_int, c_void_p, c_void_p, P(Sink), P(ModelWriteOptions), P(Diag)),
    ("sgfp4_model_decode", c_int, c_void_p, P(Sink), P(ModelWriteOptions), P(Diag)),
    # output files
    ("sgfp4_inputs_create", c_int, P(c_void_p)),
    ("sgfp4_inputs_add_path", c_int, c_void_p, c_char_p),
    ("sgfp4_inputs_add_model", c_int, c_void_p, c_void_p),
    ("sgfp4_inputs_free", None, c_void_p),
    ("sgfp4_output_options_init_sized", c_int, P(OutputOptions), c_size_t),
    ("sgfp4_output_remove_on_signals", c_int),
    ("sgfp4_model_output_open", c_int, c_char_p, c_void_p, c_int, P(OutputOptions),
     P(c_void_p), P(Diag)),
    ("sgfp4_model_output_encode", c_int, c_void_p, c_void_p, P(ModelWriteOptions), P(Diag)),
    ("sgfp4_model_output_decode", c_int, c_void_p, P(ModelWriteOptions), P(Diag)),
    ("sgfp4_model_output_sink", Sink, c_void_p),
    ("sgfp4_model_output_cancel", None, c_void_p),
    ("sgfp4_model_output_commit", c_int, c_void_p, P(Diag)),
    ("sgfp4_model_output_files", c_size_t, c_void_p),
    ("sgfp4_model_output_close", None, c_void_p),
]

for _p in _PROTOTYPES:
    _proto(*_p)


def init_struct(cls, init_name):
    """A C options struct `cls` set by the library's defaults (init_name is the C header's
    sgfp4_x_options_init, an inline function there).

    The binding calls what that inline function calls, sgfp4_x_options_init_sized, with the
    size of the fields declared here (ctypes.sizeof of this mirror), as a C program compiled
    against the header this mirror follows would: the library writes the defaults of those
    fields and nothing past them, and reads no field this binding does not know (those keep
    their defaults: docs/api.md, "Conventions")."""
    from .errors import check  # errors imports this module

    o = cls()
    init_sized = getattr(lib, init_name + "_sized")
    # cls may be a mirror of an earlier layout (a prefix of the declared struct)
    check(init_sized(ctypes.cast(ctypes.pointer(o), init_sized.argtypes[0]), ctypes.sizeof(cls)),
          f"{init_name}: the library ({library_path}) does not know this binding's layout "
          f"of the struct ({ctypes.sizeof(cls)} bytes): it is older than the binding")
    return o


def has(name):
    """Whether the loaded library exports `name` (for parts of the API newer than 0.1)."""
    return hasattr(lib, name)


def text(b):
    """A C string from the library as str (None stays None)."""
    return None if b is None else b.decode("utf-8", "replace")
