#!/usr/bin/env bash
# Session 19 (prepared in session 18, not yet run), call AD: PyTorch through the shim with the
# misaligned 4 MiB + 12 B blocks (torch_check.py, `45a02fb`) at K = 8 and 3; gpu_attention_test
# at K = 8 (its graph and trimmed-window cases now append through one helper, `e10af89`); whether Nsight
# Systems is on the machine (for point-to-point's bound); then issue 18's all-gather table on
# today's tree (perf/gemm_h200.sh ag: gpu_gemm_test at K = 8, gemm_coll_perf -o ag at K = 8 and
# the whole GPU, the reduce-scatter at M = 16, 4096 while time allows). The last full table is
# session 6's, at 14 SMs a rank and before the dependent launches.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 STARSCREAM_TIMEOUT=20 STARSCREAM_REPO=$PWD PYTHONUNBUFFERED=1
t0=${t0:-$(date +%s)}
L=$OUT/l; mkdir -p $L
el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
if [[ ${1:-} != inner ]]; then
  git log --oneline -1 > $L/env.txt 2>&1; git status --short >> $L/env.txt
  export OUT L t0
  timeout -k 5 575 bash "$0" inner; echo "inner rc=$?"
  tar -czf $OUT/logs.tgz -C $L . && rm -rf $L
  exit 0
fi
B="-G Ninja -DSTARSCREAM_GPU=cuda -DCMAKE_BUILD_TYPE=Release -DSTARSCREAM_BUILD_PERF=ON -DSTARSCREAM_BUILD_TOOLS=OFF -DSTARSCREAM_BUILD_TESTS=ON"
run() { local to=$1 k=$2 log=$3; shift 3
  timeout $to tools/emulate/partition-run.sh $k "$@" >> $L/$log 2>&1; el "rc=$? $log"; }
cmake -S . -B build $B > $L/cfg.log 2>&1 && cmake --build build -j16 --target starscream_nccl gpu_gemm_test gemm_coll_perf gpu_attention_test > $L/build.log 2>&1; el "build rc=$?"
grep -m3 -B2 -A8 " error" $L/build.log
for k in 8 3; do
  run 100 $k torch.k$k.log env LD_PRELOAD=$PWD/build/lib/libstarscream-nccl.so python3 tests/nccl/torch_check.py --no-bandwidth
  grep -E "^(FAIL|OK|FAILED)|4 MiB" $L/torch.k$k.log | head -8
done
run 120 8 attn.k8.log build/bin/gpu_attention_test; grep -E "^FAIL|gpu_attention_test K=" $L/attn.k8.log | head -8
( which nsys ncu; ls /usr/local/cuda/bin | grep -E "nsys|ncu" ) > $L/profilers.txt 2>&1; cat $L/profilers.txt
BUILD=$PWD/build OUT=$L/gemm RS_BEFORE_S=230 STARSCREAM_TIMEOUT=30 perf/gemm_h200.sh ag > $L/gemm.log 2>&1
el "gemm rc=$?"
tail -c 5000 $L/gemm.log
el done
