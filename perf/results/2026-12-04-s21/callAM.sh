#!/usr/bin/env bash
# Session 21, call AM: SSC_GEMM_COPY_ENGINE (gpu_gemm_ce.cc) on the device for the first time.
# Its cases of gpu_gemm_test at K = 8 and 3, the watchdog's missing-rank check at K = 4, then
# gemm_coll_perf over the whole TP8 table at K = 8 with the copy-engine forms beside the waiting-
# kernel forms, unfused and the GEMM alone (one run), K = 1 for the whole-GPU baseline, and
# gemm_table.py's target lines; last the whole gpu_gemm_test at K = 8 (regression).
# Copy to .devcarry/ and run with carry [".devcarry"].
set -uo pipefail
source tools/emulate/device-call.sh "$0"
build gpu_gemm_test gemm_coll_perf starscream || exit 1
prun 60 8 ce.k8.log build/bin/gpu_gemm_test --only " ce"
grep -E "^(FAIL|ALL PASS|FAILED)" "$L/ce.k8.log" | head -8; grep -c "^PASS" "$L/ce.k8.log"
prun 60 3 ce.k3.log build/bin/gpu_gemm_test --only " ce"
grep -E "^(FAIL|ALL PASS|FAILED)" "$L/ce.k3.log" | head -8
STARSCREAM_TIMEOUT=5 prun 60 4 missing.k4.log build/bin/gpu_gemm_test --missing-rank
grep -E "PASS|FAIL|rror" "$L/missing.k4.log" | cut -c1-300 | head -8
C=rs.gemm,rs.unfused,rs.auto,rs.fused,rs.fusedce,ag.gemm,ag.unfused,ag.auto,ag.fused,ag.fusedce,ag.fusedpr,ag.fusedprce
prun 240 8 bench.k8.log build/bin/gemm_coll_perf -v 1 -c "$C" -J "$L/k8.json"
grep "^  " "$L/bench.k8.log" | cut -c1-260
tail -3 "$L/bench.k8.log" | grep -v "^  "
prun 60 1 bench.k1.log build/bin/gemm_coll_perf -J "$L/k1.json"
python3 perf/gemm_table.py "$L/k1.json" "$L/k8.json" > "$L/table.md" 2>&1; grep "^- " "$L/table.md"
prun 120 8 gemmtest.k8.log build/bin/gpu_gemm_test
grep -E "^(FAIL|ALL PASS|FAILED)" "$L/gemmtest.k8.log" | head -8
el done
