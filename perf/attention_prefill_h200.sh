#!/usr/bin/env bash
# The device run behind perf/RESULTS.md's "session 6: attention prefill (issue 17)" section, on
# one NVIDIA GPU (K ranks = K MPS partitions, tools/emulate/partition-run.sh): builds
# gpu_attention_test and attention_perf, runs gpu_attention_test at K = 8 (decode and prefill
# cases), then attention_perf --prefill at K = 8 and K = 1 and PyTorch SDPA (causal) as the
# anchor. Every step has a time limit; logs and JSON go to $OUT, a short summary is printed last.
#
#   OUT=dir [BUILD=dir] perf/attention_prefill_h200.sh
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
B=${BUILD:-/tmp/b}
OUT=${OUT:-$repo/prefill-out}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 STARSCREAM_TIMEOUT=${STARSCREAM_TIMEOUT:-20} STARSCREAM_REPO=$repo
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$OUT/env.txt" 2>&1
summary=()
cmake -S "$repo" -B "$B" -DSTARSCREAM_GPU=cuda -DCMAKE_BUILD_TYPE=Release -DSTARSCREAM_BUILD_TOOLS=OFF \
  -DSTARSCREAM_BUILD_PERF=ON >"$OUT/cmake.log" 2>&1 &&
  cmake --build "$B" -j16 --target gpu_attention_test attention_perf >"$OUT/build.log" 2>&1
rc=$?
summary+=("build rc=$rc at $(el) s")
if (( rc != 0 )); then
  grep -E "error|Error" "$OUT/build.log" "$OUT/cmake.log" | head -30
  printf '%s\n' "${summary[@]}"
  exit 1
fi
run() {  # K, seconds, log name, program and arguments
  local k=$1 limit=$2 log=$3
  shift 3
  timeout "$limit" "$repo/tools/emulate/partition-run.sh" "$k" "$@" >"$OUT/$log" 2>&1
  summary+=("rc=$? $log at $(el) s")
}
run 8 "${CHECK_S:-100}" test.k8.log "$B/bin/gpu_attention_test"
log=$OUT/test.k8.log
summary+=("decode PASS $(grep -c '^PASS K=' "$log") FAIL $(grep -c '^FAIL K=' "$log"); prefill PASS $(grep -c '^PASS PREFILL' "$log") FAIL $(grep -c '^FAIL PREFILL' "$log")")
summary+=("$(grep -E 'gpu_attention_test K=' "$log")")
grep -E "^FAIL" "$log" | head -8 | while read -r l; do echo "  $l"; done >"$OUT/fails.txt"
grep -m4 -E "rank [0-9]+:" "$log" >>"$OUT/fails.txt"
perf=(--prefill --contexts 16384 --iters 10)
run 8 "${PERF_S:-60}" prefill.k8.log "$B/bin/attention_perf" "${perf[@]}" --models 70b,405b,oss --chunks 0,2048 \
  --modes sharded,sharded-heads,sharded-ag,sharded-fused --json "$OUT/prefill.k8.json"
run 1 "${WHOLE_S:-35}" prefill.k1.log "$B/bin/attention_perf" "${perf[@]}" --models 70b,405b,oss --chunks 0,2048 \
  --modes sharded --json "$OUT/prefill.k1.json"
timeout "${SDPA_S:-30}" python3 "$repo/perf/attention_sdpa.py" --prefill --models 70b,405b,oss --contexts 16384 \
  --iters 10 --json "$OUT/sdpa.json" >"$OUT/sdpa.log" 2>&1
summary+=("rc=$? sdpa at $(el) s")
echo "=== failures"; cat "$OUT/fails.txt"
echo "=== K=8"; cat "$OUT/prefill.k8.log" | grep -v "^\[" | tail -n 30
echo "=== K=1"; grep -v "^\[" "$OUT/prefill.k1.log" | tail -n 10
echo "=== SDPA"; tail -n 5 "$OUT/sdpa.log"
echo "=== summary"; printf '%s\n' "${summary[@]}"
