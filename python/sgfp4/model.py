# SPDX-License-Identifier: MIT
"""Whole models: safetensors files, plain or quantized (the D6 manifest), read lazily from a
mapping; whole-file encode and decode jobs; writing safetensors files."""

import ctypes
import json
import os
import warnings
from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

from . import _lib
from ._buffers import borrowed_array, input_bytes
from ._lib import lib, text
from ._output import Inputs, ModelOutput
from ._types import NUMPY_OF, DType, Profile, argument_error, to_enum
from .encode import OPTION_NAMES, ClippedWeightsWarning, EncodeOptions, clipped_message
from .errors import NotFoundError, check
from .tensor import Tensor, _Handle, decode_options, open_options

# safetensors dtype name -> numpy dtype of its stored values (little-endian). The 8-bit
# floats and BF16 have no numpy type: their bit patterns are shown as uint8 / uint16. The
# sub-byte dtypes (F4, F6_*) have no element type at all: raw() gives their bytes.
ST_NUMPY = {"BOOL": "?", "U8": "u1", "I8": "i1", "F8_E4M3": "u1", "F8_E5M2": "u1",
            "I16": "<i2", "U16": "<u2", "F16": "<f2", "BF16": "<u2", "I32": "<i4",
            "U32": "<u4", "F32": "<f4", "I64": "<i8", "U64": "<u8", "F64": "<f8",
            "F8_E8M0": "u1", "F8_E4M3FNUZ": "u1", "F8_E5M2FNUZ": "u1", "C64": "<c8"}
_NUMPY_ST = {np.dtype("?"): "BOOL", np.dtype("u1"): "U8", np.dtype("i1"): "I8",
             np.dtype("<i2"): "I16", np.dtype("<u2"): "U16", np.dtype("<f2"): "F16",
             np.dtype("<i4"): "I32", np.dtype("<u4"): "U32", np.dtype("<f4"): "F32",
             np.dtype("<i8"): "I64", np.dtype("<u8"): "U64", np.dtype("<f8"): "F64",
             np.dtype("<c8"): "C64"}


def _floats(dtype_name):
    """Whether the library converts this safetensors dtype to float32 exactly (and so can
    quantize and decode() it): F32, F16, BF16, F8_E4M3, F8_E5M2."""
    v = ctypes.c_int()
    return lib.sgfp4_st_dtype_parse(dtype_name.encode(), ctypes.byref(v)) == 0 and \
        bool(lib.sgfp4_st_dtype_is_quantizable(v.value))


def _st_name(value):
    return text(lib.sgfp4_st_dtype_name(value))


def _st_value(name):
    v = ctypes.c_int()
    if lib.sgfp4_st_dtype_parse(name.encode(), ctypes.byref(v)) != 0:
        raise argument_error(f"unknown safetensors dtype {name!r}")
    return v.value


@dataclass(frozen=True)
class QuantInfo:
    """What the manifest says about a quantized tensor (sgfp4_model_quant)."""
    profile: Profile
    shape: Tuple[int, int]          # the container's logical (rows, cols)
    original_shape: Tuple[int, ...]
    source_dtype: str               # "F32", "F16", "BF16", "F8_E4M3" or "F8_E5M2"
    sha256: str
    encoder: dict                   # the manifest's "encoder" object


@dataclass(frozen=True)
class Progress:
    """Progress of a model job, reported at the start and after each tensor."""
    tensors_done: int
    tensors_total: int
    bytes_done: int
    bytes_total: int
    current: Optional[str]          # the tensor just finished, or None


