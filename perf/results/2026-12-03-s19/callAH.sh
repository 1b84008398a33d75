#!/usr/bin/env bash
# Session 19, call AH: gpu_gemm_test's multi-chunk failures at K = 3 and 6 (calls AF, AG: older
# than this session). K = 2 and 4 on the tree as is; then K = 3 with every GEMM piece run as one
# plain GEMM per rank (nobatch.patch: no strided batch, no scratch): is it the pieces' GEMMs?
set -uo pipefail
export NCCL_NVLS_ENABLE=0 STARSCREAM_TIMEOUT=20 STARSCREAM_REPO=$PWD
t0=${t0:-$(date +%s)}
L=$OUT/l; mkdir -p $L
el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
if [[ ${1:-} != inner ]]; then
  export OUT L t0
  timeout -k 5 400 bash "$0" inner; echo "inner rc=$?"
  tar -czf $OUT/logs.tgz -C $L . && rm -rf $L
  exit 0
fi
B="-G Ninja -DSTARSCREAM_GPU=cuda -DCMAKE_BUILD_TYPE=Release -DSTARSCREAM_BUILD_PERF=OFF -DSTARSCREAM_BUILD_TOOLS=OFF -DSTARSCREAM_BUILD_TESTS=ON"
cmake -S . -B build $B > $L/cfg.log 2>&1 && cmake --build build -j16 --target gpu_gemm_test > $L/build.log 2>&1; el "build rc=$?"
run() { local to=$1 k=$2 log=$3; shift 3
  timeout $to tools/emulate/partition-run.sh $k "$@" > $L/$log 2>&1; el "rc=$? $log"
  grep -E "^(FAIL|ALL PASS|FAILED)" $L/$log | cut -c1-150; echo "PASS lines: $(grep -c '^PASS' $L/$log)"; }
run 80 3 asis.k3.log build/bin/gpu_gemm_test
patch -p1 < .devcarry/nobatch.patch > $L/patch.log 2>&1 && cmake --build build -j16 --target gpu_gemm_test > $L/build2.log 2>&1; el "patched build rc=$?"
run 80 3 nobatch.k3.log build/bin/gpu_gemm_test
run 80 6 nobatch.k6.log build/bin/gpu_gemm_test
patch -R -p1 < .devcarry/nobatch.patch >> $L/patch.log 2>&1 && cmake --build build -j16 --target gpu_gemm_test >> $L/build2.log 2>&1; el "unpatched rc=$?"
run 80 4 asis.k4.log build/bin/gpu_gemm_test
run 80 2 asis.k2.log build/bin/gpu_gemm_test
el done
