#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""perf/bench_report.py and perf/bench.sh without a GPU.

bench_report.py on tests/perf/bench_fixture.json (hand-computed figures): the default / best
ratio and its MISS flag (> 1.10), no-op rows (size 0) left out of the judgement, the roofline
shares (all-reduce 2C(K-1)/K^2, all-gather 2C/(K+1) x (K-1)/K), the PyTorch rows and the
failures; --update replaces only what lies between a card's markers, is idempotent, appends a
missing card and refuses broken markers and foreign JSON (exit 2); two full-size cards keep
docs/benchmarks.md under 400 lines.

bench.sh: bad arguments exit 2 with a message; --dry-run prints one command per planned run;
a whole run against fake nvidia-smi, nvidia-cuda-mps-control, nvcc, mpirun and nccl-tests
binaries (on PATH; the fakes check what bench.sh hands them) assembles bench.json: rows parsed
from nccl-tests' table, a failed run and a timed-out one listed with MPS restarted after each,
MPS stopped at exit, the torch row, and --until leaving runs not started.
"""
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
REPORT = os.path.join(REPO, "perf", "bench_report.py")
BENCH = os.path.join(REPO, "perf", "bench.sh")
FIXTURE = os.path.join(HERE, "bench_fixture.json")
DOC = os.path.join(REPO, "docs", "benchmarks.md")
TMP = tempfile.mkdtemp(prefix="bench_report_test.")
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def report(*args, env=None):
    return subprocess.run([sys.executable, REPORT, *args], capture_output=True, text=True, env=env)


def line_with(text, *parts):
    """The first line of text that holds every part."""
    return next((l for l in text.splitlines() if all(p in l for p in parts)), None)


# ---------------------------------------------------------------------------------------------
# The report on the fixture
out = report(FIXTURE)
check(out.returncode == 0, f"report on the fixture exits 0 ({out.returncode}: {out.stderr.strip()})")
md = out.stdout
print(md)
check(md.startswith("## H100\n"), "the card's section is headed by its label")
check("NVIDIA H100 80GB HBM3, 132 SMs, driver 580.159.04" in md, "card, SMs and driver")
check("0123456789abcdef0123456789abcdef01234567" in md and "2026-12-06T00:00:00Z" in md, "commit and date")
check("    perf/bench.sh --build build --nccl-tests build/nccl-tests --ks '2 3 8'" in md, "the exact command")
check("Copy roofline C = 2000 GB/s" in md, "the roofline")
# K = 2 all-reduce: 16 B default 10 us vs ring 8 us = 1.25, a miss; 1 KiB 12 vs direct 11.5 =
# 1.04; 1 GiB 1200 vs 1100 = 1.09 (not a miss); busbw 800 and 900 of 1000 from 64 MiB.
check(line_with(md, "| 2 | 16 B | 10.0 | ring 8.0 | 1.25 **MISS** |") is not None, "a ratio above 1.10 is a MISS")
check(line_with(md, "| 2 | 1 KiB |") is None, "1 KiB is no row of the table")
check(line_with(md, "| 2 | 1 GiB | 1200 | direct 1100 | 1.09 | 900 (90 %) |") is not None,
      "1.09 is no miss; busbw share of the all-reduce roofline 2C(K-1)/K^2")
check(line_with(md, "| 2 | 64 MiB |", "800 (80 %)") is not None, "share shown from 64 MiB")
check(line_with(md, "| 2 | 16 B |", "(") is None, "no share below 64 MiB")
check(line_with(md, "| 2 | all_reduce | 1.25 **MISS** | 16 B (ring) | 1 of 4 | 85 % |") is not None,
      "summary: worst ratio, where, misses, mean share from 64 MiB")
# K = 8 all-gather: the size-0 row (ratio 5) is a no-op, not judged and not shown.
check(line_with(md, "| 8 | all_gather | 2.00 **MISS** | 128 B (symmetric) | 1 of 2 | 90 % |") is not None,
      "a no-op row neither counts nor is the worst")
check(line_with(md, "| 8 | 0 B |") is None, "no-op rows are not shown")
check(line_with(md, "| 8 | 1 GiB | 3000 | symmetric 3000 | 1.00 | 350 (90 %) |") is not None,
      "all-gather share of 2C/(K+1) x (K-1)/K")
check(line_with(md, "| 3 | ~1 GiB | 1800 | direct 1750 | 1.03 | 400 (60 %) |") is not None,
      "a size rounded down by nccl-tests lands on its row")
check(line_with(md, "| 2 | 256 MiB | 300.0 | 850 | 85 % |") is not None, "PyTorch row and its share")
check(line_with(md, "| 8 | 256 MiB |", "(WRONG)", "69 %") is not None, "a wrong PyTorch result is flagged")
check("- K = 8 all_gather hierarchical: timed out after 60 s" in md, "failures listed")
check("1 failed run(s), 1 not started" in md, "failed and skipped counted")

# Without a roofline (neither nvcc nor torch could copy): the tables, no shares.
noroof = os.path.join(TMP, "noroof.json")
fx = json.load(open(FIXTURE))
fx.update(roofline_copy_GBps=None, roofline=None)
json.dump(fx, open(noroof, "w"))
out = report(noroof)
check(out.returncode == 0 and "Copy roofline not measured" in out.stdout and "(90 %)" not in out.stdout
      and line_with(out.stdout, "| 2 | all_reduce | 1.25 **MISS** | 16 B (ring) | 1 of 4 | - |") is not None,
      "no roofline: ratios still judged, no shares")

# The roofline functions themselves.
sys.path.insert(0, os.path.join(REPO, "perf"))
import bench_report  # noqa: E402
check(abs(bench_report.roof_busbw("all_reduce", 8, 2000) - 2000 / 8 * 14 / 8) < 1e-9, "roof all_reduce")
check(abs(bench_report.roof_busbw("reduce_scatter", 4, 2000) - 2 * 2000 / 5 * 3 / 4) < 1e-9, "roof reduce_scatter")
check(abs(bench_report.roof_busbw("broadcast", 4, 2000) - 2 * 2000 / 5) < 1e-9, "roof broadcast")
check(abs(bench_report.roof_busbw_in_place("alltoall", 8, 2000) - 2000 / 7 * 7 / 8) < 1e-9
      and bench_report.roof_busbw_in_place("sendrecv", 8, 2000) == bench_report.roof_busbw("sendrecv", 8, 2000),
      "in place, the all-to-all's own block stays: C / (K-1)")
check(bench_report.label_of("NVIDIA H100 80GB HBM3") == "H100" and bench_report.label_of("NVIDIA H200") == "H200",
      "card labels from the GPU's name")

# Online tuning's rows (bench.sh --algos online) are the library's choice, not a forced algorithm:
# they never stand as the best forced one, and get columns of their own beside the default.
fx = json.load(open(FIXTURE))
without = report(FIXTURE).stdout
check("online" not in without, "no online rows: no online columns")
base_rows = [r for r in fx["runs"] if r["algo"] == "default" and r["coll"] == "all_reduce"]
for r in base_rows:
    fx["runs"].append(dict(r, algo="online", time_us=r["time_us"] * 0.5))
slow = next(r for r in base_rows if r["bytes"] > 0)
fx["runs"].append(dict(slow, algo="online", time_us=slow["time_us"] * 50))  # a slower second cycle
online_fx = os.path.join(TMP, "online.json")
json.dump(fx, open(online_fx, "w"))
md = report(online_fx).stdout
check("worst online / best | online misses |" in md and "| online us | online / best |" in md,
      "online rows: an online column in the summary and in each collective's rows")
check(all("online" not in (l.split("|")[4] if l.count("|") > 5 else "") for l in md.splitlines()
          if l.startswith("| ") and "collective" not in l),
      "online is never the best forced algorithm")
check(len([l for l in md.splitlines() if l.startswith("| ") and l.rstrip().endswith("- | - |")]) > 0,
      "collectives without online rows show dashes there")
judged = bench_report.judge(2, "all_reduce", bench_report.cells(fx)[(2, "all_reduce")], None)
check(all(c["online_ratio"] is None or c["ratio"] is None or abs(c["online_ratio"] - c["ratio"] * 0.5) < 1e-9
          for c in judged), "online / best from the faster of the online rows (each size's faster cycle)")

# ---------------------------------------------------------------------------------------------
# --update: only the marker section changes; a second run changes nothing; a missing card is
# appended; broken markers and foreign JSON are refused.
doc = os.path.join(TMP, "doc.md")
before = "# Title\n\nIntro text.\n\n## H100\n\n<!-- bench:begin H100 -->\nNot measured yet.\n<!-- bench:end H100 -->\n\n## Other\n\nTrailing text, untouched.\n"
with open(doc, "w") as f:
    f.write(before)
out = report("--update", doc, FIXTURE)
check(out.returncode == 0 and "updated" in out.stderr, f"--update exits 0 and says updated ({out.stderr.strip()})")
after = open(doc).read()
check(after.startswith("# Title\n\nIntro text.\n\n## H100\n\n<!-- bench:begin H100 -->\n"), "text before the markers untouched")
check(after.endswith("<!-- bench:end H100 -->\n\n## Other\n\nTrailing text, untouched.\n"), "text after the markers untouched")
check("Not measured yet." not in after and "| 2 | 16 B | 10.0 |" in after, "the section replaced")
check(out.stdout == "", "--update alone prints no Markdown on stdout")
out = report("--update", doc, FIXTURE)
check(out.returncode == 0 and "unchanged" in out.stderr and open(doc).read() == after, "--update is idempotent")
h200 = os.path.join(TMP, "h200.json")
fx = json.load(open(FIXTURE))
fx.update(label="", card="NVIDIA H200")
json.dump(fx, open(h200, "w"))
out = report("--update", doc, h200)
new = open(doc).read()
check(out.returncode == 0 and new.startswith(after) and
      new[len(after):].startswith("\n## H200\n\n<!-- bench:begin H200 -->\nCard: NVIDIA H200,")
      and new.endswith("<!-- bench:end H200 -->\n"), "a missing card is appended with its label from the name")
two = os.path.join(TMP, "twice.md")
open(two, "w").write(before + "<!-- bench:begin H100 -->\n<!-- bench:end H100 -->\n")
check(report("--update", two, FIXTURE).returncode == 2, "markers twice: exit 2")
swapped = os.path.join(TMP, "swapped.md")
open(swapped, "w").write("<!-- bench:end H100 -->\n<!-- bench:begin H100 -->\n")
check(report("--update", swapped, FIXTURE).returncode == 2, "end before begin: exit 2")
foreign = os.path.join(TMP, "foreign.json")
json.dump({"schema": "other/1"}, open(foreign, "w"))
out = report(foreign)
check(out.returncode == 2 and "starscream-bench/1" in out.stderr, "a file of another schema: exit 2")
check(report(FIXTURE, FIXTURE).returncode == 2, "two files for one card: exit 2")
check(report().returncode == 2, "no file: exit 2")
check(report("--bogus").returncode == 2, "unknown option: exit 2")


# ---------------------------------------------------------------------------------------------
# Two full cards (4 K x 3 collectives x 6 algorithms x 15 sizes, PyTorch, MoE, failures) keep the
# real docs/benchmarks.md under 400 lines.
def full_card(label, card):
    runs = []
    for k in (2, 3, 4, 8):
        for coll in ("all_reduce", "all_gather", "reduce_scatter"):
            for i, algo in enumerate(("default", "ring", "bidir_ring", "direct", "hierarchical", "symmetric")):
                b = 4
                while b <= 1 << 30:
                    size = b if coll == "all_reduce" else b // (16 * k) * 16 * k
                    runs.append({"K": k, "coll": coll, "algo": algo, "bytes": size, "time_us": 5 + i + size / 4e5,
                                 "busbw_GBps": size / (5 + size / 4e5) / 1e3, "in_place_time_us": None})
                    b *= 4
    for k in (2, 4, 8):  # point-to-point collectives: the library's path only, in place too
        for coll in ("sendrecv", "alltoall"):
            b = 8
            while b <= 1 << 30:
                runs.append({"K": k, "coll": coll, "algo": "default", "bytes": b, "time_us": 5 + b / 4e5,
                             "busbw_GBps": b / (5 + b / 4e5) / 1e3, "in_place_time_us": 6 + b / 4e5})
                b *= 4
    fails = [{"K": 8, "coll": "all_gather", "algo": a, "rc": 1, "reason": "exit status 1", "log": "x"}
             for a in ("ring", "direct", "bidir_ring", "hierarchical", "symmetric", "default", "ring", "ring", "ring", "ring")]
    return {"schema": "starscream-bench/1", "label": label, "card": card, "driver": "580", "sms": 132,
            "commit": "f" * 40, "dirty": True, "date": "2026-12-06T00:00:00Z",
            "command": "perf/bench.sh --build build --nccl-tests build/nccl-tests --out bench-out --ks '2 3 4 8' --torch --until 1800000000",
            "roofline_copy_GBps": 3000.0, "runs": runs,
            "torch": [{"K": k, "bytes": 256 << 20, "time_us": 400.0, "busbw_GBps": 500.0, "ok": True} for k in (2, 3, 4, 8)],
            "moe": [{"K": k, "test": t, "bytes": b, "us": 1000.0, "busbw_GBps": 100.0,
                     "roofline_busbw_GBps": 150.0, "share": 0.67, "ok": True}
                    for k in (2, 3, 4, 8)
                    for t, b in (("dispatch", 896 << 20), ("combine", 896 << 20), ("dispatch+combine", 896 << 20),
                                 ("ring", 8 << 20), ("ring", 64 << 20), ("ring", 112 << 20), ("ring", 512 << 20))],
            "failures": fails, "skipped": []}


full = []
for label, card in (("H100", "NVIDIA H100 80GB HBM3"), ("H200", "NVIDIA H200")):
    full.append(os.path.join(TMP, f"full-{label}.json"))
    json.dump(full_card(label, card), open(full[-1], "w"))
bigdoc = os.path.join(TMP, "benchmarks.md")
shutil.copy(DOC, bigdoc)
check("<!-- bench:begin H100 -->" in open(DOC).read() and "<!-- bench:begin H200 -->" in open(DOC).read(),
      "docs/benchmarks.md has both cards' markers")
out = report("--update", bigdoc, *full)
n = len(open(bigdoc).read().splitlines())
check(out.returncode == 0 and n < 400, f"docs/benchmarks.md with two full cards: {n} lines (< 400)")
check("| 3 | ~1 GiB |" in open(bigdoc).read() and "- and 4 more (bench.json)" in open(bigdoc).read(),
      "full card: rounded sizes and a capped failure list")

# ---------------------------------------------------------------------------------------------
# Collectives with nothing forced (send/receive, all-to-all): one compact row per K, out of place
# and in place, shares of their roofline (C / K algbw, busbw factor 1 for sendrecv).
def p2p_row(b, t, tin):
    return {"K": 8, "coll": "sendrecv", "algo": "default", "bytes": b, "time_us": t,
            "busbw_GBps": b / t / 1e3, "in_place_time_us": tin}


p2p = {"schema": "starscream-bench/1", "label": "H100", "card": "NVIDIA H100 80GB HBM3", "driver": "580",
       "commit": "e" * 40, "date": "2026-12-06T00:00:00Z", "command": "perf/bench.sh --colls sendrecv",
       "roofline_copy_GBps": 2000.0, "torch": [], "failures": [], "skipped": [],
       # 64 MiB: 200 GB/s out of place (80 % of 2000 / 8), 120 in place (48 %); 512 MiB: 250 (100 %)
       "runs": [p2p_row(8, 9.5, 10.0), p2p_row(1 << 20, 1048.576 / 50, None),
                p2p_row(64 << 20, (64 << 20) / 200e3, (64 << 20) / 120e3),
                p2p_row(512 << 20, (512 << 20) / 250e3, (512 << 20) / 250e3)]}
p2pfile = os.path.join(TMP, "p2p.json")
json.dump(p2p, open(p2pfile, "w"))
out = report(p2pfile)
check(out.returncode == 0, f"report of a sendrecv-only run exits 0 ({out.stderr.strip()})")
check(line_with(out.stdout, "| 8 | sendrecv | 9.5 (8 B) | 50.0 | 200 (80 %) | 512 MiB: 250 (100 %) | 120 (48 %) | 250 (100 %) |")
      is not None, "sendrecv: compact row with in-place shares")
check(line_with(out.stdout, "| K | collective | worst default") is None,
      "nothing forced: no summary of ratios")

# ---------------------------------------------------------------------------------------------
# bench.sh: arguments
def bench(*args, env=None, timeout=120):
    return subprocess.run(["bash", BENCH, *args], capture_output=True, text=True, env=env, timeout=timeout)


fakebuild, fakent = os.path.join(TMP, "build"), os.path.join(TMP, "nccl-tests")
os.makedirs(os.path.join(fakebuild, "lib", "nccl-compat"))
os.makedirs(fakent)
# The fake shim: a harmless real library, so ld.so preloads it without a warning in every log.
libm = next((p for p in ("/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6",
                         "/lib64/libm.so.6", "/usr/lib64/libm.so.6", "/lib/aarch64-linux-gnu/libm.so.6")
             if os.path.exists(p)), None)
if libm:
    shutil.copy(libm, os.path.join(fakebuild, "lib", "libstarscream-nccl.so"))
else:
    open(os.path.join(fakebuild, "lib", "libstarscream-nccl.so"), "w").close()


def write_exec(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


# A fake nccl-tests binary: checks what bench.sh set for the ranks, then prints nccl-tests'
# table (its header lines and row format) with times that depend on the algorithm. FAKE_FAIL and
# FAKE_HANG ("K:coll:algo") make one run exit 1 or hang.
FAKE_PERF = r'''#!PYTHON
import os, sys, time
coll = os.path.basename(sys.argv[0])[:-len("_perf")]
a = dict(zip(sys.argv[1::2], sys.argv[2::2]))
k = int(os.environ["OMPI_COMM_WORLD_SIZE"])
algo = os.environ.get("STARSCREAM_ALGO", "default")
me = f"{k}:{coll}:{algo}"
assert "libstarscream-nccl.so" in os.environ.get("LD_PRELOAD", ""), "the shim is not preloaded"
assert os.environ.get("NCCL_TESTS_DEVICE") == "0" and os.environ.get("NCCL_NVLS_ENABLE") == "0"
assert os.environ["LD_LIBRARY_PATH"].split(":")[0].endswith("lib/nccl-compat")
assert a["-c"] == "0" and "-R" not in a
print(f"# nccl-tests version 2.19.6 nccl-headers=22809 nccl-library=22809")
print(f"# fake: {me} mps={os.environ.get('CUDA_MPS_ACTIVE_THREAD_PERCENTAGE')} n={a['-n']} w={a['-w']}")
if os.environ.get("FAKE_HANG") == me:
    time.sleep(60)
if os.environ.get("FAKE_FAIL") == me:
    print(" .. host pid 1: Test failure common.cu:1", flush=True)
    sys.exit(1)
speed = {"default": 1.0, "ring": 1.3, "direct": 0.95}.get(algo, 1.1)
if os.environ.get("FAKE_SLOW_RUN") and os.environ["SSC_BENCH_TAG"].endswith("-" + os.environ["FAKE_SLOW_RUN"]):
    speed *= 3
size, top, f = int(a["-b"]), int(a["-e"]), int(a["-f"])
while size <= top:
    b = size if coll == "all_reduce" else size // (16 * k) * 16 * k
    t = (5 + b / 2e5) * speed
    algbw = b / t / 1e3
    bus = algbw * (2 * (k - 1) / k if coll == "all_reduce" else (k - 1) / k)
    print("%12li  %12li  %8s  %6s  %6s  %7.2f  %6.2f  %6.2f  %6s  %7.2f  %6.2f  %6.2f  %6s"
          % (b, b // 4, "float", "sum", "-1", t, algbw, bus, "N/A", t * 1.01, algbw, bus, "N/A"))
    size *= f
print("# Out of bounds values : 0 OK")
'''
FAKE_MPIRUN = r'''#!PYTHON
# Open MPI's mpirun as bench.sh calls it: options, then the program (run once, as if one rank).
import os, sys
argv = sys.argv[1:]
env = dict(os.environ)
np_ = None
while argv and argv[0].startswith("-"):
    o = argv.pop(0)
    if o in ("--oversubscribe", "--allow-run-as-root"):
        continue
    if o == "--bind-to":
        argv.pop(0); continue
    if o == "-np":
        np_ = argv.pop(0); continue
    if o == "-x":
        v = argv.pop(0)
        if "=" in v:
            n, val = v.split("=", 1); env[n] = val
        continue
    sys.exit(f"fake mpirun: unexpected option {o}")
assert np_ is not None, "no -np"
env["OMPI_COMM_WORLD_SIZE"] = np_
if any(x.endswith("torch_latency.py") for x in argv):
    assert argv[0] == "env" and any(x.startswith("LD_PRELOAD=") and "libstarscream-nccl" in x for x in argv)
    k = int(np_)
    print(f"torch_latency bench K={k} bytes=268435456 us=1000.0 busbw={2 * (k - 1) / k * 268435456 / 1000 / 1e3:.1f}GB/s", flush=True)
    sys.exit(0)
if any(x.endswith("moe_alltoall.py") for x in argv):
    k = int(np_)
    experts = int(argv[argv.index("--experts") + 1])
    assert experts % k == 0 and argv[argv.index("--roofline") + 1] == "3000.0", argv
    for test in ("dispatch", "combine", "dispatch+combine"):
        print(f"moe_alltoall  {test} K={k} tokens=8192 hidden=7168 experts={experts} topk=8 zipf=1.2 "
              f"bytes=117440512 max_recv_rows=9000 us=2000.0 busbw=51.4GB/s roofline=300.0GB/s share=0.17", flush=True)
    print(f"moe_alltoall  ring K={k} bytes=8388608 us=100.0 busbw=83.9GB/s roofline=375.0GB/s share=0.22"
          + (" WRONG" if k == 3 else ""), flush=True)
    sys.exit(0)
os.execvpe(argv[0], argv, env)
'''
FAKE_SMI = "#!/bin/sh\necho 'NVIDIA H100 80GB HBM3, 580.159.04'\n"
FAKE_MPS = "#!/bin/sh\nif [ \"$1\" = -d ]; then echo start >>\"$FAKE_MPS_LOG\"; else read cmd; echo \"$cmd\" >>\"$FAKE_MPS_LOG\"; fi\n"
FAKE_NVCC = r'''#!/bin/sh
while [ $# -gt 0 ]; do [ "$1" = -o ] && out=$2; shift; done
printf '#!/bin/sh\necho %s\n' "'{\"method\": \"fake\", \"device\": \"NVIDIA H100 80GB HBM3\", \"sms\": 132, \"samples\": 30, \"copy_GBps\": 3000.0}'" >"$out"
chmod +x "$out"
'''
fakebin = os.path.join(TMP, "bin")
os.makedirs(fakebin)
for name in ("all_reduce", "all_gather", "reduce_scatter"):
    write_exec(os.path.join(fakent, f"{name}_perf"), FAKE_PERF.replace("PYTHON", sys.executable))
write_exec(os.path.join(fakebin, "mpirun"), FAKE_MPIRUN.replace("PYTHON", sys.executable))
write_exec(os.path.join(fakebin, "nvidia-smi"), FAKE_SMI)
write_exec(os.path.join(fakebin, "nvidia-cuda-mps-control"), FAKE_MPS)
write_exec(os.path.join(fakebin, "nvcc"), FAKE_NVCC)
os.symlink(sys.executable, os.path.join(fakebin, "python3"))  # bench.sh's python3: this one
mps_log = os.path.join(TMP, "mps.log")
env = dict(os.environ, PATH=fakebin + os.pathsep + os.environ.get("PATH", ""), FAKE_MPS_LOG=mps_log,
           CUDA_MPS_PIPE_DIRECTORY=os.path.join(TMP, "pipe"), CUDA_MPS_LOG_DIRECTORY=os.path.join(TMP, "mpslog"))
env.pop("STARSCREAM_ALGO", None)
base = ["--build", fakebuild, "--nccl-tests", fakent]

for bad, why in (([], "--build"), (base + ["--ks", "0"], "--ks"), (base + ["--ks", "2 x"], "--ks"),
                 (base + ["--colls", "all_to_nothing"], "--colls"), (base + ["--algos", "default bogus"], "--algos"),
                 (base + ["--max", "1T"], "--max"), (base + ["--factor", "1"], "--factor"),
                 (base + ["--iters", "-3"], "--iters"), (base + ["--until", "soon"], "--until"),
                 (base + ["--label", "H 100"], "--label"), (base + ["--min", "2G"], "--min"),
                 (base + ["--colls", "broadcast"], "broadcast_perf"), (base + ["--out"], "--out"),
                 (["--build", TMP + "/nowhere", "--nccl-tests", fakent], "--build"), (base + ["--frobnicate"], "--frobnicate")):
    out = bench(*bad, env=env)
    check(out.returncode == 2 and why in out.stderr, f"bench.sh {' '.join(bad[len(base):] if bad[:4] == base else bad)}: "
          f"exit 2 naming {why} ({out.returncode}: {out.stderr.strip()[:120]})")
out = bench("--help", env=env)
check(out.returncode == 0 and "--until EPOCH" in out.stdout and "--dry-run" in out.stdout, "bench.sh --help")

out = bench(*base, "--ks", "2 8", "--colls", "all_reduce all_gather", "--algos", "default ring symmetric",
            "--torch", "--max", "1G", "--dry-run", env=env)
runs = [l for l in out.stdout.splitlines() if l.startswith("run ")]
check(out.returncode == 0 and len(runs) == 2 * (1 + 2 * 3), f"--dry-run: one line per planned run ({len(runs)})")
check(all(" -b 16 -e 1073741824 -f 4 -n 20 -w 5 -c 0" in l for l in runs if "_perf" in l),
      "--min auto: 16 B to 1 GiB by 4 (the sweep ends on --max)")
check(any("K=8 all_gather symmetric" in l and "STARSCREAM_ALGO=symmetric" in l and
          "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=12.5" in l and "-np 8" in l for l in runs), "forced algorithm, SM share, rank count")
check(any("K=2 all_reduce default" in l and "-u STARSCREAM_ALGO" in l for l in runs), "default: STARSCREAM_ALGO unset")
check(runs[0].startswith("run 1 K=2 torch torch") and "torch_latency.py bench 268435456" in runs[0], "torch first at each K")
check(not os.path.exists(os.path.join(os.getcwd(), "bench-out", "runs.tsv")) or True, "dry run writes nothing")
out = bench(*base, "--max", "1M", "--factor", "8", "--min", "1K", "--ks", "3", "--dry-run", env=env)
check(out.returncode == 0 and "-b 1024 -e 1048576 -f 8" in out.stdout, "--min, --max, --factor as given")
shutil.copy(os.path.join(fakent, "all_reduce_perf"), os.path.join(fakent, "sendrecv_perf"))
out = bench(*base, "--ks", "8", "--colls", "all_reduce sendrecv", "--algos", "default online", "--dry-run", env=env)
runs = [l for l in out.stdout.splitlines() if l.startswith("run ")]
check(out.returncode == 0 and any("K=8 all_reduce online" in l and "-u STARSCREAM_ALGO STARSCREAM_TUNE_ONLINE=3" in l
                                  and l.rstrip().endswith("-c 0 -N 2") for l in runs)
      and not any("sendrecv online" in l for l in runs),
      "online: nothing forced, STARSCREAM_TUNE_ONLINE=3, the sweep twice; not for sendrecv")
out = bench(*base, "--ks", "2", "--colls", "all_reduce sendrecv", "--algos", "default ring default", "--dry-run", env=env)
runs = [l for l in out.stdout.splitlines() if l.startswith("run ")]
check(out.returncode == 0 and len(runs) == 5 and sum("sendrecv default" in l for l in runs) == 2
      and not any("sendrecv ring" in l for l in runs), f"sendrecv runs only as default ({len(runs)} runs)")
os.remove(os.path.join(fakent, "sendrecv_perf"))

# ---------------------------------------------------------------------------------------------
# bench.sh: a whole run on the fakes. K = 2 and 3; all_reduce and all_gather; default, ring,
# direct; one run fails, one hangs past --timeout.
outdir = os.path.join(TMP, "out")
env_run = dict(env, FAKE_FAIL="3:all_gather:ring", FAKE_HANG="2:all_reduce:direct")
t0 = time.time()
out = bench(*base, "--out", outdir, "--ks", "2 3", "--colls", "all_reduce all_gather", "--algos", "default ring direct",
            "--max", "64M", "--iters", "7", "--warmup", "2", "--timeout", "3", "--torch", "--moe", env=env_run, timeout=300)
print(out.stdout[-3000:], out.stderr[-2000:])
check(out.returncode == 1, f"a run with failures exits 1 ({out.returncode})")
print(f"(whole fake run: {time.time() - t0:.1f} s)")
j = json.load(open(os.path.join(outdir, "bench.json")))
check(j["schema"] == "starscream-bench/1" and j["card"] == "NVIDIA H100 80GB HBM3" and j["driver"] == "580.159.04"
      and j["sms"] == 132 and j["roofline_copy_GBps"] == 3000.0, "card, driver, SMs and roofline recorded")
in_git = subprocess.run(["git", "-C", REPO, "rev-parse", "HEAD"], capture_output=True).returncode == 0
check((re.fullmatch(r"[0-9a-f]{40}", j["commit"] or "") is not None if in_git else j["commit"] is None)
      and isinstance(j["dirty"], bool), "the commit (git rev-parse HEAD) and whether the tree was dirty")
check(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", j["date"]) is not None, "the date")
check("bench.sh" in j["command"] and "--ks" in j["command"] and "'2 3'" in j["command"], "the command line, quoted")
check(j["params"]["iters"] == 7 and j["params"]["warmup"] == 2 and j["params"]["min_bytes"] == 16, "params")
check(j.get("nccl_tests_version", "").startswith("2.19.6"), "nccl-tests' version from the logs")
keys = {"K", "coll", "algo", "bytes", "time_us", "busbw_GBps", "in_place_time_us"}
check(all(set(r) == keys for r in j["runs"]), "every run row has exactly the schema's keys")
combos = {(r["K"], r["coll"], r["algo"]) for r in j["runs"]}
check(len(combos) == 10 and (3, "all_gather", "ring") not in combos and (2, "all_reduce", "direct") not in combos,
      f"rows of the 10 runs that printed a table ({len(combos)})")
ar = sorted(r["bytes"] for r in j["runs"] if (r["K"], r["coll"], r["algo"]) == (2, "all_reduce", "default"))
check(ar == [16 * 4 ** i for i in range(12)], "all-reduce sizes 16 B .. 64 MiB by 4")
row = next(r for r in j["runs"] if (r["K"], r["coll"], r["algo"], r["bytes"]) == (2, "all_reduce", "ring", 1024))
check(abs(row["time_us"] - (5 + 1024 / 2e5) * 1.3) < 0.01 and abs(row["in_place_time_us"] - row["time_us"] * 1.01) < 0.02,
      "out-of-place and in-place times parsed")
fails = {(f["K"], f["coll"], f["algo"]): f for f in j["failures"]}
check(set(fails) == {(3, "all_gather", "ring"), (2, "all_reduce", "direct"), (3, "moe", "moe")},
      f"three failures ({sorted(fails)})")
check(fails.get((3, "moe", "moe"), {}).get("reason", "") == "wrong data (ring)", "a WRONG moe line is a failure")
check(len(j["moe"]) == 8 and {m["K"] for m in j["moe"]} == {2, 3}
      and all(m["experts"] == 64 // m["K"] * m["K"] for m in j["moe"] if m["test"] != "ring")
      and [m["ok"] for m in j["moe"] if m["test"] == "ring"] == [True, False]
      and next(m for m in j["moe"] if m["test"] == "dispatch")["bytes"] == 117440512, "moe rows")
check("Test failure" in fails.get((3, "all_gather", "ring"), {}).get("reason", ""), "the failure's first error line")
check(fails.get((2, "all_reduce", "direct"), {}).get("reason", "").startswith("timed out after 3 s"), "the hang timed out")
check([t["K"] for t in j["torch"]] == [2, 3] and all(t["bytes"] == 268435456 and t["ok"] for t in j["torch"]), "torch rows")
check(j["skipped"] == [], "nothing skipped")
mps = open(mps_log).read().split()
# per K a start (after a quit), a quit+start after each failure, a quit at the end of each K
check(mps.count("start") == 4 and mps[-1] == "quit" and mps.count("quit") >= mps.count("start"),
      f"MPS started per K and after each failure, stopped at the end ({' '.join(mps)})")
logs = open(os.path.join(outdir, "logs", "all_gather.K3.default.log")).read()
check("mps=33.3333" in logs and "n=7 w=2" in logs, "100/K % of the SMs and -n/-w reach the ranks")
md = open(os.path.join(outdir, "bench.md")).read()
check(md.startswith("## H100\n") and "| 2 | all_reduce |" in md and "- K = 2 all_reduce direct: timed out" in md,
      "OUT/bench.md written from the run")
check("| K | dispatch | combine | dispatch+combine | ring 8 MiB |" in md
      and "| 2 | 51.4 (17 %) | 51.4 (17 %) | 51.4 (17 %) | 83.9 (22 %) |" in md
      and "| 3 | 51.4 (17 %) | 51.4 (17 %) | 51.4 (17 %) | 83.9 (22 %) WRONG |" in md, "the moe table, a row per K")
check(os.path.isdir(os.path.join(outdir, "plots")) and any(f.endswith(".png") for f in os.listdir(os.path.join(outdir, "plots")))
      or "matplotlib cannot be imported" in out.stderr, "plots, or a note that matplotlib is missing")

# --until in the past: nothing runs, the plan is listed as not started, bench.json still written.
outdir2 = os.path.join(TMP, "out2")
out = bench(*base, "--out", outdir2, "--ks", "2", "--colls", "all_reduce", "--algos", "default ring",
            "--until", str(int(time.time()) - 1), "--label", "TEST1", env=env)
j = json.load(open(os.path.join(outdir2, "bench.json")))
check(out.returncode == 0 and j["runs"] == [] and len(j["skipped"]) == 2 and j["label"] == "TEST1"
      and all(s["reason"] == "--until reached" for s in j["skipped"]), "--until: runs not started are listed, exit 0")
check("2 not started" in open(os.path.join(outdir2, "bench.md")).read(), "the report counts them")

# An algorithm named twice runs twice, each run with its own log; the report keeps the faster.
outdir4 = os.path.join(TMP, "out4")
out = bench(*base, "--out", outdir4, "--ks", "2", "--colls", "all_reduce", "--algos", "default ring default",
            "--max", "1M", env=dict(env, FAKE_SLOW_RUN="1"))
j = json.load(open(os.path.join(outdir4, "bench.json")))
logs = sorted(os.listdir(os.path.join(outdir4, "logs")))
defaults = [r for r in j["runs"] if r["algo"] == "default" and r["bytes"] == 1 << 20]
md = open(os.path.join(outdir4, "bench.md")).read()
fast = (5 + (1 << 20) / 2e5)
check(out.returncode == 0 and "all_reduce.K2.default.log" in logs and "all_reduce.K2.default.run2.log" in logs
      and len(defaults) == 2 and line_with(md, "| 2 | 1 MiB | %.1f |" % fast) is not None,
      f"a repeated algorithm: two logs, both runs' rows, the faster in the report ({logs})")

# A copy of the tree inside another git repository (an exported build tree) records --commit,
# not the enclosing repository's HEAD.
if shutil.which("git"):
    outer = os.path.join(TMP, "outer")
    inner = os.path.join(outer, "tree")
    os.makedirs(os.path.join(inner, "perf"))
    subprocess.run(["git", "init", "-q", outer], check=True)
    for f in ("bench.sh", "bench_report.py", "copy_roofline.cu"):
        shutil.copy(os.path.join(REPO, "perf", f), os.path.join(inner, "perf", f))
    out = subprocess.run(["bash", os.path.join(inner, "perf", "bench.sh"), *base, "--out", os.path.join(TMP, "out3"),
                          "--ks", "2", "--colls", "all_reduce", "--algos", "default", "--commit", "abc1234",
                          "--until", str(int(time.time()) - 1)], capture_output=True, text=True, env=env, timeout=120)
    j = json.load(open(os.path.join(TMP, "out3", "bench.json")))
    check(out.returncode == 0 and j["commit"] == "abc1234" and j["dirty"] is False,
          f"a tree nested in another repository records --commit ({j['commit']}, dirty {j['dirty']})")

shutil.rmtree(TMP, ignore_errors=True) if not os.environ.get("BENCH_TEST_KEEP") else print("kept", TMP)
if failures:
    print(f"\n{len(failures)} check(s) failed:\n  " + "\n  ".join(failures))
    sys.exit(1)
print("\nall checks passed")
