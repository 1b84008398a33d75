#!/usr/bin/env bash
# One device call on an H200 (tools/emulate) for the tuner: builds the library, the NCCL shim and
# gpu_coll_perf (nccl-tests alongside, from NCCL_TESTS_SRC; libstarscream-tuner.so with PLUGIN=1),
# then
#  1. calibration sweeps: gpu_coll_perf at each K of CAL_KS (every algorithm and the default,
#     8 B - CAL_MAX, registered buffers), then the default alone once more (its run-to-run spread,
#     for check_choice.py); the fit and the held-out check are made afterwards, off the device,
#     with starscream-tune --from / --check (the sweep is the only part that needs the GPU);
#  2. with PLUGIN=1, the tuner plugin in the real NCCL (pip nvidia-nccl, all_reduce_perf at one
#     rank, INFO log; the real NCCL refuses two ranks on one GPU, so one rank is all it shows);
#  3. the tuner's choice on plain buffers: tools/tune/nccl_tests_choice.sh at CHOICE_KS
#     (-n CHOICE_ITERS -w CHOICE_WARMUP, the default run twice);
#  4. the projection plot with matplotlib when the machine has it (MODEL_JSON, made here by
#     starscream-model --json, since tools are not built on the device).
# Every step is skipped once the call nears BUDGET seconds. Results under $OUT as one archive
# (the device tool returns only a few files), a summary last.
# Then, here: starscream-tune --fifo-blocks 8=4 --fifo-blocks 4=8 --fifo-blocks 2=16 --fifo-blocks 1=32
#   --cache-mb 50 --topo 'tools/topologies/h200-mps-{K}.json' --out p.json --from h200-k8.json ... (docs/tuner.md).
#   OUT=dir [BUDGET=270] [CAL_KS="8 4 2 1"] [CAL_MAX=1073741824] [CHOICE_KS="8 4" ("": none)] [PLUGIN=0]
#     tools/tune/h200-calibrate.sh
set -uo pipefail
OUT=${OUT:-/tmp/ssc-calibrate}
BUDGET=${BUDGET:-270}
CAL_KS=${CAL_KS:-8 4 2 1}
CAL_MAX=${CAL_MAX:-1073741824}
CHOICE_KS=${CHOICE_KS-8 4}  # set and empty: no choice sweep
CHOICE_ITERS=${CHOICE_ITERS:-50}
CHOICE_WARMUP=${CHOICE_WARMUP:-10}
PLUGIN=${PLUGIN:-0}
NCCL_TESTS_SRC=${NCCL_TESTS_SRC:-.devcarry/nccl-tests-src}
MODEL_JSON=${MODEL_JSON:-}
B=${BUILD_DIR:-/tmp/b}
NT=${NT_DIR:-/tmp/nt}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 STARSCREAM_TIMEOUT=20
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
log() { echo "== $* ($(el) s)" | tee -a "$OUT/summary.txt"; }
left() { (( $(el) + $1 < BUDGET )); }  # left N: N more seconds still fit
nvidia-smi -L
echo "tree: ${TREE_COMMIT:-$(git log -1 --format=%h 2>/dev/null)} (TREE_COMMIT, else git)" |
  tee -a "$OUT/summary.txt"
ntpid=
if [[ -f $NCCL_TESTS_SRC/src/common.cu && -n $CHOICE_KS$([[ $PLUGIN == 1 ]] && echo p) ]]; then
  (JOBS=8 tools/conformance/build-nccl-tests.sh "$NCCL_TESTS_SRC" "$NT" >"$OUT/nccl-tests-build.log" 2>&1
   echo $? >"$OUT/nt.rc") &
  ntpid=$!
fi
if [[ -n $MODEL_JSON ]] && python3 -c 'import matplotlib' 2>/dev/null; then
  (python3 tools/model/plot.py "$MODEL_JSON" "$OUT/projection.png" >"$OUT/plot.log" 2>&1) &
fi
targets=(gpu_coll_perf)
[[ -n $CHOICE_KS || $PLUGIN == 1 ]] && targets+=(starscream_nccl)
[[ $PLUGIN == 1 ]] && targets+=(starscream_tuner)
cmake -S . -B "$B" -DSTARSCREAM_GPU=cuda -DCMAKE_BUILD_TYPE=Release -DSTARSCREAM_BUILD_TOOLS=OFF \
  -DSTARSCREAM_BUILD_PERF=ON >"$OUT/cmake.log" 2>&1 || { tail -30 "$OUT/cmake.log"; exit 1; }