@dataclass(frozen=True)
class TensorReport:
    """What a model job did with one tensor (sgfp4_model_tensor_report)."""
    name: str
    index: int                      # the job's tensor `index` (from 0) of `count`
    count: int
    quantized: bool                 # encode: quantized; decode: restored from a container
    bytes_in: int
    bytes_out: int
    bits_per_weight: float          # encode, quantized: container bits per weight, else 0
    target_bpw: float               # encode, rate policy: its target, else 0
    target_miss: int                # 1 above the target, -1 more than 1% below, else 0
    reason: Optional[str]           # encode: the policy's reason
    seconds: float
    clipped: int = 0                # encode, quantized: weights beyond +-65504, encoded as it
    importance: int = 0             # encode with an importance file: its vectors used for
                                    # this tensor, 1 columns, 2 rows, 3 both, 0 none
    calibrated: bool = False        # encode: with its input's Hessian (importance file)
    rated: bool = False             # encode: its target chosen by sensitivity


@dataclass(frozen=True)
class Summary:
    """What a whole-model job did in total (sgfp4_model_summary)."""
    tensors: int
    quantized: int
    bytes_in: int
    bytes_out: int
    file_bytes_out: int
    quantized_weights: int
    quantized_bytes: int
    bits_per_weight: float
    above_target: int
    below_target: int
    files: int
    seconds: float
    calibrated: int = 0             # encode: tensors encoded with their input's Hessian
    rated: int = 0                  # encode: tensors whose target was chosen by sensitivity


class ModelTensor:
    """One tensor of an opened model. Reads nothing until asked; keeps the model's mapping
    alive while it (or an array borrowed from it) exists."""

    def __init__(self, handle, ptr):
        self._mh = handle
        self._p = ptr
        c = ptr.contents
        self.name = text(c.name)
        self.dtype = _st_name(c.dtype)
        self.shape = tuple(c.shape[i] for i in range(c.rank))
        self.elements = c.elements
        self.offset = c.offset
        self.nbytes = c.nbytes
        self.shard = c.shard
        self.quant = None
        if c.quant:
            q = c.quant.contents
            self.quant = QuantInfo(Profile(q.profile), (q.rows, q.cols),
                                   tuple(q.original_shape[i] for i in range(q.original_rank)),
                                   _st_name(q.source_dtype), text(q.sha256),
                                   json.loads(text(q.encoder_json)))

    @property
    def quantized(self):
        return self.quant is not None

    def _ptr(self):
        return self._p  # valid while this object lives: it holds the model's handle

    def raw(self):
        """The stored bytes (a quantized tensor's container) as a read-only uint8 array
        over the model's mapping (zero-copy)."""
        p = self._ptr()
        return borrowed_array(p.contents.data, (self.nbytes,), np.uint8, self._mh)

    def array(self):
        """The stored values as a read-only numpy array of the tensor's dtype and shape over
        the mapping (zero-copy). BF16 and the 8-bit floats show their bit patterns (uint16,
        uint8); the sub-byte dtypes (F4, F6_*) have no element type: use raw()."""
        p = self._ptr()
        if self.dtype not in ST_NUMPY:
            raise argument_error(f"{self.name}: {self.dtype} has no numpy element type "
                                 "(raw() gives its bytes)")
        return borrowed_array(p.contents.data, self.shape, ST_NUMPY[self.dtype], self._mh)

    def open(self, *, limits=None, copy=False):
        """The container of a quantized tensor as a Tensor (strict validation; no hash).
        copy=True: the Tensor reads its own copy of the container, made now, instead of the
        model's mapping (nothing done to the file afterwards reaches it)."""
        p = self._ptr()
        if not self.quantized:
            raise argument_error(f"{self.name}: not a quantized tensor")
        out = ctypes.c_void_p()
        diag = _lib.Diag()
        opts = open_options(limits, copy)
        check(lib.sgfp4_model_tensor_open(self._mh.ptr, p, ctypes.byref(out),
                                          ctypes.byref(opts) if opts else None,
                                          ctypes.byref(diag)), diag=diag)
        return Tensor(_Handle(out.value, lib.sgfp4_tensor_close, self._mh), self.quant.shape)

    def verify(self):
        """Validates the container strictly and checks its sha256 against the manifest
        (raises the container's error, or HashMismatchError)."""
        p = self._ptr()
        diag = _lib.Diag()
        check(lib.sgfp4_model_tensor_verify(self._mh.ptr, p, ctypes.byref(diag)), diag=diag)

    def decode(self, dtype="f32", *, verify=False, threads=0, backend="auto"):
        """The tensor's values as a new array of its (original) shape: a quantized tensor
        decoded, a plain F32 / F16 / BF16 / F8_E4M3 / F8_E5M2 tensor converted exactly to
        float32 first (dtype as Tensor.decode:
        "f32", "f16", or "bf16" as uint16 bit patterns). verify=True checks the sha256
        first. Other dtypes: use array()."""
        dt = to_enum(DType, dtype, "dtype")
        if self.quantized:
            if verify:
                self.verify()
            with self.open() as t:
                a = t.decode(dt, threads=threads, backend=backend)
            return a.reshape(self.quant.original_shape)
        if not _floats(self.dtype):
            raise argument_error(f"{self.name}: a {self.dtype} tensor has no float values to "
                                 "decode (array() gives them as stored)")
        if (dt, self.dtype) in ((DType.F16, "F16"), (DType.BF16, "BF16")):
            return np.array(self.array(), dtype=NUMPY_OF[dt])
        p = self._ptr()
        f32 = np.empty(self.shape, dtype=np.float32)
        diag = _lib.Diag()
        check(lib.sgfp4_model_tensor_to_f32(p, 0, f32.ctypes.data, f32.nbytes,
                                            ctypes.byref(diag)), diag=diag)
        if dt == DType.F16:
            return f32.astype(np.float16)
        if dt == DType.BF16:
            return float32_to_bf16(f32)
        return f32

    def evict(self):
        """Drops the tensor's pages from memory (re-read from the file if used again)."""
        p = self._ptr()
        lib.sgfp4_model_tensor_evict(self._mh.ptr, p)

    def __repr__(self):
        q = f", quantized {self.quant.profile.name.lower()}" if self.quant else ""
        return f"<sgfp4.ModelTensor {self.name!r} {self.dtype} {list(self.shape)}{q}>"


