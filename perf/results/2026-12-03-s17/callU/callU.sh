#!/usr/bin/env bash
# Session 17, call U: the push and the merge on arrival in one launch (ticket-ordered blocks)
# with relaxed polling + pause (pm.patch: tree B) against the tree before (A, the same tree with
# pm.patch reversed). B's correctness: gpu_attention_test at K = 8 (default = fused) and K = 3,
# --graph at K = 8; then decode 70b 32K / 128K batch 1-32 and the 16K prefill, B, A, B.
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
B="-G Ninja -DSTARSCREAM_GPU=cuda -DCMAKE_BUILD_TYPE=Release -DSTARSCREAM_BUILD_PERF=ON -DSTARSCREAM_BUILD_TOOLS=OFF -DSTARSCREAM_BUILD_TESTS=ON"
run() { local to=$1 k=$2 log=$3; shift 3
  timeout $to tools/emulate/partition-run.sh $k "$@" >> $L/$log 2>&1; el "rc=$? $log"; }
bld() { cmake --build build -j16 --target gpu_attention_test attention_perf > $L/build.$1.log 2>&1; el "build $1 rc=$?"; grep -m3 -B2 -A8 " error" $L/build.$1.log; }
D="--models 70b --contexts 32768,131072 --batches 1,8,16,32 --iters 30 --modes local,sharded,sharded-rq"
P="--prefill --contexts 16384 --iters 5 --models 70b --chunks 0 --modes sharded,sharded-heads"
perf() { run 70 8 dec.$1.log build/bin/attention_perf $D --json $L/dec-$1.json; run 40 8 pre.$1.log build/bin/attention_perf $P --json $L/pre-$1.json; }
cmake -S . -B build $B > $L/cfg.log 2>&1; bld B1
run 100 8 suite.k8.log build/bin/gpu_attention_test; grep -E "^FAIL|gpu_attention_test K=" $L/suite.k8.log | head -6; echo "PASS lines: $(grep -c '^PASS' $L/suite.k8.log)"
run 40 8 graph.k8.log build/bin/gpu_attention_test --graph; grep -E "^FAIL|gpu_attention_test K=" $L/graph.k8.log | head -4
run 100 3 suite.k3.log build/bin/gpu_attention_test; grep -E "^FAIL|gpu_attention_test K=" $L/suite.k3.log | head -6; echo "PASS lines: $(grep -c '^PASS' $L/suite.k3.log)"
perf B1
git apply -R .devcarry/pm.patch && el "A tree"; bld A1; perf A1
git apply .devcarry/pm.patch && el "B tree"; bld B2; perf B2
python3 - $L <<'PY'
import json, sys
L = sys.argv[1]
runs = ["B1", "A1", "B2"]
for kind in ("dec", "pre"):
    d = {}
    for r in runs:
        try: d[r] = {(x.get('context'), x.get('batch', x.get('chunk')), x['mode']): x['time_us'] for x in json.load(open(f"{L}/{kind}-{r}.json"))}
        except Exception as e: print(kind, r, e); d[r] = {}
    print(kind, "context batch mode: us", *runs)
    for k in sorted(d["B1"] or d["A1"], key=str):
        print(*k, *(f"{d[r].get(k, 0):.1f}" for r in runs))
PY
el done
