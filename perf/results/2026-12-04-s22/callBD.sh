#!/usr/bin/env bash
# Session 22, call BD: the arrival barrier as one waiting warp (kernelArrivalBarrier; call BC's
# stream-memory-operation barrier cost 26-37 us a call), and the workspace now mapped into the
# peers at the first call with a collective whatever the variant. (1) Cost: the table's unfused
# and auto cells with the barrier and without (STARSCREAM_GEMM_BARRIER=off), same call, both with
# the workspace mapped. (2) The missing-rank check. (3) The failing sequence of calls AP, BB and
# BC-off (whole gpu_gemm_test, then its reduce-scatter cases), twice with the barrier.
# Copy to .devcarry/ and run with carry [".devcarry"].
DEVICE_CALL_LIMIT=470
set -uo pipefail
source tools/emulate/device-call.sh "$0"
build gpu_gemm_test gemm_coll_perf starscream || exit 1
C=rs.gemm,rs.unfused,rs.auto,ag.gemm,ag.unfused,ag.auto
prun 60 8 bench.on.log build/bin/gemm_coll_perf -c "$C" -J "$L/k8.on.json"
STARSCREAM_GEMM_BARRIER=off prun 60 8 bench.off.log build/bin/gemm_coll_perf -c "$C" -J "$L/k8.off.json"
python3 - "$L/k8.on.json" "$L/k8.off.json" <<'PY'
import json, sys, math
def load(p):
    d = {}
    for l in open(p):
        r = json.loads(l); d[(r["layer"], r["M"], r["config"])] = r["us"]
    return d
on, off = load(sys.argv[1]), load(sys.argv[2])
for cfg in ["rs.unfused", "rs.auto", "ag.unfused", "ag.auto"]:
    keys = [k for k in on if k[2] == cfg and k in off]
    diffs = sorted(on[k] - off[k] for k in keys)
    ratio = math.exp(sum(math.log(on[k] / off[k]) for k in keys) / len(keys))
    print("%s: barrier on / off geomean %.3f, median diff %+.1f us over %d cells" % (cfg, ratio, diffs[len(diffs) // 2], len(keys)))
PY
python3 perf/gemm_table.py .devcarry/k1.json "$L/k8.on.json" > "$L/table.on.md" 2>&1
grep "^- " "$L/table.on.md" | cut -c1-220
STARSCREAM_TIMEOUT=5 prun 60 4 missing.k4.log build/bin/gpu_gemm_test --missing-rank
grep -E "PASS|FAIL" "$L/missing.k4.log" | cut -c1-300
for i in 1 2; do
  prun 110 8 whole.on$i.log build/bin/gpu_gemm_test
  prun 80 8 rsonly.on$i.log build/bin/gpu_gemm_test --only gemm_rs
  echo "on $i: whole $(grep -c '^PASS' "$L/whole.on$i.log") pass $(grep -c 'failed earlier\|^FAIL' "$L/whole.on$i.log") bad; rs-only $(grep -c '^PASS' "$L/rsonly.on$i.log") pass $(grep -c 'failed earlier\|^FAIL' "$L/rsonly.on$i.log") bad"
done
el done
