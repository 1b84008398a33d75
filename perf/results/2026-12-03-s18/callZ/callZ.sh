#!/usr/bin/env bash
# Session 18 (prepared in session 17, not yet run), call Z: the unaligned kernel's reduction with
# every source of a group of 4 loaded before summing (groups.patch, branch wip/unaligned-groups)
# against main's (one source at a time, two unrolled): A = the tree as it is (main), B = with
# the patch. gpu_coll_perf at K = 3 and 5 (misaligned reduce-scatter), A then B; B's correctness
# (gpu_collectives_test --quick, zero-copy algorithms, K = 3, 5, 8) and nccl-tests reduce_scatter
# at K = 3 on really misaligned sizes (-b 1000000), A and B. Run it on main's working tree.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 STARSCREAM_TIMEOUT=20 STARSCREAM_REPO=$PWD PYTHONUNBUFFERED=1
t0=${t0:-$(date +%s)}
L=$OUT/l; mkdir -p $L
el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
if [[ ${1:-} != inner ]]; then
  git log --oneline -1 > $L/env.txt 2>&1; git status --short >> $L/env.txt
  export OUT L t0
  timeout -k 5 540 bash "$0" inner; echo "inner rc=$?"
  tar -czf $OUT/logs.tgz -C $L . && rm -rf $L
  exit 0
fi
B="-G Ninja -DSTARSCREAM_GPU=cuda -DCMAKE_BUILD_TYPE=Release -DSTARSCREAM_BUILD_PERF=OFF -DSTARSCREAM_BUILD_TOOLS=OFF -DSTARSCREAM_BUILD_TESTS=ON"
run() { local to=$1 k=$2 log=$3; shift 3
  timeout $to tools/emulate/partition-run.sh $k "$@" >> $L/$log 2>&1; el "rc=$? $log"; }
bld() { cmake --build build -j14 --target gpu_collectives_test gpu_coll_perf starscream_nccl > $L/build.$1.log 2>&1; el "build $1 rc=$?"; grep -m3 -B2 -A8 " error" $L/build.$1.log; }
S=build/lib/libstarscream-nccl.so
nt() { run 60 3 nt.$1.k3.log env NCCL_TESTS_DEVICE=0 LD_PRELOAD=$S LD_LIBRARY_PATH=build/lib/nccl-compat:build/lib build/nccl-tests/reduce_scatter_perf -b 1000000 -e 512000000 -f 8 -n 10 -w 3 -c 1; grep -E "^ +[0-9]+ " $L/nt.$1.k3.log | head -5; }
( JOBS=3 tools/conformance/build-nccl-tests.sh .devcarry/nccl-tests-src build/nccl-tests > $L/nccl-tests-build.log 2>&1; el "nccl-tests build rc=$?" ) &
cmake -S . -B build $B > $L/cfg.log 2>&1; bld A
wait
for k in 3 5; do run 50 $k perf.A.k$k.log build/bin/gpu_coll_perf 1073741824 $L/A-k$k.json default; done
nt A
git apply .devcarry/groups.patch && el "B tree"; bld B
for k in 3 5; do run 50 $k perf.B.k$k.log build/bin/gpu_coll_perf 1073741824 $L/B-k$k.json default; done
nt B
for k in 3 5 8; do run 80 $k coll.B.k$k.log build/bin/gpu_collectives_test --quick --algos symmetric,symmetric_bulk,symmetric_wide,default; grep -E "ALL PASSED|FAIL" $L/coll.B.k$k.log | head -3; done
git apply -R .devcarry/groups.patch
python3 - $L <<'PY'
import json, sys
L = sys.argv[1]
print("K coll bytes: A us (%roof) | B us (%roof)")
for k in (3, 5):
    try:
        a = {(x['coll'], x['bytes']): x for x in json.load(open(f"{L}/A-k{k}.json"))['results'] if x['algo'] == 'default'}
        b = {(x['coll'], x['bytes']): x for x in json.load(open(f"{L}/B-k{k}.json"))['results'] if x['algo'] == 'default'}
    except Exception as e: print(k, e); continue
    for key in sorted(a):
        if key[1] >= 128 << 20 and key in b:
            print(k, *key, f"{a[key]['time_us']:.0f} ({a[key]['roofline_pct']:.0f} %) | {b[key]['time_us']:.0f} ({b[key]['roofline_pct']:.0f} %)")
PY
el done
