# SPDX-License-Identifier: MIT
"""Crash-safe output files and the C byte sinks that write into them.

The convention is the CLI's (docs/cli.md, "Outputs are never partial"): output goes to a
temporary file in the target's folder and is renamed onto the target only when complete
and synced; on any failure (an exception, KeyboardInterrupt) the target is untouched and
the temporary file removed. Where Linux allows, the temporary file is unnamed (O_TMPFILE)
until the moment it is renamed, so even a process killed mid-way leaves nothing behind.
"""

import ctypes
import os
import secrets

from . import _lib
from ._lib import lib
from .errors import check

SGFP4_OK = 0
SGFP4_ERR_IO = 6


class AtomicFile:
    """A binary file written beside `path` and renamed onto it by commit()."""

    def __init__(self, path):
        self.path = os.fspath(path)
        self.dir = os.path.dirname(os.path.abspath(self.path))
        self.base = os.path.basename(self.path)
        self.tmp = None
        fd = self._open_unnamed()
        if fd is None:
            fd = self._open_named()
        self.file = os.fdopen(fd, "wb", buffering=1 << 20)

    def _open_unnamed(self):
        flag = getattr(os, "O_TMPFILE", None)
        if flag is None or not os.path.isdir("/proc/self/fd"):
            return None
        try:
            return os.open(self.dir, flag | os.O_WRONLY | os.O_CLOEXEC, 0o666)
        except OSError:  # a file system without O_TMPFILE
            return None

    def _open_named(self):
        for _ in range(100):
            tmp = os.path.join(self.dir, f".{self.base}.tmp-{secrets.token_hex(4)}")
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
            except FileExistsError:
                continue
            self.tmp = tmp
            return fd
        raise FileExistsError(f"{self.path}: cannot create a temporary file beside it")

    def write(self, data):
        self.file.write(data)

    def commit(self):
        """Flushes, syncs and renames the file onto the target."""
        self.file.flush()
        os.fsync(self.file.fileno())
        if self.tmp is None:  # give the unnamed file a name at the last moment
            # linkat(AT_SYMLINK_FOLLOW) on the /proc link names the unnamed file; os.link
            # uses linkat (not link(2), which would not follow it) when given a dir_fd.
            dir_fd = os.open(self.dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                for _ in range(100):
                    name = f".{self.base}.tmp-{secrets.token_hex(4)}"
                    try:
                        os.link(f"/proc/self/fd/{self.file.fileno()}", name,
                                dst_dir_fd=dir_fd, follow_symlinks=True)
                    except FileExistsError:
                        continue
                    self.tmp = os.path.join(self.dir, name)
                    break
            finally:
                os.close(dir_fd)
        self.file.close()
        os.replace(self.tmp, self.path)
        self.tmp = None

    def abort(self):
        """Closes and removes the temporary file; the target stays as it was."""
        try:
            self.file.close()
        finally:
            if self.tmp is not None:
                try:
                    os.unlink(self.tmp)
                except FileNotFoundError:
                    pass
                self.tmp = None


class FileSink:
    """An sgfp4_sink writing into an AtomicFile (through zstd if asked). A Python exception
    raised while writing (or stored by a progress callback) makes the sink return
    SGFP4_ERR_IO, which stops the C job; raise_pending() then re-raises it."""

    def __init__(self, out, zstd_level=None, zstd_threads=0):
        self.out = out
        self.error = None
        self._file_cb = _lib.SINK_WRITE_FN(self._write)
        self._file_sink = _lib.Sink(self._file_cb, None)
        self._zstd = None
        self.sink = self._file_sink
        if zstd_level is not None:
            zs = ctypes.c_void_p()
            check(lib.sgfp4_zstd_sink_begin(ctypes.byref(self._file_sink), int(zstd_level),
                                            int(zstd_threads), ctypes.byref(zs)),
                  "start the zstd stream")
            self._zstd = zs.value
            self.sink = lib.sgfp4_zstd_sink_get(self._zstd)

    def _write(self, _user, data, size):
        if self.error is not None:
            return SGFP4_ERR_IO
        try:
            if size:
                self.out.write((ctypes.c_char * size).from_address(data))
            return SGFP4_OK
        except BaseException as e:  # noqa: B902 - KeyboardInterrupt must stop the job too
            self.error = e
            return SGFP4_ERR_IO

    def finish(self):
        """Ends the zstd frame, if any (before the file is committed)."""
        if self._zstd is not None:
            status = lib.sgfp4_zstd_sink_finish(self._zstd)
            self.raise_pending()
            check(status, "finish the zstd stream")

    def free(self):
        lib.sgfp4_zstd_sink_free(self._zstd)
        self._zstd = None

    def raise_pending(self):
        if self.error is not None:
            e, self.error = self.error, None
            raise e
