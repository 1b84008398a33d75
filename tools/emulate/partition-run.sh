#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Emulates a GPU partitioned into K parts on one NVIDIA GPU: starts MPS, runs K ranks of
# <program> under mpirun, each limited to 100/K % of the SMs, and always stops MPS again.
# The card's own settings (clocks, MIG, compute mode) are never touched.
#
#   tools/emulate/partition-run.sh K program [args...]
#
# Extra mpirun environment: STARSCREAM_* variables of the caller are forwarded to every rank.
# SSC_MPS_PERCENT overrides the per-rank SM cap (default 100/K); "none" runs the K ranks under
# MPS without a cap (a diagnostic: ranks then compete for every SM).
set -euo pipefail

if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'
  echo "Example: 8 partitions of GPU 0 running the all-reduce benchmark:"
  echo "  tools/emulate/partition-run.sh 8 build/bin/all_reduce_perf -b 8 -e 256M -f 4"
  exit 0
fi
if [[ $# -lt 2 ]]; then
  echo "usage: $0 K program [args...]  (--help: more)" >&2
  exit 2
fi
K=$1
shift
if ! [[ $K =~ ^[0-9]+$ ]] || (( K < 1 )); then
  echo "partition-run: K must be a positive integer (got '$K')" >&2
  exit 2
fi

if ! command -v nvidia-cuda-mps-control >/dev/null 2>&1; then
  echo "partition-run: nvidia-cuda-mps-control not found: this needs an NVIDIA GPU and its" \
       "driver (MPS). Without a GPU, emulate partitions with a topology file instead" \
       "(README: Emulate a partitioned GPU)." >&2
  exit 2
fi

export CUDA_MPS_PIPE_DIRECTORY=${CUDA_MPS_PIPE_DIRECTORY:-/tmp/mps_pipe}
export CUDA_MPS_LOG_DIRECTORY=${CUDA_MPS_LOG_DIRECTORY:-/tmp/mps_log}
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"

stop_mps() { echo quit | nvidia-cuda-mps-control >/dev/null 2>&1 || true; }
trap stop_mps EXIT INT TERM

# Without MPS, kernels of different processes time-slice and cross-process handshakes take
# milliseconds; K = 1 is the unpartitioned baseline and also runs under MPS for a like-for-like
# comparison.
nvidia-cuda-mps-control -d
sleep 1

fwd=(-x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY)
# Exactly 100/K, not the integer quotient: MPS takes a fraction, and rounds the share down to
# whole SM pairs. On the 132-SM H200 at K = 8, 12.5 % gives 16 SMs a rank (128 of 132), where
# 12 % gave 14 (112 of 132, 0.85 of the GPU; K = 8 figures measured at 14 SMs a rank say so).
pct=${SSC_MPS_PERCENT:-$(awk -v k="$K" 'BEGIN { printf "%.6g", 100 / k }')}
[[ $pct != none ]] && fwd+=(-x CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$pct)
while IFS='=' read -r name _; do
  fwd+=(-x "$name")
done < <(env | grep -E '^STARSCREAM_' || true)

root_flag=()
[[ $(id -u) -eq 0 ]] && root_flag=(--allow-run-as-root)
set +e
mpirun "${root_flag[@]}" --oversubscribe --bind-to none -np "$K" "${fwd[@]}" "$@"
rc=$?
set -e
exit $rc
