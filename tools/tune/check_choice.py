#!/usr/bin/env python3
"""The tuner's choice against the sweep as oracle: for every collective and size of gpu_coll_perf
JSON files, the default (the tuner's pick) over the fastest forced algorithm.
  tools/tune/check_choice.py perf/results/...-k8.json [...]"""
import json
import sys

for path in sys.argv[1:]:
    d = json.load(open(path))
    rows = d["results"]
    n = miss = 0
    worst = (0, "")
    misses = []
    for coll in sorted({r["coll"] for r in rows}):
        for b in sorted({r["bytes"] for r in rows if r["coll"] == coll}):
            at = {r["algo"]: r["time_us"] for r in rows if r["coll"] == coll and r["bytes"] == b}
            forced = {a: t for a, t in at.items() if a not in ("default", "symmetric_bulk", "symmetric_ll")}
            if "default" not in at or not forced:
                continue
            best = min(forced, key=forced.get)
            ratio = at["default"] / forced[best]
            n += 1
            if ratio > 1.05:
                miss += 1
                misses.append(f"{coll} {b} B: default {at['default']:.1f} us, {best} {forced[best]:.1f} us ({ratio:.2f}x)")
            if ratio > worst[0]:
                worst = (ratio, f"{coll} {b} B")
    print(f"K={d['K']} ({path}): {n} sizes, {miss} more than 5 % behind the best forced algorithm; "
          f"worst {worst[0]:.2f}x at {worst[1]}")
    for m in misses:
        print("  miss:", m)
