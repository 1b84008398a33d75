#!/usr/bin/env bash
# Session 15, call J: rank counts that are not a power of two on the GPU path (K = 3, 5, 6 MPS
# partitions; tools/topologies/h200-mps-{3,5,6,7}.json are new): the GPU test programs, and the
# public NCCL test suite through the shim with every row checked.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 STARSCREAM_TIMEOUT=20 STARSCREAM_REPO=$PWD PYTHONUNBUFFERED=1
t0=${t0:-$(date +%s)}
L=$OUT/l; mkdir -p $L
el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
if [[ ${1:-} != inner ]]; then
  git log --oneline -1 > $L/env.txt 2>&1; git status --short >> $L/env.txt
  export OUT L t0
  timeout -k 5 430 bash "$0" inner; echo "inner rc=$?"
  tar -czf $OUT/logs.tgz -C $L . && rm -rf $L
  exit 0
fi
B="-G Ninja -DSTARSCREAM_GPU=cuda -DCMAKE_BUILD_TYPE=Release -DSTARSCREAM_BUILD_PERF=ON -DSTARSCREAM_BUILD_TOOLS=OFF -DSTARSCREAM_BUILD_TESTS=ON"
( JOBS=4 tools/conformance/build-nccl-tests.sh .devcarry/nccl-tests-src build/nccl-tests > $L/nccl-tests-build.log 2>&1; el "nccl-tests build rc=$?" ) &
cmake -S . -B build $B > $L/cfg.log 2>&1 && cmake --build build -j12 --target starscream_nccl gpu_attention_test gpu_collectives_test gpu_conformance_test > $L/build.log 2>&1; el "build rc=$?"
grep -m3 -B2 -A8 "error" $L/build.log
wait
run() { local k=$1 log=$2; shift 2
  timeout ${TO:-90} tools/emulate/partition-run.sh $k "$@" >> $L/$log 2>&1; el "rc=$? $log"; }
sum() { grep -E "FAIL|PASSED|passed|failed|SKIPPED" $L/$1 | grep -v "^PASS " | sort | uniq -c | head -8; }
run 3 att.k3.log build/bin/gpu_attention_test; sum att.k3.log; echo "PASS lines: $(grep -c '^PASS' $L/att.k3.log)"
run 6 att.k6.log build/bin/gpu_attention_test; sum att.k6.log; echo "PASS lines: $(grep -c '^PASS' $L/att.k6.log)"
run 3 coll.k3.log build/bin/gpu_collectives_test --quick; sum coll.k3.log
run 5 coll.k5.log build/bin/gpu_collectives_test --quick; sum coll.k5.log
run 3 conf.k3.log build/bin/gpu_conformance_test; sum conf.k3.log
timeout 170 perf/nccl_tests_bw.sh --bin build/nccl-tests --shim build/lib/libstarscream-nccl.so --ks "3 5" --iters 5 --out $L/bw > $L/bw.log 2>&1; el "bw rc=$?"
tail -14 $L/bw.log
el done
