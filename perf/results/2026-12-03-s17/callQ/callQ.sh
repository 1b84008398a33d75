#!/usr/bin/env bash
# Session 16, call Q: plans whose pointers disagree at 16 bytes run in a kernel of their own
# (sym_unaligned.cuh: aligned 16-byte loads funnel-shifted), chosen on the host; the bulk kernels
# are unchanged (ptxas -v identical). Correctness at K = 3, 5, 8, 2; gpu_coll_perf (default) at
# K = 3, 5, 8, 4 against call O's "old" columns; nccl-tests at K = 3 on a misaligned size.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 STARSCREAM_TIMEOUT=20 STARSCREAM_REPO=$PWD PYTHONUNBUFFERED=1
t0=${t0:-$(date +%s)}
L=$OUT/l; mkdir -p $L
el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
if [[ ${1:-} != inner ]]; then
  git log --oneline -1 > $L/env.txt 2>&1; git status --short >> $L/env.txt
  export OUT L t0
  timeout -k 5 470 bash "$0" inner; echo "inner rc=$?"
  tar -czf $OUT/logs.tgz -C $L . && rm -rf $L
  exit 0
fi
B="-G Ninja -DSTARSCREAM_GPU=cuda -DCMAKE_BUILD_TYPE=Release -DSTARSCREAM_BUILD_PERF=OFF -DSTARSCREAM_BUILD_TOOLS=OFF -DSTARSCREAM_BUILD_TESTS=ON"
( JOBS=3 tools/conformance/build-nccl-tests.sh .devcarry/nccl-tests-src build/nccl-tests > $L/nccl-tests-build.log 2>&1; el "nccl-tests build rc=$?" ) &
cmake -S . -B build $B > $L/cfg.log 2>&1 && cmake --build build -j14 --target gpu_collectives_test gpu_coll_perf starscream_nccl > $L/build.log 2>&1; el "build rc=$?"
grep -m3 -B2 -A8 " error" $L/build.log
wait
run() { local to=$1 k=$2 log=$3; shift 3
  timeout $to tools/emulate/partition-run.sh $k "$@" >> $L/$log 2>&1; el "rc=$? $log"; }
sum() { grep -E "FAIL|PASSED|failed" $L/$1 | grep -v "^PASS " | sort | uniq -c | head -10; }
for k in 3 5; do run 80 $k coll.k$k.log build/bin/gpu_collectives_test --quick; sum coll.k$k.log; done
for k in 8 2; do run 60 $k coll.k$k.log build/bin/gpu_collectives_test --quick --algos symmetric,symmetric_bulk,symmetric_wide; sum coll.k$k.log; done
for k in 3 5 8 4; do run 50 $k perf.k$k.log build/bin/gpu_coll_perf 1073741824 $L/new-k$k.json default; done
S=build/lib/libstarscream-nccl.so
for c in all_gather reduce_scatter; do
  run 60 3 nt.$c.k3.log env NCCL_TESTS_DEVICE=0 LD_PRELOAD=$S LD_LIBRARY_PATH=build/lib/nccl-compat:build/lib build/nccl-tests/${c}_perf -b 268435452 -e 1073741820 -f 2 -n 10 -w 3 -c 1
  grep -E "^ +[0-9]+ " $L/nt.$c.k3.log | head -4
done
python3 - $L <<'PY'
import json, sys
L = sys.argv[1]
print("K coll bytes: new us (%roof)")
for k in (3, 5, 8, 4):
    try: n = json.load(open(f"{L}/new-k{k}.json"))['results']
    except Exception as e: print(k, e); continue
    for x in n:
        if x['algo'] == 'default' and x['bytes'] >= 32 << 20:
            print(k, x['coll'], x['bytes'], f"{x['time_us']:.0f} ({x['roofline_pct']:.0f} %)")
PY
el done
