#!/usr/bin/env python3
"""Peak memory of encoding and decoding a large synthetic model stays bounded.

  large_rss.py SGFP4 WORKDIR            CI size: a 63 MB F32 model, peak RSS < 48 MB
  SGFP4_TEST_LARGE=1 large_rss.py ...   the 4.4 GB F32 model (TinyLlama-1.1B shapes),
                                        peak RSS < 1 GB (takes long: run it on purpose)

Peak RSS of each command is the child's ru_maxrss (what /usr/bin/time -v reports as
"Maximum resident set size"). The model is written by `sgfp4 example`, streaming.
"""
import os
import resource
import shutil
import subprocess
import sys
import time

sgfp4, work = sys.argv[1], sys.argv[2]
large = os.environ.get("SGFP4_TEST_LARGE") == "1"
if large:
    shape = ["--dim", "2048", "--ffn", "5632", "--kv-dim", "256", "--layers", "22",
             "--vocab", "32000"]
    limit_mb = 1024
    encode_args = []
else:
    shape = ["--dim", "1024", "--ffn", "2816", "--kv-dim", "512", "--layers", "1",
             "--vocab", "2048"]
    limit_mb = 48  # below the model's own size (63 MB): it is never held whole
    encode_args = ["--profile", "v1"]  # the fastest encoder path: this test is about memory

shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
src = os.path.join(work, "big.safetensors")
q = os.path.join(work, "big.sgfp4.safetensors")
back = os.path.join(work, "big.decoded.safetensors")


def run(args):
    """Runs one command in a fresh process; returns (seconds, peak RSS in MB)."""
    t0 = time.time()
    pid = os.fork()
    if pid == 0:
        try:
            os.execv(args[0], args)
        finally:
            os._exit(127)
    _, status, usage = os.wait4(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        print("FAIL: " + " ".join(args), file=sys.stderr)
        sys.exit(1)
    return time.time() - t0, usage.ru_maxrss / 1024.0


_, gen_rss = run([sgfp4, "example", "-q", "-o", src, "--dtype", "f32"] + shape)
size_mb = os.path.getsize(src) / 1e6
enc_s, enc_rss = run([sgfp4, "encode", src, "-o", q, "-q"] + encode_args)
ver_s, ver_rss = run([sgfp4, "verify", "-q", q])
dec_s, dec_rss = run([sgfp4, "decode", q, "-o", back, "-q"])
print(f"model {size_mb:.0f} MB F32 -> {os.path.getsize(q) / 1e6:.0f} MB quantized")
print(f"peak RSS: example {gen_rss:.0f} MB, encode {enc_rss:.0f} MB ({enc_s:.0f} s), "
      f"verify {ver_rss:.0f} MB ({ver_s:.0f} s), decode {dec_rss:.0f} MB ({dec_s:.0f} s); "
      f"limit {limit_mb} MB")
run([sgfp4, "verify", "-q", back])
shutil.rmtree(work, ignore_errors=True)
if max(enc_rss, ver_rss, dec_rss, gen_rss) >= limit_mb:
    print("FAIL: peak RSS over the limit", file=sys.stderr)
    sys.exit(1)
