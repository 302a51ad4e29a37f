# SPDX-License-Identifier: MIT
"""Joins sgfp4's `bench --backend vulkan --op matvec --json` output(s) with the lines of
ggml_cuda_matvec and torch_matvec.py into Markdown tables: per shape and batch, the median
time in us of each arm, two ways: "stream" (sgfp4: products back to back with no barrier and
no copy; the peers: a CUDA graph of products) and "isolated" (sgfp4: one product between
its own GPU timestamps after a barrier; the peers: one synchronous call, host clock).
Class A arms are whole operations: the product plus the device quantizer of its activations
(its op "quantize" result, timed the same way), as ggml's mul_mat quantizes its own. In
brackets: ggml q4_0's time over the arm's (above 1: sgfp4 faster). A Class A time marked *
is the product alone (an input without the quantizer's results).

    gpu_table.py SGFP4.json [...] ggml.jsonl torch.jsonl"""
import collections
import json
import sys

ours = collections.defaultdict(list)    # (rows, cols, batch, arm) -> [(stream, isolated)]
quant = collections.defaultdict(list)   # (cols, batch) -> [(stream, isolated)]
peers = collections.defaultdict(list)
for path in sys.argv[1:]:
    if path.endswith(".json"):
        for r in json.load(open(path))["results"]:
            o = r.get("other_times")
            if not o:
                continue
            t = (o["stream_no_copy"]["median_us"], o["no_copy"]["median_us"])
            if r["op"] == "quantize":
                quant[(r["cols"], r["batch"])].append(t)
                continue
            if r["op"] == "matvec":
                arm = ("v1" if r["tensor"].startswith("v1") else "v2") + " " + r["class"]
                if r.get("variant", "default") != "default":
                    arm += " " + r["variant"]
                if r.get("products", "D8") != "D8":
                    arm += " " + r["products"]
            else:
                continue
            ours[(r["rows"], r["cols"], r["batch"], arm)].append(t)
    else:
        for line in open(path):
            if line.startswith("{"):
                p = json.loads(line)
                if "error" in p:
                    print("peer error:", p, file=sys.stderr)
                    continue
                peers[(p["rows"], p["cols"], p["batch"], f"{p['peer']} {p['type']}")].append(
                    (p["stream_us"], p["isolated_us"]))


def med(v):
    v = sorted(v)
    return v[len(v) // 2]


shapes = sorted({k[:3] for k in list(ours) + list(peers)})
arms_o = sorted({k[3] for k in ours})
arms_p = sorted({k[3] for k in peers})
for way, i in (("stream", 0), ("isolated", 1)):
    print(f"\n{way}: median us (ggml q4_0 / arm)\n")
    print("| O x I | batch | " + " | ".join(arms_o + arms_p) + " |")
    print("|---|---|" + "---|" * (len(arms_o) + len(arms_p)))
    for rows, cols, batch in shapes:
        ref = peers.get((rows, cols, batch, "ggml-cuda q4_0"))
        ref = med([t[i] for t in ref]) if ref else None
        cells = []
        for arm in arms_o:
            v = ours.get((rows, cols, batch, arm))
            if not v:
                cells.append("")
                continue
            us = med([t[i] for t in v])
            mark = ""
            if arm.split()[1] == "A":
                q = quant.get((cols, batch))
                if q:
                    us += med([t[i] for t in q])
                else:
                    mark = "*"   # no quantizer result in the input: the product alone
            cells.append(f"{us:.1f}{mark}" + (f" ({ref / us:.2f})" if ref else ""))
        for arm in arms_p:
            v = peers.get((rows, cols, batch, arm))
            cells.append(f"{med([t[i] for t in v]):.1f}" if v else "")
        print(f"| {rows}x{cols} | {batch} | " + " | ".join(cells) + " |")
