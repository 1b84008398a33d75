#!/usr/bin/env python3
"""Plots starscream-model --json: predicted busbw of every algorithm against size, the model's
choice marked. Writes a PNG.
  build/bin/starscream-model --topo tools/topologies/mi300x-8x-cpx-nps4.json --json > m.json
  tools/model/plot.py m.json m.png"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    d = json.load(open(sys.argv[1]))
    rows = d["rows"]
    sizes = [r["bytes"] for r in rows]
    algos = list(rows[0]["algos"].keys()) if rows else []
    fig, ax = plt.subplots(figsize=(8, 5))
    for a in algos:
        pts = [(r["bytes"], r["algos"][a]["busbw_gbps"]) for r in rows if r["algos"].get(a)]
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=".", label=a)
    chosen = [(r["bytes"], r["algos"][r["choice"]]["busbw_gbps"]) for r in rows
              if r["algos"].get(r["choice"])]
    ax.scatter([c[0] for c in chosen], [c[1] for c in chosen], s=80, facecolors="none",
               edgecolors="black", label="tuner's choice", zorder=5)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("bytes per rank")
    ax.set_ylabel("predicted busbw (GB/s)")
    ax.set_title(f"{d['topology']} ({d['nranks']} ranks), {d['collective']}, "
                 f"{d['buffers']} buffers, profile {d['profile']}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)
    print("wrote", sys.argv[2], f"({len(sizes)} sizes)")


if __name__ == "__main__":
    main()
