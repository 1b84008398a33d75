#!/usr/bin/env bash
# Session 22, call BE: the final tree. The missing-rank check with its corrected unfused part (call
# BD's run named rank 3 as "rank(s) 3", which the check did not accept), then the whole
# gpu_gemm_test at K = 8 with the arrival barrier (the workspace now mapped only where a fused
# form or the barrier needs it).
# Copy to .devcarry/ and run with carry [".devcarry"].
DEVICE_CALL_LIMIT=195
set -uo pipefail
source tools/emulate/device-call.sh "$0"
build gpu_gemm_test starscream || exit 1
STARSCREAM_TIMEOUT=5 prun 40 4 missing.k4.log build/bin/gpu_gemm_test --missing-rank
grep -E "PASS|FAIL" "$L/missing.k4.log" | cut -c1-300
prun 90 8 whole.log build/bin/gpu_gemm_test
echo "whole: $(grep -c '^PASS' "$L/whole.log") pass $(grep -c 'failed earlier\|^FAIL' "$L/whole.log") bad; $(grep -E '^(ALL PASS|FAILED)' "$L/whole.log")"
el done
