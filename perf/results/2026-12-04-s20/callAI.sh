#!/usr/bin/env bash
# Session 20, call AI: the GEMM ops' wrong rows at K = 3 and 6 (perf/RESULTS.md session 19).
# gpu_gemm_test now says which rows were wrong on which rank (--calls, --rows 0: every row).
# Copy to .devcarry/ and run with carry [".devcarry"]. Asks: which rows and ranks; one call or
# only back to back; with every launch blocking (an ordering fault within a rank vanishes);
# the core plans the chunked form ran (STARSCREAM_DUMP_PLAN=1); without the MPS cap; K = 5, 7.
set -uo pipefail
source tools/emulate/device-call.sh "$0"
v() { grep -E "^(FAIL|ALL PASS|FAILED|  rank)" "$L/$1" | cut -c1-230; }
build gpu_gemm_test || exit 1
prun 100 3 k3.log build/bin/gpu_gemm_test; v k3.log
RS4="gemm_rs m=4096 n=8192 k=128"; RS5="gemm_rs m=4099 n=8192 k=136 bf16->same variant=2"
AG4="ag_gemm m=4096 n=160 k=8192"; SM="gemm_rs m=1000 n=96 k=200 fp16->same variant=2 chunks=0 ws=6720"
for c in "$RS4" "$RS5" "$AG4" "$SM"; do
  t=$(echo "$c" | tr -c 'a-z0-9\n' '_' | cut -c1-40)
  prun 60 3 one.$t.log build/bin/gpu_gemm_test --only "$c" --calls 1 --rows 0; v one.$t.log
  CUDA_LAUNCH_BLOCKING=1 prun 60 3 blk.$t.log build/bin/gpu_gemm_test --only "$c" --calls 1 --rows 0; v blk.$t.log
done
STARSCREAM_DUMP_PLAN=1 prun 40 3 plan.rs5.log build/bin/gpu_gemm_test --only "$RS5" --calls 1; v plan.rs5.log
grep -vE "^(  rank|PASS|FAIL)" "$L/plan.rs5.log" | head -16 | cut -c1-200
SSC_MPS_PERCENT=none prun 60 3 k3.uncapped.log build/bin/gpu_gemm_test --only "m=4096"; v k3.uncapped.log
for k in 6 5 7; do prun 100 $k k$k.log build/bin/gpu_gemm_test; v k$k.log | head -30; done
el done
