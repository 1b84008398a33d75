#!/usr/bin/env bash
# Session 17, call S: main at c236b8d + the unaligned kernel (host-only review changes of session
# 16 not yet run on a GPU): the attention suite at K = 8, the captured decodes at K = 3; then the
# decode step with the queries replicated (sharded-rq: no query exchange, one cross-rank wait a
# step) against the sharded queries, local and the whole GPU, 70b at 32K and 128K.
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
cmake -S . -B build $B > $L/cfg.log 2>&1 && cmake --build build -j16 --target gpu_attention_test attention_perf > $L/build.log 2>&1; el "build rc=$?"
grep -m3 -B2 -A8 " error" $L/build.log
run() { local to=$1 k=$2 log=$3; shift 3
  timeout $to tools/emulate/partition-run.sh $k "$@" >> $L/$log 2>&1; el "rc=$? $log"; }
run 150 8 suite.k8.log build/bin/gpu_attention_test; grep -E "^FAIL|gpu_attention_test K=" $L/suite.k8.log | head -8; echo "PASS lines: $(grep -c '^PASS' $L/suite.k8.log)"
run 60 3 graph.k3.log build/bin/gpu_attention_test --graph; grep -E "^FAIL|gpu_attention_test K=" $L/graph.k3.log | head -4
D="--models 70b --contexts 32768,131072 --batches 1,8,16,32 --iters 20"
run 110 8 dec.k8.log build/bin/attention_perf $D --modes local,sharded,sharded-rq --json $L/dec-k8.json
run 50 1 dec.k1.log build/bin/attention_perf $D --modes sharded --json $L/dec-k1.json
for f in dec.k8 dec.k1; do grep -E "^#|^  [0-9a-z]" $L/$f.log; done
el done
