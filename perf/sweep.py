#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Run one collective's perf test under every algorithm and plot them against each other.

For each algorithm (ring, bidir_ring, direct, hierarchical and auto by default) the script runs
build/bin/<collective>_perf under mpirun with -A <algorithm> and -J <file>, collects the JSON
records, writes them all to one combined JSON file and draws busbw and latency against message
size, one line per algorithm, to a PNG. A run that fails (non-zero exit, timeout, wrong results,
no records) is reported and the sweep goes on with the others; the script then exits non-zero.

Example (the emulated 8 x MI300X CPX node, 64 ranks on the host backend):

    perf/sweep.py --collective all_reduce --np 64 \\
        --topo tools/topologies/mi300x-8x-cpx-nps4.json -b 8 -e 1M --out sweep-out

docs/perf.md describes the outputs. Uses only the standard library and matplotlib (Debian's
python3-matplotlib; the shebang is Debian's python3, which has it).
"""

import argparse
import datetime
import json
import os
import shlex
import signal
import subprocess
import sys
import time

COLLECTIVES = ["all_reduce", "reduce_scatter", "all_gather", "broadcast", "reduce",
               "alltoall", "sendrecv"]
DEFAULT_ALGOS = ["ring", "bidir_ring", "direct", "hierarchical", "auto"]
REDUCING = ("all_reduce", "reduce_scatter", "reduce")
HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)


def default_bin_dir():
    """Next to this script when installed (<prefix>/bin/starscream-sweep), else build/bin."""
    if os.access(os.path.join(HERE, "all_reduce_perf"), os.X_OK):
        return HERE
    return os.path.join(REPO_ROOT, "build", "bin")


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="Run a Starscream perf test under every algorithm and plot busbw and "
                    "latency against size.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example (64 host-backend ranks emulating 8 x MI300X CPX/NPS4):\n"
               "  perf/sweep.py --collective all_reduce --np 64 \\\n"
               "      --topo tools/topologies/mi300x-8x-cpx-nps4.json -b 4 -e 1M -f 8 "
               "--out sweep-out\n"
               "outputs: sweep-out/all_reduce_sweep.png and .json, and each algorithm's perf "
               "table in\nsweep-out/all_reduce_<algo>.log (docs/perf.md)")
    p.add_argument("--collective", "-c", required=True,
                   help="collective (%s), with or without the _perf suffix"
                        % ", ".join(COLLECTIVES))
    p.add_argument("--np", "-n", type=int, required=True, help="number of ranks (mpirun -np)")
    p.add_argument("--topo", "-T", default="",
                   help="emulation topology file, passed as -T (STARSCREAM_TOPO_FILE)")
    p.add_argument("--min-bytes", "-b", default="8", help="smallest size (K/M/G suffixes)")
    p.add_argument("--max-bytes", "-e", default="1M", help="largest size (K/M/G suffixes)")
    p.add_argument("--step-factor", "-f", type=int, default=2, help="size multiplier per row")
    p.add_argument("--out", "-o", default="sweep-out", help="output directory")
    p.add_argument("--algos", default=",".join(DEFAULT_ALGOS),
                   help="comma-separated algorithms (default: %(default)s)")
    p.add_argument("--iters", type=int, default=20, help="timed iterations per size (-n)")
    p.add_argument("--warmup", type=int, default=1, help="warm-up iterations per size (-w)")
    p.add_argument("--check", type=int, default=1, help="correctness checks per size (-c)")
    p.add_argument("--datatype", "-d", default="float", help="element type (-d)")
    p.add_argument("--op", default="sum", help="reduction op (-o), for reducing collectives")
    p.add_argument("--in-place", action="store_true",
                   help="plot the in-place columns instead of the out-of-place ones")
    p.add_argument("--bin-dir", default=default_bin_dir(),
                   help="where the *_perf programs are (default: %(default)s)")
    p.add_argument("--mpirun", default="mpirun", help="MPI launcher")
    p.add_argument("--mpirun-args", default=None,
                   help="extra launcher arguments, as one string (default for Open MPI: "
                        "--oversubscribe, plus --allow-run-as-root when run as root)")
    p.add_argument("--launch", default=None,
                   help="launcher command prefix instead of mpirun, with {np} for the rank "
                        "count, e.g. 'tools/emulate/partition-run.sh {np}'")
    p.add_argument("--timeout", type=float, default=900.0,
                   help="seconds one algorithm's run may take before it is killed")
    p.add_argument("--extra", default="",
                   help="more arguments for the perf program, as one string (e.g. '-z 1')")
    p.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    p.add_argument("--label", default="",
                   help="what the figures are, put before the plot's title and the summary "
                        "(e.g. 'CPU emulation: the algorithms working, not hardware speed')")
    p.add_argument("--roof-busbw", type=float, default=0.0, metavar="GBPS",
                   help="the busbw bound of this collective on this machine (docs/benchmarks.md, "
                        "the roofline): drawn as a line, and each algorithm's largest-size busbw "
                        "is printed as a share of it")
    args = p.parse_args(argv)
    args.collective = args.collective[:-5] if args.collective.endswith("_perf") \
        else args.collective
    if args.collective not in COLLECTIVES:
        p.error("unknown collective %r (one of %s)" % (args.collective, ", ".join(COLLECTIVES)))
    args.algos = [a for a in args.algos.split(",") if a]
    if not args.algos:
        p.error("no algorithms to run")
    if args.np < 1:
        p.error("--np must be at least 1")
    if args.datatype == "all" or args.op == "all":
        p.error("a sweep plots one type and one op; run it once per type or op")
    return args


def parse_size(text):
    """Bytes of a perf-tool size ("8", "64K", "1M", "2G"), or None when it does not parse."""
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    text = text.strip()
    scale = units.get(text[-1:].lower(), 1)
    number = text[:-1] if scale != 1 else text
    try:
        return int(float(number) * scale)
    except ValueError:
        return None


def planned_sizes(args):
    """The sizes the perf tool will run: -b, then times -f while at most -e (nccl-tests' rule)."""
    lo, hi = parse_size(args.min_bytes), parse_size(args.max_bytes)
    if lo is None or hi is None or args.step_factor < 2 or lo < 1:
        return []
    sizes = [lo]
    while sizes[-1] * args.step_factor <= hi:
        sizes.append(sizes[-1] * args.step_factor)
    return sizes


def default_launcher_args(mpirun):
    """Open MPI refuses to run as root or with more ranks than cores unless told to."""
    try:
        version = subprocess.run([mpirun, "--version"], capture_output=True, text=True,
                                 timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    if "Open MPI" not in version and "OpenRTE" not in version:
        return []
    extra = ["--oversubscribe"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        extra.append("--allow-run-as-root")
    return extra


def launcher(args):
    """The command prefix that starts args.np ranks of the program that follows it."""
    if args.launch is not None:
        return shlex.split(args.launch.format(np=args.np))
    extra = shlex.split(args.mpirun_args) if args.mpirun_args is not None \
        else default_launcher_args(args.mpirun)
    return [args.mpirun] + extra + ["-np", str(args.np)]


def build_command(args, prefix, algo, json_path):
    program = os.path.join(args.bin_dir, args.collective + "_perf")
    cmd = prefix + [program, "-b", args.min_bytes, "-e", args.max_bytes,
                    "-f", str(args.step_factor), "-n", str(args.iters), "-w", str(args.warmup),
                    "-c", str(args.check), "-d", args.datatype, "-A", algo, "-J", json_path]
    if args.collective in REDUCING:
        cmd += ["-o", args.op]
    if args.topo:
        cmd += ["-T", args.topo]
    return cmd + shlex.split(args.extra)


def read_records(path):
    """The JSON Lines a run wrote; a torn last line (killed mid-write) is skipped."""
    records = []
    if not os.path.exists(path):
        return records
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                records.append(json.loads(line))
            except ValueError:
                pass
    return records


def wrong_count(record):
    total = 0
    for half in ("out_of_place", "in_place"):
        data = record.get(half) or {}
        total += data.get("nwrong") or 0
    return total


def run_one(args, prefix, algo):
    """Runs one algorithm; returns its entry for the combined JSON."""
    json_path = os.path.join(args.out, "%s_%s.jsonl" % (args.collective, algo))
    log_path = os.path.join(args.out, "%s_%s.log" % (args.collective, algo))
    cmd = build_command(args, prefix, algo, json_path)
    entry = {"algorithm": algo, "command": shlex.join(cmd), "log": log_path,
             "status": "ok", "returncode": None, "reason": "", "seconds": 0.0, "records": []}
    if args.dry_run:
        print(entry["command"])
        entry["status"] = "dry-run"
        return entry
    if os.path.exists(json_path):
        os.remove(json_path)  # a stale file would pass for this run's results
    print("[sweep] %-12s %s" % (algo, entry["command"]), flush=True)
    start = time.monotonic()
    with open(log_path, "w") as log:
        try:
            # A session of its own, so a timeout can kill mpirun and every rank it started.
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        except OSError as e:
            entry.update(status="failed", reason="cannot start: %s" % e)
            return entry
        try:
            entry["returncode"] = proc.wait(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            entry.update(status="failed", reason="timed out after %gs" % args.timeout)
    entry["seconds"] = round(time.monotonic() - start, 3)
    entry["records"] = read_records(json_path)
    wrong = sum(wrong_count(r) for r in entry["records"])
    if entry["status"] == "ok":
        if entry["returncode"] != 0:
            entry.update(status="failed", reason="exit code %d" % entry["returncode"])
        elif wrong:
            entry.update(status="failed", reason="%d wrong elements" % wrong)
        elif not entry["records"]:
            entry.update(status="failed", reason="no JSON records written")
    if entry["status"] != "ok":
        print("[sweep] %-12s FAILED: %s (see %s)" % (algo, entry["reason"], log_path),
              flush=True)
    return entry


def series(entry, half):
    """(sizes, busbw, time) of one run, the first type/op/root only, in size order."""
    points = {}
    for r in entry["records"]:
        data = r.get(half)
        if data is None or r.get("cycle", 0) != 0:
            continue
        points.setdefault(r["size"], (data["bus_bw"], data["time"]))
    sizes = sorted(points)
    return sizes, [points[s][0] for s in sizes], [points[s][1] for s in sizes]


def human_bytes(n):
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= scale and n % scale == 0:
            return "%d%s" % (n // scale, unit)
    return str(n)


def plot(args, entries, png_path):
    """busbw and latency against size, one line per algorithm. Returns "" or why not."""
    try:
        import matplotlib
        matplotlib.use("Agg")  # no display needed
        import matplotlib.pyplot as plt
    except ImportError as e:
        return "matplotlib is not available to %s (%s); install python3-matplotlib" \
               % (sys.executable, e)
    half = "in_place" if args.in_place else "out_of_place"
    fig, (bw_ax, lat_ax) = plt.subplots(1, 2, figsize=(13, 5))
    all_sizes = set()
    for entry in entries:
        sizes, busbw, times = series(entry, half)
        sizes_plotted = [s for s in sizes if s > 0]  # log axis
        if not sizes_plotted:
            continue
        all_sizes.update(sizes_plotted)
        label = entry["algorithm"] + ("" if entry["status"] == "ok" else " (failed)")
        style = "-" if entry["status"] == "ok" else ":"
        keep = [i for i, s in enumerate(sizes) if s > 0]
        bw_ax.plot(sizes_plotted, [busbw[i] for i in keep], style, marker="o", markersize=3,
                   label=label)
        lat_ax.plot(sizes_plotted, [times[i] for i in keep], style, marker="o", markersize=3,
                    label=label)
    ticks = sorted(all_sizes)
    if len(ticks) > 12:
        ticks = ticks[::(len(ticks) + 11) // 12]
    placement = "in place" if args.in_place else "out of place"
    for ax, title, ylabel in ((bw_ax, "Bus bandwidth", "busbw (GB/s)"),
                              (lat_ax, "Latency", "time per call (us)")):
        ax.set_xscale("log", base=2)
        if ax is lat_ax:
            ax.set_yscale("log")
            # Latencies often span less than a decade: label 1-2-5 steps and plain numbers, not
            # one lone power of ten.
            from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
            ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: "%g" % v))
            ax.yaxis.set_minor_formatter(NullFormatter())
        if ticks:
            ax.set_xticks(ticks)
            ax.set_xticklabels([human_bytes(t) for t in ticks], rotation=45)
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel(ylabel)
        ax.set_title("%s, %s" % (title, placement))
        if ax is bw_ax and args.roof_busbw > 0:
            ax.axhline(args.roof_busbw, color="black", linestyle="--", linewidth=1,
                       label="roofline %.0f GB/s" % args.roof_busbw)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    topo = os.path.basename(args.topo) if args.topo else "discovered topology"
    what = args.datatype + (" " + args.op if args.collective in REDUCING else "")
    fig.suptitle("%s%s_perf: %d ranks, %s, %s" % (args.label + "\n" if args.label else "",
                                                   args.collective, args.np, topo, what))
    fig.tight_layout()
    fig.savefig(png_path, dpi=120)
    plt.close(fig)
    return ""


def print_summary(entries, half, label="", roof=0.0):
    """One line per algorithm; the perf tables themselves are in each run's log file."""
    first = min((series(e, half)[0][0] for e in entries if series(e, half)[0]), default=None)
    last = max((series(e, half)[0][-1] for e in entries if series(e, half)[0]), default=None)
    small = "time at %s" % human_bytes(first) if first is not None else "time at smallest"
    big = "busbw at %s" % human_bytes(last) if last is not None else "busbw at largest"
    header = ("algorithm", "status", "sizes", "peak busbw", small, big, "table (log)")
    rows = []
    for e in entries:
        sizes, busbw, times = series(e, half)
        rows.append((e["algorithm"], e["status"], str(len(sizes)),
                     "%.3f GB/s" % max(busbw) if busbw else "-",
                     "%.2f us" % times[0] if times else "-",
                     ("%.3f GB/s" % busbw[-1] + (" (%.0f %% of %.0f)" % (100 * busbw[-1] / roof, roof)
                                                  if roof > 0 else "")) if busbw else "-",
                     e["log"] + ("  (%s)" % e["reason"] if e["reason"] else "")))
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header) - 1)]
    print()
    if label:
        print("[sweep] %s" % label)
    for r in [header] + rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1])


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    prefix = launcher(args)
    program = os.path.join(args.bin_dir, args.collective + "_perf")
    if not args.dry_run and not os.access(program, os.X_OK):
        print("[sweep] %s is not built (build the perf/ targets, or pass --bin-dir)" % program,
              file=sys.stderr)
        return 2
    if not args.dry_run:
        os.makedirs(args.out, exist_ok=True)
    sizes = planned_sizes(args)
    if sizes and sizes[-1] != parse_size(args.max_bytes):
        # nccl-tests stop at the last -b * f^k that fits: say so rather than end short silently.
        print("[sweep] note: -b %s -f %d never lands on -e %s; the largest size is %s "
              "(pick -b so that -b * %d^k = -e to reach it)"
              % (args.min_bytes, args.step_factor, args.max_bytes, human_bytes(sizes[-1]),
                 args.step_factor), flush=True)

    entries = [run_one(args, prefix, algo) for algo in args.algos]
    if args.dry_run:
        return 0

    combined_path = os.path.join(args.out, "%s_sweep.json" % args.collective)
    png_path = os.path.join(args.out, "%s_sweep.png" % args.collective)
    combined = {
        "collective": args.collective,
        "nranks": args.np,
        "topology": args.topo,
        "datatype": args.datatype,
        "op": args.op,
        "min_bytes": args.min_bytes,
        "max_bytes": args.max_bytes,
        "step_factor": args.step_factor,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "runs": entries,
    }
    with open(combined_path, "w") as f:
        json.dump(combined, f, indent=1)
        f.write("\n")

    half = "in_place" if args.in_place else "out_of_place"
    print_summary(entries, half, args.label, args.roof_busbw)
    why = plot(args, entries, png_path)
    print("\n[sweep] combined JSON: %s" % combined_path)
    if why:
        print("[sweep] no plot: %s" % why, file=sys.stderr)
    else:
        print("[sweep] plot: %s" % png_path)
    failed = [e["algorithm"] for e in entries if e["status"] != "ok"]
    if failed:
        print("[sweep] FAILED: %s" % ", ".join(failed), file=sys.stderr)
    return 1 if failed or why else 0


if __name__ == "__main__":
    sys.exit(main())
