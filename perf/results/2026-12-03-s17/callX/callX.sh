#!/usr/bin/env bash
# Session 17, call X: the unaligned kernel's shuffled loads with both loads issued before the
# shuffle (call W's version loaded the last lane's second vector after it and lost 2x):
# correctness at K = 3, gpu_coll_perf at K = 3 and 5 (compare calls Q and W).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 STARSCREAM_TIMEOUT=20 STARSCREAM_REPO=$PWD PYTHONUNBUFFERED=1
t0=${t0:-$(date +%s)}
L=$OUT/l; mkdir -p $L
el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
if [[ ${1:-} != inner ]]; then
  git log --oneline -1 > $L/env.txt 2>&1; git status --short >> $L/env.txt
  export OUT L t0
  timeout -k 5 200 bash "$0" inner; echo "inner rc=$?"
  tar -czf $OUT/logs.tgz -C $L . && rm -rf $L
  exit 0
fi
B="-G Ninja -DSTARSCREAM_GPU=cuda -DCMAKE_BUILD_TYPE=Release -DSTARSCREAM_BUILD_PERF=ON -DSTARSCREAM_BUILD_TOOLS=OFF -DSTARSCREAM_BUILD_TESTS=ON"
run() { local to=$1 k=$2 log=$3; shift 3
  timeout $to tools/emulate/partition-run.sh $k "$@" >> $L/$log 2>&1; el "rc=$? $log"; }
cmake -S . -B build $B > $L/cfg.log 2>&1 && cmake --build build -j16 --target gpu_collectives_test gpu_coll_perf > $L/build.log 2>&1; el "build rc=$?"
grep -m3 -B2 -A8 " error" $L/build.log
for k in 3 5; do run 50 $k perf.k$k.log build/bin/gpu_coll_perf 1073741824 $L/new-k$k.json default; done
python3 - $L <<'PY'
import json, sys
L = sys.argv[1]
for k in (3, 5):
    try: n = json.load(open(f"{L}/new-k{k}.json"))['results']
    except Exception as e: print(k, e); continue
    for x in n:
        if x['algo'] == 'default' and x['bytes'] >= 256 << 20 and x['coll'] != 'allreduce':
            print(k, x['coll'], x['bytes'], f"{x['time_us']:.0f} ({x['roofline_pct']:.0f} %)")
PY
run 60 3 coll.k3.log build/bin/gpu_collectives_test --quick --algos symmetric,symmetric_bulk,symmetric_wide,default; grep -E "ALL PASSED|FAIL" $L/coll.k3.log | head -4
el done
