#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Conformance runner: the public NCCL test suite (nccl-tests 2.19.6, MPI=1 build) through
# libstarscream-nccl.so on ONE NVIDIA GPU split into K MPS partitions (tools/emulate/partition-run.sh),
# with the real NCCL at K = 1 as the reference column. Prints one markdown table. See README.md.
#
#   tools/conformance/run.sh [--bin DIR] [--shim PATH] [--out DIR] [--quick] [--only REGEX]
#                            [--budget SECONDS] [more options: --help]
#   tools/conformance/run.sh --parse-only LOG [--rc N]     (classify one log, no GPU needed)
#   tools/conformance/run.sh --table-only [--out DIR]      (rebuild the table from results.tsv)
#
# Exit status: 0 when no shim cell failed where the real NCCL passed on that row (or where the row
# has no real-NCCL result); 1 otherwise; 2 on a usage or setup error; 130 when interrupted.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
PARTITION_RUN=${SSC_PARTITION_RUN:-$REPO/tools/emulate/partition-run.sh}  # override: tests only

BINARIES=(all_reduce all_gather broadcast reduce_scatter reduce alltoall sendrecv)
OPTSETS=(defaults dall roots G5 z1 R1 R2 u1)
COLUMNS_=(K8.shim K4.shim K2.shim K1.shim K1.nccl)
COLUMN_TITLES=("K=8 shim" "K=4 shim" "K=2 shim" "K=1 shim" "K=1 nccl")

# ---------------------------------------------------------------------------------------------
# Options
BIN_DIR=${NCCL_TESTS_BIN:-$REPO/.devcarry/nccl-tests}
SHIM=${SSC_NCCL_SHIM:-$REPO/build/lib/libstarscream-nccl.so}
OUT_DIR=$PWD/conformance-out
QUICK=0
ONLY=
BUDGET=520
GRACE=30
TMO=60
LONG_TMO=120
SETTLE=${SSC_CONF_SETTLE:-1}
MERGE=0
DRY=0
MODE=run
PARSE_LOG=
PARSE_RC=0
NCCL_LIB=${SSC_REAL_NCCL_LIB:-}

