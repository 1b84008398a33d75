#!/usr/bin/env bash
# Session 15, call I: the partial kernel waits for the query slices itself (the query push no
# longer waits for its peers): correctness at K = 8 and 3, and the sharded decode against the
# tree before (dda0848), interleaved. The new tree was dda0848 plus callI-qwait-in-partial-kernel.patch
# (uncommitted: measured slower, not kept); the old tree the same checkout with dda0848's versions
# of the patch's nine files (carried in .devcarry/old) copied over.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 STARSCREAM_TIMEOUT=20 STARSCREAM_REPO=$PWD PYTHONUNBUFFERED=1
t0=${t0:-$(date +%s)}
L=$OUT/l; mkdir -p $L
el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
if [[ ${1:-} != inner ]]; then
  git log --oneline -1 > $L/env.txt 2>&1; git status --short >> $L/env.txt
  export OUT L t0
  timeout -k 5 460 bash "$0" inner; echo "inner rc=$?"
  tar -czf $OUT/logs.tgz -C $L . && rm -rf $L
  exit 0
fi
mkdir -p /tmp/old && git ls-files | tar -cf - -T - | tar -xf - -C /tmp/old && cp -r .devcarry/old/. /tmp/old/ || { echo old tree failed; exit 1; }
echo "old tree differs in $(diff -rq src /tmp/old/src | wc -l) files under src"
B="-G Ninja -DSTARSCREAM_GPU=cuda -DCMAKE_BUILD_TYPE=Release -DSTARSCREAM_BUILD_PERF=ON -DSTARSCREAM_BUILD_TOOLS=OFF"
( cmake -S /tmp/old -B /tmp/old/build $B -DSTARSCREAM_BUILD_TESTS=OFF > $L/old.cfg.log 2>&1 && cmake --build /tmp/old/build -j6 --target attention_perf > $L/old.build.log 2>&1; el "old build rc=$?" ) &
cmake -S . -B build $B -DSTARSCREAM_BUILD_TESTS=ON > $L/cfg.log 2>&1 && cmake --build build -j10 --target attention_perf gpu_attention_test > $L/build.log 2>&1; el "build rc=$?"
grep -m3 -B2 -A8 "error" $L/build.log
wait
run() { local k=$1 log=$2; shift 2
  timeout 120 tools/emulate/partition-run.sh $k "$@" >> $L/$log 2>&1; el "rc=$? $log"; }
chk() { grep -E "^FAIL|gpu_attention_test K=" $L/$1 | head -6; echo "PASS lines: $(grep -c '^PASS' $L/$1)"; }
run 8 checks.k8.log build/bin/gpu_attention_test; chk checks.k8.log
run 3 checks.k3.log build/bin/gpu_attention_test; chk checks.k3.log
D="--models 70b --contexts 32768,131072 --batches 1,8,16,32 --iters 20"
for i in 1 2; do
  run 8 ab.old.k8.log /tmp/old/build/bin/attention_perf $D --modes local,sharded
  run 8 ab.new.k8.log build/bin/attention_perf $D --modes local,sharded
done
run 1 ab.new.k1.log build/bin/attention_perf $D --modes sharded
for f in ab.old.k8.log ab.new.k8.log ab.new.k1.log; do echo "== $f"; grep -E "^  [0-9a-z]" $L/$f | awk '{print $2,$3,$4,$5,$10}' | sort -k1,1 -k2n -k3n | awk '{k=$1" "$2" "$3; v[k]=v[k]" "$4"/"$5} END{for(k in v) print k, v[k]}' | sort -k1,1 -k2n -k3n; done
el done
