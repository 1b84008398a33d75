#!/usr/bin/env bash
# The device runs behind perf/RESULTS.md's "fused GEMM-collectives" section, on one NVIDIA GPU
# (K ranks = K MPS partitions, tools/emulate/partition-run.sh). Builds what it needs into
# $BUILD, then:
#   check: gpu_gemm_test at K = 1, 2, 4, 8 (and a short benchmark subset if time allows)
#   bench: gemm_coll_perf at K = 8 and K = 1 (whole GPU), joined by perf/gemm_table.py
#   ag:    gpu_gemm_test at K = 8, then gemm_coll_perf for the all-gather op at K = 8 (AG_MS, default
#          16,256,4096), K = 1, and the reduce-scatter at M = 16, 4096 if time allows; the table
# Logs and JSON go to $OUT (default ./gemm-out).
#
#   perf/gemm_h200.sh check|bench|ag
set -uo pipefail
mode=${1:-check}
repo=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$repo/../../build-gemmdev}
OUT=${OUT:-$repo/gemm-out}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 STARSCREAM_TIMEOUT=${STARSCREAM_TIMEOUT:-60} STARSCREAM_REPO=$repo
t0=$(date +%s)
which mpirun nvidia-smi >"$OUT/env.txt" 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv >>"$OUT/env.txt" 2>&1
# SKIP_BUILD=1: $BUILD/bin holds gpu_gemm_test and gemm_coll_perf built elsewhere (and
# $BUILD/lib libstarscream.so): the library's nvcc build alone outlasted both device calls of
# session 4 (perf/RESULTS.md), so building on the CPU machine and carrying the programs saves it.
if [[ ${SKIP_BUILD:-0} == 1 ]]; then
  export LD_LIBRARY_PATH=$BUILD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
elif [[ ! -x $BUILD/bin/gemm_coll_perf || ! -x $BUILD/bin/gpu_gemm_test ]]; then
  cmake -S "$repo" -B "$BUILD" -DSTARSCREAM_GPU=cuda -DCMAKE_BUILD_TYPE=Release \
    -DSTARSCREAM_BUILD_TOOLS=OFF -DSTARSCREAM_BUILD_PERF=ON >"$OUT/configure.log" 2>&1 || { tail -30 "$OUT/configure.log"; exit 1; }
fi
if [[ ${SKIP_BUILD:-0} != 1 ]]; then
  cmake --build "$BUILD" -j16 --target gpu_gemm_test gemm_coll_perf >"$OUT/build.log" 2>&1 || { grep -B2 -A12 -m3 "error" "$OUT/build.log"; exit 1; }
fi
echo "build done in $(( $(date +%s) - t0 )) s"
run() {  # K, log name, program and arguments (STEP_S: the step's time limit, default 150 s)
  local k=$1 log=$2
  shift 2
  timeout "${STEP_S:-150}" "$repo/tools/emulate/partition-run.sh" "$k" "$@" >"$OUT/$log" 2>&1
  echo "rc=$? $log"
}
if [[ $mode == check ]]; then
  for k in ${KS:-1 2 4 8}; do
    run "$k" "gpu_gemm_test.k$k.log" "$BUILD/bin/gpu_gemm_test"
    grep -E "^(FAIL|ALL PASS|FAILED)" "$OUT/gpu_gemm_test.k$k.log" | head -8
    grep -c "^PASS" "$OUT/gpu_gemm_test.k$k.log"
  done
  if (( $(date +%s) - t0 < ${BENCH_BEFORE_S:-200} )); then
    run 8 bench-subset.k8.log "$BUILD/bin/gemm_coll_perf" -m 256,4096 -s llama70b -J "$OUT/subset.k8.json"
    tail -12 "$OUT/bench-subset.k8.log"
  fi
elif [[ $mode == ag ]]; then
  # Session 6 (the fused all-gather + GEMM): correctness at K = 8, then the all-gather op over
  # every layer at ${AG_MS} (unfused, chunked, both fused forms), the whole-GPU baseline, and
  # the reduce-scatter at two M while the time allows (the chunked fix, the fused RS).
  STEP_S=100 run 8 gpu_gemm_test.k8.log "$BUILD/bin/gpu_gemm_test"
  grep -E "^(FAIL|ALL PASS|FAILED)" "$OUT/gpu_gemm_test.k8.log" | head -8
  echo "PASS lines: $(grep -c "^PASS" "$OUT/gpu_gemm_test.k8.log")"
  ms=${AG_MS:-16,256,4096}
  STEP_S=120 run 8 bench-ag.k8.log "$BUILD/bin/gemm_coll_perf" -o ag -m "$ms" -J "$OUT/ag.k8.json"
  STEP_S=40 run 1 bench.k1.log "$BUILD/bin/gemm_coll_perf" -m "$ms" -J "$OUT/k1.json"
  echo "after the all-gather benchmarks: $(( $(date +%s) - t0 )) s"
  table() {
    cat "$OUT/ag.k8.json" "$OUT/rs.k8.json" >"$OUT/k8.json" 2>/dev/null
    python3 "$repo/perf/gemm_table.py" "$OUT/k1.json" "$OUT/k8.json" --plot "$OUT/gemm_speedup.png" >"$OUT/table.md" 2>&1
  }
  table
  if (( $(date +%s) - t0 < ${RS_BEFORE_S:-270} )); then
    STEP_S=60 run 8 bench-rs.k8.log "$BUILD/bin/gemm_coll_perf" -o rs -m 16,4096 -J "$OUT/rs.k8.json"
    table
  fi
  tail -c 9000 "$OUT/table.md"
else
  run 8 bench.k8.log "$BUILD/bin/gemm_coll_perf" -J "$OUT/k8.json"
  run 1 bench.k1.log "$BUILD/bin/gemm_coll_perf" -J "$OUT/k1.json"
  python3 "$repo/perf/gemm_table.py" "$OUT/k1.json" "$OUT/k8.json" --plot "$OUT/gemm_speedup.png" >"$OUT/table.md" 2>&1
  tail -30 "$OUT/table.md"
fi
echo "total $(( $(date +%s) - t0 )) s"
