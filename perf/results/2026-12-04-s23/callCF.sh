#!/usr/bin/env bash
# Session 23, call CF: the committed tree of call CE (8752255) timed again, twice, with 10 timed
# calls a cell: auto against unfused and the GEMM alone over the whole table (a second and third
# sample of call CE's single run, whose first cells had outliers).
DEVICE_CALL_LIMIT=400
set -uo pipefail
source tools/emulate/device-call.sh "$0"
build gemm_coll_perf || exit 1
for i in 1 2; do
  prun 150 8 bench.k8.$i.log build/bin/gemm_coll_perf -n 10 -J "$L/k8.$i.json" -c rs.gemm,rs.unfused,rs.auto,ag.gemm,ag.unfused,ag.auto,ag.fusedpr
done
for i in 1 2; do python3 perf/gemm_table.py .devcarry/k1.json "$L/k8.$i.json" > "$L/table.$i.md" 2>&1; grep "^- " "$L/table.$i.md" | cut -c1-400; done
el done
