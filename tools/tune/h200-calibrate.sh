#!/usr/bin/env bash
# One device call on an H200 (tools/emulate) for the tuner: builds the library, the NCCL shim,
# libstarscream-tuner.so and gpu_coll_perf (nccl-tests alongside, from NCCL_TESTS_SRC), then
#  1. calibration sweeps: gpu_coll_perf at each K of CAL_KS (every algorithm and the default,
#     8 B - 256 MiB, registered buffers), timed: the fit is made afterwards, off the device, with
#     starscream-tune --from (the sweep is the only part that needs the GPU);
#  2. the tuner plugin in the real NCCL (pip nvidia-nccl, all_reduce_perf at one rank, INFO log);
#  3. the tuner's choice on plain buffers: tools/tune/nccl_tests_choice.sh at CHOICE_KS;
#  4. the projection plot with matplotlib when the machine has it (MODEL_JSON, made here by
#     starscream-model --json, since tools are not built on the device).
# Every step is skipped once the call nears BUDGET seconds. Results under $OUT; a summary last.
#   OUT=dir [BUDGET=225] [CAL_KS="1 4"] [CHOICE_KS="8 4"] tools/tune/h200-calibrate.sh
set -uo pipefail
OUT=${OUT:-/tmp/ssc-calibrate}
BUDGET=${BUDGET:-225}
CAL_KS=${CAL_KS:-1 4}
CHOICE_KS=${CHOICE_KS:-8 4}
NCCL_TESTS_SRC=${NCCL_TESTS_SRC:-.devcarry/nccl-tests-src}
MODEL_JSON=${MODEL_JSON:-}
B=${BUILD_DIR:-/tmp/b}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 STARSCREAM_TIMEOUT=20
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
log() { echo "== $* ($(el) s)" | tee -a "$OUT/summary.txt"; }
left() { (( $(el) + $1 < BUDGET )); }  # left N: N more seconds still fit
nvidia-smi -L
if [[ -f $NCCL_TESTS_SRC/src/common.cu ]]; then
  (JOBS=8 tools/conformance/build-nccl-tests.sh "$NCCL_TESTS_SRC" /tmp/nt >"$OUT/nccl-tests-build.log" 2>&1
   echo $? >/tmp/nt.rc) &
fi
ntpid=$!
if [[ -n $MODEL_JSON ]] && python3 -c 'import matplotlib' 2>/dev/null; then
  (python3 tools/model/plot.py "$MODEL_JSON" "$OUT/projection.png" >"$OUT/plot.log" 2>&1) &
else
  echo "matplotlib: $(python3 -c 'import matplotlib' 2>&1 | tail -1)" >"$OUT/plot.log"
fi
cmake -S . -B "$B" -DSTARSCREAM_GPU=cuda -DCMAKE_BUILD_TYPE=Release -DSTARSCREAM_BUILD_TOOLS=OFF \
  -DSTARSCREAM_BUILD_PERF=ON >"$OUT/cmake.log" 2>&1 || { tail -30 "$OUT/cmake.log"; exit 1; }
cmake --build "$B" -j16 --target gpu_coll_perf starscream_nccl starscream_tuner >"$OUT/build.log" 2>&1 ||
  { grep -E "error" -A3 "$OUT/build.log" | head -40; exit 1; }
log built
for K in $CAL_KS; do
  left 20 || break
  s=$(date +%s)
  timeout 40 tools/emulate/partition-run.sh "$K" "$B/bin/gpu_coll_perf" 268435456 \
    "$OUT/h200-k$K.json" >"$OUT/perf-k$K.log" 2>&1
  log "calibration sweep K=$K rc=$? in $(( $(date +%s) - s )) s"
done
wait $ntpid 2>/dev/null
log "nccl-tests built rc=$(cat /tmp/nt.rc 2>/dev/null || echo none)"
NCCL_LIB=$(python3 -c 'import os, nvidia.nccl as m
print(os.path.join(list(m.__path__)[0], "lib"))' 2>/dev/null)
if [[ -x /tmp/nt/all_reduce_perf && -n $NCCL_LIB ]] && left 20; then
  LD_LIBRARY_PATH=$NCCL_LIB:${LD_LIBRARY_PATH:-} NCCL_TUNER_PLUGIN=$B/lib/libstarscream-tuner.so \
    NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING timeout 30 /tmp/nt/all_reduce_perf -b 8 -e 1M -f 32 \
    -n 2 -w 1 >"$OUT/nccl-plugin.log" 2>&1
  log "tuner plugin in the real NCCL rc=$?"
  grep -E "TUNER|Starscream tuner|NCCL version" "$OUT/nccl-plugin.log" | sed 's/^.*NCCL INFO //' |
    head -12 | tee -a "$OUT/summary.txt"
fi
if [[ -x /tmp/nt/all_reduce_perf ]] && left 30; then
  tools/tune/nccl_tests_choice.sh --bin /tmp/nt --shim "$B/lib/libstarscream-nccl.so" \
    --out "$OUT/choice" --ks "$CHOICE_KS" --until $(( t0 + BUDGET - 12 )) >"$OUT/choice.log" 2>&1
  log "choice sweep rc=$?"
  grep "^#" "$OUT/choice.log" | tail -40 >>"$OUT/summary.txt"
  for f in "$OUT"/choice/choice-k*.json; do
    [[ -f $f ]] && python3 tools/tune/check_choice.py "$f" | tee -a "$OUT/summary.txt"
  done
fi
wait
cat "$OUT/plot.log"
for K in $CAL_KS; do
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print('K', d['K'], len(d['results']), 'rows')" \
    "$OUT/h200-k$K.json" 2>&1 | tail -1
done
# The device tool returns only a few files of $OUT (session 5 lost the choice JSONs and the
# plot that way): everything also goes back as one archive.
tar czf /tmp/calibrate.tgz -C "$OUT" . && mkdir -p "$OUT/keep" && mv /tmp/calibrate.tgz "$OUT/keep/" &&
  find "$OUT" -mindepth 1 -maxdepth 1 ! -name keep ! -name summary.txt -exec rm -rf {} +
log done
