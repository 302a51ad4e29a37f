# SPDX-License-Identifier: MIT
"""Bytes in (container or model bytes the library borrows) and arrays out (decode targets,
views of a model's mapping), with the lifetimes the C API asks for."""

import mmap
import os

import numpy as np

from ._types import argument_error


def input_bytes(data, copy=None):
    """The bytes of `data` as a 1-D uint8 numpy array the library may borrow.

    `data`: a path (str or os.PathLike: the file is mapped read-only), or any object with
    the buffer protocol (bytes, bytearray, memoryview, mmap, numpy array).
    Zero-copy for read-only contiguous buffers and for files. A writable buffer is copied
    unless copy=False: the library reads codes, scales and biases from the bytes at every
    decode (the places it reads them at were copied at open, so a change cannot move a read
    outside them), so changed bytes would change the decoded values; copy=False is the
    caller's promise not to change them while the view is open. copy=True always copies: a
    file is then read into memory instead of mapped (a file truncated while mapped raises
    SIGBUS when the missing pages are read). The returned array keeps its source alive
    (and, for a mapped file, the mapping).
    """
    if isinstance(data, (str, os.PathLike)):
        return _read_file(data) if copy else _map_file(data)
    try:
        view = memoryview(data)
    except TypeError:
        raise argument_error(
            f"container bytes: {type(data).__name__} is neither a path nor a buffer") from None
    contiguous = view.c_contiguous
    if copy is False and not contiguous:
        raise argument_error("copy=False needs a C-contiguous buffer")
    if copy or not contiguous or (copy is None and not view.readonly):
        return np.frombuffer(view.tobytes(), dtype=np.uint8)
    if view.nbytes == 0:
        return np.empty(0, dtype=np.uint8)
    return np.frombuffer(view.cast("B") if view.ndim != 1 or view.format != "B" else view,
                         dtype=np.uint8)


def _read_file(path):
    with open(path, "rb") as f:
        return np.frombuffer(f.read(), dtype=np.uint8)


def _map_file(path):
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            return np.empty(0, dtype=np.uint8)
        mapping = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    # the array holds an export of the mapping: the mapping cannot be closed under it
    return np.frombuffer(mapping, dtype=np.uint8)


class _Borrowed:
    """Exposes library-owned memory to numpy (``__array_interface__``) while keeping its
    owner (a model handle) alive: numpy keeps this object as the array's base."""

    __slots__ = ("__array_interface__", "owner")

    def __init__(self, address, shape, dtype, owner):
        self.owner = owner
        self.__array_interface__ = {"data": (address, True), "shape": tuple(shape),
                                    "typestr": np.dtype(dtype).str, "version": 3}


def borrowed_array(address, shape, dtype, owner):
    """A read-only numpy array over library memory at `address`, valid while `owner` lives
    (the array holds a reference to it)."""
    if int(np.prod(shape, dtype=np.uint64)) == 0 or not address:
        return np.empty(shape, dtype=dtype)
    array = np.asarray(_Borrowed(address, shape, dtype, owner))
    array.flags.writeable = False
    return array


def output_array(out, rows, cols, np_dtype, what):
    """(array, row stride in elements, capacity in bytes) for a decode of `rows` x `cols`:
    a new C-contiguous array when `out` is None, else `out` checked: a writable 2-D array
    of that shape and dtype whose rows are contiguous (row stride any multiple of the
    element size, e.g. a column slice of a wider array)."""
    if out is None:
        return np.empty((rows, cols), dtype=np_dtype), cols, rows * cols * np_dtype.itemsize
    if not isinstance(out, np.ndarray):
        raise argument_error(f"{what}: out must be a numpy array, not {type(out).__name__}")
    if out.dtype != np_dtype:
        raise argument_error(f"{what}: out has dtype {out.dtype}, the decode writes {np_dtype}")
    if out.shape != (rows, cols):
        raise argument_error(f"{what}: out has shape {out.shape}, expected {(rows, cols)}")
    if not out.flags.writeable:
        raise argument_error(f"{what}: out is read-only")
    item = np_dtype.itemsize
    if cols > 1 and out.strides[1] != item:
        raise argument_error(f"{what}: out's rows are not contiguous (strides {out.strides})")
    if rows > 1:
        if out.strides[0] < cols * item or out.strides[0] % item:
            raise argument_error(f"{what}: out's row stride {out.strides[0]} bytes is not a "
                                 f"multiple of {item} of at least {cols * item}")
        stride = out.strides[0] // item
    else:
        stride = cols
    return out, stride, ((rows - 1) * stride + cols) * item
