#!/usr/bin/env bash
# Session 16, call O: call N found the narrow-vector bulk loops (inlined) raised the symmetric
# kernels' registers (ptxas -v: op kernels 60-96 -> 115-128, the all-plans kernel 2.8 KB of
# spills) and aligned K = 3 collectives got 20-30 % slower. This tree: the narrow loops
# __noinline__ and leaner (ptxas: op kernels <= 64 registers, no spills). Old (HEAD's
# sym_bulk.cuh) against new, interleaved, gpu_coll_perf default algorithm at K = 8, 4, 3, 5.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 STARSCREAM_TIMEOUT=20 STARSCREAM_REPO=$PWD PYTHONUNBUFFERED=1
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
B="-G Ninja -DSTARSCREAM_GPU=cuda -DCMAKE_BUILD_TYPE=Release -DSTARSCREAM_BUILD_PERF=OFF -DSTARSCREAM_BUILD_TOOLS=OFF -DSTARSCREAM_BUILD_TESTS=ON"
OLD=/tmp/old; rm -rf $OLD; mkdir -p $OLD
tar --exclude=./build --exclude=./.devcarry --exclude=./.git -cf - . | tar -xf - -C $OLD
git show HEAD:src/kernels/gpu/sym_bulk.cuh > $OLD/src/kernels/gpu/sym_bulk.cuh
diff -q src/kernels/gpu/sym_bulk.cuh $OLD/src/kernels/gpu/sym_bulk.cuh
( cmake -S $OLD -B $OLD/build $B > $L/cfg-old.log 2>&1 && cmake --build $OLD/build -j8 --target gpu_coll_perf > $L/build-old.log 2>&1; el "old build rc=$?" ) &
cmake -S . -B build $B > $L/cfg.log 2>&1 && cmake --build build -j8 --target gpu_coll_perf gpu_collectives_test > $L/build.log 2>&1; el "build rc=$?"
wait
grep -m3 -B2 -A8 "error" $L/build.log $L/build-old.log
run() { local to=$1 k=$2 log=$3; shift 3
  timeout $to tools/emulate/partition-run.sh $k "$@" >> $L/$log 2>&1; el "rc=$? $log"; }
sum() { grep -E "FAIL|PASSED|failed" $L/$1 | grep -v "^PASS " | sort | uniq -c | head -8; }
run 60 3 coll.k3.log build/bin/gpu_collectives_test --quick --algos symmetric_bulk,symmetric_wide,symmetric; sum coll.k3.log
for k in 8 4 3 5; do
  run 50 $k perf.new.k$k.log build/bin/gpu_coll_perf 1073741824 $L/new-k$k.json default
  run 50 $k perf.old.k$k.log $OLD/build/bin/gpu_coll_perf 1073741824 $L/old-k$k.json default
done
python3 - $L <<'PY'
import json, sys, os
L = sys.argv[1]
print("K coll bytes: old us (%roof) | new us (%roof)")
for k in (8, 4, 3, 5):
    try:
        o = json.load(open(f"{L}/old-k{k}.json"))['results']; n = json.load(open(f"{L}/new-k{k}.json"))['results']
    except Exception as e:
        print(k, e); continue
    nd = {(x['coll'], x['bytes']): x for x in n if x['algo'] == 'default'}
    for x in o:
        if x['algo'] != 'default' or x['bytes'] < 32 << 20: continue
        y = nd.get((x['coll'], x['bytes']))
        if y: print(k, x['coll'], x['bytes'], f"{x['time_us']:.0f} ({x['roofline_pct']:.0f} %) | {y['time_us']:.0f} ({y['roofline_pct']:.0f} %)")
PY
el done