class Model:
    """An opened safetensors model (plain or quantized), mapped, its header checked strictly.

    Made by :func:`sgfp4.open_model`. Tensors are listed in file order; nothing is read
    until a tensor's data is asked for. ``close()`` (or a ``with`` block) releases it once
    nothing borrows from it any more (tensors, arrays from raw() / array(), containers).
    """

    def __init__(self, handle):
        self._h = handle
        ptr = handle.ptr
        n = lib.sgfp4_model_tensor_count(ptr)
        self._tensors = [ModelTensor(handle, lib.sgfp4_model_tensor_at(ptr, i))
                         for i in range(n)]
        self._by_name = {t.name: t for t in self._tensors}
        meta = {}
        for i in range(lib.sgfp4_model_metadata_count(ptr)):
            k, v = ctypes.c_char_p(), ctypes.c_char_p()
            lib.sgfp4_model_metadata_at(ptr, i, ctypes.byref(k), ctypes.byref(v))
            meta[text(k.value)] = text(v.value)
        self.metadata = meta
        self.quantized = bool(lib.sgfp4_model_is_quantized(ptr))
        self.data_offset = lib.sgfp4_model_data_offset(ptr)
        self.file_bytes = lib.sgfp4_model_file_bytes(ptr)
        self.was_compressed = bool(lib.sgfp4_model_was_compressed(ptr))
        #: Opened from a sharded set's index (model.safetensors.index.json)
        self.is_set = bool(lib.sgfp4_model_is_set(ptr))
        #: The set's shard file names (ModelTensor.shard indexes them); [] for one file
        self.shards = [text(lib.sgfp4_model_shard_name(ptr, i))
                       for i in range(lib.sgfp4_model_shard_count(ptr))] if self.is_set else []

    @property
    def manifest(self):
        """The parsed sgfp4 manifest (a dict) of a quantized model, else None."""
        m = self.metadata.get("sgfp4")
        return json.loads(m) if self.quantized and m is not None else None

    def close(self):
        self._tensors, self._by_name = [], {}
        self._h = _Handle(None, None)

    @property
    def closed(self):
        return self._h.ptr is None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _open(self):
        if self._h.ptr is None:
            raise argument_error("the model is closed")
        return self._tensors

    def names(self):
        """Tensor names in file order."""
        return [t.name for t in self._open()]

    @property
    def tensors(self):
        """Every ModelTensor, in file order."""
        return list(self._open())

    def __len__(self):
        return len(self._open())

    def __iter__(self):
        return iter(list(self._open()))

    def __contains__(self, name):
        self._open()
        return name in self._by_name

    def __getitem__(self, name):
        self._open()
        t = self._by_name.get(name)
        if t is None:
            raise NotFoundError(47, f"no tensor {name!r} in the model")
        return t

    def decoded(self, dtype="f32", *, verify=True, threads=0, evict=True):
        """Yields (name, array) for every float tensor, one at a time, in file order: the
        values of ModelTensor.decode(). With evict, each tensor's pages are dropped after
        use, so memory stays bounded on a model larger than RAM. Other dtypes are skipped."""
        for t in list(self._open()):
            if not t.quantized and not _floats(t.dtype):
                continue
            a = t.decode(dtype, verify=verify, threads=threads)
            if evict:
                t.evict()
            yield t.name, a

    def __repr__(self):
        if self.closed:
            return "<sgfp4.Model (closed)>"
        kind = "quantized" if self.quantized else "plain"
        return f"<sgfp4.Model {kind}, {len(self._tensors)} tensors, {self.file_bytes} bytes>"


