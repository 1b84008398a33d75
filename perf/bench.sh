#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The benchmark suite: nccl-tests through libstarscream-nccl.so on GPU 0 split into K MPS
# partitions, every collective with the library's own choice ("default") and with each algorithm
# forced, next to the copy roofline measured in the same run; writes OUT/bench.json, OUT/bench.md
# (perf/bench_report.py) and plots. docs/benchmarks.md says what it measures and how to
# reproduce the report's figures.
#
#   perf/bench.sh --build DIR --nccl-tests DIR [--out DIR] [--ks "2 3 4 8"]
#       [--colls "all_reduce all_gather reduce_scatter"]
#       [--algos "default ring bidir_ring direct hierarchical symmetric"]
#       [--min auto] [--max 1G] [--factor 4] [--iters 20] [--warmup 5] [--timeout 60]
#       [--until EPOCH] [--torch] [--moe] [--label NAME] [--commit SHA] [--dry-run]
#
#   --build DIR       a Starscream build with the CUDA backend: DIR/lib/libstarscream-nccl.so and
#                     DIR/lib/nccl-compat/ (the shim under the name libnccl.so.2)
#   --nccl-tests DIR  the built nccl-tests binaries (MPI=1): DIR/all_reduce_perf, ...
#   --out DIR         results (default ./bench-out): bench.json, bench.md, plots/, logs/
#   --ks LIST         partition counts K; each runs K ranks on GPU 0 under MPS, 100/K % of the
#                     SMs each (as tools/emulate/partition-run.sh)
#   --colls LIST      nccl-tests collectives (all_reduce reduce_scatter all_gather broadcast reduce
#                     alltoall sendrecv); sendrecv and alltoall run only as "default" (grouped
#                     sends and receives: no algorithm to force)
#   --algos LIST      default (the library's choice: STARSCREAM_ALGO unset), ring, flat_ring,
#                     bidir_ring, direct, hierarchical, symmetric (STARSCREAM_ALGO=name), online
#                     (nothing forced, STARSCREAM_TUNE_ONLINE=3: the size classes try the tuner's
#                     candidates; its sweep runs twice, -N 2, so that every size has a cycle after
#                     its class decided). A name given twice runs twice and the report keeps each
#                     size's faster run: below 1 MiB one run's noise can pass the report's 1.10 line
#   --min, --max, --factor  nccl-tests' -b, -e, -f (K, M, G suffixes: binary). --min auto (the
#                     default) is the smallest MAX / FACTOR^n of at least 8 bytes, so the sweep
#                     ends on MAX: 16 B .. 1 GiB by 4 visits 1 KiB, 64 KiB, 1 MiB, ... 1 GiB
#   --iters, --warmup nccl-tests' -n, -w (timed and untimed calls per size)
#   --timeout S       per-run limit in seconds (a hang costs at most this)
#   --until EPOCH     start no run at or after this time (seconds since the epoch); a run in
#                     flight is cut 20 s after it. What ran is written all the same
#   --torch           also PyTorch's dist.all_reduce of 256 MiB float32 at each K through the shim
#                     (tests/nccl/torch_latency.py; busbw), first thing at each K
#   --moe             also the mixture-of-experts all-to-all and the pipeline ring through PyTorch
#                     at each K (perf/moe_alltoall.py --mode both, its default shapes, against this
#                     run's copy roofline; with 64 experts rounded down to a multiple of K), after
#                     --torch
#   --label NAME      the card's name in docs/benchmarks.md's markers (default: from the GPU's
#                     name, "H100" for "NVIDIA H100 80GB HBM3")
#   --commit SHA      recorded when the tree is not a git checkout (else git rev-parse HEAD)
#   --dry-run         check the arguments, print the plan and each run's command, run nothing
#
# Every run: nccl-tests -b MIN -e MAX -f FACTOR -n ITERS -w WARMUP -c 0 on plain buffers (no -R:
# what NCCL programs pass), NCCL_NVLS_ENABLE=0 NCCL_TESTS_DEVICE=0, mpirun --oversubscribe
# --bind-to none (--allow-run-as-root as root), the shim by LD_PRELOAD on the ranks only. MPS is
# started once per K, restarted after a failed run (a dead rank can leave it unusable) and always
# stopped at exit. Times are nccl-tests' out-of-place column; -c 0 leaves correctness to
# tools/conformance/run.sh. Exit status: 0 every planned run that started passed (runs skipped by
# --until included), 1 some run failed, 2 bad arguments or setup.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/.." && pwd -P)
# The command line as a shell would take it back: plain words bare, others in single quotes.
COMMAND=
for a in "$0" "$@"; do
  if [[ $a =~ ^[A-Za-z0-9_./=:,+@%-]+$ ]]; then COMMAND+=" $a"; else COMMAND+=" '${a//\'/\'\\\'\'}'"; fi
