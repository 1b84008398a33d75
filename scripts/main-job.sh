#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The main job: installs dependencies, builds, then shows the two-tier algorithms on whatever
# machine this is, saying plainly what each figure is.
#
# Without a GPU:
#   1. the projection (the headline): the cost model's busbw against size for one node of
#      8 AMD MI300X in CPX/NPS4 (64 partitions): the flat ring, the direction-optimized
#      (bidirectional) ring and the hierarchical algorithm, from the link figures of
#      tools/topologies/mi300x-8x-cpx-nps4.json (named on the chart). A projection, not a
#      measurement: projection.png, projection.json and the table on stdout;
#   2. the emulation: 64 host-backend ranks run every algorithm on that topology, each result
#      checked; its timings are host memory copies on this machine's cores (emulation/), they
#      show the algorithms working, not hardware speed.
# With an NVIDIA GPU (and MPS): K = 8 partitions of GPU 0 (discovery describes them), every
# algorithm measured from 4 B to 1 GiB against the roofline of the copy rate measured in the same
# run (gpu/).
# Outputs in build/main-job/. The first run's build takes minutes (its time is printed); later
# runs rebuild only what changed and take seconds to a few minutes.
#   STARSCREAM_GPU=none scripts/main-job.sh   the host backend only (no CUDA build where nvcc is)
set -euo pipefail
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  sed -n '2,/^set -euo/p' "$0" | sed '/^# SPDX-License-Identifier:/d; $d; s/^# \{0,1\}//'
  exit 0
fi
cd "$(dirname "$0")/.."
scripts/install-deps.sh
t0=$(date +%s)
scripts/build.sh
echo "main-job: build took $(( $(date +%s) - t0 )) s"
out=build/main-job
mkdir -p "$out"
# Debian's python3 has matplotlib for the plots (a pyenv python3 earlier on PATH may not).
PY=$(command -v /usr/bin/python3 || command -v python3)
topo=tools/topologies/mi300x-8x-cpx-nps4.json

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 &&
   ldd build/lib/libstarscream.so 2>/dev/null | grep -q cudart; then
  k=8
  echo "main-job: GPU found: $k partitions of GPU 0 under MPS, measured"
  # The roofline: one process copying device memory on the whole GPU (C bytes read and C written
  # per second); a K-rank all-reduce must read and write K times its size through that memory,
  # so its busbw cannot pass 2C(K-1)/K^2 (docs/benchmarks.md, "The roofline").
  roof=0
  if nvcc -O2 -o "$out/copy_roofline" perf/copy_roofline.cu >"$out/copy_roofline.log" 2>&1; then
    c=$("$out/copy_roofline" | tail -n 1 | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["copy_GBps"])')
    roof=$("$PY" -c "print(2 * $c * ($k - 1) / $k ** 2)")
    echo "main-job: copy rate C = $c GB/s; all-reduce busbw bound at K = $k: $roof GB/s"
  else
    echo "main-job: perf/copy_roofline.cu did not build ($out/copy_roofline.log): no roofline"
  fi
  "$PY" perf/sweep.py -c all_reduce --np $k --algos ring,bidir_ring,direct,symmetric,auto \
    -b 4 -e 1G -f 4 --launch "tools/emulate/partition-run.sh {np}" --roof-busbw "$roof" \
    --label "measured: $k MPS partitions of $(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)" \
    --out "$out/gpu"
  echo "main-job: measured sweep in $out/gpu/ (all_reduce_sweep.png, .json, one log per algorithm)"
  exit 0
fi

echo "main-job: no GPU. 1) The projection: what the cost model predicts for 8 x MI300X CPX/NPS4"
build/bin/starscream-model --topo "$topo" --collective all_reduce -b 1K -e 1G -f 4 --plain --json \
  >"$out/projection.json"
"$PY" tools/model/plot.py "$out/projection.json" "$out/projection.png" \
  --algos ring,bidir_ring,hierarchical --compare hierarchical | tee "$out/projection.md"
echo "main-job: 2) The emulation: 64 host-backend ranks run every algorithm on that topology and" \
     "check every result (timings: host memory on this machine's cores, not hardware speed)"
t1=$(date +%s)
"$PY" perf/sweep.py -c all_reduce --np 64 --topo "$topo" \
  --algos flat_ring,bidir_ring,direct,hierarchical,auto -b 16 -e 64K -f 16 --iters 3 \
  --label "CPU emulation: 64 host processes on $(nproc) cores; the algorithms working, not hardware speed" \
  --out "$out/emulation"
echo "main-job: emulation took $(( $(date +%s) - t1 )) s; every result checked (perf tools' -c 1)"
echo "main-job: headline: $out/projection.png (a projection); emulation: $out/emulation/ (checked" \
     "results, CPU timings)"
