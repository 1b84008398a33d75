#!/usr/bin/env bash
# The tuner's choice on plain buffers, through the public NCCL tests: for each collective, runs
# nccl-tests through the Starscream shim at K MPS partitions once with the tuner's default and once
# per algorithm forced with STARSCREAM_ALGO, and writes gpu_coll_perf-shaped JSON (one file per K:
# {"K", "results": [{coll, algo, bytes, time_us}]}) that tools/tune/check_choice.py reads.
#
#   tools/tune/nccl_tests_choice.sh --bin NCCL_TESTS_DIR --shim libstarscream-nccl.so --out DIR \
#       [--ks "8 4"] [--colls "all_reduce reduce_scatter all_gather"] [--max 128M] [--until EPOCH]
#
# Times are nccl-tests' out-of-place column (-c 0: not checked; correctness is the conformance
# suite's job). --until: stop starting runs after this time (seconds since the epoch), so one
# device call can bound it; what ran is still written.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
BIN= SHIM= OUT= KS="8" COLLS="all_reduce reduce_scatter all_gather" MAX=128M UNTIL=0
ALGOS="default ring bidir_ring direct hierarchical symmetric"
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
    -h|--help) sed -n 2,13p "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "nccl_tests_choice.sh: unknown argument '$1' (--help)" >&2; exit 2 ;;
  esac
done
[[ -n $BIN && -n $OUT && -r $SHIM ]] || { echo "nccl_tests_choice.sh: need --bin, --out and a readable --shim (--help)" >&2; exit 2; }
mkdir -p "$OUT/logs"
export NCCL_NVLS_ENABLE=0 NCCL_TESTS_DEVICE=0 STARSCREAM_TIMEOUT=${STARSCREAM_TIMEOUT:-20}
SHIM_DIR=$(dirname "$SHIM")
TSV=$OUT/choice.tsv
: >"$TSV"
for k in $KS; do
  for coll in $COLLS; do
    for algo in $ALGOS; do
      if (( UNTIL > 0 && $(date +%s) >= UNTIL )); then
        echo "# out of time: skipped K=$k $coll $algo and after"
        break 3
      fi
      log=$OUT/logs/$coll.K$k.$algo.log
      forced=()
      [[ $algo != default ]] && forced=(STARSCREAM_ALGO=$algo)
      echo quit | timeout 10 nvidia-cuda-mps-control >/dev/null 2>&1
      env "${forced[@]}" timeout -k 5 60 "$REPO/tools/emulate/partition-run.sh" "$k" env -u LD_PRELOAD \
        LD_PRELOAD="$SHIM" LD_LIBRARY_PATH="$SHIM_DIR/nccl-compat:$SHIM_DIR:${LD_LIBRARY_PATH:-}" \
        "$BIN/${coll}_perf" -b 8 -e "$MAX" -f 8 -n 5 -w 2 -c 0 >"$log" 2>&1
      rc=$?
      # Rows: size count type redop root time algbw busbw #wrong (out of place) ...
      awk -v c="${coll//_/}" -v a="$algo" -v k="$k" '$1 ~ /^[0-9]+$/ && NF >= 13 && $6 ~ /^[0-9.]+$/ {
          printf "%s\t%s\t%s\t%s\t%s\n", k, c, a, $1, $6 }' "$log" >>"$TSV"
      echo "# $coll K=$k $algo: rc $rc, $(awk -v c="${coll//_/}" -v a="$algo" -v k="$k" \
        '$1==k && $2==c && $3==a' "$TSV" | wc -l) sizes"
    done
  done
done
echo quit | timeout 10 nvidia-cuda-mps-control >/dev/null 2>&1
python3 - "$TSV" "$OUT" <<'EOF'
import json, sys
tsv, out = sys.argv[1], sys.argv[2]
per = {}
for line in open(tsv):
    k, coll, algo, b, t = line.split("\t")
    per.setdefault(int(k), []).append({"coll": coll, "algo": algo, "bytes": int(b),
                                        "time_us": float(t), "buffers": "plain"})
for k, rows in per.items():
    path = f"{out}/choice-k{k}.json"
    json.dump({"K": k, "source": "nccl-tests through libstarscream-nccl.so, plain buffers",
               "results": rows}, open(path, "w"), indent=1)
    print("# wrote", path, len(rows), "rows")
EOF
