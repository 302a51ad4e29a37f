#!/usr/bin/env python3
"""`sgfp4 matvec` against the independent expected bytes and its error contract.

- Every golden matvec vector (golden/matvec/manifest.json, computed by tools/gen_golden.py's
  own statement of D8): the command's Y equals the expected y bytes (NaN matches NaN) with
  every backend this machine runs (auto, scalar, generic, avx2, avx512, neon; the others are
  refused with status 1 and skipped), on 1 or 3 threads (alternate vectors, so every backend
  runs both). f16 activations are given as the
  float32 values they convert to exactly (D8 reads them so).
- A quantized model (stories260K from ../shared/weights, encoded by `sgfp4 encode`): matvec of
  a tensor by --tensor NAME gives the same bytes with every backend, and its Class B result
  lies within docs/matvec.md's bound of the float64 product of the decoded weights
  (`sgfp4 decode` of the model).
- X and Y as NumPy .npy files (the same products as raw float32; an X.npy that does not fit
  W is refused), and batches longer than one call (the same bits as each vector alone).
- Errors: usage errors exit 2, failures 1, one line on stderr, and no output file or
  temporary file is left behind; an existing Y is replaced only with -f, and -o naming X is
  refused.

usage: test_cli_matvec.py SGFP4 GOLDEN_DIR WEIGHTS_DIR SCRATCH_DIR
"""
import json
import math
import os
import random
import shutil
import struct
import subprocess
import sys

SGFP4, GOLDEN, WEIGHTS, SCRATCH = sys.argv[1:5]
BACKENDS = ["auto", "scalar", "generic", "avx2", "avx512", "neon"]
failures = []
checks = 0


def fail(message):
    failures.append(message)
    print("FAIL: " + message, file=sys.stderr)


def run(*args):
    p = subprocess.run([SGFP4, *args], capture_output=True, text=True)
    return p.returncode, p.stderr


