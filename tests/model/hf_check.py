#!/usr/bin/env python3
"""The quantized model opens in Hugging Face's safetensors (its Rust parser), a reader that
shares no code with libsgfp4: names, U8 containers whose sha256 match the manifest,
pass-through tensors equal to the source; the decoded model loads with the source's shapes
and dtypes. Skipped (exit 77) where the `safetensors` and `torch` modules are missing.

  hf_check.py SGFP4 WORKDIR SOURCE.safetensors
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys

try:
    import torch
    from safetensors import safe_open
except ImportError:
    print("no safetensors/torch Python modules: skipping")
    sys.exit(77)

sgfp4, work, src = sys.argv[1:4]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
policy = os.path.join(work, "mix.json")
with open(policy, "w") as f:  # v1, v2 and pass-through in one file
    json.dump({"rules": [{"match": "layers.0.*", "profile": "v1"},
                         {"match": "layers.1.*", "action": "skip"}]}, f)
q = os.path.join(work, "q.sgfp4.safetensors")
d = os.path.join(work, "d.safetensors")
subprocess.run([sgfp4, "encode", src, "-o", q, "-q", "--policy", policy], check=True)
subprocess.run([sgfp4, "decode", q, "-o", d, "-q"], check=True)
with safe_open(q, framework="pt") as f, safe_open(src, framework="pt") as s:
    man = json.loads(f.metadata()["sgfp4"])["tensors"]
    assert set(f.keys()) == set(s.keys())
    for k in f.keys():
        t = f.get_tensor(k)
        if k in man:
            assert t.dtype == torch.uint8 and t.dim() == 1, k
            assert hashlib.sha256(t.numpy().tobytes()).hexdigest() == man[k]["sha256"], k
        else:
            assert torch.equal(t, s.get_tensor(k)), k
with safe_open(d, framework="pt") as r, safe_open(src, framework="pt") as s:
    count = len(list(s.keys()))
    for k in s.keys():
        a, b = s.get_tensor(k), r.get_tensor(k)
        assert a.shape == b.shape and a.dtype == b.dtype, k
        if k not in man:
            assert torch.equal(a, b), k
print(f"hf safetensors: {len(man)} quantized of {count} tensors read back; OK")
