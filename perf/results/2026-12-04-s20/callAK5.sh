#!/usr/bin/env bash
# Session 20, call AK5: does the wrong GEMM under the MPS cap report a launch error that nobody
# reads (xalgo.patch, STARSCREAM_X_LASTERR=1: cudaGetLastError and a stream sync after each
# cuBLASLt call)? K = 1 at 20 % (26 SMs) and K = 3 on the cases AK and AK4 saw wrong.
set -uo pipefail
source tools/emulate/device-call.sh "$0"
v() { grep -E "^(FAIL|ALL PASS|FAILED|  rank)" "$L/$1" | cut -c1-200 | head -${2:-12}; }
x() { grep -h XLAST "$L/$1" | sed 's/^.*XLAST //' | sort | uniq -c | head -${2:-8} | cut -c1-200; }
patch -p1 < .devcarry/xalgo.patch > "$L/patch.log" 2>&1 || { cat "$L/patch.log"; exit 1; }
build gpu_gemm_test || exit 1
export STARSCREAM_X_LASTERR=1
SSC_MPS_PERCENT=20 prun 40 1 k1.p20.log build/bin/gpu_gemm_test --only "m=1000 n=96 k=200 bf16" --calls 1 --rows 0; v k1.p20.log 3; x k1.p20.log
prun 40 3 k3.log build/bin/gpu_gemm_test --only "m=1000 n=96 k=200 fp16->same variant=2 chunks=0 ws=6720" --calls 1 --rows 0; v k3.log 4; x k3.log
SSC_MPS_PERCENT=20 prun 40 3 k3.p20.log build/bin/gpu_gemm_test --only "m=1000 n=96 k=200 fp16->same variant=2 chunks=0 ws=6720" --calls 1 --rows 0; v k3.p20.log 4
patch -R -p1 < .devcarry/xalgo.patch >> "$L/patch.log" 2>&1
el done
