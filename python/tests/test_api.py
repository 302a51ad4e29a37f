# SPDX-License-Identifier: MIT
"""The binding against the library it loads: versions, the status table, the exception
hierarchy, and the ctypes struct layouts against the C compiler's (include/*.h)."""

import ctypes
import os
import pickle
import re
import shutil
import subprocess
import sys

import pytest

import sgfp4
from sgfp4 import _lib, errors
from conftest import SANITIZED, SOURCE_DIR


def test_versions():
    cmake = (SOURCE_DIR / "CMakeLists.txt").read_text()
    project = re.search(r"project\(sgfp4 VERSION (\d+\.\d+\.\d+)", cmake).group(1)
    assert sgfp4.__version__ == project
    assert sgfp4.library_version() == project
    n = _lib.lib.sgfp4_version()
    assert f"{n // 10000}.{n // 100 % 100}.{n % 100}" == sgfp4.library_version()
    assert os.path.exists(sgfp4.library_path())


@pytest.mark.skipif(not SANITIZED, reason="only the sanitizer build preloads ASan")
def test_the_sanitizer_runtime_is_really_there():
    """Under the sanitizer build the tests must run with ASan active, not merely load."""
    assert hasattr(ctypes.CDLL(None), "__asan_report_load1")
    maps = open("/proc/self/maps").read()
    assert "libasan" in maps or "libclang_rt.asan" in maps  # GCC's or clang's runtime


def test_a_library_of_another_minor_version_is_refused(monkeypatch):
    monkeypatch.setattr(sgfp4, "__version__", "0.2.0")
    with pytest.raises(sgfp4.VersionMismatch, match="0.2 release"):
        sgfp4._check_version()
    monkeypatch.setattr(sgfp4, "__version__", "0.1.7")   # patch releases are compatible
    sgfp4._check_version()


def test_the_library_is_found_where_docs_say(tmp_path):
    """$SGFP4_LIBRARY as a file, as a folder, and a wrong one: a clear ImportError."""
    lib = sgfp4.library_path()
    code = "import sgfp4; print(sgfp4.library_path())"
    env = dict(os.environ, PYTHONPATH=str(SOURCE_DIR / "python"))
    for value, expect in [(lib, lib), (os.path.dirname(lib),
                                       os.path.join(os.path.dirname(lib), "libsgfp4_model.so"))]:
        env["SGFP4_LIBRARY"] = value
        p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True)
        assert p.returncode == 0 and p.stdout.strip() == expect, p.stderr
    env["SGFP4_LIBRARY"] = str(tmp_path)
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert p.returncode != 0 and "LibraryNotFound" in p.stderr and "SGFP4_LIBRARY" in p.stderr


def test_every_status_has_its_class_and_the_librarys_name():
    known = {}
    for value in range(256):
        name = errors.status_name(value)
        if name != "UNKNOWN":
            known[value] = name
    assert known == errors.NAMES          # the binding's table is the library's
    for value, cls in errors.CLASSES.items():
        assert issubclass(cls, sgfp4.Error) and cls is not sgfp4.Error
        assert getattr(sgfp4, cls.__name__) is cls
        e = errors.make_error(value)
        assert type(e) is cls and e.status == value and e.status_name == known[value]
        assert e.message == errors.status_str(value)
        back = pickle.loads(pickle.dumps(e))
        assert type(back) is cls and str(back) == str(e)
    assert len(set(errors.CLASSES.values())) == len(errors.CLASSES)   # one class per status
    assert isinstance(errors.make_error(1), ValueError)
    assert isinstance(errors.make_error(2), MemoryError)
    assert isinstance(errors.make_error(6), OSError)
    assert isinstance(errors.make_error(47), KeyError)
    assert all(issubclass(errors.CLASSES[v], sgfp4.ContainerError) for v in range(11, 36)
               if v in errors.CLASSES)
    assert all(issubclass(errors.CLASSES[v], sgfp4.ModelFileError) for v in (40, 41, 42, 43, 44, 45, 48))
    assert type(errors.make_error(99)) is sgfp4.Error     # a status newer than this binding


