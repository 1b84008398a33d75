#!/usr/bin/env bash
# Session 20, call AK2 (AK's fix experiments again; AK ran env with a shell function): is the vendor GEMM what goes wrong under the MPS cap at K = 3, 5, 6, 7
# (call AI: whole tiles of rows missing even unfused; K = 3 uncapped passes)? gpu_gemm_test with
# xalgo.patch (not committed): STARSCREAM_X_ALGO=1 prints the cuBLASLt heuristic's first results
# and the SM count the library sees; STARSCREAM_X_SMTARGET=auto tells cuBLASLt that SM count
# (CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET); STARSCREAM_X_NOCLUSTER / _NOSPLIT take the first result
# with a 1x1x1 cluster / without split-K. Copy with xalgo.patch to .devcarry/, carry it.
set -uo pipefail
source tools/emulate/device-call.sh "$0"
v() { grep -E "^(FAIL|ALL PASS|FAILED|  rank)" "$L/$1" | cut -c1-200 | head -${2:-12}; }
a() { grep -h XALGO "$L/$1" | sed 's/^.*XALGO //' | sort | uniq | head -${2:-8} | cut -c1-220; }
patch -p1 < .devcarry/xalgo.patch > "$L/patch.log" 2>&1 || { cat "$L/patch.log"; exit 1; }
build gpu_gemm_test || exit 1
SM="m=1000 n=96 k=200"
for x in SMTARGET=auto SMTARGET=132; do
  export STARSCREAM_X_$x STARSCREAM_X_ALGO=1; prun 60 5 k5.$x.log build/bin/gpu_gemm_test --only "$SM" --calls 1 --rows 0
  v k5.$x.log 6; a k5.$x.log 4; unset STARSCREAM_X_${x%%=*} STARSCREAM_X_ALGO
done
export STARSCREAM_X_SMTARGET=132 STARSCREAM_X_ALGO=1
SSC_MPS_PERCENT=20 prun 40 1 k1.p20.x132.log build/bin/gpu_gemm_test --only "$SM" --calls 1 --rows 0; v k1.p20.x132.log 4
unset STARSCREAM_X_SMTARGET STARSCREAM_X_ALGO
for x in SMTARGET=132 SMTARGET=auto; do
  export STARSCREAM_X_$x; prun 100 3 k3.$x.log build/bin/gpu_gemm_test; v k3.$x.log 8; unset STARSCREAM_X_${x%%=*}
done
patch -R -p1 < .devcarry/xalgo.patch >> "$L/patch.log" 2>&1
el done
