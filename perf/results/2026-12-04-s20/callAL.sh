#!/usr/bin/env bash
# Session 20, call AL: the GEMM ops with the probe (STARSCREAM_GEMM_PROBE=auto: on under the MPS
# cap) on the rank counts that failed (calls AI-AK5: cuBLASLt left tiles and batch entries
# unwritten under the cap) and K = 8. First the one-process reproduction (K = 1 at 20 %) with the
# probe's INFO lines, then gpu_gemm_test at K = 5, 3, 6, 7, 8 (every case, back to back).
set -uo pipefail
DEVICE_CALL_LIMIT=${DEVICE_CALL_LIMIT:-300}
source tools/emulate/device-call.sh "$0"
v() { grep -E "^(FAIL|ALL PASS|FAILED|  rank)" "$L/$1" | cut -c1-200 | head -${2:-8}; }
build gpu_gemm_test || exit 1
STARSCREAM_DEBUG=INFO SSC_MPS_PERCENT=20 prun 40 1 k1.p20.log build/bin/gpu_gemm_test --only "m=1000 n=96 k=200" --calls 1 --rows 0
v k1.p20.log 4; grep -h "skipped\|probe" "$L/k1.p20.log" | sed 's/^.*gemm: //' | sort | uniq -c | head -6 | cut -c1-200
for k in 5 3 6 7 8; do prun 70 $k k$k.log build/bin/gpu_gemm_test; v k$k.log 6; grep -c "^PASS" "$L/k$k.log"; done
el done