def test_diag_fields_become_attributes():
    d = _lib.Diag()
    d.offset, d.block, d.leaf, d.message = 4132, 3, -1, b"v2 record 3: bad"
    e = errors.make_error(32, diag=d)
    assert (e.offset, e.block, e.leaf, e.message) == (4132, 3, None, "v2 record 3: bad")
    assert str(e) == "v2 record 3: bad [V2_LEAF_FLAGS]"
    assert isinstance(e, sgfp4.V2LeafFlagsError)


# Every struct the binding declares, with its C name and fields.
STRUCTS = [
    (_lib.Diag, "sgfp4_diag"), (_lib.Allocator, "sgfp4_allocator"),
    (_lib.Limits, "sgfp4_limits"), (_lib.OpenOptions, "sgfp4_open_options"),
    (_lib.TensorInfo, "sgfp4_tensor_info"), (_lib.Leaf, "sgfp4_leaf"),
    (_lib.DecodeOptions, "sgfp4_decode_options"), (_lib.EncodeOptions, "sgfp4_encode_options"),
    (_lib.EncodeReport, "sgfp4_encode_report"),
    (_lib.HessianOptions, "sgfp4_hessian_options"),
    (_lib.ModelQuant, "sgfp4_model_quant"), (_lib.ModelTensor, "sgfp4_model_tensor"),
    (_lib.ModelOpenOptions, "sgfp4_model_open_options"), (_lib.Sink, "sgfp4_sink"),
    (_lib.StEntry, "sgfp4_st_entry"), (_lib.ModelDecision, "sgfp4_model_decision"),
    (_lib.ModelProgress, "sgfp4_model_progress"),
    (_lib.ModelWriteOptions, "sgfp4_model_write_options"),
    (_lib.ModelSummary, "sgfp4_model_summary"),
    (_lib.ModelTensorReport, "sgfp4_model_tensor_report"),
] + ([(sgfp4.matvec.MatvecOptions, "sgfp4_matvec_options")] if sgfp4.has_matvec() else [])


