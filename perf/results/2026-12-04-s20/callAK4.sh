#!/usr/bin/env bash
# Session 20, call AK4: which algorithms the K = 3 failures ran (42 SMs a rank), then every
# failing rank count with the heuristic's first result whose CUSTOM_OPTION is not 2
# (xalgo.patch, STARSCREAM_X_NOCUSTOM2=1): AK3 found options 2 wrong at 26 SMs, 1 and 3 right.
set -uo pipefail
source tools/emulate/device-call.sh "$0"
v() { grep -E "^(FAIL|ALL PASS|FAILED|  rank)" "$L/$1" | cut -c1-200 | head -${2:-12}; }
a() { grep -h XALGO "$L/$1" | sed 's/^.*XALGO //' | sort | uniq | head -${2:-8} | cut -c1-220; }
patch -p1 < .devcarry/xalgo.patch > "$L/patch.log" 2>&1 || { cat "$L/patch.log"; exit 1; }
build gpu_gemm_test || exit 1
STARSCREAM_X_ALGO=1 prun 40 3 k3.algo.log build/bin/gpu_gemm_test --only "m=1000 n=96 k=200 fp16->same variant=2 chunks=0 ws=6720" --calls 1 --rows 0
v k3.algo.log 4; a k3.algo.log 30 | grep "\*"
export STARSCREAM_X_NOCUSTOM2=1
for k in 3 5 6 7; do prun 100 $k k$k.nc2.log build/bin/gpu_gemm_test; v k$k.nc2.log 6; done
patch -R -p1 < .devcarry/xalgo.patch >> "$L/patch.log" 2>&1
el done
