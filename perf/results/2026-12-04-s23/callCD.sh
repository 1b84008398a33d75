#!/usr/bin/env bash
# Session 23, call CD: the fused all-gather's gate moved out of the push kernel's blocks into
# one waiting warp of its own launch, and the per-rank form's peer batch only below 512 rows a
# block (uncommitted tree). gpu_gemm_test K = 8, then the all-gather's forms over the table.
DEVICE_CALL_LIMIT=480
set -uo pipefail
source tools/emulate/device-call.sh "$0"
build gpu_gemm_test gemm_coll_perf || exit 1
prun 100 8 gemmtest.k8.log build/bin/gpu_gemm_test
echo "K=8: $(grep -c '^PASS' "$L/gemmtest.k8.log") pass; $(grep -E '^(ALL PASS|FAILED)' "$L/gemmtest.k8.log")"; grep -m5 -E "^FAIL|WARN|error" "$L/gemmtest.k8.log" | cut -c1-250
prun 200 8 bench.k8.log build/bin/gemm_coll_perf -v 1 -J "$L/k8.json" -o ag -c ag.gemm,ag.unfused,ag.fused,ag.fusedpr,ag.fusedprce
python3 - "$L/k8.json" <<'PY'
import json,sys
c={}
for l in open(sys.argv[1]):
    r=json.loads(l); c.setdefault((r['layer'],r['M']),{})[r['config']]=r['us']
for k in sorted(c):
    d=c[k]; print("%-18s %6d" % k, " ".join("%s %.0f" % (x.split('.')[1], d[x]) for x in ('ag.gemm','ag.unfused','ag.fused','ag.fusedpr','ag.fusedprce') if x in d))
PY
el done
