#!/usr/bin/env bash
# Session 20 (prepared in session 19, not yet run), call AJ: the variant rule of e28feda on the
# device. gpu_gemm_test at K = 8 (AUTO now runs two large all-gathers fused), gemm_coll_perf at
# K = 8 over the layers and M where the rule picks a fused form and their neighbours (auto against
# unfused and the forced fused forms in one run), then the PyTorch example through the library.
set -uo pipefail
source tools/emulate/device-call.sh "$0"
build gpu_gemm_test gemm_coll_perf starscream || exit 1
prun 150 8 gemmtest.k8.log build/bin/gpu_gemm_test
grep -E "^(FAIL|ALL PASS|FAILED)" "$L/gemmtest.k8.log" | head -8
prun 250 8 bench.k8.log build/bin/gemm_coll_perf -m 1024,4096,16384 -v 1 \
  -c rs.unfused,rs.auto,rs.fused,ag.unfused,ag.auto,ag.fusedpr -J "$L/k8.json"
grep "^  " "$L/bench.k8.log" | cut -c1-200
prun 120 8 gemm_rs.log env SSC_LIB=$PWD/build/lib/libstarscream.so python3 examples/pytorch/gemm_rs.py
tail -5 "$L/gemm_rs.log"
el done
