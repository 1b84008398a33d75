#!/usr/bin/env bash
# The device run behind perf/RESULTS.md's "session 5: attention (issue 17)" section, on one
# NVIDIA GPU (K ranks = K MPS partitions, tools/emulate/partition-run.sh), with programs built
# elsewhere ($BUILD/bin: gpu_attention_test, attention_perf; $BUILD/lib: libstarscream.so and
# what it needs): the library's nvcc build outlasts a device call (session 4).
#   check: gpu_attention_test at K = 8 (and the K listed in KS), the PyTorch example at K = 8
#   bench: attention_perf at K = 8 and K = 1 (70b, 32K and 128K, batch 1-32), joined by
#          perf/attention_plot.py into $OUT/table.md and $OUT/attention.png
# Logs and JSON go to $OUT (default ./attention-out); the table is printed last.
#
#   BUILD=dir OUT=dir perf/attention_h200.sh [check|bench|all]
set -uo pipefail
mode=${1:-all}
repo=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$repo/.devcarry}
OUT=${OUT:-$repo/attention-out}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 STARSCREAM_TIMEOUT=${STARSCREAM_TIMEOUT:-20} STARSCREAM_REPO=$repo
export LD_LIBRARY_PATH=$BUILD/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$OUT/env.txt" 2>&1
run() {  # K, seconds, log name, program and arguments
  local k=$1 limit=$2 log=$3
  shift 3
  timeout "$limit" "$repo/tools/emulate/partition-run.sh" "$k" "$@" >"$OUT/$log" 2>&1
  echo "rc=$? $log ($(( $(date +%s) - t0 )) s)"
}
if [[ $mode == check || $mode == all ]]; then
  for k in ${KS:-8}; do
    run "$k" ${CHECK_S:-60} "gpu_attention_test.k$k.log" "$BUILD/bin/gpu_attention_test"
    grep -E "^FAIL|gpu_attention_test K=" "$OUT/gpu_attention_test.k$k.log" | head -12
    grep -m3 -E "rank [0-9]+:" "$OUT/gpu_attention_test.k$k.log"
    echo "PASS lines: $(grep -c '^PASS' "$OUT/gpu_attention_test.k$k.log")"
  done
  run 8 ${TORCH_S:-45} torch.k8.log env SSC_LIB="$BUILD/lib/libstarscream.so" \
    python3 "$repo/examples/attention/decode_step.py" --batch 8 --context 32768
  grep -E "PASS|FAIL|Error|error" "$OUT/torch.k8.log" | head -6
  if (( $(date +%s) - t0 < ${SHARD_BEFORE_S:-120} )); then
    run 8 ${TORCH_S:-45} torch-shard.k8.log env SSC_LIB="$BUILD/lib/libstarscream.so" \
      python3 "$repo/examples/attention/decode_step.py" --batch 8 --context 32768 --shard-heads
    grep -E "PASS|FAIL|Error|error" "$OUT/torch-shard.k8.log" | head -4
  fi
fi
if [[ $mode == bench || $mode == all ]]; then
  shape=(--models 70b --contexts 32768,131072 --batches ${BATCHES:-1,8,16,32} --iters 20)
  run 8 ${PERF_S:-80} perf.k8.log "$BUILD/bin/attention_perf" "${shape[@]}" --json "$OUT/k8.json"
  run 1 ${WHOLE_S:-35} perf.k1.log "$BUILD/bin/attention_perf" "${shape[@]}" --modes sharded --json "$OUT/k1.json"
  head -2 "$OUT/perf.k8.log"
  python3 "$repo/perf/attention_plot.py" --parts "$OUT/k8.json" --whole "$OUT/k1.json" \
    --png "$OUT/attention.png" >"$OUT/table.md" 2>&1
  cat "$OUT/table.md"
fi
echo "total $(( $(date +%s) - t0 )) s"
