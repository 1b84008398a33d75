#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Table and plot of perf/attention_perf records (its --json output).

Takes the K-partition run (modes local, local-sync, sharded, sharded-ag, sharded-rq, naive) and
optionally the whole-GPU run (K = 1, mode "whole"), prints one Markdown row per (model, context,
batch) and, with --png, draws per model: decode time against batch for every mode and context
(log-log), and the exchange share (step - local step) / step of every sharded mode.

    python3 perf/attention_plot.py --parts k8.json [--whole k1.json] [--png attention.png]

Columns: sharded (fused exchange) time and % of the copy roofline, its exchange share, the same
for sharded-ag (sscKvExchangeAllGather) and sharded-rq (queries replicated by the caller), the
local step (each rank alone over its 1/K) and local-sync (the local step tied to the other ranks
by an 8-byte all-reduce), naive (replicated KV) and naive / sharded, whole GPU and the speed of
sharded and of sharded-rq against it.
"""
import argparse
import json
import sys


def load(path):
    if not path:
        return []
    with open(path) as f:
        text = f.read().strip()
    return json.loads(text) if text.startswith("[") else [json.loads(l) for l in text.splitlines() if l.strip()]


def index(records):
    return {(r["model"], r["mode"], r["context"], r["batch"]): r for r in records}


def fmt_time(r):
    if r is None:
        return "-"
    if r.get("oom"):
        return "OOM"
    return "%.0f (%.0f %%)" % (r["time_us"], r["roofline_pct"])


def share(r):
    if r is None or r.get("oom") or not r.get("exchange_us"):
        return "-"
    return "%.0f" % (100.0 * r["exchange_us"] / r["time_us"])


def plain(r):
    return "-" if r is None or r.get("oom") else "%.0f" % r["time_us"]


def ratio(a, b):
    if a is None or b is None or a.get("oom") or b.get("oom") or not b["time_us"]:
        return "-"
    return "%.2f" % (a["time_us"] / b["time_us"])


def table(parts, whole):
    ix, wx = index(parts), index(whole)
    keys = sorted({(r["model"], r["context"], r["batch"]) for r in parts},
                  key=lambda k: (k[0], k[1], k[2]))
    k = parts[0]["K"] if parts else 0
    lines = ["| model | context | batch | sharded K=%d us (%% roof) | exch %% | sharded-ag us (%% roof) "
             "| exch %% | sharded-rq us (%% roof) | exch %% | local us | local-sync us | naive us | naive / sharded "
             "| whole us (%% roof) | sharded speed / whole | sharded-rq speed / whole |" % k,
             "|" + " --- |" * 16]
    for model, ctx, batch in keys:
        s = ix.get((model, "sharded", ctx, batch))
        ag = ix.get((model, "sharded-ag", ctx, batch))
        rq = ix.get((model, "sharded-rq", ctx, batch))
        loc = ix.get((model, "local", ctx, batch))
        tied = ix.get((model, "local-sync", ctx, batch))
        nv = ix.get((model, "naive", ctx, batch))
        wh = wx.get((model, "whole", ctx, batch))
        lines.append("|" + " %s |" * 16 % (
            model, "%dK" % (ctx // 1024), batch, fmt_time(s), share(s), fmt_time(ag), share(ag), fmt_time(rq),
            share(rq), plain(loc), plain(tied), fmt_time(nv), ratio(nv, s), fmt_time(wh), ratio(wh, s),
            ratio(wh, rq)))
    return "\n".join(lines)


def plot(parts, whole, png):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("attention_plot: matplotlib is not installed: no plot written", file=sys.stderr)
        return False
    models = sorted({r["model"] for r in parts})
    fig, axes = plt.subplots(2, len(models), figsize=(6 * len(models), 8), squeeze=False)
    styles = {"sharded": "-o", "sharded-ag": "--s", "sharded-fused": "-v", "sharded-rq": "-*", "local": ":^",
              "local-sync": ":>", "naive": "-.x", "whole": "-d"}
    for col, model in enumerate(models):
        ax, ex = axes[0][col], axes[1][col]
        for ctx in sorted({r["context"] for r in parts if r["model"] == model}):
            for mode in styles:
                pts = sorted((r["batch"], r["time_us"]) for r in parts + whole
                             if r["model"] == model and r["mode"] == mode and r["context"] == ctx
                             and not r.get("oom"))
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], styles[mode],
                            label="%s %dK" % (mode, ctx // 1024))
            for mode in ("sharded", "sharded-ag", "sharded-fused", "sharded-rq"):
                pts = sorted((r["batch"], 100.0 * r["exchange_us"] / r["time_us"]) for r in parts
                             if r["model"] == model and r["mode"] == mode and r["context"] == ctx
                             and not r.get("oom") and r.get("exchange_us"))
                if pts:
                    ex.plot([p[0] for p in pts], [p[1] for p in pts], styles[mode],
                            label="%s %dK" % (mode, ctx // 1024))
        ax.set(xscale="log", yscale="log", xlabel="batch", ylabel="decode step (us)",
               title="%s, K = %d" % (model, parts[0]["K"]))
        ax.legend(fontsize=7)
        ex.axhline(10, color="grey", lw=0.8)  # 10 %: the share of the step the exchange (merge + gather) aims to stay under
        ex.set(xscale="log", xlabel="batch", ylabel="exchange share of the step (%)", ylim=(0, 100),
               title="%s: (step - local step) / step" % model)
        ex.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parts", required=True, help="attention_perf JSON of the K-partition run")
    ap.add_argument("--whole", help="attention_perf JSON of the whole-GPU run (K = 1)")
    ap.add_argument("--png", help="write the plot here (needs matplotlib)")
    a = ap.parse_args()
    parts, whole = load(a.parts), load(a.whole)
    if not parts:
        print("attention_plot: no records in %s" % a.parts, file=sys.stderr)
        return 2
    print(table(parts, whole))
    if a.png and plot(parts, whole, a.png):
        print("attention_plot: wrote %s" % a.png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