def floats(data):
    return struct.unpack("<%df" % (len(data) // 4), data)


def same_results(got, want):
    """Bit for bit, NaN equal to any NaN."""
    if len(got) != len(want):
        return "%d bytes, %d expected" % (len(got), len(want))
    g, w = floats(got), floats(want)
    for i, (a, b) in enumerate(zip(g, w)):
        if math.isnan(a) or math.isnan(b):
            if not (math.isnan(a) and math.isnan(b)):
                return "float %d is %r, expected %r" % (i, a, b)
        elif struct.pack("<f", a) != struct.pack("<f", b):
            return "float %d is %r, expected %r" % (i, a, b)
    return None


def x_as_f32(path, dtype):
    data = open(path, "rb").read()
    if dtype == "f32":
        return data
    halves = struct.unpack("<%de" % (len(data) // 2), data)
    return struct.pack("<%df" % len(halves), *halves)  # exact: every f16 is a binary32


def expect_error(code, what, *args, out=None):
    """The command fails with `code`, one stderr line, and leaves no output behind."""
    global checks
    before = set(os.listdir(SCRATCH))
    rc, err = run(*args)
    lines = [l for l in err.splitlines() if l.strip()]
    if rc != code:
        fail("%s: exit %d, expected %d (%s)" % (what, rc, code, err.strip()))
    elif len(lines) != 1 or not lines[0].startswith("sgfp4: matvec: "):
        fail("%s: stderr is not one 'sgfp4: matvec:' line: %r" % (what, err))
    elif out and os.path.exists(out):
        fail("%s: the output %s exists after the failure" % (what, out))
    elif set(os.listdir(SCRATCH)) - before:
        fail("%s: left %s behind" % (what, sorted(set(os.listdir(SCRATCH)) - before)))
    else:
        checks += 1
    return err


def golden_vectors():
    global checks
    manifest = json.load(open(os.path.join(GOLDEN, "matvec", "manifest.json")))
    available = {}
    out = os.path.join(SCRATCH, "y.f32")
    for index, v in enumerate(manifest["vectors"]):
        x = os.path.join(SCRATCH, "x.f32")
        open(x, "wb").write(x_as_f32(os.path.join(GOLDEN, v["x"]), v["x_dtype"]))
        want = open(os.path.join(GOLDEN, v["y"]), "rb").read()
        shape = "%dx%d" % tuple(v["shape"])
        for backend in BACKENDS:
            if available.get(backend) is False:
                continue
            # 1 and 3 threads on alternate vectors: every backend runs both, every vector
            # runs every backend (the library's thread and row-split equality is tested
            # per vector in matvec.golden.*; this checks the command's path to it)
            for threads in (("1", "3")[index % 2],):
                rc, err = run("matvec", os.path.join(GOLDEN, v["container"]), "--shape", shape,
                              "--profile", v["profile"], "--x", x, "--class", v["class"],
                              "--batch", str(v["batch"]), "--backend", backend,
                              "--threads", threads, "-o", out)
                if rc == 1 and "cannot run on this machine" in err and backend != "auto":
                    available[backend] = False
                    break
                available[backend] = True
                if rc != 0:
                    fail("%s, %s, %s threads: exit %d: %s" % (v["name"], backend, threads, rc,
                                                              err.strip()))
                    continue
                why = same_results(open(out, "rb").read(), want)
                os.remove(out)
                if why:
                    fail("%s, %s, %s threads: %s" % (v["name"], backend, threads, why))
                else:
                    checks += 1
    ran = [b for b in BACKENDS if available.get(b)]
    print("golden: %d vectors, backends run: %s" % (len(manifest["vectors"]), " ".join(ran)))
    if "scalar" not in ran or "generic" not in ran:
        fail("the scalar and generic backends must run everywhere")


def read_safetensors_f32(path, name):
    data = open(path, "rb").read()
    n = struct.unpack_from("<Q", data)[0]
    header = json.loads(data[8:8 + n])
    entry = header[name]
    begin, end = entry["data_offsets"]
    assert entry["dtype"] == "F32", entry["dtype"]
    return entry["shape"], floats(data[8 + n + begin:8 + n + end])


def quantized_model():
    global checks
    source = os.path.join(WEIGHTS, "stories260K", "stories260K.safetensors")
    if not os.path.exists(source):
        print("model: SKIP (no %s)" % source)
        return
    model = os.path.join(SCRATCH, "m.sgfp4.safetensors")
    restored = os.path.join(SCRATCH, "restored.safetensors")
    for args in (("encode", source, "-o", model, "-q"), ("decode", model, "-o", restored, "-q")):
        rc, err = run(*args)
        if rc != 0:
            fail("%s: exit %d: %s" % (args[0], rc, err.strip()))
            return
    name = "layers.1.feed_forward.w2.weight"  # 64 x 172: a partial last block column
    shape, w = read_safetensors_f32(restored, name)
    rows, cols = shape
    rng = random.Random(5)
    batch = 3
    x = [rng.gauss(0, 1) for _ in range(batch * cols)]
    x[5] = 0.0
    x[7] = -0.0
    xf = os.path.join(SCRATCH, "mx.f32")
    open(xf, "wb").write(struct.pack("<%df" % len(x), *x))
    x = floats(open(xf, "rb").read())  # the binary32 values
    for cls in ("a", "b"):
        results = {}
        for backend in BACKENDS:
            out = os.path.join(SCRATCH, "my.f32")
            rc, err = run("matvec", model, "--tensor", name, "--x", xf, "--class", cls,
                          "--backend", backend, "-o", out)
            if rc == 1 and "cannot run on this machine" in err:
                continue
            if rc != 0:
                fail("model %s class %s %s: exit %d: %s" % (name, cls, backend, rc, err.strip()))
                continue
            results[backend] = open(out, "rb").read()
            os.remove(out)
        if len(set(results.values())) != 1 or "scalar" not in results:
            fail("model class %s: backends %s disagree" % (cls, sorted(results)))
            continue
        checks += 1
        if cls == "b":  # docs/matvec.md: |y - sum w x| <= gamma_L * sum |w x|, L = 3 + 4 + log2 P
            y = floats(results["scalar"])
            blocks = (cols + 63) // 64
            levels = 3 + 4 + (blocks - 1).bit_length()
            u = 2.0 ** -24
            gamma = levels * u / (1 - levels * u)
            for n in range(batch):
                for r in range(rows):
                    terms = [w[r * cols + j] * (x[n * cols + j] if abs(x[n * cols + j]) >= 2.0 ** -60 else 0.0)
                             for j in range(cols)]
                    exact, size = math.fsum(terms), math.fsum(abs(t) for t in terms)
                    if abs(y[n * rows + r] - exact) > gamma * size:
                        fail("model class B: vector %d row %d is %r, float64 %r, bound %g"
                             % (n, r, y[n * rows + r], exact, gamma * size))
                        return
            checks += 1
    # --tensor errors
    out = os.path.join(SCRATCH, "never.f32")
    expect_error(2, "a model without --tensor", "matvec", model, "--x", xf, "-o", out, out=out)
    expect_error(1, "an unknown tensor", "matvec", model, "--tensor", "nope", "--x", xf, "-o", out,
                 out=out)
    err = expect_error(1, "a tensor that is not quantized", "matvec", model, "--tensor",
                       "norm.weight", "--x", xf, "-o", out, out=out)
    if "not quantized" not in err:
        fail("a tensor that is not quantized: the message does not say so: %r" % err)
    expect_error(2, "--shape with a model", "matvec", model, "--tensor", name, "--shape", "64x172",
                 "--x", xf, "-o", out, out=out)
    print("model: %s through --tensor, every backend" % name)


def errors():
    container = os.path.join(GOLDEN, "decode", "v1_fp4.fp4")
    out = os.path.join(SCRATCH, "never.f32")
    x = os.path.join(SCRATCH, "ex.f32")
    open(x, "wb").write(struct.pack("<64f", *[0.5] * 64))
    common = [container, "--shape", "64x64"]
    expect_error(2, "no --x", "matvec", *common, "-o", out, out=out)
    expect_error(2, "no -o", "matvec", *common, "--x", x)
    expect_error(2, "--class c", "matvec", *common, "--x", x, "--class", "c", "-o", out, out=out)
    expect_error(2, "--batch 0", "matvec", *common, "--x", x, "--batch", "0", "-o", out, out=out)
    expect_error(2, "--backend bogus", "matvec", *common, "--x", x, "--backend", "bogus", "-o", out,
                 out=out)
    expect_error(2, "no --shape", "matvec", container, "--x", x, "-o", out, out=out)
    expect_error(2, "--tensor with a container", "matvec", *common, "--tensor", "w", "--x", x, "-o",
                 out, out=out)
    expect_error(1, "--batch that X does not hold", "matvec", *common, "--x", x, "--batch", "2",
                 "-o", out, out=out)
    short = os.path.join(SCRATCH, "short.f32")
    open(short, "wb").write(b"\0" * 100)
    expect_error(1, "X of 100 bytes", "matvec", *common, "--x", short, "-o", out, out=out)
    nan = os.path.join(SCRATCH, "nan.f32")
    open(nan, "wb").write(struct.pack("<64f", *([1.0] * 9 + [float("nan")] + [1.0] * 54)))
    err = expect_error(1, "NaN in Class A", "matvec", *common, "--x", nan, "-o", out, out=out)
    if "column 9" not in err or "NaN" not in err:
        fail("NaN in Class A: the message does not name column 9: %r" % err)
    expect_error(1, "a missing X", "matvec", *common, "--x", os.path.join(SCRATCH, "absent"), "-o",
                 out, out=out)
    expect_error(1, "a malformed container", "matvec", x, "--shape", "64x64", "--profile", "v2",
                 "--x", x, "-o", out, out=out)
    # Class B takes NaN; the result is written
    rc, err = run("matvec", *common, "--x", nan, "--class", "b", "-o", out)
    if rc != 0 or len(open(out, "rb").read()) != 64 * 4:
        fail("Class B with a NaN: exit %d: %s" % (rc, err.strip()))
    else:
        os.remove(out)
    # an existing Y is replaced only with -f (and then completely)
    open(out, "wb").write(b"keep")
    rc, err = run("matvec", *common, "--x", x, "-o", out)
    if rc != 1 or "already exists" not in err or open(out, "rb").read() != b"keep":
        fail("an existing -o without -f: exit %d, %s" % (rc, err.strip()))
    rc, err = run("matvec", *common, "--x", x, "-f", "-o", out)
    if rc != 0 or len(open(out, "rb").read()) != 64 * 4:
        fail("an existing -o with -f: exit %d: %s" % (rc, err.strip()))
    os.remove(out)
    # -o naming the activations file is refused before anything is written
    before = open(x, "rb").read()
    rc, err = run("matvec", *common, "--x", x, "-f", "-o", x)
    if rc == 0 or open(x, "rb").read() != before:
        fail("-o X: exit %d, X changed: %s" % (rc, open(x, "rb").read() != before))
    # standard output
    p = subprocess.run([SGFP4, "matvec", *common, "--x", x, "-o", "-"], capture_output=True)
    if p.returncode != 0 or len(p.stdout) != 64 * 4:
        fail("-o -: exit %d, %d bytes" % (p.returncode, len(p.stdout)))


def npy(path, descr, shape, payload, fortran=False):
    """A NumPy .npy file (format 1.0) written by hand, as NumPy writes it."""
    dims = "(%d,)" % shape[0] if len(shape) == 1 else "(%s)" % ", ".join(str(d) for d in shape)
    head = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, fortran, dims)
    head += " " * (63 - (10 + len(head)) % 64) + "\n"
    open(path, "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) +
                           head.encode() + payload)


def parse_npy(path):
    """(descr, shape, payload) of a .npy file of format 1.0."""
    data = open(path, "rb").read()
    if data[:8] != b"\x93NUMPY\x01\x00":
        return None
    n = struct.unpack_from("<H", data, 8)[0]
    head = data[10:10 + n].decode()
    descr = head.split("'descr': '")[1].split("'")[0]
    shape = tuple(int(d) for d in head.split("'shape': (")[1].split(")")[0].split(",") if d.strip())
    return descr, shape, data[10 + n:]


def numpy_files():
    """X and Y as .npy, as decode writes them: the same products as raw float32; a .npy that
    does not fit is refused; batches of any length, split into calls of 16 (same bits)."""
    global checks
    container = os.path.join(GOLDEN, "decode", "v2_mixed.sgfp4")
    if not os.path.exists(container):
        container = os.path.join(GOLDEN, "decode", "v1_fp4.fp4")
    common = [container, "--shape", "64x64"]
    rng = random.Random(11)
    values = [rng.gauss(0, 1) for _ in range(3 * 64)]
    raw = struct.pack("<%df" % len(values), *values)
    xr, xn = os.path.join(SCRATCH, "n.f32"), os.path.join(SCRATCH, "n.npy")
    open(xr, "wb").write(raw)
    npy(xn, "<f4", (3, 64), raw)
    yr, yn = os.path.join(SCRATCH, "yn.f32"), os.path.join(SCRATCH, "yn.npy")
    for cls in ("a", "b"):
        for args in ((xr, yr), (xn, yn)):
            rc, err = run("matvec", *common, "--x", args[0], "--class", cls, "-f", "-o", args[1])
            if rc != 0:
                fail("npy: %s -> %s class %s: exit %d: %s" % (args + (cls, rc, err.strip())))
                return
        parsed = parse_npy(yn)
        if parsed is None or parsed[0] != "<f4" or parsed[1] != (3, 64):
            fail("npy: Y.npy is not a (3, 64) <f4 .npy: %r" % (parsed and parsed[:2],))
        elif parsed[2] != open(yr, "rb").read():
            fail("npy: class %s: X.npy and raw X give different products" % cls)
        else:
            checks += 1
    # one vector as a 1-D array; float16 values, which convert exactly
    npy(xn, "<f4", (64,), raw[:256])
    open(xr, "wb").write(raw[:256])
    halves = struct.pack("<64e", *values[:64])
    xh = os.path.join(SCRATCH, "h.npy")
    npy(xh, "<f2", (64,), halves)
    xhr = os.path.join(SCRATCH, "h.f32")
    open(xhr, "wb").write(struct.pack("<64f", *struct.unpack("<64e", halves)))
    got = {}
    for name, xf in (("raw", xr), ("1-D", xn), ("f16", xh), ("f16 as f32", xhr)):
        rc, err = run("matvec", *common, "--x", xf, "-f", "-o", yr)
        got[name] = open(yr, "rb").read() if rc == 0 else None
        if rc != 0:
            fail("npy: %s: exit %d: %s" % (name, rc, err.strip()))
    if got["raw"] != got["1-D"] or got["f16"] != got["f16 as f32"] or got["raw"] is None:
        fail("npy: a 1-D or float16 X.npy gives other products")
    else:
        checks += 1
    out = os.path.join(SCRATCH, "never.npy")
    npy(xn, "<f4", (2, 32), raw[:256])
    err = expect_error(1, "an X.npy of 32 columns", "matvec", *common, "--x", xn, "-o", out,
                       out=out)
    if "64 columns" not in err:
        fail("an X.npy of 32 columns: the message does not name W's columns: %r" % err)
    npy(xn, "<f8", (1, 64), b"\0" * 512)
    expect_error(1, "an X.npy of float64", "matvec", *common, "--x", xn, "-o", out, out=out)
    npy(xn, "<f4", (64, 1), raw[:256], fortran=True)
    expect_error(1, "an X.npy in Fortran order", "matvec", *common, "--x", xn, "-o", out,
                 out=out)
    open(xn, "wb").write(raw[:256])
    expect_error(1, "an X named .npy without the magic", "matvec", *common, "--x", xn, "-o", out,
                 out=out)
    # 37 vectors: three calls (16, 16, 5), each vector's bits as alone
    values = [rng.gauss(0, 1) for _ in range(37 * 64)]
    many = os.path.join(SCRATCH, "many.f32")
    open(many, "wb").write(struct.pack("<%df" % len(values), *values))
    one = os.path.join(SCRATCH, "one.f32")
    for cls in ("a", "b"):
        rc, err = run("matvec", *common, "--x", many, "--class", cls, "--batch", "37", "-f",
                      "-o", yr)
        if rc != 0:
            fail("37 vectors, class %s: exit %d: %s" % (cls, rc, err.strip()))
            continue
        whole = open(yr, "rb").read()
        for n in (0, 15, 16, 36):
            open(one, "wb").write(struct.pack("<64f", *values[n * 64:(n + 1) * 64]))
            rc, err = run("matvec", *common, "--x", one, "--class", cls, "-f", "-o", yr)
            if rc != 0 or open(yr, "rb").read() != whole[n * 256:(n + 1) * 256]:
                fail("37 vectors, class %s: vector %d differs from its product alone" % (cls, n))
                break
        else:
            checks += 1


def main():
    shutil.rmtree(SCRATCH, ignore_errors=True)
    os.makedirs(SCRATCH)
    golden_vectors()
    errors()
    numpy_files()
    quantized_model()
    if failures:
        print("%d failures" % len(failures), file=sys.stderr)
        return 1
    print("test_cli_matvec: %d checks passed" % checks)
    return 0


if __name__ == "__main__":
    sys.exit(main())
