#!/usr/bin/env bash
# Prepared in session 22 for the next session's first device call (about 8 min of run): the
# whole issue-18 table with the arrival barrier (every config gemm_coll_perf times by default,
# fused forms forced included), a fresh K = 1 record, the plot; then the checks the barrier
# touches that session 22 did not run with it: gpu_gemm_test at K = 3 (non-power-of-two, the
# cuBLASLt probe's shapes) and K = 8, and the PyTorch example at K = 8.
# Copy to .devcarry/ and run with carry [".devcarry"].
DEVICE_CALL_LIMIT=560
set -uo pipefail
source tools/emulate/device-call.sh "$0"
build gpu_gemm_test gemm_coll_perf starscream || exit 1
prun 60 1 bench.k1.log build/bin/gemm_coll_perf -J "$L/k1.json"
prun 240 8 bench.k8.log build/bin/gemm_coll_perf -v 1 -J "$L/k8.json"
python3 perf/gemm_table.py "$L/k1.json" "$L/k8.json" --plot "$OUT/gemm_speedup.png" > "$L/table.md" 2>&1
grep "^- " "$L/table.md" | cut -c1-220
prun 60 3 gemmtest.k3.log build/bin/gpu_gemm_test
prun 90 8 gemmtest.k8.log build/bin/gpu_gemm_test
for k in 3 8; do echo "K=$k: $(grep -c '^PASS' "$L/gemmtest.k$k.log") pass; $(grep -E '^(ALL PASS|FAILED)' "$L/gemmtest.k$k.log")"; done
prun 60 8 gemm_rs.log env SSC_LIB=$PWD/build/lib/libstarscream.so python3 examples/pytorch/gemm_rs.py
tail -3 "$L/gemm_rs.log"
el done
