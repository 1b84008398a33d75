#!/usr/bin/env bash
# Session 21, call AO: the rule of this session (AUTO runs the copy-engine form of the per-rank
# all-gather at >= 4e10 flops) timed in a new run against unfused and both fused per-rank forms at
# M = 4096 and 16384; the PyTorch example; and a bisection of calls AM/AN's failure (the whole
# gpu_gemm_test at K = 8 timed out in the unfused reduce-scatter of 4099 x 8192 x 136, after the
# copy-engine cases): the whole test without those cases (--skip " ce").
# Copy to .devcarry/ and run with carry [".devcarry"].
set -uo pipefail
source tools/emulate/device-call.sh "$0"
build gpu_gemm_test gemm_coll_perf starscream || exit 1
prun 120 8 bench.k8.log build/bin/gemm_coll_perf -m 4096,16384 -o ag -v 1 \
  -c ag.gemm,ag.unfused,ag.auto,ag.fusedpr,ag.fusedprce -J "$L/k8.json"
grep "^  " "$L/bench.k8.log" | cut -c1-200
STARSCREAM_DEBUG=INFO prun 60 8 info.k8.log build/bin/gemm_coll_perf -m 4096,16384 -o ag -s llama405b.gate_up -c ag.auto -n 1 -w 0
grep -h "sscAllGatherGemm m=" "$L/info.k8.log" | sed 's/^.*sscAllGatherGemm/sscAllGatherGemm/' | sort | uniq -c | cut -c1-220
prun 100 8 gemm_rs.log env SSC_LIB=$PWD/build/lib/libstarscream.so python3 examples/pytorch/gemm_rs.py
tail -5 "$L/gemm_rs.log"
prun 150 8 skipce.k8.log build/bin/gpu_gemm_test --skip " ce"
grep -c "^PASS" "$L/skipce.k8.log"; grep -E "^(FAIL|ALL PASS|FAILED)|failed" "$L/skipce.k8.log" | cut -c1-200 | head -4
el done