usage() {
  cat <<'EOF'
usage: tools/conformance/run.sh [options]
  --bin DIR          nccl-tests binaries (default $NCCL_TESTS_BIN or .devcarry/nccl-tests)
  --shim PATH        libstarscream-nccl.so (default $SSC_NCCL_SHIM or build/lib/libstarscream-nccl.so)
  --out DIR          logs, results.tsv, table.md (default ./conformance-out)
  --quick            defaults rows at K = 8, 4, 2, 1 (+ real NCCL at 1), plus all_reduce -d all -o all
                     at K = 8 and 1
  --only REGEX       run only the runs whose id matches (ids: BINARY.OPTSET.K<k>.shim|nccl, e.g.
                     all_reduce.dall.K8.shim; OPTSET: defaults dall roots G5 z1 R1 R2 u1)
  --budget SECONDS   start no run after SECONDS (default 520); a run in flight is cut at
                     SECONDS + --grace (default 30) and marked skip
  --grace SECONDS    see --budget
  --timeout S        per-run timeout (default 60); --long-timeout S for 1 GiB and -d all runs (120)
  --nccl-lib DIR     directory holding the real libnccl.so.2 for the K=1 nccl column (default: pip
                     nvidia-nccl's lib, else /usr/local/cuda/lib64; also $SSC_REAL_NCCL_LIB)
  --merge            keep earlier results in --out/results.tsv for runs not run now (to split the
                     full matrix over several commands)
  --dry-run          print the planned runs and their commands, run nothing
  --parse-only LOG [--rc N]   classify one log as if the run had exited with N (default 0)
  --table-only       rebuild and print the table from --out/results.tsv
example (the defaults rows at every K, on one NVIDIA GPU, after build-nccl-tests.sh):
  tools/conformance/run.sh --bin build/nccl-tests --quick --out conformance-out
EOF
}

die() { echo "run.sh: $*" >&2; exit 2; }
abspath() { case $1 in /*) printf '%s\n' "$1" ;; *) printf '%s\n' "$PWD/$1" ;; esac; }

while (( $# )); do
  case $1 in
    --bin) BIN_DIR=${2:?--bin needs a value}; shift 2 ;;
    --shim) SHIM=${2:?--shim needs a value}; shift 2 ;;
    --out) OUT_DIR=${2:?--out needs a value}; shift 2 ;;
    --quick) QUICK=1; shift ;;
    --only) ONLY=${2:?--only needs a value}; shift 2 ;;
    --budget) BUDGET=${2:?--budget needs a value}; shift 2 ;;
    --grace) GRACE=${2:?--grace needs a value}; shift 2 ;;
    --timeout) TMO=${2:?--timeout needs a value}; shift 2 ;;
    --long-timeout) LONG_TMO=${2:?--long-timeout needs a value}; shift 2 ;;
    --nccl-lib) NCCL_LIB=${2:?--nccl-lib needs a value}; shift 2 ;;
    --merge) MERGE=1; shift ;;
    --dry-run) DRY=1; shift ;;
    --parse-only) MODE=parse; PARSE_LOG=${2:?--parse-only needs a log}; shift 2 ;;
    --rc) PARSE_RC=${2:?--rc needs a value}; shift 2 ;;
    --table-only) MODE=table; shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument '$1'" ;;
  esac
done
for n in BUDGET GRACE TMO LONG_TMO PARSE_RC; do
  [[ ${!n} =~ ^[0-9]+$ ]] || die "$n must be a non-negative integer (got '${!n}')"
done
[[ $SETTLE =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "SSC_CONF_SETTLE must be a number of seconds"
BIN_DIR=$(abspath "$BIN_DIR")
SHIM=$(abspath "$SHIM")
OUT_DIR=$(abspath "$OUT_DIR")
RESULTS=$OUT_DIR/results.tsv
TABLE=$OUT_DIR/table.md

# ---------------------------------------------------------------------------------------------
# Log classification.
#
# nccl-tests 2.19.6 (util.cu) prints, on rank 0 only, one row per size (and per type/op/root):
#   "%12li  %12li  %8s  %6s  %6s" size count type redop root, then twice (out-of-place, in-place)
#   "  %7s  %6s  %6s  %6g" time algbw busbw #wrong ("    N/A" for #wrong without -c);
# then "# Out of bounds values : N OK|FAILED" and "# Avg bus bandwidth : X". Failures are printed
# by any rank: "<host>: Test NCCL failure <file>:<line> '<err> / <last>'", "Test CUDA failure",
# " .. <host> pid <pid>: Test failure <file>:<line>" (the trace; also after wrong results, when
# the binary exits 7), and mpirun adds its own lines for crashed ranks.
ERROR_RE='Test NCCL failure|Test CUDA failure|Test failure|NCCL failure|CUDA failure'
ERROR_RE+='|Segmentation fault|Bus error|Floating point exception|Illegal instruction|Aborted|core dumped'
ERROR_RE+='|terminate called|exited on signal|error while loading shared libraries|symbol lookup error'
ERROR_RE+='|undefined symbol|Invalid number of GPUs|invalid sizes|invalid size specified|invalid option'
ERROR_RE+='|invalid type |invalid op |MPI_ABORT|busy or unavailable|already running|mpirun was unable'
ERROR_RE+='|mpirun noticed|Assertion .* failed|partition-run: |cannot be preloaded'

# parse_log LOG RC: sets P_VERDICT (pass|wrong|error|hang), P_BUSBW (out-of-place busbw at the
# largest size, or N/A), P_BUSBW_IP, P_MAXSIZE, P_ROWS, P_MSG (first error line or a reason).
parse_log() {
  local log=$1 rc=$2 out
  P_VERDICT=error P_BUSBW=N/A P_BUSBW_IP=N/A P_MAXSIZE=N/A P_ROWS=0 P_MSG=-
  if [[ ! -r $log ]]; then
    P_MSG="log missing: $log"
    [[ $rc == 124 || $rc == 137 ]] && P_VERDICT=hang
    return 0
  fi
  out=$(awk -v ERR="$ERROR_RE" '
    function isnum(s) { return s ~ /^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$/ }
    function wrongval(s) { return s != "N/A" && (!isnum(s) || s + 0 != 0) }
    BEGIN { rows = 0; wrong = 0; oob = "none"; oobn = "-"; maxs = -1; bo = "N/A"; bi = "N/A";
            err = ""; fw = ""; note = "" }
    /^# conformance/ { next }
    /Out of bounds values[ \t]*:/ {
      s = $0; sub(/.*Out of bounds values[ \t]*:[ \t]*/, "", s); n = split(s, a, /[ \t]+/)
      oobn = a[1]
      if (a[1] == "0" && a[2] == "OK") { if (oob == "none") oob = "OK" } else oob = "FAILED"
      next
    }
    /^# error: / { if (note == "") note = $0; next }
    {
      if ($1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && NF >= 13 && isnum($8) && isnum($12) &&
          (isnum($9) || $9 == "N/A") && (isnum($13) || $13 == "N/A")) {
        rows++
        if (wrongval($9) || wrongval($13)) { wrong++; if (fw == "") fw = $0 }
        if ($1 + 0 > maxs) { maxs = $1 + 0; bo = $8; bi = $12 }
      }
      if (err == "" && $0 ~ ERR) {
        err = $0  # an error printed after a row preamble: drop "size count type redop root"
        sub(/^[ \t]*[0-9]+[ \t]+[0-9]+[ \t]+[^ \t]+[ \t]+[^ \t]+[ \t]+-?[0-9]+/, "", err)
      }
    }
    END {
      gsub(/[\t\r\037]/, " ", err); gsub(/[\t\r\037]/, " ", fw); gsub(/[\t\r\037]/, " ", note)
      printf "%d\037%d\037%s\037%s\037%s\037%s\037%s\037%s\037%s\037%s\n", rows, wrong, oob, oobn,
             (maxs < 0 ? "N/A" : maxs), bo, bi, err, fw, note
    }' "$log")
  local rows wrong oob oobn maxs bo bi err fw note
  IFS=$'\037' read -r rows wrong oob oobn maxs bo bi err fw note <<<"$out"
  P_ROWS=$rows P_BUSBW=$bo P_BUSBW_IP=$bi P_MAXSIZE=$maxs
  squeeze() { local s=$1; s=${s#"${s%%[![:space:]]*}"}; s=$(tr -s ' ' <<<"$s"); printf '%.160s' "$s"; }
  if [[ $rc == 124 || $rc == 137 ]]; then
    P_VERDICT=hang
    P_MSG="timed out (rc $rc) after $rows rows"
    (( wrong > 0 )) && P_MSG+=", $wrong with #wrong != 0"
    [[ -n $err ]] && P_MSG+="; first error: $(squeeze "$err")"
  elif (( wrong > 0 )) || [[ $oob == FAILED ]]; then
    P_VERDICT=wrong
    if (( wrong > 0 )); then
      P_MSG="$wrong rows with #wrong != 0, first: $(squeeze "$fw")"
    else
      P_MSG="Out of bounds values : $oobn FAILED"
    fi
  elif [[ $rc != 0 || -n $err ]]; then
    P_VERDICT=error
    if [[ -n $err ]]; then P_MSG=$(squeeze "$err")
    elif [[ -n $note ]]; then P_MSG="rc $rc; $(squeeze "$note")"
    else P_MSG="rc $rc, no error line; last line: $(squeeze "$(grep -v -e '^# conformance' -e '^[#[:space:]]*$' "$log" | tail -n 1)")"
    fi
  elif (( rows == 0 )); then
    P_VERDICT=error P_MSG="rc 0 but no result rows"
  elif [[ $oob != OK ]]; then
    P_VERDICT=error P_MSG="rc 0 but no 'Out of bounds values' summary"
  else
    P_VERDICT=pass P_MSG=-
    [[ -n $note ]] && P_MSG="note: $(squeeze "$note")"
  fi
  P_MSG=$(printf '%.200s' "${P_MSG//$'\t'/ }")
  [[ -z $P_MSG ]] && P_MSG=-
  return 0
}

# ---------------------------------------------------------------------------------------------
# The matrix.
is_reducing() { [[ $1 == all_reduce || $1 == reduce_scatter || $1 == reduce ]]; }
has_root() { [[ $1 == broadcast || $1 == reduce ]]; }
SMALL="-b 8 -e 64M -f 8 -n 5 -w 2 -c 1"
BIG="-b 8 -e 1G -f 8 -n 2 -w 1 -c 1"
opt_args() {  # opt_args OPTSET BINARY -> the nccl-tests flags
  case $1 in
    defaults) echo "$BIG" ;;
    dall) if is_reducing "$2"; then echo "$SMALL -d all -o all"; else echo "$SMALL -d all"; fi ;;
    roots) echo "$SMALL -r -1" ;;
    G5) echo "$SMALL -G 5" ;;
    z1) echo "$SMALL -z 1" ;;
    R1) echo "$SMALL -R 1" ;;
    R2) echo "$SMALL -R 2" ;;
    u1) echo "$SMALL -u 1" ;;
  esac
}
opt_label() {  # opt_label OPTSET BINARY -> the table's options column
  case $1 in
    defaults) echo "defaults (-b 8 -e 1G)" ;;
    dall) if is_reducing "$2"; then echo "-d all -o all"; else echo "-d all"; fi ;;
    roots) echo "-r -1 (every root)" ;;
    G5) echo "-G 5" ;; z1) echo "-z 1" ;; R1) echo "-R 1" ;; R2) echo "-R 2" ;; u1) echo "-u 1" ;;
  esac
}
opt_timeout() { if [[ $1 == defaults || $1 == dall ]]; then echo "$LONG_TMO"; else echo "$TMO"; fi; }
applies() { [[ $1 != roots ]] || has_root "$2"; }  # applies OPTSET BINARY