cmake --build "$B" -j16 --target "${targets[@]}" >"$OUT/build.log" 2>&1 ||
  { grep -E "error" -A3 "$OUT/build.log" | head -40; exit 1; }
log "built ${targets[*]}"
for K in $CAL_KS; do
  left 25 || { log "out of time: calibration sweep K=$K and after skipped"; break; }
  s=$(date +%s)
  timeout 90 tools/emulate/partition-run.sh "$K" "$B/bin/gpu_coll_perf" "$CAL_MAX" \
    "$OUT/h200-k$K.json" >"$OUT/perf-k$K.log" 2>&1
  log "calibration sweep K=$K rc=$? in $(( $(date +%s) - s )) s"
done
for K in $CAL_KS; do  # the default once more: its run-to-run spread (check_choice.py)
  left 15 || break
  timeout 40 tools/emulate/partition-run.sh "$K" "$B/bin/gpu_coll_perf" "$CAL_MAX" \
    "$OUT/h200-k$K-default2.json" default >"$OUT/perf-k$K-default2.log" 2>&1
  log "default repeat K=$K rc=$?"
done
[[ -n $ntpid ]] && wait "$ntpid"
log "nccl-tests built rc=$(cat "$OUT/nt.rc" 2>/dev/null || echo none)"
NCCL_LIB=$(python3 -c 'import os, nvidia.nccl as m
print(os.path.join(list(m.__path__)[0], "lib"))' 2>/dev/null)
if [[ $PLUGIN == 1 && -x $NT/all_reduce_perf && -n $NCCL_LIB ]] && left 20; then
  LD_LIBRARY_PATH=$NCCL_LIB:${LD_LIBRARY_PATH:-} NCCL_TUNER_PLUGIN=$B/lib/libstarscream-tuner.so \
    NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING timeout 30 "$NT/all_reduce_perf" -b 8 -e 1M -f 32 \
    -n 2 -w 1 >"$OUT/nccl-plugin.log" 2>&1
  log "tuner plugin in the real NCCL rc=$?"
  grep -E "TUNER|Starscream tuner|NCCL version" "$OUT/nccl-plugin.log" | sed 's/^.*NCCL INFO //' |
    head -12 | tee -a "$OUT/summary.txt"
fi
if [[ -n $CHOICE_KS && -x $NT/all_reduce_perf ]] && left 30; then
  tools/tune/nccl_tests_choice.sh --bin "$NT" --shim "$B/lib/libstarscream-nccl.so" \
    --out "$OUT/choice" --ks "$CHOICE_KS" --iters "$CHOICE_ITERS" --warmup "$CHOICE_WARMUP" \
    --until $(( t0 + BUDGET - 12 )) >"$OUT/choice.log" 2>&1
  log "choice sweep rc=$?"
  grep "^#" "$OUT/choice.log" | tail -50 >>"$OUT/summary.txt"
fi
wait
[[ -f $OUT/plot.log ]] && cat "$OUT/plot.log"
{
  for K in $CAL_KS; do
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print('calibration K', d['K'], len(d['results']), 'rows')" \
      "$OUT/h200-k$K.json" 2>&1 | tail -1
  done
  for K in $CAL_KS; do
    [[ -f $OUT/h200-k$K.json ]] || continue
    files=("$OUT/h200-k$K.json")
    [[ -f $OUT/h200-k$K-default2.json ]] && files+=("$OUT/h200-k$K-default2.json")
    echo "registered (gpu_coll_perf):"; python3 tools/tune/check_choice.py "${files[@]}"
  done
  for f in "$OUT"/choice/choice-k*.json; do
    [[ -f $f ]] && { echo "plain (nccl-tests):"; python3 tools/tune/check_choice.py "$f"; }
  done
} 2>&1 | sed "s#$OUT/##g" | tee -a "$OUT/summary.txt"
# The device tool returns only a few files of $OUT (session 5 lost the choice JSONs and the
# plot that way): everything also goes back as one archive.
tar czf /tmp/calibrate.tgz -C "$OUT" . && mkdir -p "$OUT/keep" && mv /tmp/calibrate.tgz "$OUT/keep/" &&
  find "$OUT" -mindepth 1 -maxdepth 1 ! -name keep ! -name summary.txt -exec rm -rf {} +
log done
