#!/usr/bin/env bash
# Session 23, call CB: (1) feasibility of one cuBLASLt pointer-array batch for the per-rank
# all-gather's peer GEMMs (.devcarry/ptrbatch.cu: one GEMM vs pointer-array batch of 8 vs 8 GEMMs,
# 8 MPS partitions at once); (2) session 22's last two commits on the H200 (gpu_gemm_test K = 8,
# --missing-rank K = 4).
DEVICE_CALL_LIMIT=500
set -uo pipefail
source tools/emulate/device-call.sh "$0"
nvcc -O2 -std=c++17 -arch=sm_90 -o "$L/ptrbatch" .devcarry/ptrbatch.cu -lcublasLt > "$L/nvcc.log" 2>&1; el "nvcc rc=$?"
prun 120 8 ptrbatch.k8.log "$L/ptrbatch"
build gpu_gemm_test || exit 1
prun 120 8 gemmtest.k8.log build/bin/gpu_gemm_test
echo "K=8: $(grep -c '^PASS' "$L/gemmtest.k8.log") pass; $(grep -E '^(ALL PASS|FAILED)' "$L/gemmtest.k8.log")"
STARSCREAM_TIMEOUT=5 prun 90 4 missing.k4.log build/bin/gpu_gemm_test --missing-rank
grep -E "PASS|FAIL" "$L/missing.k4.log" | head -8
cat "$L/ptrbatch.k8.log" | grep -v "^\[" | head -40
el done
