#!/usr/bin/env bash
# Session 22, call BB. (1) The failing sequence of session 21's call AP again, watched as in call
# BA (whole gpu_gemm_test, then its reduce-scatter cases; STARSCREAM_TIMEOUT 20, no log level):
# on a stall every rank's threads are dumped. (2) The whole issue-18 table with AUTO's current
# rule: GEMM alone, unfused and auto of both ops, every layer and M (K = 8); the K = 1 records
# are call AM's (.devcarry/k1.json).
# Copy to .devcarry/ and run with carry [".devcarry"].
DEVICE_CALL_LIMIT=560
set -uo pipefail
source tools/emulate/device-call.sh "$0"
build gpu_gemm_test gemm_coll_perf starscream || exit 1
dump() {  # $1 tag
  local p r t
  for p in $(pgrep -x gpu_gemm_test); do
    r=$(tr '\0' '\n' < /proc/$p/environ | sed -n 's/^OMPI_COMM_WORLD_RANK=//p')
    { echo "pid $p rank $r at $(( $(date +%s) - ts )) s"
      for t in /proc/$p/task/*; do echo "  $(basename $t) $(cat $t/comm) wchan=$(cat $t/wchan) state=$(awk '{print $3}' $t/stat) sys=$(cut -d' ' -f1 $t/syscall)"; done
    } > "$L/$1.r$r.proc.txt" 2>&1
    timeout 60 cuda-gdb -q -batch -p $p -ex "thread apply all bt 25" > "$L/$1.r$r.bt.txt" 2>&1 &
  done
  nvidia-smi > "$L/$1.smi.txt" 2>&1
  wait
}
watched() {  # $1 tag, $2 limit, rest: args of gpu_gemm_test
  local tag=$1 lim=$2
  shift 2
  ts=$(date +%s)
  prun "$lim" 8 "$tag.log" build/bin/gpu_gemm_test "$@" &
  local bg=$! size=-1 still=0 dumped=0
  while kill -0 $bg 2>/dev/null; do
    sleep 1
    local now; now=$(stat -c %s "$L/$tag.log" 2>/dev/null || echo 0)
    if [[ $now == "$size" ]]; then still=$((still + 1)); else still=0; size=$now; echo "$(( $(date +%s) - ts )) $now" >> "$L/$tag.growth"; fi
    if (( still >= 10 && dumped == 0 )); then dumped=1; el "$tag: stalled at $(( $(date +%s) - ts )) s, dumping"; dump "$tag"; fi
  done
  wait $bg
  local rc=$?
  echo "$tag: rc=$rc $(grep -c '^PASS' "$L/$tag.log") pass, $(grep -c '^FAIL' "$L/$tag.log") fail, dumped=$dumped, $(( $(date +%s) - ts )) s"
  grep -E "failed earlier|^FAIL" "$L/$tag.log" | cut -c1-220 | head -4
  return $dumped
}
watched whole 150 && watched rsonly 100 --only gemm_rs
C=rs.gemm,rs.unfused,rs.auto,ag.gemm,ag.unfused,ag.auto
prun 300 8 bench.k8.log build/bin/gemm_coll_perf -v 1 -c "$C" -J "$L/k8.json"
python3 perf/gemm_table.py .devcarry/k1.json "$L/k8.json" > "$L/table.md" 2>&1
grep "^- " "$L/table.md" | cut -c1-200
cp /tmp/mps_log/*.log "$L/" 2>/dev/null
el done