def open_model(source, *, limits=None, temp_dir=None, max_decompressed_bytes=0, copy=None):
    """Opens a safetensors model (plain or quantized, or a zstd stream of either) and checks
    its header and manifest strictly (docs/model.md, "Reading"); returns a Model.

    source: a path (mapped; a .zst file is decompressed once into an unlinked temporary
    file in temp_dir, else $TMPDIR, else /tmp) or bytes-like (used in place when
    read-only, as sgfp4.open). copy=True reads a path's file (a set: every shard) into
    memory instead of mapping it, so that nothing done to the files afterwards reaches the
    model (costs the files' size in memory; docs/python.md, "Mapped files"); bytes-like
    sources are copied as sgfp4.open copies them. limits: {"max_header_bytes": N} (0 = 100
    MB).
    """
    o = _lib.init_struct(_lib.ModelOpenOptions, "sgfp4_model_open_options_init")
    for key, value in dict(limits or {}).items():
        if key not in ("max_elements", "max_container_bytes", "max_header_bytes"):
            raise argument_error(f"limits: unknown key {key!r}")
        setattr(o.limits, key, int(value))
    tmp = os.fsencode(temp_dir) if temp_dir is not None else None
    o.temp_dir = tmp
    o.max_decompressed_bytes = int(max_decompressed_bytes)
    ptr = ctypes.c_void_p()
    diag = _lib.Diag()
    if isinstance(source, (str, os.PathLike)):
        o.copy = 1 if copy else 0
        status = lib.sgfp4_model_open(os.fsencode(source), ctypes.byref(ptr), ctypes.byref(o),
                                      ctypes.byref(diag))
        keep = None
    else:
        keep = input_bytes(source, copy)
        status = lib.sgfp4_model_open_memory(keep.ctypes.data,
                                             keep.size, ctypes.byref(ptr), ctypes.byref(o),
                                             ctypes.byref(diag))
    check(status, diag=diag)
    return Model(_Handle(ptr.value, lib.sgfp4_model_close, keep))


