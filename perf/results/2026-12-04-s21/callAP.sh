#!/usr/bin/env bash
# Session 21, call AP: why the whole gpu_gemm_test at K = 8 times out in the unfused reduce-
# scatter of 4099 x 8192 x 136 when the copy-engine cases ran before it (calls AM, AN), but not
# without them (call AO, --skip " ce"). R1: the whole test again with the GPU's memory sampled
# every 0.5 s (a leak of mappings would fill it); R2: the reduce-scatter cases alone (--skip
# ag_gemm: the copy-engine reduce-scatters stay, the all-gathers go).
# Copy to .devcarry/ and run with carry [".devcarry"].
set -uo pipefail
source tools/emulate/device-call.sh "$0"
build gpu_gemm_test starscream || exit 1
nvidia-smi --query-gpu=memory.used,memory.total --format=csv,noheader -lms 500 > "$L/mem.r1.csv" 2>&1 &
smi=$!
prun 150 8 whole.k8.log build/bin/gpu_gemm_test
kill $smi
grep -c "^PASS" "$L/whole.k8.log"; grep -E "^(FAIL|ALL PASS|FAILED)|failed|arn" "$L/whole.k8.log" | cut -c1-200 | head -6
sort -t, -k1 -n "$L/mem.r1.csv" | tail -1; echo "samples $(wc -l < "$L/mem.r1.csv")"
awk -F, 'NR % 20 == 1 {printf "%s;", $1} END {print ""}' "$L/mem.r1.csv"
prun 100 8 rsonly.k8.log build/bin/gpu_gemm_test --skip ag_gemm
grep -c "^PASS" "$L/rsonly.k8.log"; grep -E "^(FAIL|ALL PASS|FAILED)|failed" "$L/rsonly.k8.log" | cut -c1-200 | head -4
el done
