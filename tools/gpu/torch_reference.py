#!/usr/bin/env python3
"""Outside reference for the Vulkan benchmarks, on the same GPU through PyTorch and CUDA:
the device-to-device copy bandwidth, torch's dense f16 GEMV and its 4-bit weight-only GEMV
(_weight_int4pack_mm, group 128) at the shapes `sgfp4 bench --backend vulkan --op gemv`
uses. As there, each timed call reads the next of enough weight copies to total at least
512 MiB (the weights come from device memory, not the 60 MB L2). Prints one JSON object.
Timing: CUDA events around each call, best and median of 50 after 10 warm-up calls.
SPDX-License-Identifier: MIT"""
import json
import sys

import torch

SHAPES = [(4096, 4096), (14336, 4096), (4096, 14336), (8192, 8192)]
BATCHES = [1, 4]
ROTATION = 512 << 20


def timed(fn, calls, warm=10):
    for i in range(warm):
        fn(i)
    torch.cuda.synchronize()
    times = []
    for i in range(calls):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn(i)
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e-3)
    times.sort()
    return times[0], times[len(times) // 2]


def main():
    dev = torch.device("cuda")
    out = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "copy": {},
           "dense_f16": [], "int4": []}
    n = 1 << 30
    src = torch.empty(n, dtype=torch.uint8, device=dev).random_(0, 255)
    dst = torch.empty_like(src)
    best, med = timed(lambda i: dst.copy_(src), 20)
    out["copy"] = {"bytes": n, "GBps": 2 * n / best * 1e-9, "GBps_median": 2 * n / med * 1e-9}
    del src, dst
    for rows, cols in SHAPES:
        w_bytes = rows * cols * 2
        copies = max(1, min(16, -(-ROTATION // w_bytes)))
        ws = [torch.randn(rows, cols, device=dev, dtype=torch.float16) for _ in range(copies)]
        for batch in BATCHES:
            x = torch.randn(batch, cols, device=dev, dtype=torch.float16)
            best, med = timed(lambda i: torch.nn.functional.linear(x, ws[i % copies]), 50)
            traffic = w_bytes + 2 * batch * (rows + cols)
            out["dense_f16"].append({"rows": rows, "cols": cols, "batch": batch,
                                     "copies": copies, "best_us": best * 1e6,
                                     "median_us": med * 1e6, "GBps": traffic / best * 1e-9})
        del ws
        try:
            group = 128
            q_bytes = rows * cols // 2
            copies = max(1, min(16, -(-ROTATION // q_bytes)))
            packs = []
            for _ in range(copies):
                q = torch.randint(0, 256, (rows, cols // 2), dtype=torch.uint8, device=dev)
                packs.append(torch._convert_weight_to_int4pack(q, 8))
            sz = torch.rand(cols // group, rows, 2, device=dev, dtype=torch.bfloat16)
            for batch in BATCHES:
                x = torch.randn(batch, cols, device=dev, dtype=torch.bfloat16)
                best, med = timed(
                    lambda i: torch._weight_int4pack_mm(x, packs[i % copies], group, sz), 50)
                out["int4"].append({"rows": rows, "cols": cols, "batch": batch,
                                    "copies": copies, "best_us": best * 1e6,
                                    "median_us": med * 1e6,
                                    "GBps_4bit_weights": q_bytes / best * 1e-9})
            del packs
        except Exception as e:  # the private int4 API changes between torch versions
            out["int4"].append({"rows": rows, "cols": cols, "error": repr(e)})
    json.dump(out, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
