#!/usr/bin/env bash
# Session 18, call AB, on the final tree: issue 17's decode table in one run (whole GPU at K = 1;
# local, local-sync, sharded, sharded-rq, naive at K = 8), an unknown mode refused, and the public
# NCCL test suite through the shim (tools/conformance/run.sh --quick).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 STARSCREAM_TIMEOUT=20 STARSCREAM_REPO=$PWD PYTHONUNBUFFERED=1
t0=${t0:-$(date +%s)}
L=$OUT/l; mkdir -p $L
el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
if [[ ${1:-} != inner ]]; then
  git log --oneline -1 > $L/env.txt 2>&1; git status --short >> $L/env.txt
  export OUT L t0
  timeout -k 5 570 bash "$0" inner; echo "inner rc=$?"
  tar -czf $OUT/logs.tgz -C $L . && rm -rf $L
  exit 0
fi
B="-G Ninja -DSTARSCREAM_GPU=cuda -DCMAKE_BUILD_TYPE=Release -DSTARSCREAM_BUILD_PERF=ON -DSTARSCREAM_BUILD_TOOLS=OFF -DSTARSCREAM_BUILD_TESTS=OFF"
run() { local to=$1 k=$2 log=$3; shift 3
  timeout $to tools/emulate/partition-run.sh $k "$@" >> $L/$log 2>&1; el "rc=$? $log"; }
( JOBS=3 tools/conformance/build-nccl-tests.sh .devcarry/nccl-tests-src build/nccl-tests > $L/nccl-tests-build.log 2>&1; el "nccl-tests build rc=$?" ) &
cmake -S . -B build $B > $L/cfg.log 2>&1 && cmake --build build -j14 --target attention_perf starscream_nccl > $L/build.log 2>&1; el "build rc=$?"
grep -m3 -B2 -A8 " error" $L/build.log
wait
D="--models 70b --contexts 32768,131072 --batches 1,8,16,32 --iters 30"
run 60 1 dec.k1.log build/bin/attention_perf $D --modes sharded --json $L/dec-k1.json
run 120 8 dec.k8.log build/bin/attention_perf $D --modes local,local-sync,sharded,sharded-rq,naive --json $L/dec-k8.json
run 30 2 badmode.log build/bin/attention_perf --modes sharded,shardd; tail -2 $L/badmode.log
grep -hE "^  70b" $L/dec.k1.log $L/dec.k8.log | awk '{print $2, $3, $4, $5, $9, $11}'
tools/conformance/run.sh --bin build/nccl-tests --shim build/lib/libstarscream-nccl.so --out $L/conformance --quick --budget 330 > $L/conformance.log 2>&1
el "conformance rc=$?"
tail -25 $L/conformance.log
el done
