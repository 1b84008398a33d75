#!/usr/bin/env python3
"""The tuner's choice against the sweep as oracle: for every collective and size, the default (the
tuner's pick) over the fastest forced algorithm, judged against the default's run-to-run spread.

  tools/tune/check_choice.py [--markdown] FILE.json [FILE.json ...]

FILEs: gpu_coll_perf JSON (registered buffers) or tools/tune/nccl_tests_choice.sh JSON (plain
buffers). Files of the same K are pooled; a row without a "run" field counts as run i of its K
(i: the file's place among that K's files), so a second gpu_coll_perf sweep of the default alone
gives the spread for registered buffers too.

Per cell: default = the mean of the default's runs; spread = (slowest - fastest) / fastest of
those runs (0 with one run); ratio = default / the fastest forced algorithm. A cell is
  ok       ratio <= 1.05 (the target: within 5 % of the best);
  noise    ratio > 1.05 but <= 1.05 + spread: the gap is within what the default itself varies
           from run to run;
  MISS     ratio > 1.05 + spread;
  no-op    an all-gather or reduce-scatter with fewer elements than ranks (nccl-tests' 8 B at
           K = 4 or 8: each rank's part is 0 elements), which moves no data: not judged;
  one-rank K = 1: every algorithm runs the same one copy (the API short-cuts one rank), so
           there is no choice to judge; the gaps are between runs of one code path.
"""
import json
import statistics
import sys

# Rows that are not a forced alternative: the pick itself, and the all-reduce's protocol-pinned
# rows (LL vs bulk is the executor's size limit, not the tuner's choice). The all-gather's
# symmetric_bulk and symmetric_wide rows are the two grids the tuner chooses between: judged.
SKIP = ("default", "symmetric_ll")


def skipped(row):
    return row["algo"] in SKIP or (row["algo"] == "symmetric_bulk" and row["coll"] != "allgather")


def pooled(paths):
    per_k = {}
    for path in paths:
        d = json.load(open(path))
        k = int(d["K"])
        files = per_k.setdefault(k, [])
        files.append(path)
        for r in d["results"]:
            r = dict(r)
            r.setdefault("run", len(files))
            per_k.setdefault(("rows", k), []).append(r)
    return {k: (per_k[k], per_k[("rows", k)]) for k in per_k if not isinstance(k, tuple)}


def is_noop(coll, nbytes, k):
    return coll in ("allgather", "reducescatter") and nbytes // 4 < k


def judge(rows, k):
    cells = []
    for coll in sorted({r["coll"] for r in rows}):
        for b in sorted({r["bytes"] for r in rows if r["coll"] == coll}):
            at = [r for r in rows if r["coll"] == coll and r["bytes"] == b]
            runs = [r["time_us"] for r in at if r["algo"] == "default"]
            forced = {}
            for r in at:
                if not skipped(r):
                    forced[r["algo"]] = min(forced.get(r["algo"], r["time_us"]), r["time_us"])
            if not runs or not forced:
                continue
            best = min(forced, key=forced.get)
            mean = statistics.fmean(runs)
            spread = (max(runs) - min(runs)) / min(runs) if min(runs) > 0 else 0.0
            ratio = mean / forced[best] if forced[best] > 0 else 1.0
            if k == 1:
                verdict = "one-rank"
            elif is_noop(coll, b, k):
                verdict = "no-op"
            elif ratio <= 1.05:
                verdict = "ok"
            elif ratio <= 1.05 + spread:
                verdict = "noise"
            else:
                verdict = "MISS"
            cells.append(dict(coll=coll, bytes=b, runs=runs, mean=mean, spread=spread, best=best,
                              best_us=forced[best], ratio=ratio, verdict=verdict))
    return cells


def main(argv):
    markdown = "--markdown" in argv
    paths = [a for a in argv if a != "--markdown"]
    if not paths:
        print(__doc__.strip())
        return 2
    for k, (files, rows) in sorted(pooled(paths).items()):
        cells = judge(rows, k)
        count = {v: sum(c["verdict"] == v for c in cells)
                 for v in ("ok", "noise", "MISS", "no-op", "one-rank")}
        judged = [c for c in cells if c["verdict"] not in ("no-op", "one-rank")]
        if k == 1:
            gaps = [c["ratio"] for c in cells]
            print(f"K=1 ({', '.join(files)}): {len(cells)} sizes, one-rank: every algorithm is the same "
                  f"one copy, no choice to judge (default / fastest forced run: median "
                  f"{statistics.median(gaps):.2f}, max {max(gaps):.2f})")
            continue
        spreads = [c["spread"] for c in judged if len(c["runs"]) > 1]
        worst = max(judged, key=lambda c: c["ratio"], default=None)
        print(f"K={k} ({', '.join(files)}): {len(cells)} sizes: {count['ok']} within 5 %, "
              f"{count['noise']} beyond 5 % but within the default's run-to-run spread, "
              f"{count['MISS']} misses beyond it, {count['no-op']} no-op (not judged); "
              + (f"spread median {100 * statistics.median(spreads):.1f} %, max {100 * max(spreads):.1f} %; "
                 if spreads else "one run of the default (no spread); ")
              + (f"worst {worst['ratio']:.2f}x at {worst['coll']} {worst['bytes']} B" if worst else ""))
        if markdown:
            print("\n| coll | bytes | default runs, us | spread | best forced, us | default / best | verdict |")
            print("| --- | --- | --- | --- | --- | --- | --- |")
        for c in cells:
            runs = ", ".join(f"{t:.1f}" for t in c["runs"])
            if markdown:
                print(f"| {c['coll']} | {c['bytes']} | {runs} | {100 * c['spread']:.1f} % | "
                      f"{c['best']} {c['best_us']:.1f} | {c['ratio']:.2f} | {c['verdict']} |")
            elif c["verdict"] != "ok":
                print(f"  {c['verdict']}: {c['coll']} {c['bytes']} B: default {runs} us "
                      f"(spread {100 * c['spread']:.1f} %), {c['best']} {c['best_us']:.1f} us "
                      f"({c['ratio']:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
