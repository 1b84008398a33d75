#!/usr/bin/env bash
# Session 16, call N: (1) captured decodes (device-counted exchange epochs, per-graph page lists)
# correct at K = 8 and 3, the whole attention suite unchanged at K = 8; (2) the zero-copy bulk
# loops' narrow vectors (misaligned blocks) correct at K = 3, 5, 8; (3) decode step as a graph vs
# eager, K = 8 and K = 1; (4) gpu_coll_perf 1 GiB at K = 3 and 5, nccl-tests at K = 3.
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
B="-G Ninja -DSTARSCREAM_GPU=cuda -DCMAKE_BUILD_TYPE=Release -DSTARSCREAM_BUILD_PERF=ON -DSTARSCREAM_BUILD_TOOLS=OFF -DSTARSCREAM_BUILD_TESTS=ON"
( JOBS=4 tools/conformance/build-nccl-tests.sh .devcarry/nccl-tests-src build/nccl-tests > $L/nccl-tests-build.log 2>&1; el "nccl-tests build rc=$?" ) &
cmake -S . -B build $B > $L/cfg.log 2>&1 && cmake --build build -j14 --target starscream_nccl gpu_collectives_test gpu_coll_perf gpu_attention_test attention_perf > $L/build.log 2>&1; el "build rc=$?"
grep -m3 -B2 -A8 "error" $L/build.log
run() { local to=$1 k=$2 log=$3; shift 3
  timeout $to tools/emulate/partition-run.sh $k "$@" >> $L/$log 2>&1; el "rc=$? $log"; }
run 90 8 graph.k8.log build/bin/gpu_attention_test --graph; grep -E "GRAPH|gpu_attention_test K=|rank .*:" $L/graph.k8.log | head -12
run 60 3 graph.k3.log build/bin/gpu_attention_test --graph; grep -E "^FAIL|gpu_attention_test K=|rank .*:" $L/graph.k3.log | head -6
run 150 8 att.k8.log build/bin/gpu_attention_test; grep -E "^FAIL|gpu_attention_test K=" $L/att.k8.log | head -6; echo "PASS lines: $(grep -c '^PASS' $L/att.k8.log)"
sum() { grep -E "FAIL|PASSED|failed" $L/$1 | grep -v "^PASS " | sort | uniq -c | head -8; }
for k in 3 5 8; do run 80 $k coll.k$k.log build/bin/gpu_collectives_test --quick; sum coll.k$k.log; done
D="--models 70b --contexts 32768,131072 --batches 1,8,32 --iters 20"
run 70 8 dec.k8.graph.log build/bin/attention_perf $D --modes local,sharded --graph --json $L/dec-k8-graph.json
run 50 8 dec.k8.eager.log build/bin/attention_perf $D --modes sharded --json $L/dec-k8-eager.json
run 40 1 dec.k1.graph.log build/bin/attention_perf $D --modes sharded --graph --json $L/dec-k1-graph.json
run 40 1 dec.k1.eager.log build/bin/attention_perf $D --modes sharded --json $L/dec-k1-eager.json
for k in 3 5; do run 60 $k perf.k$k.log build/bin/gpu_coll_perf 1073741824 $L/h200-k$k.json; done
wait
timeout 100 perf/nccl_tests_bw.sh --bin build/nccl-tests --shim build/lib/libstarscream-nccl.so --ks "3" --iters 5 --out $L/bw > $L/bw.log 2>&1; el "bw rc=$?"
echo "== decode"; for f in dec.k8.graph dec.k8.eager dec.k1.graph dec.k1.eager; do grep -E "^  [0-9a-z]" $L/$f.log; done
python3 - $L/h200-k3.json $L/h200-k5.json <<'PY'
import json, sys
for f in sys.argv[1:]:
    try: d = json.load(open(f))
    except Exception as e: print(f, e); continue
    for x in d['results']:
        if x['algo'] == 'default' and x['bytes'] >= 64 << 20:
            print(f.split('/')[-1], x['coll'], x['bytes'], round(x['time_us']), f"{x['roofline_pct']:.0f} %")
PY
tail -8 $L/bw.log
el done
