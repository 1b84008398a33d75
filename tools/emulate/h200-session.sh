#!/usr/bin/env bash
# The H200 session of perf/RESULTS.md (2026-11-29, symmetric executor): correctness at K = 1, 2, 4, 8 (quick
# suite + executor checks), the full 2^20+3 suite at K = 8, the perf sweep at K = 8, 4, 2, 1,
# and the K = 8 no-cap diagnostic. Writes log.txt and the JSON files under $OUT (default ./out).
#
#   OUT=dir tools/emulate/h200-session.sh [bin-dir]     (bin-dir default .devcarry/bin; extra
#   shared libraries the binaries need there: SSC_LIB_DIR, default .devcarry/lib)
set -u
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH=${SSC_LIB_DIR:-$PWD/.devcarry/lib}:${LD_LIBRARY_PATH:-}
export STARSCREAM_REPO=$PWD STARSCREAM_TIMEOUT=20
B=${1:-.devcarry/bin}
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
L=$OUT/log.txt
start=$SECONDS
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee -a $L
for k in 8 4 2 1; do
  for t in gpu_symmetric_test "gpu_collectives_test --quick"; do
    dbg=; [[ $t == gpu_symmetric_test ]] && dbg=INFO
    STARSCREAM_DEBUG=$dbg timeout 90 tools/emulate/partition-run.sh $k $B/$t > $OUT/t.txt 2>&1
    echo "== $t K=$k rc=$? ($((SECONDS-start)) s)" | tee -a $L; grep -E "PASSED|FAILED|SKIPPED|launch limits" $OUT/t.txt | sort -u | tee -a $L; grep -m5 -E "FAIL|rror" $OUT/t.txt | tee -a $L
  done
done
for k in 8 4 2 1; do
  timeout 150 tools/emulate/partition-run.sh $k $B/gpu_coll_perf $((1<<30)) $OUT/perf-k$k.json > $OUT/t.txt 2>&1
  echo "== perf K=$k rc=$? ($((SECONDS-start)) s)" | tee -a $L; grep "^#" $OUT/t.txt | tee -a $L
  grep -E "^[a-z]+ +(default|ring|symmetric|symmetric_ll|symmetric_bulk|hierarchical) +(8|65536|1048576|268435456|1073741824) " $OUT/t.txt | tee -a $L
done
SSC_MPS_PERCENT=none timeout 90 tools/emulate/partition-run.sh 8 $B/gpu_coll_perf $((256<<20)) $OUT/nocap-k8.json symmetric,ring allreduce > $OUT/t.txt 2>&1
echo "== perf K=8 no MPS cap rc=$? ($((SECONDS-start)) s)" | tee -a $L; grep "^#" $OUT/t.txt | tee -a $L
grep -E " (8|65536|1048576|268435456) " $OUT/t.txt | tee -a $L
left=$((560 - (SECONDS - start)))
if (( left > 60 )); then
  timeout $left tools/emulate/partition-run.sh 8 $B/gpu_collectives_test > $OUT/t.txt 2>&1
  echo "== full K=8 rc=$? (limit $left s, $((SECONDS-start)) s)" | tee -a $L; grep -E "PASSED|FAILED|SKIPPED" $OUT/t.txt | tee -a $L; grep -m5 -E "FAIL|rror" $OUT/t.txt | tee -a $L
fi
rm -f $OUT/t.txt
