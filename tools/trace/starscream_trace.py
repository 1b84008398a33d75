#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Read the per-rank timelines STARSCREAM_TRACE=dir writes (docs/trace.md).

  starscream-trace merge DIR -o merged.json      one timeline of every rank (Perfetto, chrome://tracing)
  starscream-trace summary DIR [--copy-gbps C]   per collective and algorithm: calls, bytes, device time,
                                                 busbw, and with C the share of the copy roofline
  starscream-trace plot DIR -o timeline.png      the merged timeline as a picture (matplotlib)
  starscream-trace check DIR --ranks N [--calls M]  every rank present, M calls each (tests)

Each rank's file is Chrome trace-event JSON: per call one "api" event on row 0 (the API call on
the host: ts, dur = how long it took to enqueue) and, once the work's interval was known, one
"device" event on its stream's row; both carry the call's details in args.
"""
import argparse
import collections
import glob
import json
import os
import sys

# nccl-tests' bus-bandwidth factor per collective, n ranks.
BUS_FACTOR = {
    "allreduce": lambda n: 2.0 * (n - 1) / n,
    "reducescatter": lambda n: (n - 1) / n,
    "allgather": lambda n: (n - 1) / n,
    "alltoall": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
}

# The busbw a collective cannot beat on K partitions sharing one memory of copy rate C (GB/s):
# docs/benchmarks.md, "The roofline".
def busbw_bound(coll, k, c):
    if k < 2:
        return None
    if coll == "allreduce":
        return 2.0 * c * (k - 1) / (k * k)
    if coll in ("reducescatter", "allgather"):
        return 2.0 * c / (k + 1) * (k - 1) / k
    if coll in ("broadcast", "reduce"):
        return 2.0 * c / (k + 1)
    if coll == "alltoall":
        return c * (k - 1) / (k * k)
    return None


def load(directory):
    paths = sorted(glob.glob(os.path.join(directory, "starscream-trace.*.json")))
    if not paths:
        sys.exit(f"starscream-trace: no starscream-trace.*.json files in {directory}")
    traces = []
    for path in paths:
        try:
            with open(path) as f:
                data = json.load(f)
        except (OSError, ValueError) as e:
            sys.exit(f"starscream-trace: {path}: {e}")
        data.setdefault("otherData", {})
        data["path"] = path
        traces.append(data)
    traces.sort(key=lambda t: (t["otherData"].get("rank", 0), t["path"]))
    return traces


def calls_of(trace, cat):
    return [e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("cat") == cat]


def merge(traces):
    """All events in one list; ts from the earliest event; a second communicator of a rank gets
    its own process row."""
    starts = [e["ts"] for t in traces for e in t["traceEvents"] if e.get("ph") == "X"]
    base = min(starts) if starts else 0.0
    seen = collections.Counter()
    events, ranks = [], []
    for t in traces:
        rank = t["otherData"].get("rank", 0)
        extra = seen[rank]
        seen[rank] += 1
        pid = rank + 10000 * extra
        for e in t["traceEvents"]:
            e = dict(e)
            e["pid"] = pid
            if "ts" in e:
                e["ts"] = round(e["ts"] - base, 3)
            if extra and e.get("name") == "process_name":
                e["args"] = dict(e["args"], name=e["args"]["name"] + f" (communicator {extra + 1})")
            events.append(e)
        ranks.append(dict(t["otherData"], file=os.path.basename(t["path"])))
    return {"traceEvents": events, "displayTimeUnit": "ns",
            "otherData": {"producer": "starscream-trace merge", "base_ts_us": base, "ranks": ranks}}


def summary_rows(traces):
    """(collective, algorithm) -> per-rank totals, averaged over ranks."""
    per = collections.defaultdict(lambda: {"calls": [], "bytes": [], "device_us": [], "timed": [],
                                           "enqueue_us": [], "nranks": 1})
    for t in traces:
        mine = collections.defaultdict(lambda: [0, 0, 0.0, 0, 0.0])
        for e in calls_of(t, "api"):
            a = e.get("args", {})
            key = (e["name"], a.get("algorithm", "?"))
            row = mine[key]
            row[0] += 1
            row[1] += a.get("bytes", 0)
            row[4] += a.get("enqueue_us", 0.0)
            if a.get("device_us") is not None:
                row[2] += a["device_us"]
                row[3] += 1
        for key, (calls, nbytes, dev, timed, enq) in mine.items():
            p = per[key]
            p["calls"].append(calls)
            p["bytes"].append(nbytes)
            p["device_us"].append(dev)
            p["timed"].append(timed)
            p["enqueue_us"].append(enq)
            p["nranks"] = t["otherData"].get("nranks", 1)
    rows = []
    for (coll, algo), p in sorted(per.items()):
        n = len(p["calls"])
        calls = sum(p["calls"]) / n
        nbytes = sum(p["bytes"]) / n
        dev = sum(p["device_us"]) / n
        timed = sum(p["timed"]) / n
        rows.append({"collective": coll, "algorithm": algo, "ranks": n, "nranks": p["nranks"],
                     "calls": calls, "bytes": nbytes, "device_us": dev if timed else None,
                     "mean_us": dev / timed if timed else None,
                     "enqueue_us": sum(p["enqueue_us"]) / n / calls if calls else 0.0,
                     # bytes of the timed calls only, as a mean size times the timed count
                     "busbw": (BUS_FACTOR[coll](p["nranks"]) * nbytes / calls * timed / (dev * 1e3)
                               if coll in BUS_FACTOR and timed and dev > 0 else None)})
    return rows


def human_bytes(n):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024.0


def print_summary(traces, copy_gbps):
    rows = summary_rows(traces)
    nranks = max((t["otherData"].get("nranks", 1) for t in traces), default=1)
    print(f"# {len(traces)} trace file(s), {nranks} rank(s); per rank, averaged over the ranks; "
          "busbw in GB/s from the device time" +
          (f"; roofline from copy rate C = {copy_gbps:g} GB/s" if copy_gbps else ""))
    head = ["collective", "algorithm", "calls", "bytes", "device ms", "mean us", "enqueue us", "busbw"]
    if copy_gbps:
        head.append("roofline %")
    lines = [head]
    for r in rows:
        line = [r["collective"], r["algorithm"], f"{r['calls']:.0f}", human_bytes(r["bytes"]),
                "-" if r["device_us"] is None else f"{r['device_us'] / 1e3:.3f}",
                "-" if r["mean_us"] is None else f"{r['mean_us']:.1f}",
                f"{r['enqueue_us']:.1f}",
                "-" if r["busbw"] is None else f"{r['busbw']:.3g}"]
        if copy_gbps:
            bound = busbw_bound(r["collective"], r["nranks"], copy_gbps)
            line.append("-" if bound is None or r["busbw"] is None else f"{100.0 * r['busbw'] / bound:.0f}")
        lines.append(line)
    widths = [max(len(l[i]) for l in lines) for i in range(len(head))]
    for l in lines:
        print("  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(l, widths))))
    dropped = sum(t["otherData"].get("dropped", 0) for t in traces)
    if dropped:
        print(f"# {dropped} call(s) dropped past the per-communicator cap (not in the table)")


def plot(traces, out, title):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.patches import Patch
    except ImportError:
        sys.exit("starscream-trace plot: matplotlib is not installed (Debian: python3-matplotlib)")

    merged = merge(traces)["traceEvents"]
    bars = [e for e in merged if e.get("ph") == "X" and e.get("cat") == "device"]
    what = "device"
    if not bars:
        bars = [e for e in merged if e.get("ph") == "X" and e.get("cat") == "api"]
        what = "host enqueue"
    if not bars:
        sys.exit("starscream-trace plot: no calls in the traces")
    origin = min(e["ts"] for e in bars)
    labels = sorted({f"{e['name']} / {e['args'].get('algorithm', '?')}" for e in bars})
    cmap = plt.get_cmap("tab10" if len(labels) <= 10 else "tab20")
    colour = {l: cmap(i % cmap.N) for i, l in enumerate(labels)}
    pids = sorted({e["pid"] for e in bars})
    row = {p: i for i, p in enumerate(pids)}
    names = {e["pid"]: e["args"]["name"] for e in merged
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    fig, ax = plt.subplots(figsize=(10, 0.35 * len(pids) + 1.6), dpi=90)
    by_label = collections.defaultdict(list)
    for e in bars:
        l = f"{e['name']} / {e['args'].get('algorithm', '?')}"
        by_label[l].append(e)
    for l, es in by_label.items():
        for p in pids:
            spans = [((e["ts"] - origin) / 1e3, max(e["dur"] / 1e3, 1e-4)) for e in es if e["pid"] == p]
            if spans:
                ax.broken_barh(spans, (row[p] - 0.4, 0.8), facecolors=colour[l], edgecolor="none")
    ax.set_yticks(range(len(pids)))
    ax.set_yticklabels([names.get(p, f"rank {p}").split(" on ")[0] for p in pids], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(f"time (ms, {what} intervals, from the first one)")
    ax.set_title(title or f"starscream trace: {len(pids)} ranks", fontsize=10)
    ax.legend(handles=[Patch(color=colour[l], label=l) for l in labels], fontsize=7,
              loc="upper center", bbox_to_anchor=(0.5, -0.18 - 0.02 * len(pids) / 8),
              ncol=min(4, len(labels)), frameon=False)
    fig.tight_layout()
    fig.savefig(out)
    print(f"wrote {out}")


def check(traces, ranks, calls):
    """Exit status 1 with what is wrong, for tests: every rank 0..ranks-1 present once, each
    with `calls` api events (when given) and as many device events as it has timed calls."""
    problems = []
    present = collections.Counter(t["otherData"].get("rank") for t in traces)
    for r in range(ranks):
        if present[r] != 1:
            problems.append(f"rank {r}: {present[r]} file(s)")
    for t in traces:
        api, dev = calls_of(t, "api"), calls_of(t, "device")
        name = os.path.basename(t["path"])
        if calls is not None and len(api) != calls:
            problems.append(f"{name}: {len(api)} calls, expected {calls}")
        timed = sum(1 for e in api if e["args"].get("device_us") is not None)
        if len(dev) != timed:
            problems.append(f"{name}: {len(dev)} device events for {timed} timed calls")
        for e in api:
            for key in ("bytes", "algorithm", "protocol", "path", "channels", "steps", "enqueue_us"):
                if key not in e["args"]:
                    problems.append(f"{name}: call {e['args'].get('call')} has no {key}")
                    break
    for p in problems:
        print(f"starscream-trace check: {p}", file=sys.stderr)
    if not problems:
        print(f"ok: {len(traces)} rank file(s), "
              f"{sum(len(calls_of(t, 'api')) for t in traces)} calls")
    return 1 if problems else 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="starscream-trace", description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n", 2)[2])
    sub = parser.add_subparsers(dest="command", required=True)
    m = sub.add_parser("merge", help="merge every rank's file into one timeline")
    m.add_argument("dir")
    m.add_argument("-o", "--output", required=True)
    s = sub.add_parser("summary", help="per collective and algorithm: calls, bytes, time, busbw")
    s.add_argument("dir")
    s.add_argument("--copy-gbps", type=float, default=None,
                   help="copy rate C (GB/s) for the roofline share (docs/benchmarks.md)")
    p = sub.add_parser("plot", help="draw the merged timeline (matplotlib)")
    p.add_argument("dir")
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--title", default=None)
    c = sub.add_parser("check", help="every rank present with the expected calls (tests)")
    c.add_argument("dir")
    c.add_argument("--ranks", type=int, required=True)
    c.add_argument("--calls", type=int, default=None)
    args = parser.parse_args(argv)
    traces = load(args.dir)
    if args.command == "merge":
        with open(args.output, "w") as f:
            json.dump(merge(traces), f, separators=(",", ":"))
        print(f"wrote {args.output}: {len(traces)} rank file(s)")
    elif args.command == "summary":
        print_summary(traces, args.copy_gbps)
    elif args.command == "plot":
        plot(traces, args.output, args.title)
    else:
        return check(traces, args.ranks, args.calls)
    return 0


if __name__ == "__main__":
    sys.exit(main())
