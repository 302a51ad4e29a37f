# SPDX-License-Identifier: MIT
"""Joins sgfp4's `bench --backend vulkan --op matvec --json` with the ggml / torch harness
lines into one table: per shape and batch, median us (stream: no barrier, no copy; isolated:
one product between its own barriers / one synchronous call) and peer / sgfp4 ratios."""
import json, sys, collections

ours_files, peer_files = [], []
for a in sys.argv[1:]:
    (ours_files if a.endswith(".json") else peer_files).append(a)
ours = collections.defaultdict(list)   # (rows, cols, batch, arm) -> [(stream, isolated)]
for f in ours_files:
    d = json.load(open(f))
    for r in d["results"]:
        if r.get("op") != "matvec":
            if r.get("op") == "dense_f16_gemv":
                arm = "sgfp4 dense f16"
            else:
                continue
        else:
            prof = "v1" if r["tensor"].startswith("v1") else "v2"
            arm = f"{prof} {r['class']}" + ("" if r.get("variant", "default") == "default" else " " + r["variant"])
        o = r["other_times"]
        ours[(r["rows"], r["cols"], r["batch"], arm)].append(
            (o["stream_no_copy"]["median_us"], o["no_copy"]["median_us"]))
peers = collections.defaultdict(list)
for f in peer_files:
    for line in open(f):
        if not line.startswith("{"):
            continue
        p = json.loads(line)
        if "error" in p:
            print("peer error:", p, file=sys.stderr)
            continue
        peers[(p["rows"], p["cols"], p["batch"], f"{p['peer']} {p['type']}")].append(
            (p["stream_us"], p["isolated_us"]))

def med(v):
    v = sorted(v)
    return v[len(v) // 2]

keys = sorted({k[:3] for k in list(ours) + list(peers)})
for way, idx in (("stream", 0), ("isolated", 1)):
    print(f"\n### {way} (median us; in brackets ggml q4_0 time / this arm's)\n")
    arms_o = sorted({k[3] for k in ours})
    arms_p = sorted({k[3] for k in peers})
    print("| O x I | batch | " + " | ".join(arms_o + arms_p) + " |")
    print("|---|---|" + "---|" * (len(arms_o) + len(arms_p)))
    for (rows, cols, b) in keys:
        ref = peers.get((rows, cols, b, "ggml-cuda q4_0"))
        refv = med([t[idx] for t in ref]) if ref else None
        cells = []
        for arm in arms_o:
            v = ours.get((rows, cols, b, arm))
            if not v:
                cells.append("")
                continue
            m = med([t[idx] for t in v])
            cells.append(f"{m:.1f}" + (f" ({refv / m:.2f})" if refv else ""))
        for arm in arms_p:
            v = peers.get((rows, cols, b, arm))
            cells.append(f"{med([t[idx] for t in v]):.1f}" if v else "")
        print(f"| {rows}x{cols} | {b} | " + " | ".join(cells) + " |")