def test_struct_layouts_match_the_c_headers(tmp_path):
    """A C program prints sizeof and offsetof of every field; ctypes must agree."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to check the layouts with")
    lines = ["#include <stddef.h>", "#include <stdio.h>", "#include <sgfp4.h>",
             "#include <sgfp4_model.h>", "int main(void) {"]
    expected = []
    for cls, cname in STRUCTS:
        lines.append(f'printf("%zu\\n", sizeof({cname}));')
        expected.append(ctypes.sizeof(cls))
        for field, _ in cls._fields_:
            lines.append(f'printf("%zu\\n", offsetof({cname}, {field}));')
            expected.append(getattr(cls, field).offset)
        lines.append(f'printf("%zu\\n", sizeof((({cname} *)0)->{cls._fields_[-1][0]}));')
        expected.append(ctypes.sizeof(cls._fields_[-1][1]))
    # the constants the binding mirrors
    for name, value in (("SGFP4_MAX_THREADS", sgfp4._types.MAX_THREADS),
                        ("SGFP4_MATVEC_MAX_BATCH", sgfp4.matvec.MAX_BATCH)):
        lines.append(f'printf("%d\\n", (int){name});')
        expected.append(value)
    lines.append("return 0; }")
    src = tmp_path / "layout.c"
    src.write_text("\n".join(lines))
    exe = tmp_path / "layout"
    # sgfp4.h includes the generated sgfp4_config.h: in the build folder of the library under
    # test (build/include), or beside the headers of an installed one (lib/../include)
    lib_dir = os.path.dirname(sgfp4.library_path())
    generated = [os.path.join(lib_dir, "include"), os.path.join(lib_dir, "..", "include")]
    includes = [f"-I{d}" for d in [str(SOURCE_DIR / "include")] + generated]
    subprocess.run([cc, *includes, "-o", str(exe), str(src)], check=True)
    got = [int(x) for x in subprocess.run([str(exe)], capture_output=True, text=True,
                                          check=True).stdout.split()]
    assert got == expected


def test_options_struct_sizes_are_accepted_and_unknown_ones_refused():
    o = _lib.init_struct(_lib.DecodeOptions, "sgfp4_decode_options_init")
    assert o.struct_size == ctypes.sizeof(_lib.DecodeOptions)
    w = sgfp4.encode(__import__("numpy").ones((64, 64), "float32"))
    t = sgfp4.open(w, (64, 64))
    out = (ctypes.c_float * 4096)()
    o.struct_size = 3    # not a size the library knows
    status = _lib.lib.sgfp4_decode(t._h.ptr, 0, out, 0, ctypes.sizeof(out), ctypes.byref(o))
    assert errors.status_name(status) == "ARGUMENT"


def test_result_structs_carry_their_size_and_unknown_sizes_are_refused():
    """Result structs are made with struct_size = the mirror's size; a size the library does
    not know is refused and not one byte of the struct is written."""
    for cls in (_lib.TensorInfo, _lib.EncodeReport, _lib.ModelDecision, _lib.ModelSummary):
        assert cls().struct_size == ctypes.sizeof(cls)
    t = sgfp4.open(sgfp4.encode(__import__("numpy").ones((64, 64), "float32")), (64, 64))
    info = _lib.TensorInfo()
    assert _lib.lib.sgfp4_tensor_get_info(t._h.ptr, ctypes.byref(info)) == 0
    assert info.rows == 64 and info.struct_size == ctypes.sizeof(info)
    for size in (0, 8, ctypes.sizeof(info) - 8, ctypes.sizeof(info) + 8):
        ctypes.memset(ctypes.byref(info), 0xA5, ctypes.sizeof(info))
        info.struct_size = size
        status = _lib.lib.sgfp4_tensor_get_info(t._h.ptr, ctypes.byref(info))
        assert errors.status_name(status) == "ARGUMENT"
        assert bytes(ctypes.string_at(ctypes.byref(info), ctypes.sizeof(info)))[8:] == \
            b"\xa5" * (ctypes.sizeof(info) - 8)


def test_options_are_initialised_to_the_size_of_the_bindings_mirror():
    """The library writes defaults into exactly the bytes the binding's struct has: a mirror of
    an earlier, shorter layout (as an older binding declares it) gets its fields' defaults,
    struct_size = its size and not one byte written past it, and is accepted by the calls."""

    class OlderEncodeOptions(ctypes.Structure):  # the fields before `metric` was appended
        _fields_ = _lib.EncodeOptions._fields_[:[f for f, _ in _lib.EncodeOptions._fields_]
                                               .index("metric")]

    class Guarded(ctypes.Structure):
        _fields_ = [("options", OlderEncodeOptions), ("canary", ctypes.c_uint8 * 64)]

    g = Guarded()
    ctypes.memset(ctypes.byref(g), 0xA5, ctypes.sizeof(g))
    status = _lib.lib.sgfp4_encode_options_init_sized(
        ctypes.cast(ctypes.byref(g.options), ctypes.POINTER(_lib.EncodeOptions)),
        ctypes.sizeof(OlderEncodeOptions))
    assert status == 0
    assert g.options.struct_size == ctypes.sizeof(OlderEncodeOptions)
    assert bytes(g.canary) == b"\xa5" * 64
    assert g.options.target_bpw == 4.5 and g.options.delta == 0.10
    assert g.options.threads == 0 and not g.options.allocator.alloc

    o = _lib.init_struct(OlderEncodeOptions, "sgfp4_encode_options_init")
    assert o.struct_size == ctypes.sizeof(OlderEncodeOptions)
    # a size that is no layout of the struct: refused, nothing written
    ctypes.memset(ctypes.byref(g), 0xA5, ctypes.sizeof(g))
    status = _lib.lib.sgfp4_encode_options_init_sized(
        ctypes.cast(ctypes.byref(g.options), ctypes.POINTER(_lib.EncodeOptions)), 12)
    assert errors.status_name(status) == "ARGUMENT"
    assert bytes(ctypes.string_at(ctypes.byref(g), ctypes.sizeof(g))) == \
        b"\xa5" * ctypes.sizeof(g)
