#!/usr/bin/env bash
# Session 15, call K: every algorithm at K = 3 and 5 (gpu_coll_perf, registered buffers), to see
# whether the slow non-power-of-two cells of call J are the tuner's choice or the kernels.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 STARSCREAM_TIMEOUT=20
OUT=$OUT/cal CAL_KS="3 5" CHOICE_KS="" BUDGET=150 timeout -k 5 170 tools/tune/h200-calibrate.sh
echo "calibrate rc=$?"
