#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The GPU suite in one command: the correctness program at K = 1, 2, 4, 8 partitions of one GPU
# (under MPS, via partition-run.sh). Prints SKIPPED and succeeds where no GPU is visible.
#
#   tools/emulate/gpu-suite.sh [bin-dir] [--quick]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-build/bin}
shift || true
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIPPED: GPU suite: no NVIDIA GPU visible"
  exit 0
fi
rc=0
for k in ${SSC_PARTITIONS:-1 2 4 8}; do
  "$here/partition-run.sh" "$k" "$bin/gpu_collectives_test" "$@" || rc=1
done
exit $rc
