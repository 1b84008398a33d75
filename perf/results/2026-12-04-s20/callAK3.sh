#!/usr/bin/env bash
# Session 20, call AK3: the failing cuBLASLt algorithm under the MPS cap with its cluster shape
# forced to 1x1x1 (xalgo.patch, STARSCREAM_X_CLUSTER1=1; the heuristic returns AUTO); the
# heuristic's 2nd-4th results instead of its first (STARSCREAM_X_PICK); then whole suites.
set -uo pipefail
source tools/emulate/device-call.sh "$0"
v() { grep -E "^(FAIL|ALL PASS|FAILED|  rank)" "$L/$1" | cut -c1-200 | head -${2:-12}; }
a() { grep -h XALGO "$L/$1" | sed 's/^.*XALGO //' | sort | uniq | head -${2:-8} | cut -c1-220; }
patch -p1 < .devcarry/xalgo.patch > "$L/patch.log" 2>&1 || { cat "$L/patch.log"; exit 1; }
build gpu_gemm_test || exit 1
SM="m=1000 n=96 k=200"
export STARSCREAM_X_CLUSTER1=1 STARSCREAM_X_ALGO=1
SSC_MPS_PERCENT=20 prun 40 1 k1.p20.c1.log build/bin/gpu_gemm_test --only "$SM" --calls 1 --rows 0; v k1.p20.c1.log 4; a k1.p20.c1.log 6
prun 60 5 k5.c1.log build/bin/gpu_gemm_test --only "$SM" --calls 1 --rows 0; v k5.c1.log 6
unset STARSCREAM_X_CLUSTER1
for i in 1 2 3; do STARSCREAM_X_PICK=$i SSC_MPS_PERCENT=20 prun 40 1 k1.p20.pick$i.log build/bin/gpu_gemm_test --only "$SM bf16" --calls 1 --rows 0
  v k1.p20.pick$i.log 2; a k1.p20.pick$i.log 8 | grep "*"; done
export STARSCREAM_X_CLUSTER1=1; unset STARSCREAM_X_ALGO
prun 100 3 k3.c1.log build/bin/gpu_gemm_test; v k3.c1.log 8
prun 100 5 k5all.c1.log build/bin/gpu_gemm_test; v k5all.c1.log 8
prun 100 8 k8.c1.log build/bin/gpu_gemm_test; v k8.c1.log 8
patch -R -p1 < .devcarry/xalgo.patch >> "$L/patch.log" 2>&1
el done
