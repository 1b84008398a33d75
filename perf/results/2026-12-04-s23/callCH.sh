#!/usr/bin/env bash
# Session 23, call CH: fused forms refused under stream capture (AUTO plans unfused there), the
# new capture check and the batched per-rank cases of 20 calls (uncommitted tree):
# gpu_gemm_test at K = 8 and K = 3.
DEVICE_CALL_LIMIT=380
set -uo pipefail
source tools/emulate/device-call.sh "$0"
build gpu_gemm_test || exit 1
prun 100 8 gemmtest.k8.log build/bin/gpu_gemm_test
prun 70 3 gemmtest.k3.log build/bin/gpu_gemm_test
for k in 8 3; do echo "K=$k: $(grep -c '^PASS' "$L/gemmtest.k$k.log") pass; $(grep -E '^(ALL PASS|FAILED)' "$L/gemmtest.k$k.log")"; grep -E "capture|^FAIL" "$L/gemmtest.k$k.log" | cut -c1-300; grep -m3 "chunks=8" "$L/gemmtest.k$k.log" | cut -c1-200; done
el done
