#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Plots starscream-model --json: predicted busbw against size, one line per algorithm, the
model's choice marked, titled as a projection with the link figures it rests on. Writes a PNG and
prints the same figures as a table (busbw per algorithm, and the first algorithm of --compare
against the others).

  build/bin/starscream-model --topo tools/topologies/mi300x-8x-cpx-nps4.json --plain --json > m.json
  tools/model/plot.py m.json m.png [--algos ring,bidir_ring,hierarchical] [--compare hierarchical]

--algos: which algorithms to draw and print (default: all in the JSON). --compare NAME: the
table's last columns are NAME's speedup over each other algorithm drawn. Without matplotlib the
table is still printed and the PNG is skipped with a message (exit 0).
"""
import argparse
import json
import sys


def human(n):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} B"


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("json")
    ap.add_argument("png")
    ap.add_argument("--algos", default="", help="comma list of algorithms to draw (default: all)")
    ap.add_argument("--compare", default="", help="an algorithm whose speedup over the others is printed")
    args = ap.parse_args(argv)
    with open(args.json) as f:
        d = json.load(f)
    rows = d["rows"]
    present = list(rows[0]["algos"].keys()) if rows else []
    algos = [a for a in args.algos.split(",") if a] or present
    unknown = [a for a in algos + ([args.compare] if args.compare else []) if a not in present]
    if unknown:
        sys.exit(f"plot.py: no algorithm {', '.join(unknown)} in {args.json} (has {', '.join(present)})")

    def bw(r, a):
        e = r["algos"].get(a)
        return e["busbw_gbps"] if e else None

    links = d.get("links", {})
    sources = "; ".join(f"{tier.upper()} {l['bandwidth_gbps']:g} GB/s per link ({l['source']})"
                        for tier, l in links.items() if tier in ("usr", "xgmi") and l.get("bandwidth_gbps"))
    title = (f"Projection by the cost model, not a measurement: {d.get('gpus', '?')} x "
             f"{d.get('gpu_model', '?')}, {d['nranks']} ranks ({d['topology']}), {d['collective']}, "
             f"{d['buffers']} buffers, profile {d['profile']}")

    # The table.
    others = [a for a in algos if a != args.compare] if args.compare else []
    print(f"# {title}")
    if sources:
        print(f"# link figures: {sources}")
    head = ["size"] + [f"{a} GB/s" for a in algos] + ["choice"] + [f"{args.compare} vs {a}" for a in others]
    print("| " + " | ".join(head) + " |")
    print("|" + " --- |" * len(head))
    for r in rows:
        cells = [human(r["bytes"])] + [f"{bw(r, a):.3g}" if bw(r, a) is not None else "-" for a in algos]
        cells.append(r["choice"])
        for a in others:
            mine, theirs = bw(r, args.compare), bw(r, a)
            cells.append(f"{mine / theirs:.2f}x" if mine and theirs else "-")
        print("| " + " | ".join(cells) + " |")

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"plot.py: matplotlib is not installed: {args.png} not drawn", file=sys.stderr)
        return 0
    fig, ax = plt.subplots(figsize=(9, 5.5))
    for a in algos:
        pts = [(r["bytes"], bw(r, a)) for r in rows if bw(r, a) is not None]
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=".", label=a)
    chosen = [(r["bytes"], bw(r, r["choice"])) for r in rows if r["choice"] in algos and bw(r, r["choice"])]
    if chosen:
        ax.scatter([c[0] for c in chosen], [c[1] for c in chosen], s=80, facecolors="none",
                   edgecolors="black", label="tuner's choice", zorder=5)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("bytes per rank")
    ax.set_ylabel("predicted busbw (GB/s)")
    ax.set_title(title, fontsize=9, wrap=True)
    if sources:
        fig.text(0.01, 0.01, "Link figures: " + sources, fontsize=6, wrap=True, va="bottom")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout(rect=(0, 0.07 if sources else 0, 1, 1))
    fig.savefig(args.png, dpi=110)
    print(f"plot.py: wrote {args.png} ({len(rows)} sizes)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