def float32_to_bf16(values):
    """float32 -> bfloat16 bit patterns (uint16), rounded to nearest even; NaN stays a quiet
    NaN: the library's sgfp4_float_to_bf16 on every element."""
    a = np.ascontiguousarray(values, dtype=np.float32)
    u = a.view(np.uint32)
    out = ((u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1)))
           >> np.uint32(16)).astype(np.uint16)
    nan = np.isnan(a)
    if nan.any():
        out[nan] = ((u[nan] >> np.uint32(16)) | np.uint32(0x40)).astype(np.uint16)
    return out


# ---- policy ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Decision:
    """What a policy decided for one tensor (sgfp4_model_decision)."""
    quantize: bool
    rows: int
    cols: int
    options: EncodeOptions
    reason: str
    warning: str = ""   # why the options may hurt the model (a v2 rate below 4.125), or ""


_RATES = {"uniform": 0, "sensitivity": 1, "auto": 2}  # sgfp4_model_rates


class Policy:
    """Which tensors of a model to quantize, and how (docs/model.md, "Policy").

    Policy() is the default; Policy(document) parses a policy document: a dict, JSON text,
    or a path to a JSON file (os.PathLike, or a str that does not start with "{"). Unknown
    keys are errors. Keyword arguments override the document's "defaults" (as the CLI's
    --bpw, --profile... do): any EncodeOptions field (profile, policy, target_bpw, delta,
    threshold, fit, threads); embeddings=False passes embeddings through; rates="sensitivity"
    spreads the bits by sensitivity (docs/model.md, "Rates by sensitivity"; the encode then
    needs an importance file), rates="uniform" keeps each tensor at its own target, and
    rates="auto" (the default) is by sensitivity when the encode has an importance file.
    """

    def __init__(self, document=None, *, embeddings=None, rates=None, **defaults):
        unknown = set(defaults) - set(OPTION_NAMES)
        if unknown:
            raise argument_error(f"Policy: unknown option(s) {', '.join(sorted(unknown))}")
        ptr = ctypes.c_void_p()
        if document is None:
            check(lib.sgfp4_model_policy_create(ctypes.byref(ptr)), "create a policy")
        else:
            if isinstance(document, dict):
                raw = json.dumps(document).encode()
            elif isinstance(document, os.PathLike) or (
                    isinstance(document, str) and not document.lstrip().startswith("{")):
                with open(document, "rb") as f:
                    raw = f.read()
            elif isinstance(document, (str, bytes)):
                raw = document.encode() if isinstance(document, str) else document
            else:
                raise argument_error("Policy: document must be a dict, JSON text or a path")
            diag = _lib.Diag()
            check(lib.sgfp4_model_policy_parse(raw, len(raw), ctypes.byref(ptr),
                                               ctypes.byref(diag)), diag=diag)
        self._h = _Handle(ptr.value, lib.sgfp4_model_policy_free)
        if rates is not None:
            if rates not in _RATES:
                raise argument_error(f"Policy: rates must be 'auto', 'uniform' or "
                                     f"'sensitivity', not {rates!r}")
            check(lib.sgfp4_model_policy_set_rates(self._h.ptr, _RATES[rates]), "set the rates")
        if embeddings is not None:
            lib.sgfp4_model_policy_set_embeddings(self._h.ptr, 1 if embeddings else 0)
        if defaults:
            self.set_defaults(**defaults)

    @property
    def defaults(self):
        """The encoder options rules start from (EncodeOptions)."""
        return EncodeOptions.from_c(lib.sgfp4_model_policy_defaults(self._h.ptr).contents)

    def set_defaults(self, **fields):
        """Changes fields of the defaults (what the CLI's encoder options do)."""
        c = lib.sgfp4_model_policy_defaults(self._h.ptr).contents
        self.defaults.with_(**fields).copy_into(c)

    def decide(self, tensor):
        """The Decision for a ModelTensor."""
        d = _lib.ModelDecision()
        check(lib.sgfp4_model_policy_decide(self._h.ptr, tensor._ptr(), ctypes.byref(d)),
              "the policy's decision")
        o = _lib.EncodeOptions()
        check(lib.sgfp4_encode_options_init_sized(ctypes.byref(o), ctypes.sizeof(o)),
              "encode options")
        check(lib.sgfp4_model_decision_options(self._h.ptr, ctypes.byref(d), ctypes.byref(o)),
              "the decision's encode options")
        return Decision(bool(d.quantize), d.rows, d.cols, EncodeOptions.from_c(o),
                        text(d.reason), text(d.warning))


