#!/usr/bin/env bash
# Session 20 (prepared in session 19, not yet run), call AI: the chunked / multi-chunk fused
# GEMM plans' wrong rows at K = 3 and 6 (perf/RESULTS.md session 19, calls AF-AH). Copy to
# .devcarry/ with nobatch.patch (perf/results/2026-12-03-s19/callAH/) and run with
# carry [".devcarry"]. Which rank counts fail (3, 5, 6, 7), whether the MPS cap matters (K = 3
# uncapped), and the three large K = 3 cases alone with the pieces as plain GEMMs
# (nobatch.patch), with the checked mode on.
set -uo pipefail
source tools/emulate/device-call.sh "$0"
verdicts() { grep -E "^(FAIL|ALL PASS|FAILED)" "$L/$1" | cut -c1-150; }
build gpu_gemm_test || exit 1
for k in 3 5 6 7; do prun 90 $k k$k.log build/bin/gpu_gemm_test; verdicts k$k.log; done
SSC_MPS_PERCENT=none prun 90 3 k3.uncapped.log build/bin/gpu_gemm_test; verdicts k3.uncapped.log
patch -p1 < .devcarry/nobatch.patch > "$L/patch.log" 2>&1 && build gpu_gemm_test || exit 1
for only in "gemm_rs m=4096 n=8192 k=128" "gemm_rs m=4099 n=8192 k=136" "ag_gemm m=4096 n=160 k=8192"; do
  log="nobatch.$(echo "$only" | tr ' =' '__').log"
  STARSCREAM_CHECK=1 prun 60 3 "$log" build/bin/gpu_gemm_test --only "$only"; verdicts "$log"
done
patch -R -p1 < .devcarry/nobatch.patch >> "$L/patch.log" 2>&1
el done
