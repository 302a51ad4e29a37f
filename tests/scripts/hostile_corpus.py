#!/usr/bin/env python3
"""`sgfp4 info`, `verify` and `decode` over every hostile file we keep, in 1 GB of address
space (ulimit -v 1000000; not under ASan, which reserves terabytes of it): every run ends in
a clean result, never a crash, a sanitizer report or a hang.

The files: the fuzz corpora and findings (tests/fuzz/corpus/*, tests/fuzz/crashers/*), the
model regression files (tests/data/model) and the shared reproducers (SHARED/repros,
SHARED by default ../shared beside the source).
Each is given to the tool as it is (models and containers are told by content), and the
fuzz inputs also without their harness prefix: the model target's selector byte (leaving a
safetensors file) and the decode targets' 4 prefix bytes (leaving a container, opened with
the shape its block count implies, as the targets do).

A clean result: exit 0, or exit 1 or 2 with stderr starting 'sgfp4: ' (a named error or a
usage error); never a signal, another status, a sanitizer report, or a run over 60 s; and
nothing left in TMPDIR or the output folder but complete outputs.

Under the sanitizers (--sanitized: no address-space limit, runs ~10x slower) every
--stride N'th run is made, the others skipped, so that the test stays short.

usage: hostile_corpus.py SGFP4 WORKDIR SOURCE_DIR [--shared DIR] [--sanitized] [--stride N]
SPDX-License-Identifier: MIT
"""
import concurrent.futures
import os
import resource
import shutil
import subprocess
import sys
import time

ADDRESS_SPACE_KB = 1000000  # ulimit -v 1000000


def inputs(source_dir, shared_dir, work):
    """(path, extra arguments) of every run's input; writes the unprefixed variants."""
    fuzz = os.path.join(source_dir, "tests", "fuzz")
    folders = [os.path.join(fuzz, kind, target)
               for kind in ("corpus", "crashers")
               for target in sorted(os.listdir(os.path.join(fuzz, kind)))]
    folders.append(os.path.join(source_dir, "tests", "data", "model"))
    shared = os.path.join(shared_dir, "repros")
    if os.path.isdir(shared):
        folders.append(shared)
    variants = os.path.join(work, "variants")
    os.makedirs(variants)
    runs = []
    for folder in folders:
        target = os.path.basename(folder)
        for name in sorted(os.listdir(folder)):
            path = os.path.join(folder, name)
            if not os.path.isfile(path):
                continue
            runs.append((path, []))
            data = open(path, "rb").read()
            if target in ("model",) and "fuzz" in folder and len(data) > 1:
                out = os.path.join(variants, "%s-%s.safetensors" % (target, name))
                open(out, "wb").write(data[1:])
                runs.append((out, []))
            elif target in ("v1_decode", "v2_decode") and len(data) > 4:
                stream = data[4:]
                if target == "v1_decode":
                    blocks, ext = len(stream) // 2056, "fp4"
                else:
                    blocks = int.from_bytes(stream[5:9], "little") if len(stream) >= 9 else 0
                    ext = "sgfp4"
                blocks = blocks if 1 <= blocks <= 65536 else 1
                out = os.path.join(variants, "%s-%s.%s" % (target, name, ext))
                open(out, "wb").write(stream)
                runs.append((out, ["--shape", "64x%d" % (64 * blocks)]))
    return runs


def limit_address_space():
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_KB * 1024, ADDRESS_SPACE_KB * 1024))


def main():
    sgfp4, work, source_dir = sys.argv[1:4]
    sanitized = "--sanitized" in sys.argv[4:]
    stride = int(sys.argv[sys.argv.index("--stride") + 1]) if "--stride" in sys.argv else 1
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.join(work, "tmp"))
    env = dict(os.environ, TMPDIR=os.path.join(work, "tmp"),
               ASAN_OPTIONS="detect_leaks=1:abort_on_error=1",
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
    if not sanitized:
        limit_address_space()  # inherited by every run
    shared_dir = (sys.argv[sys.argv.index("--shared") + 1] if "--shared" in sys.argv
                  else os.path.join(os.path.dirname(os.path.abspath(source_dir)), "shared"))
    runs = inputs(source_dir, shared_dir, work)
    jobs = []
    for k, (path, extra) in enumerate(runs):
        out = os.path.join(work, "out%d" % (k % 2))
        os.makedirs(out, exist_ok=True)
        target = os.path.join(out, "w.bin" if extra else "w.safetensors")
        jobs += [["info", path] + extra, ["verify", path] + extra,
                 ["decode", path, "-o", target, "-f", "-q"] + extra]
    jobs = jobs[::stride]
    failures, seen = [], {0: 0, 1: 0, 2: 0}

    def one(args):
        try:
            p = subprocess.run([sgfp4] + args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, env=env, timeout=60)
        except subprocess.TimeoutExpired:
            return args, None, b"timed out after 60 s"
        return args, p.returncode, p.stderr

    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        for args, rc, err in pool.map(one, jobs):
            text = err.decode("utf-8", "replace")
            bad = rc not in (0, 1, 2) or "Sanitizer" in text or "runtime error" in text
            bad = bad or (rc in (1, 2) and not text.startswith("sgfp4: "))
            if bad:
                failures.append("sgfp4 %s: exit %s: %s" % (" ".join(args), rc, text[:600]))
            else:
                seen[rc] += 1
    left = [os.path.join(d, f) for d in [os.path.join(work, "tmp")] +
            [os.path.join(work, "out%d" % k) for k in range(2)]
            for f in os.listdir(d) if f not in ("w.bin", "w.safetensors")]
    for f in left:
        failures.append("left behind: " + f)
    for f in failures[:40]:
        print("FAIL:", f)
    print("%d inputs (%d runs%s) in %.1f s%s: exit 0 %d, exit 1 %d, exit 2 %d; %d failures" %
          (len(runs), len(jobs), ", every %dth" % stride if stride > 1 else "",
           time.monotonic() - start,
           "" if sanitized else ", %d KB of address space" % ADDRESS_SPACE_KB,
           seen[0], seen[1], seen[2], len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