def _as_policy(policy, overrides, embeddings, rates=None):
    if isinstance(policy, Policy):
        if overrides or embeddings is not None or rates is not None:
            raise argument_error("pass encoder options to Policy(), not with a Policy object")
        return policy
    return Policy(policy, embeddings=embeddings, rates=rates, **overrides)


# ---- whole-model jobs --------------------------------------------------------------------


def _report_callback(report, out):
    if report is None:
        return _lib.REPORT_FN()

    def call(_user, r):
        try:
            if out.error is not None:
                return
            c = r.contents
            report(TensorReport(text(c.tensor.contents.name), c.index, c.count,
                                bool(c.quantized), c.bytes_in, c.bytes_out, c.bits_per_weight,
                                c.target_bpw, c.target_miss, text(c.reason), c.seconds,
                                c.clipped, c.importance, bool(c.calibrated), bool(c.rated)))
        except BaseException as e:  # noqa: B902 - stops the job at its next write
            out.fail(e)
    return _lib.REPORT_FN(call)


def _summary(c):
    return Summary(*(getattr(c, f) for f, _ in _lib.ModelSummary._fields_
                     if f != "struct_size"))


def _progress_callback(progress, out):
    """Always a callback, even without `progress`: running Python code at each tensor lets
    a KeyboardInterrupt that arrived meanwhile surface and cancel the job."""

    def call(_user, p):
        try:
            if out.error is not None or progress is None:
                return
            c = p.contents
            progress(Progress(c.tensors_done, c.tensors_total, c.bytes_done, c.bytes_total,
                              text(c.current)))
        except BaseException as e:  # noqa: B902 - stops the job at its next write
            out.fail(e)
    return _lib.PROGRESS_FN(call)


def _run_job(source, destination, kind, job, *, force, inputs, zstd_level, zstd_threads):
    """Opens `source` (a path or Model), opens the destination by the output rules (refused
    before any work), runs job(model, output) and commits."""
    if isinstance(source, Model):
        model, own = source, False
        if model.closed:
            raise argument_error("the model is closed")
    else:
        model, own = open_model(source), True
    try:
        with ModelOutput(destination, model, kind, force=force, inputs=inputs,
                         zstd_level=zstd_level, zstd_threads=zstd_threads) as out:
            job(model, out)
            out.commit()
    finally:
        if own:
            model.close()


class ImportanceWarning(UserWarning):
    """encode_model(importance=...): the importance file has no vector for some of the
    quantized tensors, which were encoded without it."""