done
COMMAND=${COMMAND# }

BUILD='' NT='' OUT=$PWD/bench-out KS="2 3 4 8" COLLS="all_reduce all_gather reduce_scatter"
ALGOS="default ring bidir_ring direct hierarchical symmetric"
MIN=auto MAX=1G FACTOR=4 ITERS=20 WARMUP=5 TIMEOUT=60 UNTIL=0 TORCH=0 MOE=0 LABEL='' COMMIT='' DRY=0
GRACE=20  # how long a run may go on past --until
KNOWN_COLLS=" all_reduce reduce_scatter all_gather broadcast reduce alltoall sendrecv "
KNOWN_ALGOS=" default ring flat_ring bidir_ring direct hierarchical symmetric online "
TORCH_BYTES=268435456

die() { echo "bench.sh: $*" >&2; exit 2; }
usage() { sed -n '2,/^set -uo/p' "$0" | sed '/^# SPDX-License-Identifier:/d; $d; s/^# \{0,1\}//'; }
need() { [[ $# -ge 2 && -n $2 ]] || die "$1 needs a value (--help)"; }
while (( $# )); do
  case $1 in
    --build) need "$@"; BUILD=$2; shift 2 ;;
    --nccl-tests) need "$@"; NT=$2; shift 2 ;;
    --out) need "$@"; OUT=$2; shift 2 ;;
    --ks) need "$@"; KS=$2; shift 2 ;;
    --colls) need "$@"; COLLS=$2; shift 2 ;;
    --algos) need "$@"; ALGOS=$2; shift 2 ;;
    --min) need "$@"; MIN=$2; shift 2 ;;
    --max) need "$@"; MAX=$2; shift 2 ;;
    --factor) need "$@"; FACTOR=$2; shift 2 ;;
    --iters) need "$@"; ITERS=$2; shift 2 ;;
    --warmup) need "$@"; WARMUP=$2; shift 2 ;;
    --timeout) need "$@"; TIMEOUT=$2; shift 2 ;;
    --until) need "$@"; UNTIL=$2; shift 2 ;;
    --torch) TORCH=1; shift ;;
    --moe) MOE=1; shift ;;
    --label) need "$@"; LABEL=$2; shift 2 ;;
    --commit) need "$@"; COMMIT=$2; shift 2 ;;
    --dry-run) DRY=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown argument '$1' (--help)" ;;
  esac
done