PLAN=()  # run ids, in order of importance
plan() { local id="$1.$2.K$3.$4"; [[ -z $ONLY || $id =~ $ONLY ]] && PLAN+=("$id"); return 0; }
build_plan() {
  local b o k
  for b in "${BINARIES[@]}"; do plan "$b" defaults 8 shim; done
  for b in "${BINARIES[@]}"; do plan "$b" defaults 1 shim; plan "$b" defaults 1 nccl; done
  for k in 4 2; do for b in "${BINARIES[@]}"; do plan "$b" defaults "$k" shim; done; done
  if (( QUICK )); then
    plan all_reduce dall 8 shim; plan all_reduce dall 1 shim; plan all_reduce dall 1 nccl
    return 0
  fi
  for o in dall roots G5 R1 R2 z1 u1; do
    for b in "${BINARIES[@]}"; do applies "$o" "$b" && plan "$b" "$o" 8 shim; done
    for b in "${BINARIES[@]}"; do
      applies "$o" "$b" && { plan "$b" "$o" 1 shim; plan "$b" "$o" 1 nccl; }
    done
  done
  return 0
}

# ---------------------------------------------------------------------------------------------
# Results (results.tsv: one line per run; the last line of an id wins, but a skip never replaces
# an earlier real result) and the table.
HEADER=$'id\tbinary\toptset\tK\tlib\tverdict\tbusbw_oop\tbusbw_ip\tmaxsize\trc\tseconds\tlog\tmessage'
record() {  # record ID VERDICT BUSBW BUSBW_IP MAXSIZE RC SECONDS LOG MESSAGE
  local id=$1 b o k l
  IFS=. read -r b o k l <<<"$id"
  local msg=${9//$'\t'/ }
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$id" "$b" "$o" "${k#K}" "$l" \
    "$2" "${3:--}" "${4:--}" "${5:--}" "${6:--}" "${7:--}" "${8:--}" "${msg:--}" >>"$RESULTS"
}

declare -A V=() BW=() MSG=() LOGF=()
load_results() {
  V=() BW=() MSG=() LOGF=()
  [[ -r $RESULTS ]] || return 0
  local id b o k l v bo lg m
  while IFS=$'\t' read -r id b o k l v bo _ _ _ _ lg m; do
    [[ $id == id || -z $id ]] && continue
    if [[ $v == skip && -n ${V[$id]:-} && ${V[$id]} != skip ]]; then continue; fi
    V[$id]=$v BW[$id]=$bo MSG[$id]=$m LOGF[$id]=$lg
  done <"$RESULTS"
}

failing() { [[ $1 == wrong || $1 == error || $1 == hang ]]; }

# print_table: the markdown table, the non-pass cells, a summary; sets TABLE_RC.
TABLE_RC=0
print_table() {
  load_results
  declare -A planned=()
  local id
  for id in "${PLAN[@]}"; do planned[$id]=1; done
  local b o c cell v fails=0 excused=0 passes=0 skips=0 others=0 listing=""
  echo "| test | options | ${COLUMN_TITLES[0]} | ${COLUMN_TITLES[1]} | ${COLUMN_TITLES[2]} | ${COLUMN_TITLES[3]} | ${COLUMN_TITLES[4]} |"
  echo "|---|---|---|---|---|---|---|"
  for b in "${BINARIES[@]}"; do
    for o in "${OPTSETS[@]}"; do
      applies "$o" "$b" || continue
      local any=0 cells=""
      for c in "${COLUMNS_[@]}"; do
        id="$b.$o.$c"
        [[ -n ${V[$id]:-} || -n ${planned[$id]:-} ]] && any=1
        v=${V[$id]:--}
        if [[ $v == pass ]]; then cell="pass ${BW[$id]:-N/A}"; else cell=$v; fi
        cells+=" $cell |"
      done
      (( any )) || continue
      echo "| $b | $(opt_label "$o" "$b") |$cells"
      local ref=${V[$b.$o.K1.nccl]:--}
      for c in "${COLUMNS_[@]}"; do
        id="$b.$o.$c"; v=${V[$id]:--}
        case $v in
          pass) passes=$((passes + 1)) ;;
          skip)
            skips=$((skips + 1))
            [[ ${MSG[$id]:--} == "budget of"* ]] ||
              listing+="- $b $(opt_label "$o" "$b"), ${c%%.*} ${c#*.}: skip: ${MSG[$id]:--} [${LOGF[$id]:--}]"$'\n'
            ;;
          -) ;;
          *)
            local tag=""
            if [[ $c == *.nccl ]]; then
              tag=" (real NCCL)"; others=$((others + 1))
            elif failing "$ref"; then
              tag=" (excused: real NCCL fails this row too)"; excused=$((excused + 1))
            else
              fails=$((fails + 1))
            fi
            listing+="- $b $(opt_label "$o" "$b"), ${c%%.*} ${c#*.}: **$v**$tag: ${MSG[$id]:--} [${LOGF[$id]:--}]"$'\n'
            ;;
        esac
      done
    done
  done
  echo
  if [[ -n $listing ]]; then
    echo "Non-pass cells (first error line, log file):"
    echo
    printf '%s' "$listing"
    echo
  fi
  echo "Summary: $passes pass, $fails failing shim cells, $excused excused (real NCCL fails too)," \
       "$others non-pass real-NCCL cells, $skips skipped (budget/setup). Cells: busbw GB/s" \
       "(out-of-place, largest size); '-' = not run."
  TABLE_RC=0
  (( fails > 0 )) && TABLE_RC=1
  return 0
}