def encode_model(source, destination, policy=None, *, force=False, progress=None, report=None,
                 embeddings=None, temp_dir=None, zstd_level=3, zstd_threads=0,
                 importance=None, rates=None, **options):
    """Quantizes a safetensors model into a quantized model (sgfp4_model_encode).

    source: a path or a Model (plain, not already quantized). destination: the output path,
    written by the output rules of every writer (docs/python.md, "Outputs"): checked before
    any work (sgfp4.OutputRefusedError: one of the job's inputs, an existing file without
    force=True, a folder, a missing folder), crash-safe (a temporary file renamed at the
    end; never partial), devices, FIFOs and /dev/fd/N written in place, symbolic links
    written through; a name ending in .zst is one zstd stream at zstd_level, a name ending
    in .index.json a sharded set (one output shard per source shard, then the index).
    policy: None (the default policy), a Policy, or a policy document (dict, JSON text,
    path). Encoder options as keywords (target_bpw=4.0, profile="v1", threads=2, ...)
    override the policy's defaults, as the CLI's do; embeddings=False passes embeddings
    through. progress: called with a Progress at the start and after each tensor; an
    exception it raises stops the job (no output) and is raised again. report: called with
    a TensorReport after each tensor (what was done to it: quantized or not and why, bits
    per weight against the target). temp_dir: the encoder's spool folder (default $TMPDIR,
    else /tmp). importance: None, or an importance file (a path or an open Model: F32
    vectors NAME, one per input column of tensor NAME, NAME:rows, one per output row, and
    NAME:hessian, the input Hessian that calibrates the tensor's encode; docs/encoder.md,
    "The importance file"); one of another shape is an ArgumentError naming the tensor, and
    an ImportanceWarning says how many of the quantized tensors the file had vectors for
    when it was not all of them. rates: None (the policy's), "auto", "uniform" or
    "sensitivity" (the tensors at the default rate share their bits by the importance
    file's prediction of what their errors cost; docs/model.md, "Rates by sensitivity";
    "auto", the default policy's, is that with an importance file and uniform without).
    Weights beyond the fp16 range are encoded as +-65504, with a ClippedWeightsWarning per
    tensor (its name and count). Returns the job's Summary (calibrated: how many tensors had
    a Hessian; rated: how many got their target by sensitivity).
    """
    inputs = Inputs()
    if isinstance(policy, os.PathLike) or (isinstance(policy, str) and
                                           not policy.lstrip().startswith("{")):
        inputs.add_path(policy)
    pol = _as_policy(policy, options, embeddings, rates)
    summary = _lib.ModelSummary()
    weights, own_weights = None, False

    # what the library reports per tensor, said after the job as the tool says it
    clipped, coverage = [], [0, 0]  # (name, weights) clipped; quantized, weighted

    def watch(r):
        if r.quantized:
            coverage[0] += 1
            coverage[1] += r.importance != 0
            if r.clipped:
                clipped.append((r.name, r.clipped))
        if report is not None:
            report(r)

    try:
        if importance is None or isinstance(importance, Model):
            weights = importance
        else:
            weights, own_weights = open_model(importance), True
        if weights is not None and weights.closed:
            raise argument_error("importance: the model is closed")
        if weights is not None:
            inputs.add_model(weights)

        def job(model, out):
            wo = _lib.init_struct(_lib.ModelWriteOptions, "sgfp4_model_write_options_init")
            wo.temp_dir = os.fsencode(temp_dir) if temp_dir is not None else None
            cb, rb = _progress_callback(progress, out), _report_callback(watch, out)
            wo.progress, wo.tensor_report = cb, rb
            wo.summary = ctypes.pointer(summary)
            wo.importance = weights._h.ptr if weights is not None else None
            out.encode(pol._h.ptr, wo)

        _run_job(source, destination, _lib.MODEL_OUTPUT_ENCODE, job, force=force,
                 inputs=inputs, zstd_level=zstd_level, zstd_threads=zstd_threads)
    finally:
        if own_weights:
            weights.close()
        inputs.close()
    for name, count in clipped:
        warnings.warn(clipped_message(f"tensor '{name}'", count), ClippedWeightsWarning,
                      stacklevel=2)
    if weights is not None and coverage[1] < coverage[0]:
        label = "model" if isinstance(importance, Model) else os.fspath(importance)
        warnings.warn(f"importance {label}: vectors for {coverage[1]} of the "
                      f"{coverage[0]} quantized tensors: the other {coverage[0] - coverage[1]} "
                      f"were encoded without it", ImportanceWarning, stacklevel=2)
    return _summary(summary)


