#!/usr/bin/env bash
# Session 16, call P: the device-counted exchange epochs under the fused exchange by name, the
# skipped-call timeout included (gpu_attention_test --fused, K = 8), the captured decodes at K = 2,
# and the decode graphs at batch 16 (K = 8 and 1).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 STARSCREAM_TIMEOUT=20 STARSCREAM_REPO=$PWD PYTHONUNBUFFERED=1
t0=${t0:-$(date +%s)}
L=$OUT/l; mkdir -p $L
el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
if [[ ${1:-} != inner ]]; then
  git log --oneline -1 > $L/env.txt 2>&1; git status --short >> $L/env.txt
  export OUT L t0
  timeout -k 5 400 bash "$0" inner; echo "inner rc=$?"
  tar -czf $OUT/logs.tgz -C $L . && rm -rf $L
  exit 0
fi
B="-G Ninja -DSTARSCREAM_GPU=cuda -DCMAKE_BUILD_TYPE=Release -DSTARSCREAM_BUILD_PERF=ON -DSTARSCREAM_BUILD_TOOLS=OFF -DSTARSCREAM_BUILD_TESTS=ON"
cmake -S . -B build $B > $L/cfg.log 2>&1 && cmake --build build -j16 --target gpu_attention_test attention_perf > $L/build.log 2>&1; el "build rc=$?"
grep -m3 -B2 -A8 " error" $L/build.log
run() { local to=$1 k=$2 log=$3; shift 3
  timeout $to tools/emulate/partition-run.sh $k "$@" >> $L/$log 2>&1; el "rc=$? $log"; }
run 150 8 fused.k8.log build/bin/gpu_attention_test --fused; grep -E "^FAIL|gpu_attention_test K=|skip|timeout" $L/fused.k8.log | head -8; echo "PASS lines: $(grep -c '^PASS' $L/fused.k8.log)"
run 60 2 graph.k2.log build/bin/gpu_attention_test --graph; grep -E "^FAIL|gpu_attention_test K=" $L/graph.k2.log | head -4
D="--models 70b,oss --contexts 32768 --batches 16 --iters 20"
run 40 8 dec.k8.log build/bin/attention_perf $D --modes sharded --json $L/dec-k8-eager.json
run 40 8 dec.k8.graph.log build/bin/attention_perf $D --modes sharded --graph --json $L/dec-k8-graph.json
run 30 1 dec.k1.log build/bin/attention_perf $D --modes sharded --json $L/dec-k1-eager.json
run 30 1 dec.k1.graph.log build/bin/attention_perf $D --modes sharded --graph --json $L/dec-k1-graph.json
for f in dec.k8 dec.k8.graph dec.k1 dec.k1.graph; do grep -E "^  [0-9a-z]" $L/$f.log; done
el done
