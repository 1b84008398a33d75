#!/usr/bin/env bash
# Session 23, call CI: the final tree's refactor of the per-rank peer GEMMs (no behaviour change
# intended): gpu_gemm_test at K = 8.
DEVICE_CALL_LIMIT=200
set -uo pipefail
source tools/emulate/device-call.sh "$0"
build gpu_gemm_test || exit 1
prun 100 8 gemmtest.k8.log build/bin/gpu_gemm_test
echo "K=8: $(grep -c '^PASS' "$L/gemmtest.k8.log") pass; $(grep -E '^(ALL PASS|FAILED)' "$L/gemmtest.k8.log")"; grep -E "capture|^FAIL" "$L/gemmtest.k8.log" | cut -c1-250
el done
