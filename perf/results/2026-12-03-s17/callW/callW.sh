#!/usr/bin/env bash
# Session 17, call W (call V's decode experiment plus the unaligned kernel's shuffled loads):
# 1. symUnalignedKernel with one load a lane (the neighbour's vector by warp shuffle): GPU
#    collectives tests at K = 3, 5, 8 (zero-copy algorithms), gpu_coll_perf at K = 3, 5, 8
#    (compare call Q), nccl-tests at K = 3 on misaligned sizes;
# 2. how many blocks wait and merge in the decode (SSC_EXP_MERGE_BLOCKS, a temporary knob: 0 = one
#    a slot as before, else that many, each looping over every M-th slot): correctness at M = 1,
#    then the decode at M = 0, 1, 2, 4, twice.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 STARSCREAM_TIMEOUT=20 STARSCREAM_REPO=$PWD PYTHONUNBUFFERED=1
t0=${t0:-$(date +%s)}
L=$OUT/l; mkdir -p $L
el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
if [[ ${1:-} != inner ]]; then
  git log --oneline -1 > $L/env.txt 2>&1; git status --short >> $L/env.txt
  export OUT L t0
  timeout -k 5 520 bash "$0" inner; echo "inner rc=$?"
  tar -czf $OUT/logs.tgz -C $L . && rm -rf $L
  exit 0
fi
B="-G Ninja -DSTARSCREAM_GPU=cuda -DCMAKE_BUILD_TYPE=Release -DSTARSCREAM_BUILD_PERF=ON -DSTARSCREAM_BUILD_TOOLS=OFF -DSTARSCREAM_BUILD_TESTS=ON"
run() { local to=$1 k=$2 log=$3; shift 3
  timeout $to tools/emulate/partition-run.sh $k "$@" >> $L/$log 2>&1; el "rc=$? $log"; }
sum() { grep -E "FAIL|PASSED|failed" $L/$1 | grep -v "^PASS " | sort | uniq -c | head -10; }
( JOBS=3 tools/conformance/build-nccl-tests.sh .devcarry/nccl-tests-src build/nccl-tests > $L/nccl-tests-build.log 2>&1; el "nccl-tests build rc=$?" ) &
cmake -S . -B build $B > $L/cfg.log 2>&1 && cmake --build build -j14 --target gpu_collectives_test gpu_coll_perf starscream_nccl gpu_attention_test attention_perf > $L/build.log 2>&1; el "build rc=$?"
grep -m3 -B2 -A8 " error" $L/build.log
wait
for k in 3 5 8; do run 80 $k coll.k$k.log build/bin/gpu_collectives_test --quick --algos symmetric,symmetric_bulk,symmetric_wide,default; sum coll.k$k.log; done
for k in 3 5 8; do run 50 $k perf.k$k.log build/bin/gpu_coll_perf 1073741824 $L/new-k$k.json default; done
S=build/lib/libstarscream-nccl.so
for c in all_gather reduce_scatter; do
  run 60 3 nt.$c.k3.log env NCCL_TESTS_DEVICE=0 LD_PRELOAD=$S LD_LIBRARY_PATH=build/lib/nccl-compat:build/lib build/nccl-tests/${c}_perf -b 268435452 -e 1073741820 -f 2 -n 10 -w 3 -c 1
  grep -E "^ +[0-9]+ " $L/nt.$c.k3.log | head -4
done
python3 - $L <<'PY'
import json, sys
L = sys.argv[1]
print("K coll bytes: new us (%roof)")
for k in (3, 5, 8):
    try: n = json.load(open(f"{L}/new-k{k}.json"))['results']
    except Exception as e: print(k, e); continue
    for x in n:
        if x['algo'] == 'default' and x['bytes'] >= 128 << 20 and x['coll'] != 'allreduce':
            print(k, x['coll'], x['bytes'], f"{x['time_us']:.0f} ({x['roofline_pct']:.0f} %)")
PY
export SSC_EXP_MERGE_BLOCKS=1
run 100 8 suite.m1.log build/bin/gpu_attention_test; grep -E "^FAIL|gpu_attention_test K=" $L/suite.m1.log | head -6; echo "PASS lines: $(grep -c '^PASS' $L/suite.m1.log)"
run 40 8 graph.m1.log build/bin/gpu_attention_test --graph; grep -E "^FAIL|gpu_attention_test K=" $L/graph.m1.log | head -4
D="--models 70b --contexts 32768,131072 --batches 8,16,32 --iters 30 --modes sharded,sharded-rq"
for r in 1 2; do for m in 0 1 2 4; do
  SSC_EXP_MERGE_BLOCKS=$m run 60 8 dec.m$m.r$r.log build/bin/attention_perf $D --json $L/dec-m$m-r$r.json
done; done
python3 - $L <<'PY'
import json, sys
L = sys.argv[1]
runs = [f"m{m}-r{r}" for r in (1, 2) for m in (0, 1, 2, 4)]
d = {}
for r in runs:
    try: d[r] = {(x['context'], x['batch'], x['mode']): x['time_us'] for x in json.load(open(f"{L}/dec-{r}.json"))}
    except Exception as e: print(r, e); d[r] = {}
print("context batch mode: us", *runs)
for k in sorted(d[runs[0]]):
    print(*k, *(f"{d[r].get(k, 0):.1f}" for r in runs))
PY
el done
