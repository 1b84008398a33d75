#!/usr/bin/env bash
# Session 23, call CC: the per-rank all-gather with its peers' GEMMs as ONE cuBLASLt pointer-array
# batch (uncommitted tree). gpu_gemm_test at K = 8 and 3 (batches of 6-7 and 2 entries, the
# probe under the cap), then the table's all-gather columns (every form) and the reduce-scatter's
# GEMM/unfused/auto at K = 8, and the whole-GPU K = 1 record: the data for AUTO's new rule.
DEVICE_CALL_LIMIT=540
set -uo pipefail
source tools/emulate/device-call.sh "$0"
build gpu_gemm_test gemm_coll_perf || exit 1
prun 100 8 gemmtest.k8.log build/bin/gpu_gemm_test
prun 80 3 gemmtest.k3.log build/bin/gpu_gemm_test
for k in 8 3; do echo "K=$k: $(grep -c '^PASS' "$L/gemmtest.k$k.log") pass; $(grep -E '^(ALL PASS|FAILED)' "$L/gemmtest.k$k.log")"; grep -m5 -E "FAIL|WARN|error" "$L/gemmtest.k$k.log" | cut -c1-250; done
prun 200 8 bench.k8.log build/bin/gemm_coll_perf -v 1 -J "$L/k8.json" -c rs.gemm,rs.unfused,rs.auto,ag.gemm,ag.unfused,ag.auto,ag.fused,ag.fusedpr,ag.fusedprce
prun 60 1 bench.k1.log build/bin/gemm_coll_perf -J "$L/k1.json"
python3 perf/gemm_table.py "$L/k1.json" "$L/k8.json" > "$L/table.md" 2>&1
grep "^- " "$L/table.md" | cut -c1-250
python3 - "$L/k8.json" <<'PY'
import json,sys
c={}
for l in open(sys.argv[1]):
    r=json.loads(l); c.setdefault((r['layer'],r['M']),{})[r['config']]=r['us']
for k in sorted(c):
    d=c[k]; print("%-18s %6d" % k, " ".join("%s %.0f" % (x.split('.')[1], d[x]) for x in ('ag.gemm','ag.unfused','ag.fused','ag.fusedpr','ag.fusedprce') if x in d))
PY
el done
