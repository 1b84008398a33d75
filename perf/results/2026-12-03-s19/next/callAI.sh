#!/usr/bin/env bash
# Session 20 (prepared in session 19, not yet run), call AI: the chunked / multi-chunk fused
# GEMM plans' wrong rows at K = 3 and 6 (perf/RESULTS.md session 19, calls AF-AH). Copy to
# .devcarry/ with nobatch.patch (perf/results/2026-12-03-s19/callAH/) and run with
# carry [".devcarry"]. Which rank counts fail (3, 5, 6, 7), whether the MPS cap matters (K = 3
# uncapped), and the three large K = 3 cases alone with the pieces as plain GEMMs
# (nobatch.patch), with the checked mode on.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 STARSCREAM_TIMEOUT=20 STARSCREAM_REPO=$PWD
t0=${t0:-$(date +%s)}
L=$OUT/l; mkdir -p $L
el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
if [[ ${1:-} != inner ]]; then
  git log --oneline -1 > $L/env.txt 2>&1; git status --short >> $L/env.txt
  export OUT L t0
  timeout -k 5 560 bash "$0" inner; echo "inner rc=$?"
  tar -czf $OUT/logs.tgz -C $L . && rm -rf $L
  exit 0
fi
B="-G Ninja -DSTARSCREAM_GPU=cuda -DCMAKE_BUILD_TYPE=Release -DSTARSCREAM_BUILD_PERF=OFF -DSTARSCREAM_BUILD_TOOLS=OFF -DSTARSCREAM_BUILD_TESTS=ON"
cmake -S . -B build $B > $L/cfg.log 2>&1 && cmake --build build -j16 --target gpu_gemm_test > $L/build.log 2>&1; el "build rc=$?"
run() { local to=$1 k=$2 log=$3; shift 3
  timeout $to tools/emulate/partition-run.sh $k "$@" > $L/$log 2>&1; el "rc=$? $log"
  grep -E "^(FAIL|ALL PASS|FAILED)" $L/$log | cut -c1-150; }
for k in 3 5 6 7; do run 90 $k k$k.log build/bin/gpu_gemm_test; done
SSC_MPS_PERCENT=none run 90 3 k3.uncapped.log build/bin/gpu_gemm_test
patch -p1 < .devcarry/nobatch.patch > $L/patch.log 2>&1 && cmake --build build -j16 --target gpu_gemm_test > $L/build2.log 2>&1; el "patched rc=$?"
for only in "gemm_rs m=4096 n=8192 k=128" "gemm_rs m=4099 n=8192 k=136" "ag_gemm m=4096 n=160 k=8192"; do
  STARSCREAM_CHECK=1 run 60 3 "nobatch.$(echo $only | tr ' =' '__').log" build/bin/gpu_gemm_test --only "$only"
done
patch -R -p1 < .devcarry/nobatch.patch >> $L/patch.log 2>&1
el done
