#!/usr/bin/env bash
# Session 21 (prepared in sessions 19 and 20, not yet run), call AJ: the variant rule of e28feda
# and the probe of 41c5557 on the device. gpu_gemm_test at K = 8 (whole; call AL ran 163 of 166
# cases before its time ran out), then gemm_coll_perf at K = 8 over M = 1024-16384 (auto against
# unfused and the forced fused forms in one run) with STARSCREAM_DEBUG=INFO, so the log names
# every algorithm the probe skipped (a skipped one could have made a session 19 cell look fast),
# then the PyTorch example through the library. First sm_free at K = 8 and 2 (can a partition
# copy and wait without its SMs: the next design's facts, docs/perf.md). Copy to .devcarry/ and
# run with carry [".devcarry"] (nothing else is needed from there).
set -uo pipefail
source tools/emulate/device-call.sh "$0"
build gpu_gemm_test gemm_coll_perf starscream sm_free || exit 1
for k in 8 2; do prun 60 $k smfree.k$k.log build/bin/sm_free 64; grep -vE "^\[|^$" "$L/smfree.k$k.log" | head -14; done
prun 90 8 gemmtest.k8.log build/bin/gpu_gemm_test
grep -E "^(FAIL|ALL PASS|FAILED)" "$L/gemmtest.k8.log" | head -8
STARSCREAM_DEBUG=INFO prun 250 8 bench.k8.log build/bin/gemm_coll_perf -m 1024,4096,16384 -v 1 \
  -c rs.unfused,rs.auto,rs.fused,ag.unfused,ag.auto,ag.fusedpr -J "$L/k8.json"
grep "^  " "$L/bench.k8.log" | cut -c1-200
echo "probe skips: $(grep -c "the BLAS's algorithm" "$L/bench.k8.log")"
grep -h "the BLAS's algorithm" "$L/bench.k8.log" | sed 's/^.*gemm: //' | sort | uniq -c | head -12 | cut -c1-200
prun 120 8 gemm_rs.log env SSC_LIB=$PWD/build/lib/libstarscream.so python3 examples/pytorch/gemm_rs.py
tail -5 "$L/gemm_rs.log"
el done
