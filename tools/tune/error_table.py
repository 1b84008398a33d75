#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Markdown table of model error from a starscream-tune --points file (lines: K coll algo bytes
model_us measured_us error%): per K the points, median and worst |error|, the count beyond
35 %, and per algorithm median / worst (%). The symmetric column holds its LL and bulk-grid
rows (symmetric_ll, symmetric_bulk), the wide column the wide-grid all-gathers (symmetric_wide).
  tools/tune/error_table.py points.txt"""
import statistics
import sys

ALGOS = ("ring", "bidir_ring", "direct", "hierarchical", "symmetric", "wide")
COLUMN = {"symmetric_ll": "symmetric", "symmetric_bulk": "symmetric", "symmetric_wide": "wide"}
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) < 7:
        continue
    rows.setdefault(int(f[0]), []).append((COLUMN.get(f[2], f[2]), abs(float(f[6].rstrip("%")))))
print("| K | points | median | worst | > 35 % | " + " | ".join(ALGOS) + " |")
print("| --- " * (5 + len(ALGOS)) + "|")
for k in sorted(rows, reverse=True):
    e = [x for _, x in rows[k]]
    cells = []
    for a in ALGOS:
        ea = [x for algo, x in rows[k] if algo == a]
        cells.append(f"{statistics.median(ea):.0f}/{max(ea):.0f}" if ea else "-")
    print(f"| {k} | {len(e)} | {statistics.median(e):.1f} % | {max(e):.1f} % | "
          f"{sum(x > 35 for x in e)} | " + " | ".join(cells) + " |")
