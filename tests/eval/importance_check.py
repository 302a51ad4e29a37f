#!/usr/bin/env python3
"""Checks an importance file as docs/encoder.md ("The importance file") defines it, read
independently of the library (plain safetensors parsing, no numpy), against the model it
describes:
- every matrix NAME [O, I] of the model has NAME [I], NAME:rows [O] and a Hessian [I, I]:
  the tensor NAME:hessian, or the metadata alias NAME:hessian naming a stored tensor (no
  chains); wk and wv share wq's, w3 shares w1's, nothing else is shared;
- every Hessian is exactly symmetric, its diagonal is exactly NAME (the same sums), its
  entries obey |H_ij| <= sqrt(H_ii H_jj) (a second moment matrix);
- the inputs behind RMSNorm have the mean square the norm gives them: sum_j H_jj / g_j^2
  is the vector length (to the norm's epsilon), g the norm's gains;
- the metadata `tokens` is the expected token count.
usage: importance_check.py IMPORTANCE MODEL TOKENS"""
import json
import math
import struct
import sys


def read(path):
    with open(path, "rb") as f:
        b = f.read()
    n = struct.unpack("<Q", b[:8])[0]
    header = json.loads(b[8:8 + n])
    meta = header.pop("__metadata__", {})
    data = b[8 + n:]
    tensors = {}
    for name, t in header.items():
        lo, hi = t["data_offsets"]
        if t["dtype"] != "F32":
            continue
        count = (hi - lo) // 4
        tensors[name] = (t["shape"], struct.unpack("<%df" % count, data[lo:hi]))
    return tensors, meta


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def main():
    imp, meta = read(sys.argv[1])
    model, model_meta = read(sys.argv[2])
    tokens = sys.argv[3]
    if meta.get("tokens") != tokens:
        fail("metadata tokens = %r, expected %s" % (meta.get("tokens"), tokens))
    matrices = {n: s for n, (s, _) in model.items() if len(s) == 2}
    shared = {"attention.wk": "attention.wq", "attention.wv": "attention.wq",
              "feed_forward.w3": "feed_forward.w1"}
    checked = 0
    for name, (rows, cols) in sorted(matrices.items()):
        if name not in imp or name + ":rows" not in imp:
            fail(name + ": no column or row vector")
        if imp[name][0] != [cols] or imp[name + ":rows"][0] != [rows]:
            fail(name + ": vector lengths")
        key = name + ":hessian"
        target = key
        if key not in imp:
            target = meta.get(key)
            if target is None or target not in imp:
                fail(key + ": neither a tensor nor an alias of one (%r)" % target)
        want = key
        for reader, owner in shared.items():
            if "." + reader + "." in name:
                want = key.replace(reader, owner)
        if target != want:
            fail("%s: resolves to %s, expected %s" % (key, target, want))
        shape, h = imp[target]
        if shape != [cols, cols]:
            fail("%s: shape %s for %d inputs" % (target, shape, cols))
        n = cols
        diag = [h[i * n + i] for i in range(n)]
        if list(diag) != list(imp[name][1]):
            fail(target + ": diagonal differs from " + name)
        for i in range(n):
            if diag[i] < 0:
                fail(target + ": negative diagonal")
            for j in range(i + 1, n):
                a = h[i * n + j]
                if a != h[j * n + i]:
                    fail("%s: not symmetric at (%d, %d)" % (target, i, j))
                if abs(a) > math.sqrt(diag[i] * diag[j]) * (1 + 1e-5) + 1e-30:
                    fail("%s: |H_%d,%d| above sqrt(H_ii H_jj)" % (target, i, j))
        checked += 1
    # Inputs right after an RMSNorm (gain g): x = g * u with mean(u^2) = ms / (ms + eps).
    cfg = json.loads(model_meta["config"])
    normed = [("norm.weight", "tok_embeddings.weight" if "output.weight" not in model
               else "output.weight")]
    for layer in range(cfg["n_layers"]):
        normed.append(("layers.%d.attention_norm.weight" % layer,
                       "layers.%d.attention.wq.weight" % layer))
        normed.append(("layers.%d.ffn_norm.weight" % layer,
                       "layers.%d.feed_forward.w1.weight" % layer))
    for norm, reader in normed:
        g = model[norm][1]
        total = sum(v / (gj * gj) for v, gj in zip(imp[reader][1], g))
        if not (len(g) * 0.99 < total <= len(g) * 1.0001):
            fail("%s: sum of E[x^2] / g^2 = %.4f, expected about %d" % (reader, total, len(g)))
    print("importance file: %d matrices checked, %s tokens" % (checked, tokens))


main()
