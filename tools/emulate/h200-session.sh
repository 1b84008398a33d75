#!/usr/bin/env bash
# One H200 session of perf/RESULTS.md: correctness at K = 8, 4, 2, 1 partitions (executor checks,
# the quick suite, abort), the network path on one GPU (2 emulated nodes at K = 4 and 8), the
# perf sweep 8 B - 1 GiB at K = 8, 4, 2, 1, a host-staged sweep over 2 emulated nodes, then the
# full suite at K = 8 with what time is left. Writes log.txt and the JSON files under $OUT.
#
#   OUT=dir tools/emulate/h200-session.sh [bin-dir]     (bin-dir default .devcarry/bin; extra
#   shared libraries the binaries need: SSC_LIB_DIR, default .devcarry/lib, which also holds
#   libstarscream-net-mpi.so)
set -u
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=${SSC_LIB_DIR:-$PWD/.devcarry/lib}:${LD_LIBRARY_PATH:-}
export STARSCREAM_REPO=$PWD STARSCREAM_TIMEOUT=20
B=${1:-.devcarry/bin}
OUT=${OUT:-$PWD/out}
LIMIT=${SSC_SESSION_SECONDS:-560}
mkdir -p "$OUT"
L=$OUT/log.txt
start=$SECONDS
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee -a $L
run() {  # run LABEL TIMEOUT K PROGRAM [ARGS...]: one partition-run, its verdict lines in the log
  local label=$1 limit=$2 k=$3
  shift 3
  timeout "$limit" tools/emulate/partition-run.sh "$k" "$@" > $OUT/t.txt 2>&1
  echo "== $label rc=$? ($((SECONDS-start)) s)" | tee -a $L
  grep -E "PASSED|FAILED|SKIPPED|^#" $OUT/t.txt | sort -u | tee -a $L
  grep -m5 -E "FAIL|rror" $OUT/t.txt | tee -a $L
}
for k in 8 4 2 1; do
  run "gpu_symmetric_test K=$k" 90 $k $B/gpu_symmetric_test
  run "gpu_collectives_test --quick K=$k" 120 $k $B/gpu_collectives_test --quick
done
for k in 2 8; do
  run "gpu_abort_test K=$k" 90 $k $B/gpu_abort_test
done
for k in 4 8; do
  STARSCREAM_TOPO_FILE=$PWD/tools/topologies/h200-mps-2node-$k.json \
    run "gpu_collectives_test --quick K=$k over 2 emulated nodes" 240 $k $B/gpu_collectives_test --quick
done
for k in 8 4 2 1; do
  run "perf K=$k" 200 $k $B/gpu_coll_perf $((1<<30)) $OUT/perf-k$k.json
  grep -E "^[a-z]+ +(default|ring|symmetric|hierarchical) +(8|65536|1048576|268435456|1073741824) " $OUT/t.txt | tee -a $L
done
STARSCREAM_TOPO_FILE=$PWD/tools/topologies/h200-mps-2node-8.json \
  run "perf K=8 over 2 emulated nodes (host-staged)" 150 8 $B/gpu_coll_perf $((64<<20)) $OUT/perf-2node-k8.json default,ring,bidir_ring,hierarchical
grep -E " (8|65536|1048576|67108864) " $OUT/t.txt | tee -a $L
left=$((LIMIT - (SECONDS - start)))
if (( left > 60 )); then
  run "full K=8 (limit $left s)" $left 8 $B/gpu_collectives_test
fi
rm -f $OUT/t.txt
