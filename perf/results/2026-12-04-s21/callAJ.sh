#!/usr/bin/env bash
# Session 21 (prepared in sessions 19 and 20, not yet run), call AJ: the variant rule of e28feda
# and the probe of 41c5557 on the device. gpu_gemm_test at K = 8 (whole; call AL ran 163 of 166
# cases before its time ran out), then gemm_coll_perf at K = 8 over M = 4096 and 16384 (auto against
# unfused and the forced fused forms in one run) with STARSCREAM_DEBUG=INFO, so the log names
# every algorithm the probe skipped (a skipped one could have made a session 19 cell look fast),
# then gemm_rs_perf / ag_gemm_perf's first GPU run, then the PyTorch example through the
# library. First sm_free at K = 8 and 2 (can a partition copy and wait without its SMs: the
# next design's facts, docs/perf.md). Copy to .devcarry/ and run with carry [".devcarry"]
# (nothing else is needed from there).
set -uo pipefail
source tools/emulate/device-call.sh "$0"
build gpu_gemm_test gemm_coll_perf starscream sm_free gemm_rs_perf ag_gemm_perf || exit 1
for k in 8 2; do prun 60 $k smfree.k$k.log build/bin/sm_free 64; grep -vE "^\[|^$" "$L/smfree.k$k.log" | head -14; done
prun 90 8 gemmtest.k8.log build/bin/gpu_gemm_test
grep -E "^(FAIL|ALL PASS|FAILED)" "$L/gemmtest.k8.log" | head -8
STARSCREAM_DEBUG=INFO prun 200 8 bench.k8.log build/bin/gemm_coll_perf -m 4096,16384 -v 1 \
  -c rs.unfused,rs.auto,rs.fused,ag.unfused,ag.auto,ag.fusedpr -J "$L/k8.json"
grep "^  " "$L/bench.k8.log" | cut -c1-200
echo "probe skips: $(grep -c "the BLAS's algorithm" "$L/bench.k8.log")"
grep -h "the BLAS's algorithm" "$L/bench.k8.log" | sed 's/^.*gemm: //' | sort | uniq -c | head -12 | cut -c1-200
# The two new tools' first GPU run (session 20 wrote them; CI runs them on the host backend).
prun 60 8 agtool.k8.log build/bin/ag_gemm_perf -T tools/topologies/h200-mps-8.json -L llama70b.qkv,llama405b.o -b 1024 -e 16K -f 4 -J "$L/agtool.json"
grep -E "^  |Out of|not run" "$L/agtool.k8.log" | cut -c1-160
prun 60 8 rstool.k8.log build/bin/gemm_rs_perf -T tools/topologies/h200-mps-8.json -L llama70b.o,llama70b.gate_up -b 1024 -e 16K -f 4 -J "$L/rstool.json"
grep -E "^  |Out of|not run" "$L/rstool.k8.log" | cut -c1-160
prun 100 8 gemm_rs.log env SSC_LIB=$PWD/build/lib/libstarscream.so python3 examples/pytorch/gemm_rs.py
tail -5 "$L/gemm_rs.log"
el done
