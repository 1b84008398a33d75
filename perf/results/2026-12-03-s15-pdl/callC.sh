#!/usr/bin/env bash
# Session 15, call C: which programmatic-dependent-launch variant of the decode step wins.
# Modes (src/kernels/gpu/pdl_exp.h): 0 plain; 1 PDL + trigger at top everywhere (2114c40);
# 2 PDL, no early trigger; 3 PDL, no early trigger in the polling kernels (QPush, RecvMerge).
# The experiment header was never committed: on top of 7cd8c3e, src/kernels/gpu/pdl_exp.h chose by
# SSC_PDL_EXP (from pdl_exp_mode.h, rewritten below) whether the decode's six kernels
# (attention_kernel.cu, attention_exchange.cu, attention_decode_mma.cuh) were launched with
# hipLaunchKernel (0) or sscLaunchDependent (1-3), and whether each kernel ran
# griddepcontrol.launch_dependents after its griddepcontrol.wait (1: all; 3: all but QPush and
# RecvMerge; 2: none). Mode 2 is what 8cfdcae committed.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 STARSCREAM_TIMEOUT=20 STARSCREAM_REPO=$PWD PYTHONUNBUFFERED=1
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
cmake -S . -B build $B > $L/cfg.log 2>&1 && cmake --build build -j16 --target attention_perf gpu_attention_test > $L/build.log 2>&1; el "build rc=$?"
grep -m3 -B2 -A8 "error" $L/build.log
mkdir -p /tmp/ap; cp build/bin/attention_perf /tmp/ap/1; cp build/bin/gpu_attention_test /tmp/gt1
for m in 3 2 0; do
  echo "#define SSC_PDL_EXP $m" > src/kernels/gpu/pdl_exp_mode.h
  cmake --build build -j16 --target attention_perf gpu_attention_test >> $L/build.$m.log 2>&1; el "mode $m build rc=$?"
  cp build/bin/attention_perf /tmp/ap/$m; cp build/bin/gpu_attention_test /tmp/gt$m
done
run() { local k=$1 log=$2; shift 2
  timeout 100 tools/emulate/partition-run.sh $k "$@" >> $L/$log 2>&1; el "rc=$? $log"; }
run 8 checks3.log /tmp/gt3; grep -E "^FAIL|gpu_attention_test K=" $L/checks3.log | head -4
D="--models 70b --contexts 32768,131072 --batches 1,8,32 --iters 20"
for i in 1 2; do for m in 0 1 2 3; do
  run 8 ab.$m.k8.log /tmp/ap/$m $D --modes local,sharded
done; done
for m in 0 1 2 3; do run 1 ab.$m.k1.log /tmp/ap/$m $D --modes sharded; done
for m in 0 1 2 3; do echo "== mode $m K=8"; grep -E "^  [0-9a-z]" $L/ab.$m.k8.log | awk '{print $2,$3,$4,$5,$10}' | sort -k1,1 -k2n -k3n | awk '{k=$1" "$2" "$3; v[k]=v[k]" "$4"/"$5} END{for(k in v) print k, v[k]}' | sort -k1,1 -k2n -k3n; done
for m in 0 1 2 3; do echo "== mode $m K=1"; grep -E "^  [0-9a-z]" $L/ab.$m.k1.log | awk '{print $3,$4,$5}'; done
el done
