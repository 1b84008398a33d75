#!/usr/bin/env bash
# Session 15, call G: the committed decode (8cfdcae: dependent launches, no early trigger) —
# correctness at K = 8, the decode table at 16 SMs a rank against the whole GPU, the 16K prefill
# (its push kernel is a dependent launch now), mps_floor.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 STARSCREAM_TIMEOUT=20 STARSCREAM_REPO=$PWD PYTHONUNBUFFERED=1 MPS_FLOOR_DEVICE=0
t0=${t0:-$(date +%s)}
L=$OUT/l; mkdir -p $L
el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
if [[ ${1:-} != inner ]]; then
  git log --oneline -1 > $L/env.txt 2>&1; git status --short >> $L/env.txt
  export OUT L t0
  timeout -k 5 480 bash "$0" inner; echo "inner rc=$?"
  tar -czf $OUT/logs.tgz -C $L . && rm -rf $L
  exit 0
fi
B="-G Ninja -DSTARSCREAM_GPU=cuda -DCMAKE_BUILD_TYPE=Release -DSTARSCREAM_BUILD_PERF=ON -DSTARSCREAM_BUILD_TOOLS=OFF -DSTARSCREAM_BUILD_TESTS=ON"
cmake -S . -B build $B > $L/cfg.log 2>&1 && cmake --build build -j16 --target attention_perf gpu_attention_test mps_floor > $L/build.log 2>&1; el "build rc=$?"
grep -m3 -B2 -A8 "error" $L/build.log
run() { local k=$1 log=$2; shift 2
  timeout 150 tools/emulate/partition-run.sh $k "$@" >> $L/$log 2>&1; el "rc=$? $log"; }
run 8 checks.k8.log build/bin/gpu_attention_test; grep -E "^FAIL|gpu_attention_test K=" $L/checks.k8.log | head -6; echo "PASS lines: $(grep -c '^PASS' $L/checks.k8.log)"
run 8 floor.k8.log build/bin/mps_floor 3000; grep -E "launch|graph" $L/floor.k8.log
D="--models 70b --contexts 32768,131072 --batches 1,8,16,32 --iters 20"
run 8 decode.k8.log build/bin/attention_perf $D --modes local,sharded,naive --json $L/decode-k8.json
run 1 decode.k1.log build/bin/attention_perf $D --modes sharded --json $L/decode-k1.json
run 8 decode.k8.r2.log build/bin/attention_perf $D --modes sharded
run 1 decode.k1.r2.log build/bin/attention_perf $D --modes sharded
P="--prefill --contexts 16384 --iters 5 --models 70b,oss --chunks 0"
run 8 prefill.k8.log build/bin/attention_perf $P --modes sharded,sharded-heads
run 1 prefill.k1.log build/bin/attention_perf $P --modes sharded
for f in decode.k8.log decode.k1.log decode.k8.r2.log decode.k1.r2.log prefill.k8.log prefill.k1.log; do echo "== $f"; grep -E "^#|^  [0-9a-z]" $L/$f | head -40; done
el done