# ---------------------------------------------------------------------------------------------
# Arguments
bytes_of() {  # 1G -> 1073741824; prints nothing for a malformed size
  local v=$1 n mult=1
  [[ $v =~ ^([0-9]+)([KMGkmg]?)$ ]] || return 1
  n=${BASH_REMATCH[1]}
  case ${BASH_REMATCH[2]} in K|k) mult=1024 ;; M|m) mult=$((1 << 20)) ;; G|g) mult=$((1 << 30)) ;; esac
  (( ${#n} <= 12 )) || return 1
  echo $((10#$n * mult))
}
uint() {  # uint FLAG VARIABLE: checks the value and drops leading zeros (not octal to bash)
  local v=${!2}
  if ! [[ $v =~ ^[0-9]+$ ]] || (( ${#v} > 12 )); then die "$1 must be a whole number (got '$v')"; fi
  printf -v "$2" '%d' "$((10#$v))"
}
uint --factor FACTOR; uint --iters ITERS; uint --warmup WARMUP; uint --timeout TIMEOUT; uint --until UNTIL
(( FACTOR >= 2 )) || die "--factor must be at least 2 (got $FACTOR)"
(( ITERS >= 1 )) || die "--iters must be at least 1"
(( TIMEOUT >= 1 )) || die "--timeout must be at least 1 second"
MAXB=$(bytes_of "$MAX") || die "--max must be a size such as 1G, 256M or 4096 (got '$MAX')"
(( MAXB >= 8 )) || die "--max must be at least 8 bytes (got '$MAX')"
if [[ $MIN == auto ]]; then
  MINB=$MAXB
  while (( MINB % FACTOR == 0 && MINB / FACTOR >= 8 )); do MINB=$((MINB / FACTOR)); done
else
  MINB=$(bytes_of "$MIN") || die "--min must be 'auto' or a size such as 8 or 1K (got '$MIN')"
  (( MINB >= 1 && MINB <= MAXB )) || die "--min must be between 1 byte and --max (got '$MIN')"
fi
read -r -a KS_A <<<"$KS"
read -r -a COLLS_A <<<"$COLLS"
read -r -a ALGOS_A <<<"$ALGOS"
(( ${#KS_A[@]} )) || die "--ks is empty"
(( ${#COLLS_A[@]} )) || die "--colls is empty"
(( ${#ALGOS_A[@]} )) || die "--algos is empty"
for k in "${KS_A[@]}"; do
  [[ $k =~ ^[1-9][0-9]{0,2}$ ]] || die "--ks: K must be a whole number from 1 to 999 (got '$k')"
done
for c in "${COLLS_A[@]}"; do
  [[ $KNOWN_COLLS == *" $c "* ]] || die "--colls: unknown collective '$c' (known:${KNOWN_COLLS% })"
done
for a in "${ALGOS_A[@]}"; do
  [[ $KNOWN_ALGOS == *" $a "* ]] || die "--algos: unknown algorithm '$a' (known:${KNOWN_ALGOS% })"
done
[[ -z $LABEL || $LABEL =~ ^[A-Za-z0-9_.]+$ ]] || die "--label: letters, digits, '_' and '.' only (got '$LABEL')"
[[ -n $BUILD ]] || die "--build DIR is required (a Starscream CUDA build holding lib/libstarscream-nccl.so)"
[[ -n $NT ]] || die "--nccl-tests DIR is required (the built nccl-tests binaries)"
d=$(cd "$BUILD" 2>/dev/null && pwd) || die "--build: no directory '$BUILD'"
BUILD=$d
d=$(cd "$NT" 2>/dev/null && pwd) || die "--nccl-tests: no directory '$NT'"
NT=$d
SHIM=$BUILD/lib/libstarscream-nccl.so
[[ -r $SHIM ]] || die "--build: $SHIM not found (build with STARSCREAM_GPU=cuda where nccl.h is found; docs/nccl-shim.md)"
[[ -d $BUILD/lib/nccl-compat ]] || echo "bench.sh: warning: no $BUILD/lib/nccl-compat (binaries that need libnccl.so.2 may not load)" >&2
for c in "${COLLS_A[@]}"; do
  [[ -x $NT/${c}_perf ]] || die "--nccl-tests: $NT/${c}_perf not found or not executable"
done
if (( TORCH )); then
  [[ -r $REPO/tests/nccl/torch_latency.py ]] || die "--torch: $REPO/tests/nccl/torch_latency.py not found"
fi
if (( MOE )); then
  [[ -r $REPO/perf/moe_alltoall.py ]] || die "--moe: $REPO/perf/moe_alltoall.py not found"
fi
if [[ -n ${STARSCREAM_ALGO:-} ]]; then
  echo "bench.sh: warning: ignoring STARSCREAM_ALGO=$STARSCREAM_ALGO from the environment (--algos chooses)" >&2
  unset STARSCREAM_ALGO
fi

export NCCL_NVLS_ENABLE=0 NCCL_TESTS_DEVICE=0 STARSCREAM_TIMEOUT=${STARSCREAM_TIMEOUT:-20}
export CUDA_MPS_PIPE_DIRECTORY=${CUDA_MPS_PIPE_DIRECTORY:-/tmp/mps_pipe}
export CUDA_MPS_LOG_DIRECTORY=${CUDA_MPS_LOG_DIRECTORY:-/tmp/mps_log}
root_flag=()
[[ $(id -u) -eq 0 ]] && root_flag=(--allow-run-as-root)
LDP=$BUILD/lib/nccl-compat:$BUILD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
TAG_BASE=$$
pct_of() { awk -v k="$1" 'BEGIN { printf "%.6g", 100 / k }'; }

# The command of one run: run_cmd K COLL ALGO TAG LIMIT -> CMD array. Algorithm and shim go on
# the rank program (env), so mpirun itself never loads the shim.
run_cmd() {
  local k=$1 coll=$2 algo=$3 tag=$4 limit=$5 algo_env=(-u STARSCREAM_ALGO) prog ldp
  [[ $algo != default && $algo != torch && $algo != moe ]] && algo_env=(STARSCREAM_ALGO="$algo")
  [[ $algo == online ]] && algo_env=(-u STARSCREAM_ALGO STARSCREAM_TUNE_ONLINE=3)
  if [[ $coll == torch || $coll == moe ]]; then
    if [[ $coll == torch ]]; then
      prog=(python3 "$REPO/tests/nccl/torch_latency.py" bench "$TORCH_BYTES")
    else
      # The experts must spread evenly over the ranks; the roofline is this run's (C in GB/s).
      prog=(python3 "$REPO/perf/moe_alltoall.py" --mode both --experts "$((64 / k * k))"
            ${ROOF_GBPS:+--roofline "$ROOF_GBPS"})
    fi
    ldp=$BUILD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}  # torch loads its own libnccl.so.2; the shim overrides it
  else
    prog=("$NT/${coll}_perf" -b "$MINB" -e "$MAXB" -f "$FACTOR" -n "$ITERS" -w "$WARMUP" -c 0)
    [[ $algo == online ]] && prog+=(-N 2)
    ldp=$LDP
  fi
  CMD=(timeout -k 5 "$limit" mpirun "${root_flag[@]}" --oversubscribe --bind-to none -np "$k"
       -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY
       -x CUDA_MPS_ACTIVE_THREAD_PERCENTAGE="$(pct_of "$k")"
       -x NCCL_NVLS_ENABLE -x NCCL_TESTS_DEVICE -x STARSCREAM_TIMEOUT
       env -u LD_PRELOAD "${algo_env[@]}" LD_PRELOAD="$SHIM" LD_LIBRARY_PATH="$ldp"
       SSC_BENCH_TAG="$tag" PYTHONUNBUFFERED=1 "${prog[@]}")
}

# The plan: per K, torch and moe first (if asked), then per collective each algorithm in --algos
# order.
PLAN=()
ROOF_GBPS=''
for k in "${KS_A[@]}"; do
  (( TORCH )) && PLAN+=("$k torch torch")
  (( MOE )) && PLAN+=("$k moe moe")
  for c in "${COLLS_A[@]}"; do
    for a in "${ALGOS_A[@]}"; do
      # sendrecv and alltoall reach the library as grouped sends and receives, whose path no
      # STARSCREAM_ALGO names, and online tuning leaves them alone: only the default runs (once
      # per "default" in --algos).
      [[ ( $c == sendrecv || $c == alltoall ) && $a != default ]] && continue
      PLAN+=("$k $c $a")
    done
  done
done

if (( DRY )); then
  echo "# bench.sh --dry-run: ${#PLAN[@]} runs; sizes $MINB..$MAXB by $FACTOR, -n $ITERS -w $WARMUP -c 0;" \
       "per-run limit ${TIMEOUT}s; out $OUT"
  echo "# first: the copy roofline (perf/copy_roofline.cu with nvcc, else python3 + torch), then per K: MPS up, runs, MPS down"
  n=0
  for p in "${PLAN[@]}"; do
    n=$((n + 1))
    read -r k c a <<<"$p"
    run_cmd "$k" "$c" "$a" "$TAG_BASE-$n" "$TIMEOUT"
    printf 'run %d K=%s %s %s: %s\n' "$n" "$k" "$c" "$a" "${CMD[*]}"
  done
  exit 0
fi

# ---------------------------------------------------------------------------------------------
# A real run
for tool in nvidia-smi nvidia-cuda-mps-control mpirun python3; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool not found: this needs an NVIDIA GPU, its driver (MPS), Open MPI and python3"
done
mkdir -p "$OUT/logs" || die "cannot create $OUT/logs"
OUT=$(cd "$OUT" && pwd)
INDEX=$OUT/runs.tsv
: >"$INDEX"
rm -f "$OUT/bench.json" "$OUT/bench.md"
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"

MPS_UP=0
mps_stop() {
  echo quit | timeout 10 nvidia-cuda-mps-control >/dev/null 2>&1
  MPS_UP=0
  local _
  for _ in 1 2 3 4 5 6 7 8 9 10; do  # the daemon exits once its clients are gone
    pgrep -x nvidia-cuda-mps >/dev/null 2>&1 || return 0
    sleep 0.5
  done
  return 0
}
mps_start() {
  mps_stop
  nvidia-cuda-mps-control -d || return 1
  MPS_UP=1
  sleep 1
}
# Leftover ranks of a failed run carry SSC_BENCH_TAG=<this script's pid>-<run>: exactly the
# processes this script started, killed by pid so nothing else on the machine is touched.
kill_leftovers() {
  local files p pids=()
  files=$(grep -lsz "^SSC_BENCH_TAG=${TAG_BASE}-" /proc/[0-9]*/environ 2>/dev/null) || true
  for p in $files; do p=${p#/proc/}; pids+=("${p%/environ}"); done
  (( ${#pids[@]} )) || return 0
  echo "# killing ${#pids[@]} leftover rank(s): ${pids[*]}"
  kill -TERM "${pids[@]}" 2>/dev/null
  sleep 0.5
  kill -KILL "${pids[@]}" 2>/dev/null
  return 0
}

INTERRUPTED=0 CHILD=''
# shellcheck disable=SC2317  # invoked by the trap
on_signal() { INTERRUPTED=1; [[ -n $CHILD ]] && kill -TERM "$CHILD" 2>/dev/null; }
trap on_signal INT TERM
trap 'kill_leftovers >/dev/null; (( MPS_UP )) && mps_stop' EXIT

# The card and the tree.
IFS=, read -r CARD DRIVER < <(nvidia-smi -i 0 --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null)
CARD=$(echo "${CARD:-}" | sed 's/^ *//; s/ *$//') DRIVER=$(echo "${DRIVER:-}" | sed 's/^ *//; s/ *$//')
[[ -n $CARD ]] || die "nvidia-smi reports no GPU 0"
DIRTY=false
# Only when REPO is a checkout's top: a copy of the tree inside another repository (an exported
# build tree) must not record that other repository's commit.
if [[ $(git -C "$REPO" rev-parse --show-toplevel 2>/dev/null) == "$REPO" ]] &&
   GIT_COMMIT=$(git -C "$REPO" rev-parse HEAD 2>/dev/null); then
  [[ -n $COMMIT && $COMMIT != "$GIT_COMMIT"* ]] && echo "bench.sh: warning: --commit $COMMIT ignored: the tree is at $GIT_COMMIT" >&2
  COMMIT=$GIT_COMMIT
  [[ -n $(git -C "$REPO" status --porcelain --untracked-files=no 2>/dev/null) ]] && DIRTY=true
fi
DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)
echo "# $CARD, driver $DRIVER; commit ${COMMIT:-unknown}$([[ $DIRTY == true ]] && echo ' (uncommitted changes)'); $DATE"

# The roofline: one process on the whole GPU (MPS not running yet).
ROOF_JSON=
if command -v nvcc >/dev/null 2>&1 &&
   nvcc -O2 -o "$OUT/copy_roofline" "$HERE/copy_roofline.cu" >"$OUT/logs/copy_roofline.build.log" 2>&1; then
  ROOF_JSON=$(timeout 120 "$OUT/copy_roofline" 2>>"$OUT/logs/copy_roofline.build.log" | tail -n 1)
fi
if [[ -z $ROOF_JSON ]]; then
  echo "# copy_roofline.cu did not build or run (logs/copy_roofline.build.log): measuring with python3 + torch"
  ROOF_JSON=$(timeout 120 python3 - 2>>"$OUT/logs/copy_roofline.build.log" <<'EOF'
import json, statistics, torch
n, samples = 1 << 30, 30
a = torch.ones(n, dtype=torch.uint8, device="cuda"); b = torch.empty_like(a)
for _ in range(5): b.copy_(a)
torch.cuda.synchronize()
ms = []
for _ in range(samples):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); b.copy_(a); e.record(); e.synchronize()
    ms.append(s.elapsed_time(e))
p = torch.cuda.get_device_properties(0)
med = statistics.median(ms)
print(json.dumps({"method": "torch copy_ device to device, CUDA events", "device": p.name,
                  "sms": p.multi_processor_count, "bytes": n, "samples": samples, "warmup": 5,
                  "median_ms": med, "min_ms": min(ms), "max_ms": max(ms), "copy_GBps": round(n / (med / 1e3) / 1e9, 2)}))
EOF
  ) || ROOF_JSON=
fi
if [[ -n $ROOF_JSON ]]; then
  echo "# copy roofline: $ROOF_JSON"
  ROOF_GBPS=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["copy_GBps"])' "$ROOF_JSON" 2>/dev/null) || ROOF_GBPS=''
else
  echo "bench.sh: warning: could not measure the copy roofline; the report shows no roofline shares" >&2
fi

# Everything but the runs themselves, for perf/bench_report.py --assemble.
STARSCREAM_ENV=$(env | grep -E '^STARSCREAM_' | sort) \
CARD=$CARD DRIVER=$DRIVER COMMIT=$COMMIT DIRTY=$DIRTY DATE=$DATE COMMAND=$COMMAND ROOF_JSON=$ROOF_JSON \
LABEL=$LABEL KS=$KS COLLS=$COLLS ALGOS=$ALGOS MINB=$MINB MAXB=$MAXB FACTOR=$FACTOR ITERS=$ITERS \
WARMUP=$WARMUP TIMEOUT=$TIMEOUT UNTIL=$UNTIL TORCH=$TORCH MOE=$MOE python3 - "$OUT/meta.json" <<'EOF' || die "cannot write $OUT/meta.json"
import json, os, sys
e = os.environ
try:
    roof = json.loads(e["ROOF_JSON"]) if e["ROOF_JSON"] else None
except ValueError:
    roof = None
meta = {"schema": "starscream-bench/1", "label": e["LABEL"], "card": e["CARD"], "driver": e["DRIVER"],
        "sms": roof.get("sms") if roof else None, "commit": e["COMMIT"] or None,
        "dirty": e["DIRTY"] == "true", "date": e["DATE"], "command": e["COMMAND"],
        "roofline_copy_GBps": roof.get("copy_GBps") if roof else None, "roofline": roof,
        "params": {"ks": [int(k) for k in e["KS"].split()], "colls": e["COLLS"].split(),
                   "algos": e["ALGOS"].split(), "min_bytes": int(e["MINB"]), "max_bytes": int(e["MAXB"]),
                   "factor": int(e["FACTOR"]), "iters": int(e["ITERS"]), "warmup": int(e["WARMUP"]),
                   "timeout_s": int(e["TIMEOUT"]), "until": int(e["UNTIL"]) or None,
                   "torch": e["TORCH"] == "1", "moe": e["MOE"] == "1", "buffers": "plain", "check": 0},
        "environment": dict(l.split("=", 1) for l in e["STARSCREAM_ENV"].splitlines() if "=" in l)}
with open(sys.argv[1], "w") as f:
    json.dump(meta, f, indent=1)
EOF

# ---------------------------------------------------------------------------------------------
# The runs
START=$SECONDS
FAILED=0 n=0 cur_k=''
declare -A RUNS_OF=()
echo "# ${#PLAN[@]} runs; sizes $MINB..$MAXB by $FACTOR; -n $ITERS -w $WARMUP -c 0; out $OUT"
for p in "${PLAN[@]}"; do
  n=$((n + 1))
  read -r k coll algo <<<"$p"
  # An algorithm named twice in --algos runs twice, each with its own log (the report keeps each
  # size's faster run).
  RUNS_OF[$p]=$(( ${RUNS_OF[$p]:-0} + 1 ))
  log=logs/$coll.K$k.$algo.log
  (( RUNS_OF[$p] > 1 )) && log=logs/$coll.K$k.$algo.run${RUNS_OF[$p]}.log
  if (( INTERRUPTED )); then
    printf '%s\t%s\t%s\tskip\t0\t0\t%s\tinterrupted\n' "$k" "$coll" "$algo" "$log" >>"$INDEX"; continue
  fi
  if (( UNTIL > 0 && $(date +%s) >= UNTIL )); then
    printf '%s\t%s\t%s\tskip\t0\t0\t%s\t--until reached\n' "$k" "$coll" "$algo" "$log" >>"$INDEX"; continue
  fi
  if [[ $k != "$cur_k" ]]; then
    (( MPS_UP )) && mps_stop
    cur_k=$k
    mps_start || echo "bench.sh: warning: nvidia-cuda-mps-control -d failed at K=$k" >&2
  fi
  limit=$TIMEOUT
  if (( UNTIL > 0 )); then
    cap=$((UNTIL + GRACE - $(date +%s)))
    (( cap < 10 )) && cap=10
    (( cap < limit )) && limit=$cap
  fi
  run_cmd "$k" "$coll" "$algo" "$TAG_BASE-$n" "$limit"
  { echo "# bench: K=$k $coll $algo limit ${limit}s"; echo "# bench: ${CMD[*]}"; } >"$OUT/$log"
  t0=$SECONDS
  "${CMD[@]}" </dev/null >>"$OUT/$log" 2>&1 &
  CHILD=$!
  wait "$CHILD"; rc=$?
  while kill -0 "$CHILD" 2>/dev/null; do wait "$CHILD"; rc=$?; done  # a signal interrupted wait
  CHILD=
  dt=$((SECONDS - t0))
  note=
  (( limit < TIMEOUT )) && note="cut by --until"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$k" "$coll" "$algo" "$rc" "$dt" "$limit" "$log" "$note" >>"$INDEX"
  rows=$(grep -cE '^ +[0-9]+ +[0-9]+ ' "$OUT/$log")
  [[ $coll == torch ]] && rows=$(grep -c '^torch_latency' "$OUT/$log")
  [[ $coll == moe ]] && rows=$(grep -c '^moe_alltoall' "$OUT/$log")
  printf '[%3d/%d %4ds] K=%s %s %s: rc %s, %s rows (%ds)\n' "$n" "${#PLAN[@]}" "$((SECONDS - START))" \
    "$k" "$coll" "$algo" "$rc" "$rows" "$dt"
  if (( rc != 0 )); then
    FAILED=1
    kill_leftovers
    (( INTERRUPTED )) || mps_start || echo "bench.sh: warning: MPS did not restart after the failed run" >&2
  fi
done
(( MPS_UP )) && mps_stop

# bench.json, bench.md and the plots, from whatever ran.
python3 "$HERE/bench_report.py" --assemble "$OUT" --out "$OUT/bench.md" --plots "$OUT/plots"
rc=$?
(( rc == 0 )) || { echo "bench.sh: perf/bench_report.py failed (exit $rc)" >&2; exit 1; }
nfail=$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["failures"]))' "$OUT/bench.json")
echo "# wrote $OUT/bench.json and $OUT/bench.md: $nfail failed run(s), $((SECONDS - START)) s"
echo "# docs: perf/bench_report.py --update docs/benchmarks.md $OUT/bench.json"
(( INTERRUPTED )) && exit 130
(( FAILED || nfail )) && exit 1
exit 0
