#!/usr/bin/env bash
# Session 19, call AF: the GEMM ops on one stream (no side stream: call AE showed both hangs are
# not lazy loading but a vendor GEMM beside a kernel waiting on the peers). gpu_gemm_test at
# K = 8 (with the shapes that hung, 20 calls each) and K = 3; then issue 18's table on this tree:
# gemm_coll_perf at K = 8 over every layer, both ops, M = 16 .. 16384, and the whole GPU (K = 1).
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
B="-G Ninja -DSTARSCREAM_GPU=cuda -DCMAKE_BUILD_TYPE=Release -DSTARSCREAM_BUILD_PERF=ON -DSTARSCREAM_BUILD_TOOLS=OFF -DSTARSCREAM_BUILD_TESTS=ON"
cmake -S . -B build $B > $L/cfg.log 2>&1 && cmake --build build -j16 --target gemm_coll_perf gpu_gemm_test > $L/build.log 2>&1; el "build rc=$?"
grep -m3 -B2 -A8 " error" $L/build.log
run() { local to=$1 k=$2 log=$3; shift 3
  timeout $to tools/emulate/partition-run.sh $k "$@" > $L/$log 2>&1; el "rc=$? $log"; }
for k in 8 3; do
  run 150 $k gemmtest.k$k.log build/bin/gpu_gemm_test
  grep -E "^(FAIL|ALL PASS|FAILED)" $L/gemmtest.k$k.log | head -6; echo "PASS lines: $(grep -c '^PASS' $L/gemmtest.k$k.log)"
done
P=build/bin/gemm_coll_perf
run 250 8 bench.k8.log $P -v 1 -J $L/k8.json
grep -E "^# timing" $L/bench.k8.log | tail -1; grep -m2 failed $L/bench.k8.log | cut -c1-300
run 90 1 bench.k1.log $P -J $L/k1.json
python3 perf/gemm_table.py $L/k1.json $L/k8.json --plot $L/gemm_speedup.png > $L/table.md 2>&1
grep -E "^- " $L/table.md
el done
