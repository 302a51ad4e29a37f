# SPDX-License-Identifier: MIT
"""Output files: the library's output rules (sgfp4_model_output), the same code the `sgfp4`
tool runs, so that Python and the tool cannot write differently (docs/python.md, "Outputs").

A destination is opened, and so checked, before any work; the library writes the bytes
(plain, one zstd frame for a name ending in .zst, or a sharded set for a name ending in
.index.json), checks each finished file, and puts everything in place at the commit. An
exception from a callback cancels the output: the library's next write fails, nothing
reaches the destination, and the exception is raised again.
"""

import ctypes
import os

from . import _lib
from ._interrupt import Interruptible
from ._lib import lib
from .errors import check

_signals_taken = False


def _remove_temporaries_on_signals():
    """Once per process: a fatal signal whose action is still the default (SIGTERM,
    SIGHUP, ...; not Python's SIGINT, which raises KeyboardInterrupt and is handled by the
    job's own cleanup) removes the temporary files of open outputs before the process dies."""
    global _signals_taken
    if not _signals_taken:
        lib.sgfp4_output_remove_on_signals()
        _signals_taken = True


class Inputs:
    """The files a job reads besides its source model (which the library adds itself)."""

    def __init__(self):
        ptr = ctypes.c_void_p()
        check(lib.sgfp4_inputs_create(ctypes.byref(ptr)), "create an input list")
        self.ptr = ptr.value

    def add_path(self, path):
        check(lib.sgfp4_inputs_add_path(self.ptr, os.fsencode(path)), "note an input")

    def add_model(self, model):
        check(lib.sgfp4_inputs_add_model(self.ptr, model._h.ptr), "note an input")

    def close(self):
        lib.sgfp4_inputs_free(self.ptr)
        self.ptr = None


class ModelOutput:
    """An open sgfp4_model_output: `kind` is _lib.MODEL_OUTPUT_ENCODE / _DECODE (with the
    source Model) or _WRITE (source None). Raises sgfp4.OutputRefusedError (or the status of
    another failure) when the destination is refused; nothing is created then."""

    def __init__(self, destination, source, kind, *, force=False, inputs=None, zstd_level=3,
                 zstd_threads=0):
        if not isinstance(force, bool):
            raise TypeError("force must be True or False")
        _remove_temporaries_on_signals()
        o = _lib.init_struct(_lib.OutputOptions, "sgfp4_output_options_init")
        o.flags = _lib.OUTPUT_FORCE if force else 0
        o.inputs = inputs.ptr if inputs is not None else None
        o.force_name = b"force=True"
        o.zstd_level = int(zstd_level)
        o.zstd_threads = int(zstd_threads)
        ptr = ctypes.c_void_p()
        diag = _lib.Diag()
        check(lib.sgfp4_model_output_open(os.fsencode(destination),
                                          source._h.ptr if source is not None else None, kind,
                                          ctypes.byref(o), ctypes.byref(ptr), ctypes.byref(diag)),
              diag=diag)
        self.ptr = ptr.value
        self.error = None      # an exception a callback raised: the job stops, it is raised
        self._sink = None

    def fail(self, error):
        """Keeps the first exception of a callback and cancels the output."""
        if self.error is None:
            self.error = error
        lib.sgfp4_model_output_cancel(self.ptr)

    def raise_pending(self):
        if self.error is not None:
            e, self.error = self.error, None
            raise e

    @property
    def sink(self):
        """WRITE: the sink the safetensors writer writes into (an _lib.Sink)."""
        if self._sink is None:
            self._sink = lib.sgfp4_model_output_sink(self.ptr)
        return self._sink

    def encode(self, policy, write_options):
        diag = _lib.Diag()
        with Interruptible(lambda: self.error is not None) as interrupt:
            write_options.cancel = interrupt.hook
            status = lib.sgfp4_model_output_encode(self.ptr, policy,
                                                   ctypes.byref(write_options),
                                                   ctypes.byref(diag))
        self.raise_pending()
        check(status, diag=diag)

    def decode(self, write_options):
        diag = _lib.Diag()
        with Interruptible(lambda: self.error is not None) as interrupt:
            write_options.cancel = interrupt.hook
            status = lib.sgfp4_model_output_decode(self.ptr, ctypes.byref(write_options),
                                                   ctypes.byref(diag))
        self.raise_pending()
        check(status, diag=diag)

    def commit(self):
        self.raise_pending()
        diag = _lib.Diag()
        check(lib.sgfp4_model_output_commit(self.ptr, ctypes.byref(diag)), diag=diag)

    def close(self):
        """Removes whatever was not committed."""
        lib.sgfp4_model_output_close(self.ptr)
        self.ptr = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
