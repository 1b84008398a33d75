#!/usr/bin/env bash
# Session 15, call B (written in session 14): does a programmatic dependent launch (or a graph) take the MPS launch floor
# away (mps_floor's new rows, K = 8 and 1); the decode with its kernels as dependent launches
# (2114c40) against the tree before (e81e5ff), interleaved; correctness; the
# headline nccl-tests bandwidth at K = 8 with 16 SMs a rank (plain buffers).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 STARSCREAM_TIMEOUT=20 STARSCREAM_REPO=$PWD PYTHONUNBUFFERED=1 MPS_FLOOR_DEVICE=0
t0=${t0:-$(date +%s)}
L=$OUT/l; mkdir -p $L
el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
if [[ ${1:-} != inner ]]; then
  git log --oneline -1 > $L/env.txt 2>&1; git status --short >> $L/env.txt
  export OUT L t0
  timeout -k 5 450 bash "$0" inner; echo "inner rc=$?"
  tar -czf $OUT/logs.tgz -C $L . && rm -rf $L
  exit 0
fi
git worktree add -f /tmp/old e81e5ff > /dev/null 2>&1 || { echo worktree failed; exit 1; }
B="-G Ninja -DSTARSCREAM_GPU=cuda -DCMAKE_BUILD_TYPE=Release -DSTARSCREAM_BUILD_PERF=ON -DSTARSCREAM_BUILD_TOOLS=OFF"
( JOBS=4 tools/conformance/build-nccl-tests.sh .devcarry/nccl-tests-src build/nccl-tests > $L/nccl-tests-build.log 2>&1; el "nccl-tests build rc=$?" ) &
( cmake -S /tmp/old -B /tmp/old/build $B -DSTARSCREAM_BUILD_TESTS=OFF > $L/old.cfg.log 2>&1 && cmake --build /tmp/old/build -j5 --target starscream attention_perf > $L/old.build.log 2>&1; el "old build rc=$?" ) &
cmake -S . -B build $B -DSTARSCREAM_BUILD_TESTS=ON > $L/cfg.log 2>&1 && cmake --build build -j10 --target mps_floor starscream starscream_nccl attention_perf gpu_attention_test > $L/build.log 2>&1; el "build rc=$?"
grep -m3 -B2 -A8 "error" $L/build.log
wait
run() { local k=$1 log=$2; shift 2
  timeout 150 tools/emulate/partition-run.sh $k "$@" >> $L/$log 2>&1; el "rc=$? $log"; }
chk() { grep -E "^FAIL|gpu_attention_test K=" $L/$1 | head -6; echo "PASS lines: $(grep -c '^PASS' $L/$1)"; }
run 8 floor.k8.log build/bin/mps_floor 3000
run 1 floor.k1.log build/bin/mps_floor 3000
grep -vE "^\[|^$" $L/floor.k8.log | head -20; grep -vE "^\[|^$" $L/floor.k1.log | head -8
run 8 checks.k8.log build/bin/gpu_attention_test; chk checks.k8.log
D="--models 70b --contexts 32768,131072 --batches 1,8,32 --iters 20"
for i in 1 2; do
  run 8 ab.old.k8.log /tmp/old/build/bin/attention_perf $D --modes local,sharded
  run 8 ab.new.k8.log build/bin/attention_perf $D --modes local,sharded
done
run 1 ab.old.k1.log /tmp/old/build/bin/attention_perf $D --modes sharded
run 1 ab.new.k1.log build/bin/attention_perf $D --modes sharded
for f in ab.old.k8.log ab.new.k8.log ab.old.k1.log ab.new.k1.log; do echo "== $f"; grep -E "^  [0-9a-z]" $L/$f; done
timeout 120 perf/nccl_tests_bw.sh --bin build/nccl-tests --shim build/lib/libstarscream-nccl.so --ks "8" --iters 10 --out $L/bw > $L/bw.md 2>&1; el "bw rc=$?"
tail -16 $L/bw.md
el done
