#!/usr/bin/env bash
# Session 19, call AE: are call AD's two GEMM benchmark hangs (the all-gather at llama70b.qkv
# M = 4096, a core kernel waiting on rank 1; the fused reduce-scatter at llama70b.gate_up
# M = 4096, 3 chunks) CUDA's lazy module loading? The same runs as AD, each under the default
# (lazy) loading and under CUDA_MODULE_LOADING=EAGER; -v 1 names each cell before it is timed;
# a fused wait's timeout now says which flag, whose, and how far behind.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 STARSCREAM_TIMEOUT=15 STARSCREAM_REPO=$PWD
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
cmake -S . -B build $B > $L/cfg.log 2>&1 && cmake --build build -j16 --target gemm_coll_perf > $L/build.log 2>&1; el "build rc=$?"
grep -m3 -B2 -A8 " error" $L/build.log
run() { local to=$1 log=$2; shift 2
  timeout $to tools/emulate/partition-run.sh 8 "$@" > $L/$log 2>&1; el "rc=$? $log"
  grep -E "^# timing" $L/$log | tail -1; grep -m2 -E "failed" $L/$log | cut -c1-400; }
P=build/bin/gemm_coll_perf
AG="-o ag -s llama70b.qkv -m 16,256,4096 -v 1 -J"
RS="-o rs -s llama70b -m 16,4096 -v 1 -J"
run 70 ag.lazy.log $P $AG $L/ag.lazy.json
run 120 ag.eager.log env CUDA_MODULE_LOADING=EAGER $P $AG $L/ag.eager.json
run 90 rs.lazy.log $P $RS $L/rs.lazy.json
run 150 rs.eager.log env CUDA_MODULE_LOADING=EAGER $P $RS $L/rs.eager.json
for f in $L/*.log; do grep -q "^  " $f && { echo "== $(basename $f)"; grep "^  " $f | cut -c1-170; }; done
el done
