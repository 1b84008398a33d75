#!/usr/bin/env bash
# Session 21, call AN: SSC_GEMM_COPY_ENGINE with its stream memory operations batched
# (sscStreamBatchValue32: 4-5 submissions a call instead of 3K-5K single operations; call AM
# measured 5-9 us per submission at K = 8). Its gpu_gemm_test cases at K = 8 and 5, the
# missing-rank check at K = 4, gemm_coll_perf at K = 8 over the whole table (copy-engine forms
# beside the waiting-kernel forms), gemm_table.py against call AM's K = 1 record
# (.devcarry/k1.json), and the whole gpu_gemm_test at K = 8 again (call AM's run timed out in
# the unfused reduce-scatter of 4099 x 8192 x 136 after the copy-engine cases).
# Copy to .devcarry/ and run with carry [".devcarry"].
set -uo pipefail
source tools/emulate/device-call.sh "$0"
build gpu_gemm_test gemm_coll_perf starscream || exit 1
prun 60 8 ce.k8.log build/bin/gpu_gemm_test --only " ce"
grep -E "^(FAIL|ALL PASS|FAILED)" "$L/ce.k8.log" | head -8
prun 60 5 ce.k5.log build/bin/gpu_gemm_test --only " ce"
grep -E "^(FAIL|ALL PASS|FAILED)" "$L/ce.k5.log" | head -8
STARSCREAM_TIMEOUT=5 prun 60 4 missing.k4.log build/bin/gpu_gemm_test --missing-rank
grep -E "PASS|FAIL|rror" "$L/missing.k4.log" | cut -c1-200 | head -8
C=rs.gemm,rs.unfused,rs.fused,rs.fusedce,ag.gemm,ag.unfused,ag.fused,ag.fusedce,ag.fusedpr,ag.fusedprce
prun 240 8 bench.k8.log build/bin/gemm_coll_perf -v 1 -c "$C" -J "$L/k8.json"
python3 perf/gemm_table.py .devcarry/k1.json "$L/k8.json" > "$L/table.md" 2>&1
grep "^- " "$L/table.md" | cut -c1-160
python3 - "$L/k8.json" <<'PY'
import json, sys, collections
d = collections.defaultdict(dict)
for l in open(sys.argv[1]):
    r = json.loads(l); d[(r["layer"], r["M"])][r["config"]] = r["us"]
cols = ["rs.gemm", "rs.unfused", "rs.fused", "rs.fusedce", "ag.gemm", "ag.unfused", "ag.fused", "ag.fusedce", "ag.fusedpr", "ag.fusedprce"]
print("layer M " + " ".join(c.replace("ag.", "a.").replace("rs.", "r.") for c in cols))
for (layer, m), c in sorted(d.items()):
    print(layer, m, " ".join("%.0f" % c[k] if k in c else "-" for k in cols))
PY
prun 150 8 gemmtest.k8.log build/bin/gpu_gemm_test
grep -E "^(FAIL|ALL PASS|FAILED)|failed" "$L/gemmtest.k8.log" | cut -c1-200 | head -8
el done
