#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""perf/attention_plot.py on synthetic attention_perf records: one row per (model, context,
batch) with the exchange shares, naive / sharded and sharded / whole computed from the records,
an OOM shown as such, and --png writes a PNG (or says matplotlib is missing)."""
import json
import os
import subprocess
import sys
import tempfile

script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "perf", "attention_plot.py")
tmp = tempfile.mkdtemp()
parts, whole = os.path.join(tmp, "k8.json"), os.path.join(tmp, "k1.json")


def rec(mode, ctx, batch, us, exch=0.0, oom=False, k=8):
    return dict(model="70b", mode=mode, K=k, context=ctx, batch=batch, oom=oom, time_us=us,
                kv_bytes=1e6, kv_bytes_per_rank=1e5, gbps=1.0, roofline_gbps=4000.0,
                roofline_pct=50.0, exchange_us=exch, sms_reported=16)


with open(parts, "w") as f:
    json.dump([rec("local", 32768, 8, 80.0), rec("sharded", 32768, 8, 100.0, 20.0),
               rec("sharded-ag", 32768, 8, 160.0, 80.0), rec("naive", 32768, 8, 400.0),
               rec("sharded-rq", 32768, 8, 96.0, 16.0), rec("local-sync", 32768, 8, 120.0),
               rec("local", 131072, 1, 50.0), rec("sharded", 131072, 1, 60.0, 10.0),
               rec("naive", 131072, 1, 0.0, oom=True)], f)
with open(whole, "w") as f:
    json.dump([rec("whole", 32768, 8, 90.0, k=1)], f)
png = os.path.join(tmp, "plot.png")
r = subprocess.run([sys.executable, script, "--parts", parts, "--whole", whole, "--png", png],
                   capture_output=True, text=True)
assert r.returncode == 0, r.stderr
rows = [l for l in r.stdout.splitlines() if l.startswith("| 70b")]
assert len(rows) == 2, r.stdout
cells = [c.strip() for c in rows[0].strip("|").split("|")]
# model, context, batch, sharded, exch, sharded-ag, exch, sharded-rq, exch, local, local-sync, naive,
# naive/sharded, whole, sharded/whole, sharded-rq/whole
assert len(cells) == 16, cells
assert cells[:3] == ["70b", "32K", "8"], cells
assert cells[3] == "100 (50 %)" and cells[4] == "20", cells
assert cells[5] == "160 (50 %)" and cells[6] == "50", cells
assert cells[7] == "96 (50 %)" and cells[8] == "17", cells
assert cells[9] == "80" and cells[10] == "120" and cells[12] == "4.00", cells
assert cells[14] == "0.90" and cells[15] == "0.94", cells
other = [c.strip() for c in rows[1].strip("|").split("|")]
assert other[11] == "OOM" and other[12] == "-" and other[7] == "-" and other[10] == "-", other
assert os.path.exists(png) or "matplotlib is not installed" in r.stderr, r.stderr
r = subprocess.run([sys.executable, script, "--parts", os.path.join(tmp, "missing.json")],
                   capture_output=True, text=True)
assert r.returncode != 0
print("attention_plot_test: ok")
