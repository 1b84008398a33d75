#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The benchmark report: Markdown tables (and plots) from perf/bench.sh's bench.json, one file a
card, and docs/benchmarks.md's card sections regenerated from them.

  perf/bench_report.py [--out FILE] [--update DOC] [--plots DIR] BENCH.json [BENCH.json ...]
  perf/bench_report.py --assemble DIR [--out FILE] [--plots DIR]

BENCH.json: what perf/bench.sh wrote (schema "starscream-bench/1"), one card per file; the card's
section is keyed by its "label" (H100, H200, ...). Without --out and --update the Markdown goes
to stdout. --update DOC replaces, for each card, everything between the lines
`<!-- bench:begin LABEL -->` and `<!-- bench:end LABEL -->` in DOC (a missing section is
appended at the end with a `## LABEL` heading); the rest of DOC is left byte for byte, and a
second run with the same JSON changes nothing. --plots DIR draws busbw against size per K (one PNG
a card and K) when matplotlib can be imported, and says so when it cannot. --assemble DIR
(perf/bench.sh's last step) first builds DIR/bench.json from the run index (DIR/runs.tsv), the
run metadata (DIR/meta.json) and the nccl-tests logs bench.sh left in DIR, then reports on it.

bench.json: card, driver, sms, commit, dirty, date, command, roofline_copy_GBps (and roofline,
how it was measured), params, runs (one per K, collective, algorithm and size: K, coll, algo,
bytes, time_us, busbw_GBps, in_place_time_us), torch (K, bytes, time_us, busbw_GBps, ok), moe
(perf/moe_alltoall.py's lines: K, test, bytes, us, busbw_GBps, roofline_busbw_GBps, share, ok),
failures (K, coll, algo, rc, reason, log) and skipped (runs --until did not start).

The roofline (docs/benchmarks.md states it too; perf/nccl_tests_bw.sh uses the same one). C is
the single-process copy rate measured in the same run: 1 GiB copied device to device, in bytes
copied per second, so the GPU's memory reads C and writes C bytes per second. K partitions of one
GPU share that one memory, so a collective cannot beat the time its unavoidable traffic takes at
that rate: every input byte read once and every output byte written once, together (R + W) / 2C.
With S nccl-tests' size (the larger of a rank's send and receive buffers):

  all-reduce:     R = K S, W = K S          algbw <= C / K        busbw <= C / K x 2(K-1)/K
  reduce-scatter: R = K S, W = S            algbw <= 2C / (K + 1) busbw <= 2C / (K + 1) x (K-1)/K
  all-gather:     R = S,   W = K S          algbw <= 2C / (K + 1) busbw <= 2C / (K + 1) x (K-1)/K
  broadcast:      R = S,   W = K S          algbw <= 2C / (K + 1) busbw = algbw
  reduce:         R = K S, W = S            algbw <= 2C / (K + 1) busbw = algbw
  all-to-all:     R = K S, W = K S          algbw <= C / K        busbw <= C / K x (K-1)/K
  all-to-all, in place: R = (K-1) S, W = (K-1) S (a rank's own block stays)   algbw <= C / (K-1)
  send/recv:      R = K S, W = K S          algbw <= C / K        busbw = algbw

(busbw = algbw x nccl-tests' factor: 2(K-1)/K for all-reduce, (K-1)/K for reduce-scatter,
all-gather and all-to-all, 1 for broadcast and reduce.) A figure above 100 % means the ranks
beat the single-process copy (caches, or the copy itself not reaching the memory's peak).
"""
import argparse
import json
import math
import os
import re
import statistics
import sys

SCHEMA = "starscream-bench/1"
MISS_RATIO = 1.10           # default / best forced above this is a miss
ROOF_FROM = 64 << 20        # sizes from which busbw is shown as a share of the roofline
# Rows of the per-collective tables: the smallest size that moves data, then these (each the
# largest size run within 1 % below it: nccl-tests rounds a size down to whole elements per rank,
# so at K = 3 the 1 GiB row of an all-gather is 1073741808 bytes).
ROW_SIZES = (64 << 10, 1 << 20, 64 << 20, 256 << 20, 1 << 30)
COLL_ORDER = ("all_reduce", "reduce_scatter", "all_gather", "broadcast", "reduce", "alltoall", "sendrecv")
FAILURES_SHOWN = 6          # failures listed in a card's section; the rest are counted
BEGIN = "<!-- bench:begin {} -->"
END = "<!-- bench:end {} -->"


class Usage(Exception):
    """A bad command line or input file: reported on stderr, exit status 2."""


# ---------------------------------------------------------------------------------------------
# The roofline

def bus_factor(coll, k):
    """nccl-tests' busbw / algbw."""
    if coll == "all_reduce":
        return 2 * (k - 1) / k
    if coll in ("broadcast", "reduce", "sendrecv"):
        return 1.0
    return (k - 1) / k


def roof_algbw(coll, k, copy):
    """The largest algbw the collective can reach when its traffic crosses one memory that copies
    `copy` bytes a second (the module docstring derives it)."""
    if coll in ("all_reduce", "alltoall", "sendrecv"):
        return copy / k
    return 2 * copy / (k + 1)


def roof_busbw(coll, k, copy):
    return roof_algbw(coll, k, copy) * bus_factor(coll, k)


def roof_busbw_in_place(coll, k, copy):
    """In place, an all-to-all leaves each rank's own block where it is: (K-1) S read and
    written in all, so its bound is C / (K-1). Every other collective moves what it moves out of
    place."""
    if coll == "alltoall" and k > 1:
        return copy / (k - 1) * bus_factor(coll, k)
    return roof_busbw(coll, k, copy)


def is_noop(coll, nbytes, k):
    """A row that moves no data: nccl-tests reports size 0 where a rank's share rounds to 0
    elements (all-gather, reduce-scatter, all-to-all at the smallest sizes)."""
    return nbytes == 0 or (coll in ("all_gather", "reduce_scatter", "alltoall") and nbytes // 4 < k)


# ---------------------------------------------------------------------------------------------
# Assembling bench.json from what bench.sh left (DIR/meta.json, DIR/runs.tsv, DIR/logs/*.log)

ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\S+)\s+(\S+)\s+(-?\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)"
                 r"\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s*$")
TORCH = re.compile(r"^torch_latency\s+\S*\s*K=(\d+) bytes=(\d+) us=([0-9.]+) busbw=([0-9.]+)GB/s(.*)$")
# perf/moe_alltoall.py, run without --label: "moe_alltoall  dispatch K=8 experts=64 ... bytes=N
# max_recv_rows=M us=T busbw=B GB/s roofline=R GB/s share=S [WRONG]".
MOE = re.compile(r"^moe_alltoall\s+(\S+) K=(\d+)((?: \S+=\S+)*?) us=([0-9.]+) busbw=([0-9.]+)GB/s "
                 r"roofline=([0-9.]+)GB/s share=([0-9.]+)(.*)$")
ERROR_HINTS = ("Test NCCL failure", "Test CUDA failure", "Test failure", "NCCL failure",
               "cannot be preloaded", "busy or unavailable", "error:", "Error", "Aborted",
               "Segmentation fault", "exited on signal", "Traceback")


def number(text):
    try:
        v = float(text)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def parse_nccl_tests(text):
    """Rows of an nccl-tests table (size count type redop root, then time algbw busbw #wrong out
    of place and in place), the version line, and the first error-looking line."""
    rows, version, error = [], None, None
    for line in text.splitlines():
        m = ROW.match(line)
        if m:
            g = m.groups()
            t, bus, tin = number(g[5]), number(g[7]), number(g[9])
            if t is None:
                continue
            rows.append({"bytes": int(g[0]), "time_us": t, "busbw_GBps": bus if bus is not None else 0.0,
                         "in_place_time_us": tin, "wrong": g[8], "in_place_wrong": g[12]})
            continue
        if line.startswith("# nccl-tests version"):
            version = line[len("# nccl-tests version"):].strip()
        elif error is None and not line.startswith("#") and any(h in line for h in ERROR_HINTS):
            error = line.strip()[:200]
    return rows, version, error


def read_text(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def assemble(outdir):
    """DIR/bench.json from DIR/meta.json and DIR/runs.tsv (one line a planned run: K, coll, algo,
    status (rc or "skip"), seconds, time limit, log path relative to DIR, note)."""
    meta_path, index_path = os.path.join(outdir, "meta.json"), os.path.join(outdir, "runs.tsv")
    try:
        with open(meta_path) as f:
            bench = json.load(f)
    except (OSError, ValueError) as e:
        raise Usage(f"--assemble: cannot read {meta_path}: {e}")
    bench.update(schema=SCHEMA, runs=[], torch=[], moe=[], failures=[], skipped=[])
    lines = read_text(index_path).splitlines()
    for line in lines:
        if not line.strip() or line.startswith("#"):
            continue
        f = line.split("\t")
        if len(f) < 7:
            raise Usage(f"--assemble: malformed line in {index_path}: {line!r}")
        k, coll, algo, status, seconds, limit, log = int(f[0]), f[1], f[2], f[3], f[4], f[5], f[6]
        note = f[7] if len(f) > 7 else ""
        where = {"K": k, "coll": coll, "algo": algo}
        if status == "skip":
            bench["skipped"].append(dict(where, reason=note or "not run"))
            continue
        rc = int(status)
        text = read_text(os.path.join(outdir, log))
        fail = None
        if coll == "torch":
            got = 0
            for l in text.splitlines():
                m = TORCH.match(l.strip())
                if m:
                    got += 1
                    bench["torch"].append({"K": int(m.group(1)), "bytes": int(m.group(2)),
                                           "time_us": float(m.group(3)), "busbw_GBps": float(m.group(4)),
                                           "ok": "WRONG" not in m.group(5)})
                    if "WRONG" in m.group(5):
                        fail = "wrong result (the checked call before the timed ones)"
            if not got and rc == 0:
                fail = "no torch_latency line in the log"
        elif coll == "moe":
            got = 0
            for l in text.splitlines():
                m = MOE.match(l.strip())
                if not m:
                    continue
                got += 1
                fields = dict(f.split("=", 1) for f in m.group(3).split())
                entry = {"K": int(m.group(2)), "test": m.group(1), "bytes": int(fields.get("bytes", 0)),
                         "us": float(m.group(4)), "busbw_GBps": float(m.group(5)),
                         "roofline_busbw_GBps": float(m.group(6)), "share": float(m.group(7)),
                         "ok": "WRONG" not in m.group(8)}
                for key in ("experts", "topk", "hidden", "tokens"):
                    if key in fields:
                        entry[key] = int(fields[key])
                bench["moe"].append(entry)
                if not entry["ok"]:
                    fail = f"wrong data ({m.group(1)})"
            if not got and rc == 0:
                fail = "no moe_alltoall line in the log"
        else:
            rows, version, error = parse_nccl_tests(text)
            if version and not bench.get("nccl_tests_version"):
                bench["nccl_tests_version"] = version
            wrong = [r for r in rows if r["wrong"] not in ("0", "N/A") or r["in_place_wrong"] not in ("0", "N/A")]
            for r in rows:
                bench["runs"].append({"K": k, "coll": coll, "algo": algo, "bytes": r["bytes"],
                                      "time_us": r["time_us"], "busbw_GBps": r["busbw_GBps"],
                                      "in_place_time_us": r["in_place_time_us"]})
            if wrong:
                fail = f"{len(wrong)} row(s) with wrong elements (first at {wrong[0]['bytes']} B)"
            elif rc == 0 and not rows:
                fail = error or "no result rows in the log"
        if rc in (124, 137):
            fail = f"timed out after {limit} s" + (f" ({note})" if note else "")
        elif rc != 0 and fail is None:
            _, _, error = parse_nccl_tests(text) if coll not in ("torch", "moe") else (None, None, None)
            if error is None:
                error = next((l.strip()[:200] for l in text.splitlines()
                              if any(h in l for h in ERROR_HINTS)), None)
            fail = f"exit status {rc}" + (f": {error}" if error else "")
        if fail:
            bench["failures"].append(dict(where, rc=rc, reason=fail, log=log))
    path = os.path.join(outdir, "bench.json")
    with open(path, "w") as f:
        json.dump(bench, f, indent=1)
        f.write("\n")
    return path


# ---------------------------------------------------------------------------------------------
# The report

def load(path):
    try:
        with open(path) as f:
            bench = json.load(f)
    except (OSError, ValueError) as e:
        raise Usage(f"{path}: {e}")
    if not isinstance(bench, dict) or bench.get("schema") != SCHEMA:
        raise Usage(f"{path}: not a {SCHEMA} file (schema: {bench.get('schema') if isinstance(bench, dict) else None!r})")
    for key in ("card", "roofline_copy_GBps", "runs"):
        if key not in bench:
            raise Usage(f"{path}: no {key!r}")
    if not bench.get("label"):
        bench["label"] = label_of(bench["card"])
    for key in ("torch", "moe", "failures", "skipped"):
        bench.setdefault(key, [])
    return bench


def label_of(card):
    """H100 from "NVIDIA H100 80GB HBM3": the first word of the name with a digit in it."""
    for word in re.split(r"[\s-]+", card.replace("NVIDIA", "")):
        if re.search(r"\d", word):
            return re.sub(r"[^A-Za-z0-9_.]", "", word)
    return re.sub(r"[^A-Za-z0-9_.]", "", card) or "GPU"


def human(nbytes):
    """1 GiB; a size nccl-tests rounded down to whole elements per rank (within 1 % below the
    unit, as 1073741808 at K = 3) reads ~1 GiB."""
    for unit, s in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= s * 0.99:
            q = nbytes / s
            return f"{q:.0f} {unit}" if nbytes % s == 0 else f"~{q:.0f} {unit}"
    return f"{nbytes} B"


def fmt_us(t):
    return f"{t:.1f}" if t < 1000 else f"{t:.0f}"


def fmt_bw(b):
    return f"{b:.0f}" if b >= 100 else f"{b:.1f}" if b >= 1 else f"{b:.2f}"


def cells(bench):
    """{(K, coll): {bytes: {algo: row}}}; a size run twice under one algorithm keeps the faster."""
    out = {}
    for r in bench["runs"]:
        at = out.setdefault((int(r["K"]), r["coll"]), {}).setdefault(int(r["bytes"]), {})
        old = at.get(r["algo"])
        if old is None or r["time_us"] < old["time_us"]:
            at[r["algo"]] = r
    return out


def judge(k, coll, sizes, copy):
    """Per size: default time, the fastest forced algorithm, their ratio, default busbw and its share
    of the roofline. Sizes without a default or a forced row, and no-op sizes, carry None there."""
    roof = roof_busbw(coll, k, copy) if copy and k > 1 else None
    out = []
    for b in sorted(sizes):
        algos = sizes[b]
        d = algos.get("default")
        # Online tuning is the library's choice refined on the run itself, not a forced algorithm.
        forced = {a: r for a, r in algos.items() if a not in ("default", "online")}
        best = min(forced, key=lambda a: forced[a]["time_us"]) if forced else None
        c = {"bytes": b, "noop": is_noop(coll, b, k), "default": d, "best": best,
             "best_us": forced[best]["time_us"] if best else None, "ratio": None, "share": None}
        if d and best and forced[best]["time_us"] > 0 and not c["noop"]:
            c["ratio"] = d["time_us"] / forced[best]["time_us"]
        c["online"] = algos.get("online")
        c["online_ratio"] = None
        if c["online"] and best and forced[best]["time_us"] > 0 and not c["noop"]:
            c["online_ratio"] = c["online"]["time_us"] / forced[best]["time_us"]
        if d and roof and not c["noop"]:
            c["share"] = d["busbw_GBps"] / roof
        out.append(c)
    return out


def ratio_text(r):
    """A ratio to the best forced algorithm as the tables print it: **MISS** above MISS_RATIO."""
    return "-" if r is None else f"{r:.2f}{' **MISS**' if r > MISS_RATIO else ''}"


def online_cells(judged):
    """The summary's online columns for one (K, collective): its worst ratio and where, and misses."""
    js = [c for c in judged if c["online_ratio"] is not None]
    if not js:
        return " - | - |"
    worst = max(js, key=lambda c: c["online_ratio"])
    misses = sum(c["online_ratio"] > MISS_RATIO for c in js)
    return f" {ratio_text(worst['online_ratio'])} ({human(worst['bytes'])}) | {misses} of {len(js)} |"


def pick_rows(judged):
    """The table's rows: the smallest size that moves data, then ROW_SIZES where run."""
    live = [c for c in judged if not c["noop"]]
    if not live:
        return []
    rows = [live[0]]
    for target in ROW_SIZES:
        near = [c for c in live if target * 0.99 <= c["bytes"] <= target]
        if near and near[-1] is not rows[-1] and near[-1]["bytes"] > rows[0]["bytes"]:
            rows.append(near[-1])
    return rows


def plain_table(keys, by, copy):
    """Collectives with only the library's own path (no --algos to force): one row per K and
    collective, the smallest size that moves data in us, then busbw out of place at 1 MiB, 64 MiB
    and the largest size, and in place at 64 MiB and the largest, with their shares of the
    roofline."""
    lines = ["**" + ", ".join(dict.fromkeys(key[1] for key in keys)) + "** (one path each, nothing "
             "forced; out of place, then in place; busbw in GB/s, % of the roofline)", "",
             "| K | collective | smallest us | 1 MiB | 64 MiB | largest | in place 64 MiB | in place largest |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for (k, coll) in sorted(keys, key=lambda t: (COLL_ORDER.index(t[1]) if t[1] in COLL_ORDER else 99, t[0])):
        live = [(b, algos["default"]) for b, algos in sorted(by[(k, coll)].items())
                if "default" in algos and not is_noop(coll, b, k)]
        if not live:
            continue
        roof = roof_busbw(coll, k, copy) if copy and k > 1 else None
        roof_in = roof_busbw_in_place(coll, k, copy) if copy and k > 1 else None

        def near(target):
            got = [(b, r) for b, r in live if target * 0.99 <= b <= target]
            return got[-1] if got else None

        def bw(entry, in_place=False):
            if entry is None:
                return "-"
            b, r = entry
            if in_place:
                t = r.get("in_place_time_us")
                if not t:
                    return "-"
                v = b / t / 1e3 * bus_factor(coll, k)
            else:
                v = r["busbw_GBps"]
            text = fmt_bw(v)
            bound = roof_in if in_place else roof
            if bound and b >= ROOF_FROM * 0.99:
                text += f" ({100 * v / bound:.0f} %)"
            return text

        largest = live[-1]
        lines.append(f"| {k} | {coll} | {fmt_us(live[0][1]['time_us'])} ({human(live[0][0])}) | "
                     f"{bw(near(1 << 20))} | {bw(near(64 << 20))} | {human(largest[0])}: {bw(largest)} | "
                     f"{bw(near(64 << 20), True)} | {bw(largest, True)} |")
    lines.append("")
    return lines


def card_section(bench):
    """The Markdown that goes between one card's markers."""
    copy = float(bench["roofline_copy_GBps"] or 0)
    label = bench["label"]
    commit = bench.get("commit") or "unknown"
    if bench.get("dirty"):
        commit += " (with uncommitted changes)"
    lines = [f"Card: {bench['card']}"
             + (f", {bench['sms']} SMs" if bench.get("sms") else "")
             + (f", driver {bench['driver']}" if bench.get("driver") else "")
             + f". Commit {commit}, {bench.get('date', 'date unknown')}"
             + (f", nccl-tests {bench['nccl_tests_version'].split()[0]}" if bench.get("nccl_tests_version") else "")
             + ".", "",
             f"    {bench.get('command', '(command not recorded)')}", ""]
    roof = bench.get("roofline") or {}
    how = f" ({roof['method']}, median of {roof['samples']})" if roof.get("method") and roof.get("samples") else ""
    lines.append((f"Copy roofline C = {copy:.0f} GB/s{how}. " if copy else "Copy roofline not measured: no shares. ")
                 + f"{len(bench['failures'])} failed run(s), {len(bench['skipped'])} not started "
                 f"(`--until`). Cells: time in us; busbw in GB/s, as % of the roofline from 64 MiB; "
                 f"**MISS**: the library's choice more than {MISS_RATIO:.2f}x the best forced algorithm.")
    lines.append("")
    by = cells(bench)
    everything = sorted(by, key=lambda t: (COLL_ORDER.index(t[1]) if t[1] in COLL_ORDER else 99, t[1], t[0]))
    # A collective run with no algorithm forced (send/receive, all-to-all: one path each) has no
    # ratio to judge; it gets the compact table below, out of place and in place.
    forced_colls = {key[1] for key in everything
                    if any(a not in ("default", "online") for algos in by[key].values() for a in algos)}
    keys = [key for key in everything if key[1] in forced_colls]
    plain = [key for key in everything if key[1] not in forced_colls]
    judged = {key: judge(key[0], key[1], by[key], copy) for key in keys}
    # Runs with online tuning (bench.sh --algos online) get a column of their own beside the default.
    online = any(c["online"] for js in judged.values() for c in js)

    # Summary: one row per (K, collective).
    lines += [] if not keys else [
        "| K | collective | worst default / best | where (best forced) | misses | default busbw from 64 MiB, mean % of roofline |"
        + (" worst online / best | online misses |" if online else ""),
        "| --- | --- | --- | --- | --- | --- |" + (" --- | --- |" if online else "")]
    for (k, coll) in sorted(keys, key=lambda t: (t[0], COLL_ORDER.index(t[1]) if t[1] in COLL_ORDER else 99)):
        js = [c for c in judged[(k, coll)] if c["ratio"] is not None]
        worst = max(js, key=lambda c: c["ratio"]) if js else None
        misses = sum(c["ratio"] > MISS_RATIO for c in js)
        shares = [c["share"] for c in judged[(k, coll)] if c["share"] is not None and c["bytes"] >= ROOF_FROM * 0.99]
        lines.append(f"| {k} | {coll} | "
                     + (f"{ratio_text(worst['ratio'])} | {human(worst['bytes'])} ({worst['best']}) | "
                        if worst else "- | - | ")
                     + f"{misses} of {len(js)} | "
                     + (f"{100 * statistics.fmean(shares):.0f} % |" if shares else "- |")
                     + (online_cells(judged[(k, coll)]) if online else ""))
    lines.append("")

    # Per collective: K and size rows.
    for coll in [c for c in COLL_ORDER if any(key[1] == c for key in keys)] + \
            sorted({key[1] for key in keys} - set(COLL_ORDER)):
        lines += [f"**{coll}**", "",
                  "| K | size | default us | best forced us | default / best | default busbw |"
                  + (" online us | online / best |" if online else ""),
                  "| --- | --- | --- | --- | --- | --- |" + (" --- | --- |" if online else "")]
        for k in sorted(key[0] for key in keys if key[1] == coll):
            for c in pick_rows(judged[(k, coll)]):
                d = c["default"]
                ratio = ratio_text(c["ratio"])
                bw = "-" if d is None else fmt_bw(d["busbw_GBps"])
                if d is not None and c["share"] is not None and c["bytes"] >= ROOF_FROM * 0.99:
                    bw += f" ({100 * c['share']:.0f} %)"
                lines.append(f"| {k} | {human(c['bytes'])} | {'-' if d is None else fmt_us(d['time_us'])} | "
                             + (f"{c['best']} {fmt_us(c['best_us'])}" if c["best"] else "-")
                             + f" | {ratio} | {bw} |"
                             + ((" - | - |" if c["online"] is None else
                                 f" {fmt_us(c['online']['time_us'])} | {ratio_text(c['online_ratio'])} |")
                                if online else ""))
        lines.append("")

    if plain:
        lines += plain_table(plain, by, copy)

    if bench["torch"]:
        lines += ["PyTorch `dist.all_reduce` (float32, through the shim; `tests/nccl/torch_latency.py`):", "",
                  "| K | size | us | busbw GB/s | % of roofline |", "| --- | --- | --- | --- | --- |"]
        for t in sorted(bench["torch"], key=lambda t: (t["K"], t["bytes"])):
            roof = roof_busbw("all_reduce", t["K"], copy) if copy and t["K"] > 1 else None
            share = f"{100 * t['busbw_GBps'] / roof:.0f} %" if roof else "-"
            lines.append(f"| {t['K']} | {human(t['bytes'])} | {fmt_us(t['time_us'])} | {fmt_bw(t['busbw_GBps'])}"
                         + ("" if t.get("ok", True) else " (WRONG)") + f" | {share} |")
        lines.append("")
    if bench["moe"]:
        # One row per K: the all-to-all's three lines, then the ring at each size it ran.
        tests = ("dispatch", "combine", "dispatch+combine")
        ring_sizes = sorted({m["bytes"] for m in bench["moe"] if m["test"] == "ring"})
        size = next((m["bytes"] for m in bench["moe"] if m["test"] == "dispatch"), None)
        lines += ["Mixture-of-experts all-to-all and pipeline ring through PyTorch (`perf/moe_alltoall.py "
                  "--mode both`, through the shim; busbw in GB/s and its share of this run's roofline): "
                  "`dispatch` and `combine` are `all_to_all_single` with the routed, uneven splits"
                  + (f" ({human(size)} sent per rank on average)" if size else "")
                  + "; `ring` is `batch_isend_irecv` to the next rank and from the previous one.", "",
                  "| K | " + " | ".join(tests) + "".join(f" | ring {human(b)}" for b in ring_sizes) + " |",
                  "| --- |" + " --- |" * (len(tests) + len(ring_sizes))]
        for k in sorted({m["K"] for m in bench["moe"]}):
            row = {(m["test"], m["bytes"] if m["test"] == "ring" else None): m for m in bench["moe"] if m["K"] == k}

            def cell(m):
                if m is None:
                    return "-"
                return (f"{fmt_bw(m['busbw_GBps'])} ({100 * m['share']:.0f} %)"
                        + ("" if m.get("ok", True) else " WRONG"))
            lines.append(f"| {k} | " + " | ".join(cell(row.get((t, None))) for t in tests)
                         + "".join(f" | {cell(row.get(('ring', b)))}" for b in ring_sizes) + " |")
        lines.append("")
    if bench["failures"]:
        lines += [f"Failed runs ({len(bench['failures'])}):", ""]
        for f in bench["failures"][:FAILURES_SHOWN]:
            lines.append(f"- K = {f['K']} {f['coll']} {f['algo']}: {f['reason']}")
        if len(bench["failures"]) > FAILURES_SHOWN:
            lines.append(f"- and {len(bench['failures']) - FAILURES_SHOWN} more (bench.json)")
        lines.append("")
    while lines and lines[-1] == "":
        lines.pop()
    return "\n".join(lines) + "\n"


def update_doc(text, label, section):
    """text with the lines between label's markers replaced by section; appended if missing."""
    begin, end = BEGIN.format(label), END.format(label)
    lines = text.splitlines(keepends=True)
    starts = [i for i, l in enumerate(lines) if l.strip() == begin]
    ends = [i for i, l in enumerate(lines) if l.strip() == end]
    if len(starts) > 1 or len(ends) > 1:
        raise Usage(f"the markers of {label} appear more than once")
    if not starts and not ends:
        tail = "" if text.endswith("\n") or not text else "\n"
        return text + tail + f"\n## {label}\n\n{begin}\n{section}{end}\n"
    if not starts or not ends or ends[0] < starts[0]:
        raise Usage(f"the markers of {label} are not a begin line followed by an end line")
    return "".join(lines[:starts[0] + 1]) + section + "".join(lines[ends[0]:])


def plot(bench, outdir):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("bench_report: matplotlib cannot be imported: no plots", file=sys.stderr)
        return []
    os.makedirs(outdir, exist_ok=True)
    copy = float(bench["roofline_copy_GBps"] or 0)
    by = cells(bench)
    written = []
    for k in sorted({key[0] for key in by}):
        colls = [c for c in COLL_ORDER if (k, c) in by] + sorted({c for kk, c in by if kk == k} - set(COLL_ORDER))
        fig, axes = plt.subplots(1, len(colls), figsize=(5 * len(colls), 4), squeeze=False)
        for ax, coll in zip(axes[0], colls):
            sizes = by[(k, coll)]
            for algo in sorted({a for s in sizes.values() for a in s}, key=lambda a: (a != "default", a)):
                pts = sorted((b, s[algo]["busbw_GBps"]) for b, s in sizes.items() if algo in s and b > 0)
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=".",
                            linewidth=2.5 if algo == "default" else 1, label=algo)
            if copy:
                ax.axhline(roof_busbw(coll, k, copy), color="black", linestyle="--", linewidth=1, label="roofline")
            ax.set_xscale("log", base=2)
            ax.set_xlabel("size (B)")
            ax.set_ylabel("busbw (GB/s)")
            ax.set_title(f"{coll}, K = {k}")
            ax.legend(fontsize=7)
        fig.suptitle(f"{bench['card']}, commit {(bench.get('commit') or '?')[:12]}")
        fig.tight_layout()
        path = os.path.join(outdir, f"bench_{bench['label']}_K{k}.png")
        fig.savefig(path, dpi=90)
        plt.close(fig)
        written.append(path)
    return written


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="example: perf/bench_report.py --update docs/benchmarks.md bench-h100/bench.json")
    ap.add_argument("files", nargs="*", metavar="BENCH.json")
    ap.add_argument("--assemble", metavar="DIR", help="build DIR/bench.json from bench.sh's run index and logs first")
    ap.add_argument("--out", metavar="FILE", help="write the Markdown here (default: stdout, unless --update)")
    ap.add_argument("--update", metavar="DOC", help="replace each card's marker section in DOC")
    ap.add_argument("--plots", metavar="DIR", help="busbw against size per card and K (needs matplotlib)")
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:
        return 2 if e.code else 0
    try:
        files = list(args.files)
        if args.assemble:
            files.append(assemble(args.assemble))
        if not files:
            raise Usage("no BENCH.json given (--help)")
        benches = [load(p) for p in files]
        labels = [b["label"] for b in benches]
        dup = sorted({l for l in labels if labels.count(l) > 1})
        if dup:
            raise Usage(f"two files for the card {', '.join(dup)}: one bench.json a card")
        sections = {b["label"]: card_section(b) for b in benches}
        if args.update:
            try:
                with open(args.update) as f:
                    doc = f.read()
            except OSError as e:
                raise Usage(f"--update: {e}")
            new = doc
            for label, section in sections.items():
                new = update_doc(new, label, section)
            if new != doc:
                with open(args.update, "w") as f:
                    f.write(new)
            print(f"bench_report: {args.update}: {'updated' if new != doc else 'unchanged'} "
                  f"({', '.join(sections)})", file=sys.stderr)
        text = "".join(f"## {label}\n\n{section}\n" for label, section in sections.items())
        if args.out:
            with open(args.out, "w") as f:
                f.write(text)
        elif not args.update:
            sys.stdout.write(text)
        if args.plots:
            for b in benches:
                for p in plot(b, args.plots):
                    print(f"bench_report: wrote {p}", file=sys.stderr)
    except Usage as e:
        print(f"bench_report: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
