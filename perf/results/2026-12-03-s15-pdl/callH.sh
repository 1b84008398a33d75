#!/usr/bin/env bash
# Session 15, call H: the tuner's calibration sweep at K = 8 with 16 SMs a rank (the faithful
# 12.5 % share; the shipped profile's K = 8 variant was fitted at 14), and the plain-buffer
# choice sweep at K = 8 with the shipped profile. K = 4, 2, 1 shares did not change.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 STARSCREAM_TIMEOUT=20
OUT=$OUT/cal CAL_KS="8" CHOICE_KS="8" BUDGET=430 timeout -k 5 470 tools/tune/h200-calibrate.sh
echo "calibrate rc=$?"
STARSCREAM_DEBUG=INFO timeout 30 tools/emulate/partition-run.sh 8 /tmp/b/bin/gpu_coll_perf 1048576 /tmp/x.json default 2>&1 | grep -m2 "launch limits"
