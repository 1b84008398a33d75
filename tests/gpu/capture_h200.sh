#!/usr/bin/env bash
# One device call that checks zero-copy inside graph capture (issue 14, docs/zero-copy.md) on an
# NVIDIA GPU with MPS: builds the library and the GPU programs, runs gpu_capture_test at K = 8
# and 2 (its timing table included), then what the device-counted barriers and LL rounds must
# not break: gpu_collectives_test --quick (K = 4), gpu_symmetric_test (K = 4: the middle
# barrier's grid sync), gpu_conformance_test (K = 4: graphs, the LL flag wrap) and
# gpu_abort_test (K = 8). Logs go to $OUT (or /tmp/capture-logs); a summary is printed last.
#
#   tests/gpu/capture_h200.sh            (from the repository root)
set -uo pipefail
out=${OUT:-/tmp/capture-logs}
mkdir -p "$out"
export STARSCREAM_REPO=$PWD NCCL_NVLS_ENABLE=0 STARSCREAM_TIMEOUT=${STARSCREAM_TIMEOUT:-20}
start=$(date +%s)
build=${BUILD_DIR:-/tmp/b}
if ! { cmake -S . -B "$build" -DSTARSCREAM_GPU=cuda -DCMAKE_BUILD_TYPE=Release -DSTARSCREAM_BUILD_TOOLS=OFF &&
       cmake --build "$build" -j16 --target starscream gpu_capture_test gpu_collectives_test \
         gpu_symmetric_test gpu_conformance_test gpu_abort_test; } > "$out/build.log" 2>&1; then
  tail -40 "$out/build.log"
  echo "BUILD FAILED"
  exit 1
fi
echo "build: $(( $(date +%s) - start )) s"
summary=()
step() {  # name seconds K program [args...]
  local name=$1 limit=$2 k=$3
  shift 3
  local t0=$(date +%s)
  timeout "$limit" tools/emulate/partition-run.sh "$k" "$@" > "$out/$name.log" 2>&1
  local rc=$?
  local last
  last=$(grep -E "PASSED|FAILED|SKIPPED|passed|failed" "$out/$name.log" | tail -1)
  summary+=("| $name | rc $rc | $(( $(date +%s) - t0 )) s | ${last:-no verdict line} |")
}
step capture_k8 90 8 "$build/bin/gpu_capture_test"
step collectives_k4 90 4 "$build/bin/gpu_collectives_test" --quick
step abort_k8 60 8 "$build/bin/gpu_abort_test"
step capture_k2 45 2 "$build/bin/gpu_capture_test"
step symmetric_k4 40 4 "$build/bin/gpu_symmetric_test"
step conformance_k4 60 4 "$build/bin/gpu_conformance_test"
for f in capture_k8 capture_k2; do
  echo "== $f"
  grep -E "^\||FAIL|capture timing" "$out/$f.log" | head -30
done
grep -h "FAIL" "$out"/*.log | head -20
echo
echo "| step | exit | time | verdict |"
echo "| --- | --- | --- | --- |"
printf '%s\n' "${summary[@]}"
