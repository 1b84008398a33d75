#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Joins gemm_coll_perf records (JSON Lines) of a K = 1 run (the whole-GPU GEMM) and a K > 1 run
into one markdown table and the target figures of docs/gemm.md (communication hidden: auto within
1.15x of the GEMM alone; fused at least 1.2x unfused where the collective matters; the 2D helper's
pick at least 1.1x the naive 1D split).

    perf/gemm_table.py k1.json k8.json [k8.run2.json ...] [--plot speedup.png]

Several K > 1 files (runs of the same table) are joined cell by cell: each config's time is the
median of the runs that have it (a single run of 5 calls a cell has shown outliers of 2-50x).

Per layer and M: the whole-GPU GEMM; for rs (split K, GEMM + reduce-scatter) and ag (split N,
all-gather + GEMM) the GEMM alone, unfused, auto (the library's rule), chunked and the fused
variants (ag: push + one GEMM, and one GEMM per source rank); which op the 2D helper
picks; the pick against naive 1D (the layer's 1D op, unfused) and against the whole GPU.
"""
import argparse
import json
import math
from collections import defaultdict


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def geomean(xs):
    xs = [x for x in xs if x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def plot(cells, meta, path):
    """Speedup vs M per layer: the helper's pick (auto) and the 1D op chunked, over naive 1D."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("- no plot: matplotlib is not installed for this python3")
        return
    layers = sorted({k[0] for k in cells})
    cols = 4
    rows = (len(layers) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 3 * rows), squeeze=False)
    for ax, layer in zip(axes.flat, layers):
        ms = sorted(k[1] for k in cells if k[0] == layer)
        one_d = "ag" if meta[(layer, ms[0])]["inter"] == "column" else "rs"
        def series(cfg_of):
            pts = [(m, cells[(layer, m)].get(one_d + ".unfused"), cells[(layer, m)].get(cfg_of(m))) for m in ms]
            pts = [(m, a["us"] / b["us"]) for m, a, b in pts if a and b]
            return [p[0] for p in pts], [p[1] for p in pts]
        lines = [(lambda m: meta[(layer, m)]["helper_op"] + ".auto", "o-", "helper pick (auto)"),
                 (lambda m: one_d + ".chunked", "s--", "1D chunked"),
                 (lambda m: one_d + ".fused", "^:", "1D fused"),
                 (lambda m: "ag.fused" if one_d == "rs" else "none", "v-.", "2D fused ag (push)")]
        drawn = 0
        for cfg_of, style, label in lines:
            xs, ys = series(cfg_of)
            drawn += len(xs)
            ax.plot(xs, ys, style, label=label)
        ax.axhline(1.0, color="grey", lw=0.8)
        if drawn:  # a layer whose cells all failed has no point: a log axis of nothing fails
            ax.set_xscale("log", base=2)
        ax.set_title(layer, fontsize=9)
        ax.set_xlabel("M")
        ax.set_ylabel("speedup vs naive 1D")
    for ax in list(axes.flat)[len(layers):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print("- plot: %s" % path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("whole", help="records of the K = 1 run")
    ap.add_argument("parts", nargs="+", help="records of the K > 1 run(s); several: the median per cell")
    ap.add_argument("--plot", help="write the speedup-vs-M plot here (PNG)")
    ap.add_argument("--auto-as", metavar="CONFIG",
                    help="take each op's 'auto' time from this config instead (e.g. unfused: the "
                         "figures a later rule gives on the same measurements)")
    args = ap.parse_args()
    whole = {(r["layer"], r["M"]): r["us"] for r in load(args.whole) if r["config"] == "whole"}
    cells = defaultdict(dict)
    meta = {}
    hangs = []
    runs = defaultdict(list)
    for path in args.parts:
        for r in load(path):
            key = (r["layer"], r["M"])
            if r["us"] >= 1e6:  # a call that ran into STARSCREAM_TIMEOUT: a hang, not a time
                hangs.append("%s M=%d %s (%s)" % (r["layer"], r["M"], r["config"], path))
                continue
            runs[(key, r["config"])].append(r)
            meta[key] = r
    for (key, config), rs in runs.items():
        rs = sorted(rs, key=lambda r: r["us"])
        if len(rs) % 2:
            cells[key][config] = rs[len(rs) // 2]
        else:  # an even count: the mean of the middle two, the lower one's other fields
            mid = dict(rs[len(rs) // 2 - 1])
            mid["us"] = (rs[len(rs) // 2 - 1]["us"] + rs[len(rs) // 2]["us"]) / 2
            cells[key][config] = mid
    if args.auto_as:
        for c in cells.values():
            for op in ("rs", "ag"):
                if op + "." + args.auto_as in c:
                    c[op + ".auto"] = c[op + "." + args.auto_as]
    print("| layer (TP8 per GPU, K x N) | M | whole GPU | rs: GEMM alone / unfused / auto / chunked / fused | "
          "ag: GEMM alone / unfused / auto / chunked / fused (push) / fused (per rank) / per rank with copy engines | helper pick | "
          "pick vs naive 1D | whole / pick |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    hidden, hidden_small, fused, slower, helper, helper_bad, vs_whole = [], [], [], [], [], [], []
    # auto against the fastest variant it could have picked (the copy-engine forms need the
    # caller's SSC flag, so they are not among them): [ratios], [cells above 1.05]
    vs_best, vs_best_bad = [], []
    # auto (the library's own choice, what a caller gets): [/ GEMM alone M >= 256, M < 256, vs
    # unfused where the collective is >= 20 %]
    auto_stats = ([], [], [])
    # per fused config: [hidden M >= 256, hidden M < 256, vs unfused where the collective is >= 20 %,
    # cells > 3 % slower than unfused, vs unfused in every cell]
    fstats = defaultdict(lambda: ([], [], [], [], []))
    for key in sorted(cells, key=lambda k: (k[0], k[1])):
        c, m = cells[key], meta[key]
        one_d = "ag" if m["inter"] == "column" else "rs"
        pick = m["helper_op"]

        def t(cfg):
            return c[cfg]["us"] if cfg in c else None

        def cell(cfg):
            r = c.get(cfg)
            if r is None:
                return "-"
            tag = {"chunked": " (c%d)", "fused": " (f%d)"}.get(r["variant"], "")
            return "%.0f%s" % (r["us"], tag % r["chunks"] if tag else "")

        def group(op, cfgs):
            return " / ".join(cell(op + "." + x) for x in cfgs)

        naive = t(one_d + ".unfused")
        chosen = t(pick + ".auto")
        w = whole.get(key)
        ratio = "%.2fx" % (naive / chosen) if naive and chosen else "-"
        print("| %s %s (%dx%d) | %d | %s | %s | %s | %s (%s) | %s | %s |" % (
            key[0], m["inter"], m["K"], m["N"], key[1], "%.0f" % w if w else "-",
            group("rs", ("gemm", "unfused", "auto", "chunked", "fused")),
            group("ag", ("gemm", "unfused", "auto", "chunked", "fused", "fusedpr", "fusedprce")),
            pick, "2D" if m["helper_2d"] else "1D", ratio, "%.2fx" % (w / chosen) if w and chosen else "-"))
        for op in ("rs", "ag"):
            if t(op + ".gemm") is None:
                continue
            share = (t(op + ".unfused") - t(op + ".gemm")) / t(op + ".unfused")
            if t(op + ".chunked") is not None:
                (hidden if key[1] >= 256 else hidden_small).append(t(op + ".chunked") / t(op + ".gemm"))
                if share >= 0.2:
                    fused.append(t(op + ".unfused") / t(op + ".chunked"))
            if t(op + ".auto") is not None:
                auto_stats[0 if key[1] >= 256 else 1].append(t(op + ".auto") / t(op + ".gemm"))
                if share >= 0.2:
                    auto_stats[2].append(t(op + ".unfused") / t(op + ".auto"))
            pickable = [t(op + "." + x) for x in ("unfused", "chunked", "fused", "fusedpr")
                        if t(op + "." + x) is not None]
            if t(op + ".auto") is not None and pickable:
                best = min(pickable)
                vs_best.append(t(op + ".auto") / best)
                if t(op + ".auto") > 1.05 * best:
                    name = min((x for x in ("unfused", "chunked", "fused", "fusedpr")
                                if t(op + "." + x) == best))
                    vs_best_bad.append("%s %s M=%d auto %.0f vs %s %.0f" % (
                        key[0], op, key[1], t(op + ".auto"), name, best))
            if t(op + ".auto") is not None and t(op + ".auto") > 1.03 * t(op + ".unfused"):
                slower.append("%s %s M=%d auto %.0f vs unfused %.0f" % (key[0], op, key[1], t(op + ".auto"), t(op + ".unfused")))
            for cfg in ("fused", "fusedpr", "fusedce", "fusedprce"):
                f = t(op + "." + cfg)
                if f is None:
                    continue
                st = fstats[op + "." + cfg]
                st[0 if key[1] >= 256 else 1].append(f / t(op + ".gemm"))
                if share >= 0.2:
                    st[2].append(t(op + ".unfused") / f)
                if f > 1.03 * t(op + ".unfused"):
                    st[3].append("%s M=%d" % (key[0], key[1]))
                st[4].append(t(op + ".unfused") / f)
        if naive and chosen:
            helper.append(naive / chosen)
            best_1d = min(t(one_d + ".unfused"), t(one_d + ".auto"))
            if chosen > 1.03 * best_1d:
                helper_bad.append("%s M=%d pick %.0f vs 1D %.0f" % (key[0], key[1], chosen, best_1d))
            if w:
                vs_whole.append(w / chosen)
    print()
    print("- chunked / GEMM alone (communication hidden; target <= 1.15), geomean M >= 256: %.2f; M < 256: %.2f"
          % (geomean(hidden), geomean(hidden_small)))
    print("- chunked vs unfused where the collective is >= 20 %% of unfused (target >= 1.2x): %.2fx over %d cells"
          % (geomean(fused), len(fused)))
    for name in sorted(fstats):
        st = fstats[name]
        print("- %s / GEMM alone (target <= 1.15), geomean M >= 256: %.2f; M < 256: %.2f"
              % (name, geomean(st[0]), geomean(st[1])))
        print("- %s vs unfused where the collective is >= 20 %% of unfused (target >= 1.2x): %.2fx over %d cells "
              "(all cells: %.2fx over %d, best %.2fx); > 3 %% slower than unfused in %d cell(s)%s"
              % (name, geomean(st[2]), len(st[2]), geomean(st[4]), len(st[4]), max(st[4]) if st[4] else float("nan"),
                 len(st[3]), ": " + ", ".join(st[3]) if st[3] else ""))
    if auto_stats[0] or auto_stats[1]:
        print("- auto / GEMM alone (target <= 1.15), geomean M >= 256: %.2f; M < 256: %.2f"
              % (geomean(auto_stats[0]), geomean(auto_stats[1])))
        print("- auto vs unfused where the collective is >= 20 %% of unfused (target >= 1.2x): %.2fx over %d cells"
              % (geomean(auto_stats[2]), len(auto_stats[2])))
    print("- auto > 3 %% slower than unfused: %d cell(s)%s" % (len(slower), ": " + "; ".join(slower) if slower else ""))
    if vs_best:
        print("- auto vs the fastest variant it could pick (unfused, chunked, fused, fused per rank; "
              "target <= 1.05): geomean %.2f, worst %.2f; above 1.05 in %d of %d cell(s)%s"
              % (geomean(vs_best), max(vs_best), len(vs_best_bad), len(vs_best),
                 ": " + "; ".join(vs_best_bad) if vs_best_bad else ""))
    print("- helper pick vs naive 1D (target >= 1.1x): geomean %.2fx; > 3 %% slower than the best 1D: %d%s"
          % (geomean(helper), len(helper_bad), ": " + "; ".join(helper_bad) if helper_bad else ""))
    if hangs:
        print("- left out, hit STARSCREAM_TIMEOUT (a hang): " + "; ".join(hangs))
    if vs_whole:
        print("- whole GPU / helper pick: geomean %.2fx (min %.2f, max %.2f)" % (geomean(vs_whole), min(vs_whole), max(vs_whole)))
    if args.plot:
        plot(cells, meta, args.plot)


if __name__ == "__main__":
    main()
