#!/usr/bin/env bash
# Session 23, call CE: the tree with the one-warp gate, the peer batch rule and AUTO's new rule
# (uncommitted). gpu_gemm_test K = 8 and 3, the whole table (the forced fused forms but chunked
# and the copy-engine push forms) at K = 8, a fresh K = 1, the table and plot, the PyTorch
# example at K = 8.
DEVICE_CALL_LIMIT=540
set -uo pipefail
source tools/emulate/device-call.sh "$0"
build gpu_gemm_test gemm_coll_perf starscream || exit 1
prun 100 8 gemmtest.k8.log build/bin/gpu_gemm_test
prun 70 3 gemmtest.k3.log build/bin/gpu_gemm_test
for k in 8 3; do echo "K=$k: $(grep -c '^PASS' "$L/gemmtest.k$k.log") pass; $(grep -E '^(ALL PASS|FAILED)' "$L/gemmtest.k$k.log")"; grep -m3 -E "^FAIL|WARN" "$L/gemmtest.k$k.log" | cut -c1-250; done
prun 220 8 bench.k8.log build/bin/gemm_coll_perf -v 1 -J "$L/k8.json" -c rs.gemm,rs.unfused,rs.auto,rs.fused,ag.gemm,ag.unfused,ag.auto,ag.fused,ag.fusedpr,ag.fusedprce
prun 60 1 bench.k1.log build/bin/gemm_coll_perf -J "$L/k1.json"
python3 perf/gemm_table.py "$L/k1.json" "$L/k8.json" --plot "$OUT/gemm_speedup.png" > "$L/table.md" 2>&1
grep "^- " "$L/table.md" | cut -c1-300
prun 60 8 gemm_rs.log env SSC_LIB=$PWD/build/lib/libstarscream.so python3 examples/pytorch/gemm_rs.py
tail -4 "$L/gemm_rs.log"
el done
