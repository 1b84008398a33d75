#!/usr/bin/env bash
# The main job: installs dependencies, builds, and sweeps all-reduce with the hierarchical
# algorithm against the flat ring. With an NVIDIA GPU (and MPS) it runs 8 partitions of one GPU;
# otherwise 64 host-backend ranks emulate an 8 x MI300X CPX/NPS4 node. On stdout: one summary
# line per algorithm; in build/sweep/: each algorithm's perf table (all_reduce_<algo>.log), its
# JSON records, the combined JSON and the plot (all_reduce_sweep.png). Sizes run from -b by
# factors of -f up to -e inclusive, so -b is chosen to land on -e. STARSCREAM_GPU=none
# scripts/main-job.sh builds the host backend only (faster where nvcc is installed but no GPU).
set -euo pipefail
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  exit 0
fi
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
out=build/sweep
# Debian's python3 has matplotlib for the plot (a pyenv python3 earlier on PATH may not).
PY=$(command -v /usr/bin/python3 || command -v python3)
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 &&
   ldd build/lib/libstarscream.so 2>/dev/null | grep -q cudart; then
  echo "main-job: GPU found: 8 partitions of GPU 0 under MPS"
  "$PY" perf/sweep.py -c all_reduce --np 8 --topo tools/topologies/h200-mps-8.json \
    --algos ring,hierarchical,auto -b 4 -e 256M -f 4 --launch 'tools/emulate/partition-run.sh {np}' \
    --out "$out"
else
  echo "main-job: no GPU: 64 host-backend ranks emulate 8 x MI300X CPX/NPS4 (numbers show the" \
       "algorithms working, not hardware speed)"
  "$PY" perf/sweep.py -c all_reduce --np 64 --topo tools/topologies/mi300x-8x-cpx-nps4.json \
    --algos flat_ring,hierarchical -b 4 -e 1M -f 8 --iters 5 --out "$out"
fi
echo "main-job: results in $out/: perf tables in all_reduce_<algo>.log, JSON per algorithm," \
     "combined JSON all_reduce_sweep.json, plot all_reduce_sweep.png"
