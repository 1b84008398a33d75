#!/usr/bin/env bash
# Session 18 (prepared in session 17, not yet run), call Y: the new gpu_attention_test cases (each
# sharding flag alone) at K = 8 (default and --fused) and 2; the decode with the ranks tied once a
# step without the exchange (local-sync) against local, sharded and sharded-rq; nccl-tests at
# K = 3 on a size whose per-rank block is really misaligned (-b 1000000: 83333 floats a rank).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 STARSCREAM_TIMEOUT=20 STARSCREAM_REPO=$PWD PYTHONUNBUFFERED=1
t0=${t0:-$(date +%s)}
L=$OUT/l; mkdir -p $L
el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
if [[ ${1:-} != inner ]]; then
  git log --oneline -1 > $L/env.txt 2>&1; git status --short >> $L/env.txt
  export OUT L t0
  timeout -k 5 500 bash "$0" inner; echo "inner rc=$?"
  tar -czf $OUT/logs.tgz -C $L . && rm -rf $L
  exit 0
fi
B="-G Ninja -DSTARSCREAM_GPU=cuda -DCMAKE_BUILD_TYPE=Release -DSTARSCREAM_BUILD_PERF=ON -DSTARSCREAM_BUILD_TOOLS=OFF -DSTARSCREAM_BUILD_TESTS=ON"
run() { local to=$1 k=$2 log=$3; shift 3
  timeout $to tools/emulate/partition-run.sh $k "$@" >> $L/$log 2>&1; el "rc=$? $log"; }
( JOBS=3 tools/conformance/build-nccl-tests.sh .devcarry/nccl-tests-src build/nccl-tests > $L/nccl-tests-build.log 2>&1; el "nccl-tests build rc=$?" ) &
cmake -S . -B build $B > $L/cfg.log 2>&1 && cmake --build build -j14 --target gpu_attention_test attention_perf starscream_nccl > $L/build.log 2>&1; el "build rc=$?"
grep -m3 -B2 -A8 " error" $L/build.log
wait
run 120 8 suite.k8.log build/bin/gpu_attention_test; grep -E "^FAIL|gpu_attention_test K=" $L/suite.k8.log | head -8; echo "PASS lines: $(grep -c '^PASS' $L/suite.k8.log)"
run 120 8 fused.k8.log build/bin/gpu_attention_test --fused; grep -E "^FAIL|gpu_attention_test K=" $L/fused.k8.log | head -8; echo "PASS lines: $(grep -c '^PASS' $L/fused.k8.log)"
run 100 2 suite.k2.log build/bin/gpu_attention_test; grep -E "^FAIL|gpu_attention_test K=" $L/suite.k2.log | head -8; echo "PASS lines: $(grep -c '^PASS' $L/suite.k2.log)"
D="--models 70b --contexts 32768,131072 --batches 1,8,16,32 --iters 30 --modes local,local-sync,sharded,sharded-rq"
run 90 8 dec.k8.log build/bin/attention_perf $D --json $L/dec-k8.json
grep -E "^#|^  [0-9a-z]" $L/dec.k8.log
S=build/lib/libstarscream-nccl.so
for c in all_gather reduce_scatter; do
  run 60 3 nt.$c.k3.log env NCCL_TESTS_DEVICE=0 LD_PRELOAD=$S LD_LIBRARY_PATH=build/lib/nccl-compat:build/lib build/nccl-tests/${c}_perf -b 1000000 -e 512000000 -f 8 -n 10 -w 3 -c 1
  grep -E "^ +[0-9]+ " $L/nt.$c.k3.log | head -5
done
el done
