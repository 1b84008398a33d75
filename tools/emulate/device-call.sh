# The frame every device call script shares (perf/results/<session>/call*.sh): the device tool
# gives a call one command, at most 600 s, and brings back only what lies under $OUT. Source it
# first thing, with the script's own path:
#
#   source tools/emulate/device-call.sh "$0"
#
# Outer pass (as the device tool starts the script): records the tree (git log -1, git status)
# in $L/env.txt, runs the script again as its inner pass under DEVICE_CALL_LIMIT seconds
# (default 560: the call's 600 s less the packing and the copy back), then packs $L into
# $OUT/logs.tgz and exits, so a pass cut off by the limit still brings its logs back. Inner
# pass: returns to the script with L (the log folder) and these helpers:
#   el TEXT                 TEXT after the seconds since the call began
#   build TARGET...         configure ./build once (CUDA, Release, perf and tests on), build the
#                           targets; the log in $L/build.log, its first errors shown
#   prun SECONDS K LOG PROG [ARGS...]
#                           PROG on K MPS partitions (tools/emulate/partition-run.sh) under a
#                           time limit, its output in $L/LOG; returns its status
# Exported for every rank: NCCL_NVLS_ENABLE=0, STARSCREAM_REPO, STARSCREAM_TIMEOUT (default 20).
: "${OUT:?device-call.sh: OUT is not set (the device tool sets it; by hand: OUT=dir bash script)}"
export NCCL_NVLS_ENABLE=0 STARSCREAM_REPO=${STARSCREAM_REPO:-$PWD} STARSCREAM_TIMEOUT=${STARSCREAM_TIMEOUT:-20}
L=$OUT/l
mkdir -p "$L"
if [[ ${DEVICE_CALL_INNER:-} != 1 ]]; then
  t0=$(date +%s)
  { git log --oneline -1; git status --short; } > "$L/env.txt" 2>&1
  export OUT L t0 DEVICE_CALL_INNER=1
  timeout -k 5 "${DEVICE_CALL_LIMIT:-560}" bash "$1"
  echo "inner rc=$?"
  tar -czf "$OUT/logs.tgz" -C "$L" . && rm -rf "$L"
  exit 0
fi
el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
build() {
  cmake -S . -B build -G Ninja -DSTARSCREAM_GPU=cuda -DCMAKE_BUILD_TYPE=Release -DSTARSCREAM_BUILD_PERF=ON \
    -DSTARSCREAM_BUILD_TOOLS=OFF -DSTARSCREAM_BUILD_TESTS=ON >> "$L/cfg.log" 2>&1 &&
    cmake --build build -j"$(nproc)" --target "$@" >> "$L/build.log" 2>&1
  local rc=$?
  el "build $* rc=$rc"
  [[ $rc == 0 ]] || grep -m3 -B2 -A8 " error" "$L/build.log"
  return $rc
}
prun() {
  local to=$1 k=$2 log=$3
  shift 3
  timeout "$to" tools/emulate/partition-run.sh "$k" "$@" > "$L/$log" 2>&1
  local rc=$?
  el "rc=$rc $log"
  return $rc
}
