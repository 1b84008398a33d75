#!/usr/bin/env bash
# One device call on an H200 (tools/emulate): builds gpu_coll_perf and libstarscream-tuner.so,
# sweeps K = 8 and 2 MPS partitions (every algorithm and the tuner's default, 8 B - 256 MiB),
# and loads the tuner plugin into PyTorch's NCCL (one rank, NCCL_DEBUG=INFO). Results under $OUT;
# the fit and the model-vs-measured table are made afterwards with starscream-tune --from.
#   OUT=dir tools/tune/h200-calibrate.sh
set -uo pipefail
OUT=${OUT:-/tmp/ssc-calibrate}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0
t0=$(date +%s)
log() { echo "== $* ($(( $(date +%s) - t0 )) s)"; }
which mpirun; nvidia-smi -L
cmake -S . -B /tmp/b -DSTARSCREAM_GPU=cuda -DCMAKE_BUILD_TYPE=Release -DSTARSCREAM_BUILD_TOOLS=OFF \
  >"$OUT/cmake.log" 2>&1 || { tail -30 "$OUT/cmake.log"; exit 1; }
cmake --build /tmp/b -j16 --target gpu_coll_perf starscream_tuner >"$OUT/build.log" 2>&1 ||
  { grep -E "error|Error" -A3 "$OUT/build.log" | head -40; exit 1; }
log built
for K in 8 2; do
  timeout 75 tools/emulate/partition-run.sh "$K" /tmp/b/bin/gpu_coll_perf 268435456 \
    "$OUT/h200-k$K.json" >"$OUT/perf-k$K.log" 2>&1
  log "sweep K=$K rc=$?"
done
cat >/tmp/plugin_check.py <<'PY'
import os, torch, torch.distributed as dist
os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", "29533")
dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda:0"))
print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())
for n in (2, 1 << 20):
    t = torch.ones(n, device="cuda"); dist.all_reduce(t); torch.cuda.synchronize()
    print("all_reduce", n, "->", t[0].item())
dist.destroy_process_group()
PY
NCCL_TUNER_PLUGIN=/tmp/b/lib/libstarscream-tuner.so NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING \
  timeout 60 python3 /tmp/plugin_check.py >"$OUT/nccl-plugin.log" 2>&1
log "nccl plugin rc=$?"
grep -E "TUNER|Starscream tuner|torch|all_reduce|Error|error" "$OUT/nccl-plugin.log" | head -12
for K in 8 2; do
  python3 - "$OUT/h200-k$K.json" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print(sys.argv[1], "unreadable:", e); sys.exit(0)
rows = d["results"]; worst = 0; miss = 0; n = 0
for coll in sorted({r["coll"] for r in rows}):
    for b in sorted({r["bytes"] for r in rows if r["coll"] == coll}):
        at = {r["algo"]: r["time_us"] for r in rows if r["coll"] == coll and r["bytes"] == b}
        forced = [t for a, t in at.items() if a not in ("default", "symmetric_bulk", "symmetric_ll")]
        if "default" not in at or not forced: continue
        ratio = at["default"] / min(forced); n += 1
        miss += ratio > 1.05; worst = max(worst, ratio)
print(f"K={d['K']}: default vs best forced: {n} sizes, {miss} beyond 5 %, worst {worst:.2f}x")
PY
done
log done
