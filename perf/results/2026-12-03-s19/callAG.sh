#!/usr/bin/env bash
# Session 19, call AG: gpu_gemm_test at K = 3 failed six chunked / multi-chunk fused cases in
# call AF (the first K = 3 run of the GEMM test on a GPU). Is it the one-stream change or older?
# The same test from HEAD (.devcarry/old, before the change) and from the working tree, K = 3
# and K = 6, each with the full list of failures.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 STARSCREAM_TIMEOUT=20 STARSCREAM_REPO=$PWD
t0=${t0:-$(date +%s)}
L=$OUT/l; mkdir -p $L
el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
if [[ ${1:-} != inner ]]; then
  export OUT L t0
  timeout -k 5 480 bash "$0" inner; echo "inner rc=$?"
  tar -czf $OUT/logs.tgz -C $L . && rm -rf $L
  exit 0
fi
B="-G Ninja -DSTARSCREAM_GPU=cuda -DCMAKE_BUILD_TYPE=Release -DSTARSCREAM_BUILD_PERF=OFF -DSTARSCREAM_BUILD_TOOLS=OFF -DSTARSCREAM_BUILD_TESTS=ON"
( cmake -S . -B build $B > $L/cfg.new.log 2>&1 && cmake --build build -j8 --target gpu_gemm_test > $L/build.new.log 2>&1; echo "new build rc=$?" ) &
( cmake -S .devcarry/old -B build-old $B > $L/cfg.old.log 2>&1 && cmake --build build-old -j8 --target gpu_gemm_test > $L/build.old.log 2>&1; echo "old build rc=$?" ) &
wait; el built
run() { local to=$1 k=$2 log=$3; shift 3
  timeout $to tools/emulate/partition-run.sh $k "$@" > $L/$log 2>&1; el "rc=$? $log"
  grep -E "^(FAIL|ALL PASS|FAILED)" $L/$log | cut -c1-150; echo "PASS lines: $(grep -c '^PASS' $L/$log)"; }
run 100 3 old.k3.log build-old/bin/gpu_gemm_test
run 100 3 new.k3.log build/bin/gpu_gemm_test
run 100 6 new.k6.log build/bin/gpu_gemm_test
el done
