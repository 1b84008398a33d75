#!/usr/bin/env bash
# Session 17, call T: the exchange's waits polled relaxed with a pause, one acquire at the end
# (v1.patch, B) against acquire loads back to back (A), built in turn from one tree: A, B, A.
# Decode 70b at 32K and 128K, batch 8 and 16, modes local, sharded, sharded-rq (K = 8); B's
# correctness: gpu_attention_test --fused at K = 8 (the skipped-call timeout included).
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
D="--models 70b --contexts 32768,131072 --batches 8,16 --iters 30 --modes local,sharded,sharded-rq"
bld() { cmake --build build -j16 --target gpu_attention_test attention_perf > $L/build.$1.log 2>&1; el "build $1 rc=$?"; grep -m3 -B2 -A8 " error" $L/build.$1.log; }
git apply -R .devcarry/v1.patch && el "A tree"
cmake -S . -B build $B > $L/cfg.log 2>&1; bld A1
run 60 8 dec.A1.log build/bin/attention_perf $D --json $L/dec-A1.json
git apply .devcarry/v1.patch && el "B tree"; bld B1
run 150 8 fused.B.log build/bin/gpu_attention_test --fused; grep -E "^FAIL|gpu_attention_test K=" $L/fused.B.log | head -6; echo "PASS lines: $(grep -c '^PASS' $L/fused.B.log)"
run 60 8 dec.B1.log build/bin/attention_perf $D --json $L/dec-B1.json
git apply -R .devcarry/v1.patch && el "A tree"; bld A2
run 60 8 dec.A2.log build/bin/attention_perf $D --json $L/dec-A2.json
git apply .devcarry/v1.patch && el "B tree"; bld B2
run 60 8 dec.B2.log build/bin/attention_perf $D --json $L/dec-B2.json
python3 - $L <<'PY'
import json, sys
L = sys.argv[1]
runs = ["A1", "B1", "A2", "B2"]
d = {r: {(x['context'], x['batch'], x['mode']): x['time_us'] for x in json.load(open(f"{L}/dec-{r}.json"))} for r in runs}
print("context batch mode: us " + " ".join(runs))
for k in sorted(d["A1"]):
    print(*k, *(f"{d[r].get(k, 0):.1f}" for r in runs))
PY
el done