def decode_model(source, destination, *, force=False, dtype=None, threads=0, backend="auto",
                 progress=None, report=None, zstd_level=3, zstd_threads=0):
    """Restores an ordinary safetensors model from a quantized one (sgfp4_model_decode):
    every container validated, hash-checked and decoded to its source dtype, or to `dtype`
    ("f32", "f16", "bf16") if given; pass-through tensors copied. destination (and force),
    progress, report and zstd as encode_model(). threads: for each tensor's decode. Returns
    the job's Summary."""
    dec = decode_options(threads, backend)
    summary = _lib.ModelSummary()

    def job(model, out):
        wo = _lib.init_struct(_lib.ModelWriteOptions, "sgfp4_model_write_options_init")
        cb, rb = _progress_callback(progress, out), _report_callback(report, out)
        wo.progress, wo.tensor_report = cb, rb
        wo.summary = ctypes.pointer(summary)
        if dtype is not None:
            dt = ctypes.c_int(to_enum(DType, dtype, "dtype"))
            wo.decode_dtype = ctypes.pointer(dt)
        wo.decode = ctypes.pointer(dec)
        out.decode(wo)

    _run_job(source, destination, _lib.MODEL_OUTPUT_DECODE, job, force=force, inputs=None,
             zstd_level=zstd_level, zstd_threads=zstd_threads)
    return _summary(summary)


def write_safetensors(destination, tensors, metadata=None, *, force=False, zstd_level=3):
    """Writes a safetensors file (sgfp4_st_writer), by the output rules of encode_model()
    (force=True replaces an existing file; a name ending in .zst is one zstd stream, a name
    ending in .index.json a set of one shard, named as the index without ".index.json",
    and its index). The file is re-opened and checked before it replaces anything.

    tensors: a mapping name -> numpy array (bool, u/int8..64, float16/32/64), or name ->
    (array, "BF16") to store a uint16 array of bfloat16 bit patterns as BF16 (likewise
    "F8_E4M3" / "F8_E5M2" for uint8). metadata: a mapping of strings to strings.
    """
    entries, arrays, shapes = [], [], []
    for name, value in tensors.items():
        if isinstance(value, tuple):
            arr, st = value
            arr = np.asarray(arr)
            want = np.dtype(ST_NUMPY.get(st, "V"))
            if arr.dtype.newbyteorder("<") != want.newbyteorder("<"):
                raise argument_error(f"{name}: {st} needs a {want} array, not {arr.dtype}")
        else:
            arr = np.asarray(value)
            st = _NUMPY_ST.get(arr.dtype.newbyteorder("<"))
            if st is None:
                raise argument_error(f"{name}: no safetensors dtype for {arr.dtype}")
        arr = arr.astype(arr.dtype.newbyteorder("<"), order="C", copy=False)  # keeps rank 0
        shape = (ctypes.c_uint64 * max(arr.ndim, 1))(*arr.shape)
        shapes.append(shape)
        entries.append(_lib.StEntry(name.encode(), _st_value(st), arr.ndim, shape))
        arrays.append(arr)
    meta = dict(metadata or {})
    keys = (ctypes.c_char_p * max(len(meta), 1))(*[k.encode() for k in meta])
    values = (ctypes.c_char_p * max(len(meta), 1))(*[str(v).encode() for v in meta.values()])
    c_entries = (_lib.StEntry * max(len(entries), 1))(*entries)
    writer = ctypes.c_void_p()
    with ModelOutput(destination, None, _lib.MODEL_OUTPUT_WRITE, force=force,
                     zstd_level=zstd_level) as out:
        try:
            sink = out.sink
            diag = _lib.Diag()
            check(lib.sgfp4_st_writer_begin(c_entries, len(entries), keys, values, len(meta),
                                            ctypes.byref(sink), ctypes.byref(writer),
                                            ctypes.byref(diag)), diag=diag)
            for arr in arrays:
                check(lib.sgfp4_st_writer_write(writer, arr.ctypes.data, arr.nbytes),
                      "write tensor data")
            check(lib.sgfp4_st_writer_finish(writer, ctypes.byref(diag)), diag=diag)
        finally:
            lib.sgfp4_st_writer_free(writer)
        out.commit()
