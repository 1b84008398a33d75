#!/usr/bin/env bash
# Session 22, call BA: where is the rank that the others time out on? (the intermittent core
# timeout of session 21 after gemm_rs 4099 x 8192 x 136 AUTO). Each run is watched: when its log
# has not grown for 10 s while its ranks live, every rank's threads are dumped (/proc wchan and
# syscall, and cuda-gdb's host backtraces), with the seconds since the run began, so the stall's
# start and the PASS line's time tell a late rank (two timeouts: ~2 x 30 s) from two ranks in
# different calls (one timeout, ~30 s).
# Copy to .devcarry/ and run with carry [".devcarry"].
DEVICE_CALL_LIMIT=560
set -uo pipefail
source tools/emulate/device-call.sh "$0"
build gpu_gemm_test starscream || exit 1
export STARSCREAM_TIMEOUT=30 STARSCREAM_DEBUG=WARN
dump() {  # $1 tag
  local p r t
  for p in $(pgrep -x gpu_gemm_test); do
    r=$(tr '\0' '\n' < /proc/$p/environ | sed -n 's/^OMPI_COMM_WORLD_RANK=//p')
    { echo "pid $p rank $r at $(( $(date +%s) - ts )) s"
      for t in /proc/$p/task/*; do echo "  $(basename $t) $(cat $t/comm) wchan=$(cat $t/wchan) state=$(awk '{print $3}' $t/stat) sys=$(cut -d' ' -f1 $t/syscall)"; done
    } > "$L/$1.r$r.proc.txt" 2>&1
    timeout 90 cuda-gdb -q -batch -p $p -ex "thread apply all bt 25" > "$L/$1.r$r.bt.txt" 2>&1 &
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
  grep -E "failed earlier|probe|^FAIL" "$L/$tag.log" | cut -c1-220 | head -4
  return $dumped
}
# A: the shape alone, six times.
stalled=0
for i in 1 2 3 4 5 6; do watched a$i 60 --only "m=4099 n=8192 k=136" || { stalled=1; break; }; done
# B: the reduce-scatter cases (failed 1 of 1 without INFO in session 21), up to three times.
if (( stalled == 0 )); then for i in 1 2 3; do watched b$i 110 --only gemm_rs || break; done; fi
cp /tmp/mps_log/*.log "$L/" 2>/dev/null
el done
