#!/usr/bin/env python3
"""The floor under issue 18's 'communication hidden' figure at K = 8 MPS partitions of one H200
(perf/RESULTS.md session 23): per cell, the GEMM alone (measured, the median of the runs given)
plus what any form must still do after it on the same GPU, at measured rates:
  - one cross-partition rendezvous: SYNC_US (14 us: the one-warp arrival barrier's cost at small
    M, session 22, call BD; a stream-operation flag costs 11 us each way, session 21);
  - rs: the owners' sum reads the P partials [M][N] and writes [M][N] once: (P + 1) M N 2 bytes
    through the one HBM at 2 x 2.1 TB/s (the roofline copy moves 2.1 TB/s each way);
  - ag with plain buffers: each rank's rows into its mapped slot once, M K 2 bytes read and
    written; the GEMMs then read the peers' rows in place (no other copy).
    floor.py k8.json [k8.json ...] [--sync 14]"""
import argparse, json, math
from collections import defaultdict

ap = argparse.ArgumentParser()
ap.add_argument("runs", nargs="+")
ap.add_argument("--sync", type=float, default=14.0)
a = ap.parse_args()
t = defaultdict(list)
for path in a.runs:
    for line in open(path):
        r = json.loads(line)
        t[(r["layer"], r["M"], r["config"])].append(r)
hbm = 4.2e12  # bytes a second of traffic (read + write)
out = {"rs": ([], []), "ag": ([], [])}
for (layer, m, cfg), rs in t.items():
    op, kind = cfg.split(".")
    if kind != "gemm":
        continue
    g = sorted(x["us"] for x in rs)[len(rs) // 2]
    r, P = rs[0], rs[0]["P"]
    if op == "rs":
        extra = (P + 1) * m * r["N"] * 2 / hbm * 1e6
    else:
        extra = 2 * m * r["K"] * 2 / hbm * 1e6
    out[op][0 if m >= 256 else 1].append((g + a.sync + extra) / g)
gm = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))
for op in ("rs", "ag"):
    print("%s floor / GEMM alone: M >= 256 %.2f (%d cells), M < 256 %.2f" % (op, gm(out[op][0]), len(out[op][0]), gm(out[op][1])))
both = out["rs"][0] + out["ag"][0]
print("both ops, M >= 256: %.2f (target <= 1.15); M < 256: %.2f" % (gm(both), gm(out["rs"][1] + out["ag"][1])))