# ---------------------------------------------------------------------------------------------
if [[ $MODE == parse ]]; then
  parse_log "$PARSE_LOG" "$PARSE_RC"
  printf 'verdict\t%s\nbusbw_oop\t%s\nbusbw_ip\t%s\nmaxsize\t%s\nrows\t%s\nmessage\t%s\n' \
    "$P_VERDICT" "$P_BUSBW" "$P_BUSBW_IP" "$P_MAXSIZE" "$P_ROWS" "$P_MSG"
  exit 0
fi

build_plan
if [[ $MODE == table ]]; then
  [[ -r $RESULTS ]] || die "no $RESULTS"
  PLAN=()  # show what was recorded only
  print_table >"$TABLE"
  cat "$TABLE"
  exit "$TABLE_RC"
fi
(( ${#PLAN[@]} )) || die "no run matches --only '$ONLY'"

# Environment of every run. The ranks get LD_PRELOAD from `env` only: mpirun and the runner's
# helpers are never preloaded.
unset LD_PRELOAD
export NCCL_NVLS_ENABLE=0
export CUDA_MPS_PIPE_DIRECTORY=${CUDA_MPS_PIPE_DIRECTORY:-/tmp/mps_pipe}
export CUDA_MPS_LOG_DIRECTORY=${CUDA_MPS_LOG_DIRECTORY:-/tmp/mps_log}
# Bounded waits inside Starscream turn a stuck peer into an error line instead of a timeout.
export STARSCREAM_TIMEOUT=${STARSCREAM_TIMEOUT:-20}

find_real_nccl() {
  local d
  if [[ -n $NCCL_LIB ]]; then
    [[ -e $NCCL_LIB/libnccl.so.2 ]] && { abspath "$NCCL_LIB"; return 0; }
    echo "run.sh: --nccl-lib $NCCL_LIB has no libnccl.so.2" >&2
    return 1
  fi
  d=$(python3 -c 'import os, nvidia.nccl as m
f = getattr(m, "__file__", None)
print(os.path.dirname(f) if f else list(m.__path__)[0])' 2>/dev/null) || d=
  if [[ -n $d && -e $d/lib/libnccl.so.2 ]]; then echo "$d/lib"; return 0; fi
  if [[ -e /usr/local/cuda/lib64/libnccl.so.2 ]]; then echo /usr/local/cuda/lib64; return 0; fi
  return 1
}
REAL_NCCL=$(find_real_nccl) || REAL_NCCL=
SHIM_DIR=$(dirname "$SHIM")

# Preflight.
need_shim=0 need_nccl=0
for id in "${PLAN[@]}"; do [[ $id == *.shim ]] && need_shim=1; [[ $id == *.nccl ]] && need_nccl=1; done
if (( ! DRY )); then
  [[ -x $PARTITION_RUN ]] || die "missing $PARTITION_RUN"
  command -v mpirun >/dev/null || die "mpirun not found"
  command -v nvidia-cuda-mps-control >/dev/null || die "nvidia-cuda-mps-control not found (needs the NVIDIA driver)"
  (( need_shim )) && [[ ! -r $SHIM ]] && die "shim not found: $SHIM (--shim or SSC_NCCL_SHIM)"
fi
[[ -d $BIN_DIR ]] || { (( DRY )) || die "binary directory not found: $BIN_DIR (--bin or NCCL_TESTS_BIN)"; }
(( need_nccl )) && [[ -z $REAL_NCCL ]] && echo "run.sh: real NCCL not found: the K=1 nccl column is skipped (--nccl-lib)" >&2

# Environment assignments for `env` in front of the binary (after partition-run.sh K).
LDP=${LD_LIBRARY_PATH:-}
SHIM_LDP=$SHIM_DIR${LDP:+:$LDP}
# The binaries need a libnccl.so.2 to load at all; where the loader finds none, let the shim's
# nccl-compat link (another name for the shim itself) satisfy it.
if [[ -e $SHIM_DIR/nccl-compat/libnccl.so.2 && -e $BIN_DIR/all_reduce_perf ]] &&
   LD_LIBRARY_PATH=$SHIM_LDP ldd "$BIN_DIR/all_reduce_perf" 2>/dev/null | grep -q 'libnccl.so.2 => not found'; then
  SHIM_LDP=$SHIM_DIR/nccl-compat:$SHIM_LDP
fi
NCCL_LDP=$REAL_NCCL${LDP:+:$LDP}
# Where the shim cannot be preloaded (a dependency not found), ld.so says so on every rank and
# the binary silently runs on the real NCCL: check once here (and the logs are checked for it).
if (( need_shim && ! DRY )) && [[ -e $BIN_DIR/all_reduce_perf ]]; then
  if LD_PRELOAD=$SHIM LD_LIBRARY_PATH=$SHIM_LDP ldd "$BIN_DIR/all_reduce_perf" 2>&1 |
       grep -E 'not found|cannot be preloaded' >&2; then
    echo "run.sh: WARNING: the shim or a library it needs does not load (above); shim runs will fail" >&2
  fi
fi
run_env() {  # run_env LIB TAG -> one assignment per line
  if [[ $1 == shim ]]; then
    echo "LD_PRELOAD=$SHIM"
    echo "LD_LIBRARY_PATH=$SHIM_LDP"
  else
    echo "LD_LIBRARY_PATH=$NCCL_LDP"
  fi
  echo "NCCL_TESTS_DEVICE=0"
  echo "NCCL_NVLS_ENABLE=0"
  echo "SSC_CONFORMANCE_TAG=$2"
}

# Every rank carries SSC_CONFORMANCE_TAG=<runner pid>-<run>: leftovers of an earlier run of this
# runner are found by that tag (exactly the processes it started) and killed by pid.
RUNNER_TAG=$$
kill_leftovers() {
  local files p pids=()
  files=$(grep -lsz "^SSC_CONFORMANCE_TAG=${RUNNER_TAG}-" /proc/[0-9]*/environ 2>/dev/null) || true
  for p in $files; do p=${p#/proc/}; pids+=("${p%/environ}"); done
  (( ${#pids[@]} )) || return 0
  echo "  (killing ${#pids[@]} leftover rank(s) of the previous run: ${pids[*]})"
  kill -TERM "${pids[@]}" 2>/dev/null
  sleep 0.5
  kill -KILL "${pids[@]}" 2>/dev/null
  return 0
}
reset_mps() {  # before each run: no leftover ranks, no MPS daemon (partition-run.sh starts a fresh one)
  kill_leftovers
  echo quit | timeout 10 nvidia-cuda-mps-control >/dev/null 2>&1
  sleep "$SETTLE"
  local _
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    # nvidia-cuda-mps-control and -server: the kernel's 15-character process name of both
    pgrep -x nvidia-cuda-mps >/dev/null 2>&1 || return 0
    sleep 0.5
  done
  echo "  (warning: an MPS daemon is still running after quit)"
}

INTERRUPTED=0 CHILD=
# shellcheck disable=SC2317  # invoked by the trap
on_signal() {
  INTERRUPTED=1
  [[ -n $CHILD ]] && kill -TERM "$CHILD" 2>/dev/null
}
trap on_signal INT TERM

mkdir -p "$OUT_DIR" || die "cannot create $OUT_DIR"
if (( ! MERGE )) || [[ ! -s $RESULTS ]]; then printf '%s\n' "$HEADER" >"$RESULTS"; fi

command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1
echo "conformance: ${#PLAN[@]} runs; bin=$BIN_DIR shim=$SHIM real-nccl=${REAL_NCCL:-none} out=$OUT_DIR" \
     "budget=${BUDGET}s (+${GRACE}s) timeouts=${TMO}/${LONG_TMO}s"
START=$SECONDS
DEADLINE=$((BUDGET + GRACE))
SKIPPING=0
n=0
for id in "${PLAN[@]}"; do
  n=$((n + 1))
  IFS=. read -r b o k lib <<<"$id"
  k=${k#K}
  args=$(opt_args "$o" "$b")
  tmo=$(opt_timeout "$o")
  bin=$BIN_DIR/${b}_perf
  logname=$id.log
  log=$OUT_DIR/$logname
  tag=$RUNNER_TAG-$n
  mapfile -t envs < <(run_env "$lib" "$tag")
  # shellcheck disable=SC2206  # the flags are single words
  cmd=(timeout -k 10 "$tmo" "$PARTITION_RUN" "$k" env -u LD_PRELOAD "${envs[@]}" "$bin" $args)
  if (( DRY )); then
    printf '%3d %-32s %s\n' "$n" "$id" "${cmd[*]}"
    continue
  fi
  elapsed=$((SECONDS - START))
  if (( INTERRUPTED )); then
    record "$id" skip - - - - 0 - "interrupted"; continue
  fi
  if (( elapsed >= BUDGET )); then
    (( SKIPPING )) || echo "budget of ${BUDGET}s spent at ${elapsed}s: the remaining runs are skipped"
    SKIPPING=1
    record "$id" skip - - - - 0 - "budget of ${BUDGET}s spent"; continue
  fi
  if [[ $lib == nccl && -z $REAL_NCCL ]]; then
    record "$id" skip - - - - 0 - "real NCCL not found"; continue
  fi
  if [[ ! -x $bin ]]; then
    record "$id" error - - - - 0 - "binary not found: $bin"
    printf '[%3d/%d %4ds] %-32s error (binary not found)\n' "$n" "${#PLAN[@]}" "$elapsed" "$id"
    continue
  fi
  eff=$tmo
  (( DEADLINE - elapsed < eff )) && eff=$((DEADLINE - elapsed))
  if (( eff < tmo && eff < 15 )); then
    record "$id" skip - - - - 0 - "budget of ${BUDGET}s spent"; continue
  fi
  cmd[3]=$eff
  reset_mps
  {
    echo "# conformance: id=$id K=$k lib=$lib timeout=${eff}s"
    echo "# conformance: cmd: ${cmd[*]}"
    ldp=$SHIM_LDP; [[ $lib == nccl ]] && ldp=$NCCL_LDP
    nccl_line=$(LD_LIBRARY_PATH=$ldp ldd "$bin" 2>/dev/null | grep -m1 libnccl | tr -s ' \t' ' ')
    echo "# conformance: ldd: ${nccl_line:-no libnccl line}"
  } >"$log"
  t0=$SECONDS
  "${cmd[@]}" </dev/null >>"$log" 2>&1 &
  CHILD=$!
  wait "$CHILD"; rc=$?
  while kill -0 "$CHILD" 2>/dev/null; do wait "$CHILD"; rc=$?; done  # a signal interrupted wait
  CHILD=
  dt=$((SECONDS - t0))
  echo "# conformance: rc=$rc seconds=$dt" >>"$log"
  parse_log "$log" "$rc"
  verdict=$P_VERDICT msg=$P_MSG
  if [[ $verdict == hang ]] && (( eff < tmo )); then
    verdict=skip msg="cut at ${eff}s by the budget (${tmo}s timeout): $msg"
  fi
  if (( INTERRUPTED )) && [[ $verdict != pass ]]; then verdict=skip msg="interrupted: $msg"; fi
  record "$id" "$verdict" "$P_BUSBW" "$P_BUSBW_IP" "$P_MAXSIZE" "$rc" "$dt" "$logname" "$msg"
  shown=$verdict
  [[ $verdict == pass ]] && shown="pass $P_BUSBW"
  printf '[%3d/%d %4ds] %-32s %-12s (%ds)\n' "$n" "${#PLAN[@]}" "$((SECONDS - START))" "$id" "$shown" "$dt"
done
(( DRY )) && exit 0
reset_mps >/dev/null

echo
print_table >"$TABLE"
cat "$TABLE"
echo "(table: $TABLE, results: $RESULTS, logs: $OUT_DIR/*.log; $((SECONDS - START)) s)"
(( INTERRUPTED )) && exit 130
exit "$TABLE_RC"
