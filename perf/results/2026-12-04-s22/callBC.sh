#!/usr/bin/env bash
# Session 22, call BC: the arrival barrier (STARSCREAM_GEMM_BARRIER, on by itself at K MPS
# partitions). (1) Its cost: the table's unfused and auto cells with it and without
# (STARSCREAM_GEMM_BARRIER=off), same call. (2) The llama405b.gate_up M = 256 all-gather outlier
# (unfused ~1800 us against a 203 us GEMM, calls AN and BB) with STARSCREAM_DEBUG=INFO. (3) The
# missing-rank check (copy engines and now the barrier). (4) The failing sequence of calls AP and
# BB (whole gpu_gemm_test, then its reduce-scatter cases): twice with the barrier, once without.
# Copy to .devcarry/ and run with carry [".devcarry"].
DEVICE_CALL_LIMIT=560
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
STARSCREAM_GEMM_BARRIER=off STARSCREAM_DEBUG=INFO prun 60 8 outlier.log build/bin/gemm_coll_perf -s llama405b.gate_up -m 256 -o ag -c ag.gemm,ag.unfused
grep "^  " "$L/outlier.log"
STARSCREAM_TIMEOUT=5 prun 90 4 missing.k4.log build/bin/gpu_gemm_test --missing-rank
grep -E "PASS|FAIL" "$L/missing.k4.log" | cut -c1-260
for i in 1 2; do
  prun 150 8 whole.on$i.log build/bin/gpu_gemm_test
  prun 100 8 rsonly.on$i.log build/bin/gpu_gemm_test --only gemm_rs
  echo "on $i: whole $(grep -c '^PASS' "$L/whole.on$i.log") pass $(grep -c 'failed earlier\|^FAIL' "$L/whole.on$i.log") bad; rs-only $(grep -c '^PASS' "$L/rsonly.on$i.log") pass $(grep -c 'failed earlier\|^FAIL' "$L/rsonly.on$i.log") bad"
done
export STARSCREAM_GEMM_BARRIER=off
prun 150 8 whole.off.log build/bin/gpu_gemm_test
prun 100 8 rsonly.off.log build/bin/gpu_gemm_test --only gemm_rs
echo "off: whole $(grep -c '^PASS' "$L/whole.off.log") pass $(grep -c 'failed earlier\|^FAIL' "$L/whole.off.log") bad; rs-only $(grep -c '^PASS' "$L/rsonly.off.log") pass $(grep -c 'failed earlier\|^FAIL' "$L/rsonly.off.log") bad"
el done
