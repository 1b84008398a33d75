#!/usr/bin/env bash
# Session 18, call AC: does a pause in the FIFO waits (pause.patch: boundedWait sleeps 256 ns after
# 16 tight polls) lift point-to-point? nccl-tests sendrecv_perf through the shim at K = 8 and 2,
# A = the tree, B = the tree + pause.patch, A B interleaved by rebuild (A, B, then A's numbers
# once more from a saved copy of A's library).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 STARSCREAM_TIMEOUT=20 STARSCREAM_REPO=$PWD PYTHONUNBUFFERED=1
t0=${t0:-$(date +%s)}
L=$OUT/l; mkdir -p $L
el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
if [[ ${1:-} != inner ]]; then
  git log --oneline -1 > $L/env.txt 2>&1; git status --short >> $L/env.txt
  export OUT L t0
  timeout -k 5 300 bash "$0" inner; echo "inner rc=$?"
  tar -czf $OUT/logs.tgz -C $L . && rm -rf $L
  exit 0
fi
B="-G Ninja -DSTARSCREAM_GPU=cuda -DCMAKE_BUILD_TYPE=Release -DSTARSCREAM_BUILD_PERF=OFF -DSTARSCREAM_BUILD_TOOLS=OFF -DSTARSCREAM_BUILD_TESTS=OFF"
run() { local to=$1 k=$2 log=$3; shift 3
  timeout $to tools/emulate/partition-run.sh $k "$@" >> $L/$log 2>&1; el "rc=$? $log"; }
bld() { cmake --build build -j15 --target starscream_nccl > $L/build.$1.log 2>&1; el "build $1 rc=$?"; grep -m3 -B2 -A8 " error" $L/build.$1.log; }
meas() { local lib=$1 t=$2  # lib's folder first: the shim's RUNPATH names build/lib
  for k in 8 2; do
    run 40 $k sr.$t.k$k.log env NCCL_TESTS_DEVICE=0 LD_PRELOAD=$lib LD_LIBRARY_PATH=$(dirname $lib):build/lib/nccl-compat:build/lib build/nccl-tests/sendrecv_perf -b 1M -e 256M -f 4 -n 10 -w 3 -c 1
  done
}
( JOBS=3 tools/conformance/build-nccl-tests.sh .devcarry/nccl-tests-src build/nccl-tests > $L/nccl-tests-build.log 2>&1; el "nccl-tests build rc=$?" ) &
cmake -S . -B build $B > $L/cfg.log 2>&1; bld A
mkdir -p libA && cp -a build/lib/libstarscream*.so* libA/
wait
meas $PWD/libA/libstarscream-nccl.so A
git apply .devcarry/pause.patch && el "B tree"; bld B
meas $PWD/build/lib/libstarscream-nccl.so B
meas $PWD/libA/libstarscream-nccl.so A2
git apply -R .devcarry/pause.patch
for t in A B A2; do for k in 8 2; do
  echo "$t K=$k: $(grep -E '^ +[0-9]+ ' $L/sr.$t.k$k.log | awk '{printf "%s:%s/%s(%s) ", $1, $6, $8, $9}')"
done; done
el done
