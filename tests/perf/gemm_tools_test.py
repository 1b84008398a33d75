#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""gemm_rs_perf and ag_gemm_perf end to end on the host backend (the CPU's reference GEMM): the
collective tools' flags, the table, the JSON records, the check, and the exit codes.

    gemm_tools_test.py MPIEXEC BINDIR [MPIEXEC_FLAGS...]
"""
import json
import os
import subprocess
import sys
import tempfile

MPIEXEC, BIN, FLAGS = sys.argv[1], sys.argv[2], sys.argv[3:]
ENV = dict(os.environ, STARSCREAM_BACKEND="host", STARSCREAM_TIMEOUT="60")
failures = []


def run(np, tool, args, want_rc=0):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "rows.json")
        cmd = [MPIEXEC, *FLAGS, "-np", str(np), os.path.join(BIN, tool), *args]
        if want_rc == 0:
            cmd += ["-J", out]
        p = subprocess.run(cmd, env=ENV, capture_output=True, text=True, timeout=240)
        records = []
        if os.path.exists(out):
            with open(out) as f:
                records = [json.loads(line) for line in f if line.strip()]
    name = f"{tool} -np {np} {' '.join(args)}"
    if p.returncode != want_rc:
        failures.append(f"{name}: exit {p.returncode}, wanted {want_rc}\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
    return p, records, name


def expect(cond, name, what):
    if not cond:
        failures.append(f"{name}: {what}")


# A sweep of M over two types, 3 ranks (M not a multiple of the ranks), AUTO.
p, rec, name = run(3, "gemm_rs_perf", ["-L", "gptoss120b.o", "-b", "16", "-e", "100", "-f", "6",
                                       "-n", "1", "-w", "1", "-d", "all"])
expect(len(rec) == 4, name, f"{len(rec)} records, wanted 4 (M 16 and 96, bfloat16 and half)")
expect(all(r["nwrong"] == 0 for r in rec), name, "a record with wrong elements")
expect([r["M"] for r in rec] == [16, 96, 16, 96], name, f"rows {[r['M'] for r in rec]}")
expect({r["type"] for r in rec} == {"bfloat16", "half"}, name, "types")
expect(all(r["rank_K"] == 171 and r["N"] == 2880 for r in rec), name, "the K split (512 over 3 ranks: 171)")
expect("# Out of bounds values : 0 OK" in p.stdout, name, "footer")
expect(sum(1 for l in p.stdout.splitlines() if l.startswith("  gptoss120b.o")) == 4, name, "table rows")

# Every variant of the all-gather, ranks that own no rows (M = 2 over 3 ranks).
for variant, ran in [("unfused", "unfused"), ("chunked", "chunked"), ("fused", "fused x1"),
                     ("fused_per_rank", "fused x3")]:
    p, rec, name = run(3, "ag_gemm_perf", ["-L", "gptoss120b.qkv", "-b", "2", "-e", "64", "-f", "32",
                                           "-n", "1", "-w", "0", "-V", variant])
    expect(len(rec) == 2, name, f"{len(rec)} records, wanted 2")
    expect(all(r["variant"].startswith(ran) and r["variant_asked"] == variant for r in rec), name,
           f"ran {[r['variant'] for r in rec]}")
    expect(all(r["nwrong"] == 0 and r["rank_N"] == 214 for r in rec), name, "wrong elements or N split")

# The reduce-scatter fused on 2 ranks, and a flag that means nothing here (warned, not refused).
p, rec, name = run(2, "gemm_rs_perf", ["-L", "gptoss120b.qkv", "-b", "33", "-e", "33", "-n", "1", "-w", "0",
                                       "-V", "fused", "-o", "max"])
expect(len(rec) == 1 and rec[0]["variant"] == "fused x1" and rec[0]["nwrong"] == 0, name, str(rec))
expect("-o (op" in p.stdout, name, "no warning for -o")

# A variant the workspace cannot hold (the fused all-gather keeps the whole gathered X: 49152 x
# 2880 bf16 = 270 MiB > the host backend's 256 MiB): a "not run" line, the run goes on.
p, rec, name = run(3, "ag_gemm_perf", ["-L", "gptoss120b.qkv", "-b", "16", "-e", "49152", "-f", "3072",
                                       "-n", "1", "-w", "0", "-V", "fused", "-c", "0"])
expect(len(rec) == 1 and rec[0]["M"] == 16 and rec[0]["nwrong"] is None, name, str(rec))
expect("M=49152 bfloat16: not run:" in p.stdout and "workspace" in p.stdout, name, "no 'not run' line")

# Refusals: exit 2 with the reason.
for args, why in [(["-V", "fastest"], "unknown variant"), (["-d", "float"], "bfloat16 or half"),
                  (["-b", "64", "-e", "16"], "invalid sizes")]:
    p, _, name = run(2, "ag_gemm_perf", args, want_rc=2)
    expect(why in p.stderr, name, f"stderr lacks '{why}': {p.stderr[-500:]}")

p, _, name = run(1, "gemm_rs_perf", ["-h"])
expect("-V,--variant" in p.stdout and "llama405b.gate_up 16384x13312" in p.stdout, name, "usage")

if failures:
    print("\n\n".join(failures))
    sys.exit(1)
print("gemm_tools_test: ok")
