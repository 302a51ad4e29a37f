# SPDX-License-Identifier: MIT
"""What the Python binding adds to a decode: sgfp4_decode() timed from C and Tensor.decode()
timed from Python, in one process, on the same tensor view, alternating, so both see the
same machine state.

Two cases: into an existing buffer (the zero-copy path: both write the same numpy array, C
through sgfp4_decode, Python through decode(out=array)), and into a fresh output per call
(C: malloc + numpy's huge-page advice + decode + free; Python: decode() allocating its
numpy array, then dropping it). Prints the median and range of the per-call times of each,
and the ratio of the medians.

    SGFP4_LIBRARY=build/release python3 python/benchmarks/decode_overhead.py \
        [--shape 4096x4096] [--bpw 4.5] [--profile v2] [--dtype f32] [--threads 1] \
        [--rounds 9] [--calls 5] [--lock /work/coord/bench.lock] [--json]

Needs a C compiler (it builds decode_timer.c against the library it loaded). The matrix is
Gaussian with per-row scales (seed 1), encoded before the lock is taken.
"""

import argparse
import ctypes
import fcntl
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import sgfp4  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))


def build_timer(folder):
    lib = sgfp4.library_path()
    libdir = os.path.dirname(os.path.realpath(lib))
    out = os.path.join(folder, "decode_timer.so")
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-I", os.path.join(SOURCE, "include"),
                    "-o", out, os.path.join(HERE, "decode_timer.c"), os.path.realpath(lib),
                    f"-Wl,-rpath,{libdir}"], check=True)
    timer = ctypes.CDLL(out)
    for name in ("decode_timer_into", "decode_timer_fresh"):
        getattr(timer, name).restype = ctypes.c_int
    timer.decode_timer_into.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p,
                                        ctypes.c_size_t, ctypes.c_void_p, ctypes.c_int,
                                        ctypes.POINTER(ctypes.c_double)]
    timer.decode_timer_fresh.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t,
                                         ctypes.c_void_p, ctypes.c_int,
                                         ctypes.POINTER(ctypes.c_double)]
    return timer


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shape", default="4096x4096")
    ap.add_argument("--bpw", type=float, default=4.5)
    ap.add_argument("--profile", default="v2")
    ap.add_argument("--dtype", default="f32")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--lock", help="a file to hold an exclusive flock on while timing")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    rows, cols = (int(x) for x in a.shape.lower().split("x"))

    rng = np.random.default_rng(1)
    w = (rng.standard_normal((rows, cols)) *
         rng.uniform(0.5, 2.0, (rows, 1))).astype(np.float32)
    blob = sgfp4.encode(w, profile=a.profile, target_bpw=a.bpw, threads=os.cpu_count())
    del w
    t = sgfp4.open(blob, (rows, cols), a.profile)
    dt = sgfp4.DType[a.dtype.upper()]
    out = np.empty((rows, cols), dtype=sgfp4._types.NUMPY_OF[dt])
    cap = out.nbytes
    opts = sgfp4.tensor.decode_options(threads=a.threads)
    out.fill(0)                                   # touched once, as a reused buffer is
    reference = t.decode(dt)

    with tempfile.TemporaryDirectory() as folder:
        timer = build_timer(folder)
        secs = (ctypes.c_double * a.calls)()

        def c_into():
            assert timer.decode_timer_into(t._h.ptr, int(dt), out.ctypes.data, cap,
                                           ctypes.byref(opts), a.calls, secs) == 0
            return list(secs)

        def c_fresh():
            assert timer.decode_timer_fresh(t._h.ptr, int(dt), cap, ctypes.byref(opts),
                                            a.calls, secs) == 0
            return list(secs)

        def py_into():
            r = []
            for _ in range(a.calls):
                t0 = time.perf_counter()
                t.decode(dt, out=out, threads=a.threads)
                r.append(time.perf_counter() - t0)
            return r

        def py_fresh():
            r = []
            for _ in range(a.calls):
                t0 = time.perf_counter()
                x = t.decode(dt, threads=a.threads)
                del x
                r.append(time.perf_counter() - t0)
            return r

        lock = None
        if a.lock:
            lock = open(a.lock, "a")
            fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            load = os.getloadavg()
            for fn in (c_into, py_into, c_fresh, py_fresh):   # warm-up
                fn()
            times = {"c_into": [], "py_into": [], "c_fresh": [], "py_fresh": []}
            for r in range(a.rounds):
                order = [("c_into", c_into), ("py_into", py_into), ("c_fresh", c_fresh),
                         ("py_fresh", py_fresh)]
                if r % 2:
                    order = [order[1], order[0], order[3], order[2]]
                for name, fn in order:
                    times[name] += fn()
            load_after = os.getloadavg()
        finally:
            if lock:
                lock.close()

    assert out.tobytes() == reference.tobytes()
    med = {k: statistics.median(v) for k, v in times.items()}
    result = {
        "shape": [rows, cols], "profile": a.profile, "bpw": t.info.bits_per_weight,
        "dtype": a.dtype, "threads": a.threads, "rounds": a.rounds, "calls": a.calls,
        "kernels": sgfp4.backend_name(), "library": sgfp4.library_path(),
        "load_before": load, "load_after": load_after,
        "median_ms": {k: v * 1e3 for k, v in med.items()},
        "range_ms": {k: [min(v) * 1e3, max(v) * 1e3] for k, v in times.items()},
        "ratio_into": med["py_into"] / med["c_into"],
        "ratio_fresh": med["py_fresh"] / med["c_fresh"],
        "ratio_into_fastest": min(times["py_into"]) / min(times["c_into"]),
        "output_gbps_c_into": cap / med["c_into"] / 1e9,
    }
    if a.json:
        print(json.dumps(result, indent=1))
    else:
        print(f"{rows}x{cols} {a.profile} {result['bpw']:.3f} bpw -> {a.dtype}, "
              f"{a.threads} thread(s), kernels {result['kernels']}, "
              f"{a.rounds} rounds x {a.calls} calls, load {load[0]:.2f} -> {load_after[0]:.2f}")
        for k in ("c_into", "py_into", "c_fresh", "py_fresh"):
            lo, hi = result["range_ms"][k]
            print(f"  {k:9s} median {result['median_ms'][k]:8.3f} ms  (range {lo:.3f} - {hi:.3f})")
        print(f"  Python / C, into a buffer: {result['ratio_into']:.4f} (medians), "
              f"{result['ratio_into_fastest']:.4f} (fastest calls); fresh output: "
              f"{result['ratio_fresh']:.4f} (medians)")


if __name__ == "__main__":
    main()
