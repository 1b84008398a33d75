#!/usr/bin/env bash
# Session 21, call AR (the last 300 s of device time): the reduce-scatter cases of gpu_gemm_test
# at K = 8 with STARSCREAM_DEBUG=INFO, twice, to catch the intermittent timeout of calls AM, AN
# and AP with the probe's lines. Hypothesis: a rank whose probe rejects an algorithm of the new
# shape 4099 x 8192 x 136 reaches the core reduce-scatter late; its peers' kernels spin on SMs it
# needs for its GEMM (MPS shares SMs between clients), so it starves until their waits time out.
# Copy to .devcarry/ and run with carry [".devcarry"].
DEVICE_CALL_LIMIT=175
set -uo pipefail
source tools/emulate/device-call.sh "$0"
build gpu_gemm_test starscream || exit 1
for r in 1 2; do
  STARSCREAM_DEBUG=INFO prun 45 8 rs$r.log build/bin/gpu_gemm_test --skip ag_gemm --only "gemm_rs"
  echo "run $r: $(grep -c '^PASS' "$L/rs$r.log") pass; $(grep -cE 'failed earlier|FAILED' "$L/rs$r.log") failure lines"
  grep -E "^PASS.*m=4099 n=8192 k=136 bf16->same variant=0" "$L/rs$r.log" | cut -c1-140
  grep -h "the BLAS's algorithm" "$L/rs$r.log" | grep -E "4099|513|4104" | cut -c1-200 | head -8
done
el done
