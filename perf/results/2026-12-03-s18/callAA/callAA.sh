#!/usr/bin/env bash
# Session 18, call AA: a pause in the collectives' waits (boundedWait, device_common.h: after 16
# tight polls each further poll sleeps 256 ns, pause.patch) against main's tight polls. A = main,
# B = main + pause.patch. Per tree: attention_perf local / local-sync / sharded-rq at K = 8 (the
# local step tied each step by an 8-byte sscAllReduce: does its spin slow the ranks still
# computing?), nccl-tests all_reduce latency 8 B - 4 MiB and reduce_scatter 64-256 MiB at K = 8
# (with -c 1). B's correctness: gpu_collectives_test --quick at K = 8 and 3. A only: PyTorch
# through the shim at K = 8 (torch_check.py, session 17's sources through a real client).
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
run() { local to=$1 k=$2 log=$3; shift 3
  timeout $to tools/emulate/partition-run.sh $k "$@" >> $L/$log 2>&1; el "rc=$? $log"; }
bld() { cmake --build build -j15 --target gpu_collectives_test attention_perf starscream_nccl > $L/build.$1.log 2>&1; el "build $1 rc=$?"; grep -m3 -B2 -A8 " error" $L/build.$1.log; }
S=build/lib/libstarscream-nccl.so
NT="env NCCL_TESTS_DEVICE=0 LD_PRELOAD=$S LD_LIBRARY_PATH=build/lib/nccl-compat:build/lib"
D="--models 70b --contexts 32768,131072 --batches 1,8,16 --iters 30 --modes local,local-sync,sharded-rq"
meas() {
  run 60 8 dec.$1.log build/bin/attention_perf $D --json $L/dec-$1.json
  run 60 8 dec2.$1.log build/bin/attention_perf $D --json $L/dec2-$1.json
  run 60 8 ar.$1.log $NT build/nccl-tests/all_reduce_perf -b 8 -e 4M -f 8 -n 200 -w 20 -c 1
  run 60 8 rs.$1.log $NT build/nccl-tests/reduce_scatter_perf -b 64M -e 256M -f 2 -n 20 -w 5 -c 1
}
( JOBS=3 tools/conformance/build-nccl-tests.sh .devcarry/nccl-tests-src build/nccl-tests > $L/nccl-tests-build.log 2>&1; el "nccl-tests build rc=$?" ) &
cmake -S . -B build $B > $L/cfg.log 2>&1; bld A
wait
meas A
run 100 8 torch.A.k8.log env LD_PRELOAD=$PWD/$S python3 tests/nccl/torch_check.py --no-bandwidth
grep -E "^(PASS|FAIL)" $L/torch.A.k8.log | sort | uniq -c | sort -rn | head -40
git apply .devcarry/pause.patch && el "B tree"; bld B
meas B
for k in 8 3; do run 80 $k coll.B.k$k.log build/bin/gpu_collectives_test --quick; grep -E "ALL PASSED|FAIL" $L/coll.B.k$k.log | head -3; done
git apply -R .devcarry/pause.patch
for t in A B; do
  echo "== $t"; for f in dec dec2; do grep -E "^  70b" $L/$f.$t.log | awk '{printf "%s/%s/%s %s  ", $2, $3, $4, $5} END {print ""}'; done
  grep -E "^ +[0-9]+ " $L/ar.$t.log | awk '{printf "%s:%s/%s ", $1, $6, $10} END {print ""}'
  grep -E "^ +[0-9]+ " $L/rs.$t.log | awk '{printf "%s:%s/%s ", $1, $6, $10} END {print ""}'
  grep -E "wrong|#wrong|Out of bounds" $L/ar.$t.log $L/rs.$t.log | tail -2
done
el done
