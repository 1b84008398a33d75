#!/usr/bin/env bash
# The tuner's choice on plain buffers, through the public NCCL tests: for each collective, runs
# nccl-tests through the Starscream shim at K MPS partitions with the tuner's default (twice, so
# a gap can be judged against the run-to-run spread) and once per algorithm forced with
# STARSCREAM_ALGO, and writes gpu_coll_perf-shaped JSON (one file per K: {"K", "results":
# [{coll, algo, run, bytes, time_us}]}) that tools/tune/check_choice.py reads.
#
#   tools/tune/nccl_tests_choice.sh --bin NCCL_TESTS_DIR --shim libstarscream-nccl.so --out DIR \
#       [--ks "8 4"] [--colls "all_reduce reduce_scatter all_gather"] [--max 128M] [--until EPOCH]
#       [--iters 50] [--warmup 10] [--algos "default ring ... symmetric default"]
#
# symmetric_bulk and symmetric_wide (all_gather only) are the symmetric algorithm on one grid
# (STARSCREAM_ZERO_COPY_GRID): the two the tuner chooses between for a zero-copy all-gather.
#
# Times are nccl-tests' out-of-place column (-c 0: not checked; correctness is the conformance
# suite's job). An algorithm named twice in --algos runs twice (run 1, 2). --until: stop starting
# runs after this time (seconds since the epoch), so one device call can bound it; what ran is
# still written. MPS is started once per K (as tools/emulate/partition-run.sh does it: 100/K % of
# the SMs per rank) and restarted only after a failed run: a start costs a second or two per run.
set -uo pipefail
BIN= SHIM= OUT= KS="8" COLLS="all_reduce reduce_scatter all_gather" MAX=128M UNTIL=0 ITERS=50 WARMUP=10
ALGOS="default ring bidir_ring direct hierarchical symmetric symmetric_bulk symmetric_wide default"
while (( $# )); do
  case $1 in
    --bin) BIN=${2:?}; shift 2 ;;
    --shim) SHIM=${2:?}; shift 2 ;;
    --out) OUT=${2:?}; shift 2 ;;
    --ks) KS=${2:?}; shift 2 ;;
    --colls) COLLS=${2:?}; shift 2 ;;
    --algos) ALGOS=${2:?}; shift 2 ;;
    --max) MAX=${2:?}; shift 2 ;;
    --until) UNTIL=${2:?}; shift 2 ;;
    --iters) ITERS=${2:?}; shift 2 ;;
    --warmup) WARMUP=${2:?}; shift 2 ;;
    -h|--help) sed -n 2,20p "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "nccl_tests_choice.sh: unknown argument '$1' (--help)" >&2; exit 2 ;;
  esac
done
[[ -n $BIN && -n $OUT && -r $SHIM ]] || { echo "nccl_tests_choice.sh: need --bin, --out and a readable --shim (--help)" >&2; exit 2; }
mkdir -p "$OUT/logs"
export NCCL_NVLS_ENABLE=0 NCCL_TESTS_DEVICE=0 STARSCREAM_TIMEOUT=${STARSCREAM_TIMEOUT:-20}
export CUDA_MPS_PIPE_DIRECTORY=${CUDA_MPS_PIPE_DIRECTORY:-/tmp/mps_pipe}
export CUDA_MPS_LOG_DIRECTORY=${CUDA_MPS_LOG_DIRECTORY:-/tmp/mps_log}
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
mps_stop() { echo quit | timeout 10 nvidia-cuda-mps-control >/dev/null 2>&1; }
mps_start() { mps_stop; nvidia-cuda-mps-control -d && sleep 1; }
trap mps_stop EXIT
root_flag=()
[[ $(id -u) -eq 0 ]] && root_flag=(--allow-run-as-root)
SHIM_DIR=$(dirname "$SHIM")
TSV=$OUT/choice.tsv
: >"$TSV"
for k in $KS; do
  mps_start
  for coll in $COLLS; do
    declare -A runs=()
    for algo in $ALGOS; do
      if (( UNTIL > 0 && $(date +%s) >= UNTIL )); then
        echo "# out of time: skipped K=$k $coll $algo and after"
        break 3
      fi
      [[ $algo == symmetric_* && $coll != all_gather ]] && continue
      run=$(( ${runs[$algo]:-0} + 1 ))
      runs[$algo]=$run
      log=$OUT/logs/$coll.K$k.$algo.$run.log
      forced=()
      case $algo in
        default) ;;
        symmetric_*) forced=(-x STARSCREAM_ALGO=symmetric -x STARSCREAM_ZERO_COPY_GRID=${algo#symmetric_}) ;;
        *) forced=(-x STARSCREAM_ALGO=$algo) ;;
      esac
      # A hung run must not take the call's remaining time with it: near --until, less than 60 s.
      limit=60
      (( UNTIL > 0 )) && limit=$(( UNTIL + 20 - $(date +%s) )) && (( limit > 60 )) && limit=60
      (( limit < 10 )) && limit=10
      timeout -k 5 "$limit" mpirun "${root_flag[@]}" --oversubscribe --bind-to none -np "$k" \
        -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_MPS_ACTIVE_THREAD_PERCENTAGE="$(awk -v k="$k" 'BEGIN { printf "%.6g", 100 / k }')" \
        -x NCCL_NVLS_ENABLE -x NCCL_TESTS_DEVICE -x STARSCREAM_TIMEOUT "${forced[@]}" \
        env -u LD_PRELOAD LD_PRELOAD="$SHIM" LD_LIBRARY_PATH="$SHIM_DIR/nccl-compat:$SHIM_DIR:${LD_LIBRARY_PATH:-}" \
        "$BIN/${coll}_perf" -b 8 -e "$MAX" -f 8 -n "$ITERS" -w "$WARMUP" -c 0 >"$log" 2>&1
      rc=$?
      (( rc == 0 )) || mps_start  # a failed or killed run can leave MPS unusable
      # Rows: size count type redop root time algbw busbw #wrong (out of place) time ... (in place)
      awk -v c="${coll//_/}" -v a="$algo" -v k="$k" -v r="$run" '$1 ~ /^[0-9]+$/ && NF >= 13 && $6 ~ /^[0-9.]+$/ {
          printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k, c, a, r, $1, $6, $10 }' "$log" >>"$TSV"
      echo "# $coll K=$k $algo run $run: rc $rc, $(awk -v c="${coll//_/}" -v a="$algo" -v k="$k" -v r="$run" \
        '$1==k && $2==c && $3==a && $4==r' "$TSV" | wc -l) sizes"
    done
  done
  mps_stop
done
python3 - "$TSV" "$OUT" "$ITERS" "$WARMUP" <<'EOF'
import json, sys
tsv, out, iters, warmup = sys.argv[1:5]
per = {}
for line in open(tsv):
    k, coll, algo, run, b, t, tin = line.rstrip("\n").split("\t")
    row = {"coll": coll, "algo": algo, "run": int(run), "bytes": int(b), "time_us": float(t),
           "buffers": "plain"}
    try:
        row["time_in_place_us"] = float(tin)
    except ValueError:
        pass
    per.setdefault(int(k), []).append(row)
for k, rows in per.items():
    path = f"{out}/choice-k{k}.json"
    json.dump({"K": k, "source": f"nccl-tests through libstarscream-nccl.so, plain buffers, "
               f"-n {iters} -w {warmup} -c 0, out-of-place times", "results": rows},
              open(path, "w"), indent=1)
    print("# wrote", path, len(rows), "rows")
EOF
