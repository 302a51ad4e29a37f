# SPDX-License-Identifier: MIT
"""torch's int4 GEMV (_weight_int4pack_mm, group 128, bf16 activations) and bf16 dense (x @ W^T)
on the GPU, timed as the ggml harness times: stream = a CUDA graph of K products over K weight
copies (> 512 MiB together) replayed, time / K; isolated = one product per call, synchronized,
host wall clock. Median [min-max] of R rounds; one JSON line per (arm, shape, batch)."""
import json, sys, time
import torch

R = int(sys.argv[1]) if len(sys.argv) > 1 else 30
dev = torch.device("cuda")
print("device:", torch.cuda.get_device_name(0), torch.__version__, file=sys.stderr)


def int4_weights(n, k):
    w = torch.randint(0, 16, (n, k), dtype=torch.int32, device=dev)
    packed_u8 = (w[:, ::2] << 4 | w[:, 1::2]).to(torch.uint8)
    wp = torch._convert_weight_to_int4pack(packed_u8, 8)
    sz = torch.rand(k // 128, n, 2, device=dev, dtype=torch.bfloat16)
    return wp, sz


def run(arm, n, k, batch, make, op, nbytes):
    copies = max(4, min(64, (512 << 20) // nbytes + 1))
    ws = [make() for _ in range(copies)]
    x = torch.randn(batch, k, device=dev, dtype=torch.bfloat16)
    for w in ws[:3]:
        op(x, w)
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for w in ws:
            op(x, w)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        outs = [op(x, w) for w in ws]
    ts, ti = [], []
    for r in range(-3, R):
        torch.cuda.synchronize()
        t0 = time.perf_counter(); g.replay(); torch.cuda.synchronize(); t1 = time.perf_counter()
        if r >= 0:
            ts.append((t1 - t0) / copies)
    for r in range(-3, R):
        w = ws[(r + 3) % copies]
        torch.cuda.synchronize()
        t0 = time.perf_counter(); op(x, w); torch.cuda.synchronize(); t1 = time.perf_counter()
        if r >= 0:
            ti.append(t1 - t0)
    ts.sort(); ti.sort()
    print(json.dumps({"peer": "torch", "type": arm, "rows": n, "cols": k, "batch": batch,
                      "bytes": nbytes, "copies": copies,
                      "stream_us": ts[R // 2] * 1e6, "stream_min_us": ts[0] * 1e6,
                      "stream_max_us": ts[-1] * 1e6, "isolated_us": ti[R // 2] * 1e6,
                      "isolated_min_us": ti[0] * 1e6, "isolated_max_us": ti[-1] * 1e6}),
          flush=True)
    del outs, g, ws


for n, k in ((4096, 4096), (14336, 4096), (4096, 14336), (8192, 8192)):
    for batch in (1, 4, 8):
        try:
            run("int4_g128", n, k, batch, lambda: int4_weights(n, k),
                lambda x, w: torch._weight_int4pack_mm(x, w[0], 128, w[1]),
                n * k // 2 + (k // 128) * n * 4)
        except Exception as e:  # report and go on: the other arms still count
            print(json.dumps({"peer": "torch", "type": "int4_g128", "rows": n, "cols": k,
                              "batch": batch, "error": str(e)[:300]}), flush=True)
        run("bf16", n, k, batch,
            lambda: torch.randn(n, k, device=dev, dtype=torch.bfloat16),
            lambda x, w: x @ w.t(), n * k * 2)
