#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Bandwidth through the real clients: the public NCCL test suite (nccl-tests) on one NVIDIA GPU
# split into K MPS partitions (tools/emulate/partition-run.sh), through libstarscream-nccl.so with
# plain buffers (what every NCCL program passes) and with registered ones (-R 1), and the real
# NCCL at K = 1, next to the roofline measured in the same run: a single-process device-to-device
# copy (PyTorch's tensor copy, C bytes copied per second).
#
# Roofline per collective (each input byte read once, each output byte written once, at the copy
# rate: C bytes read plus C written per second): all-reduce and all-to-all algbw C / K (busbw
# 2C(K-1)/K^2 and C(K-1)/K^2), reduce-scatter, all-gather, broadcast and reduce algbw 2C / (K + 1)
# (nccl-tests' size is the larger buffer; broadcast and reduce busbw = algbw). At K = 1 busbw is
# 0 by definition; the table then gives algbw against the copy and the real NCCL.
#
#   perf/nccl_tests_bw.sh --bin DIR --shim PATH [--out DIR] [--ks "8 4 2 1"]
#                         [--colls "all_reduce reduce_scatter all_gather"] [--registered]
#                         [--nccl-lib DIR] [--iters N]
# Writes OUT/bw.tsv (one row per run and size) and OUT/logs/, and prints a Markdown table.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
BIN=${NCCL_TESTS_BIN:-$REPO/.devcarry/nccl-tests}
SHIM=$REPO/build/lib/libstarscream-nccl.so
OUT=$PWD/nccl-tests-bw
KS="8 4 2 1"
COLLS="all_reduce reduce_scatter all_gather"
REGISTERED=0
NCCL_LIB=
ITERS=20
SIZES="8 65536 1048576 33554432 268435456 1073741824"  # columns of the printed table

while (( $# )); do
  case $1 in
    --bin) BIN=${2:?}; shift 2 ;;
    --shim) SHIM=${2:?}; shift 2 ;;
    --out) OUT=${2:?}; shift 2 ;;
    --ks) KS=${2:?}; shift 2 ;;
    --colls) COLLS=${2:?}; shift 2 ;;
    --registered) REGISTERED=1; shift ;;
    --nccl-lib) NCCL_LIB=${2:?}; shift 2 ;;
    --iters) ITERS=${2:?}; shift 2 ;;
    -h|--help) sed -n 2,17p "$0"; exit 0 ;;
    *) echo "nccl_tests_bw.sh: unknown argument '$1' (--help)" >&2; exit 2 ;;
  esac
done
[[ $ITERS =~ ^[0-9]+$ ]] || { echo "nccl_tests_bw.sh: --iters must be a number" >&2; exit 2; }
for k in $KS; do [[ $k =~ ^[1-9][0-9]*$ ]] || { echo "nccl_tests_bw.sh: bad K '$k'" >&2; exit 2; }; done
[[ -r $SHIM ]] || { echo "nccl_tests_bw.sh: shim not found: $SHIM" >&2; exit 2; }
for c in $COLLS; do
  [[ -x $BIN/${c}_perf ]] || { echo "nccl_tests_bw.sh: $BIN/${c}_perf not found" >&2; exit 2; }
done
if [[ -z $NCCL_LIB ]]; then
  NCCL_LIB=$(python3 -c 'import os, nvidia.nccl as m
print(os.path.join(list(m.__path__)[0], "lib"))' 2>/dev/null) || NCCL_LIB=
fi
mkdir -p "$OUT/logs"
TSV=$OUT/bw.tsv
export NCCL_NVLS_ENABLE=0 NCCL_TESTS_DEVICE=0 STARSCREAM_TIMEOUT=${STARSCREAM_TIMEOUT:-30}
SHIM_DIR=$(dirname "$SHIM")

# The roofline: one process, the whole GPU, 1 GiB copied 20 times.
COPY=$(python3 - <<'EOF' 2>/dev/null
import torch
n = 1 << 30
a = torch.empty(n, dtype=torch.uint8, device="cuda"); b = torch.empty_like(a)
for _ in range(3): b.copy_(a)
s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
s.record()
for _ in range(20): b.copy_(a)
e.record(); torch.cuda.synchronize()
print(f"{n * 20 / (s.elapsed_time(e) / 1e3) / 1e9:.1f}")
EOF
) || COPY=
[[ -n $COPY ]] || { echo "nccl_tests_bw.sh: could not measure the copy roofline (python3 + torch)" >&2; exit 1; }
echo "# copy roofline: $COPY GB/s (single process, 1 GiB device-to-device)"
printf 'coll\tK\tlib\tbytes\ttime_us\talgbw\tbusbw\twrong\n' >"$TSV"

reset_mps() { echo quit | timeout 10 nvidia-cuda-mps-control >/dev/null 2>&1; sleep 0.5; }
run() {  # run COLL K LIB(shim|reg|nccl)
  local coll=$1 k=$2 lib=$3 log="$OUT/logs/$1.K$2.$3.log" envs=() extra=()
  case $lib in
    shim|reg) envs=(LD_PRELOAD=$SHIM LD_LIBRARY_PATH=$SHIM_DIR/nccl-compat:$SHIM_DIR:${LD_LIBRARY_PATH:-}) ;;
    nccl) envs=(LD_LIBRARY_PATH=$NCCL_LIB:${LD_LIBRARY_PATH:-}) ;;
  esac
  [[ $lib == reg ]] && extra=(-R 1)
  reset_mps
  timeout -k 10 240 "$REPO/tools/emulate/partition-run.sh" "$k" env -u LD_PRELOAD "${envs[@]}" \
    "$BIN/${coll}_perf" -b 8 -e 1G -f 2 -n "$ITERS" -w 5 -c 1 "${extra[@]}" >"$log" 2>&1
  local rc=$?
  # Rows: size count type redop root time algbw busbw #wrong (out of place) ...
  awk -v c="$coll" -v k="$k" -v l="$lib" '$1 ~ /^[0-9]+$/ && NF >= 13 && $6 ~ /^[0-9.]+$/ {
      printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c, k, l, $1, $6, $7, $8, $9 }' "$log" >>"$TSV"
  echo "# $coll K=$k $lib: rc $rc, $(grep -c "^ *[0-9]" "$log") rows ($log)"
}

for coll in $COLLS; do
  for k in $KS; do
    run "$coll" "$k" shim
    (( REGISTERED && k > 1 )) && run "$coll" "$k" reg
    [[ $k == 1 && -n $NCCL_LIB && -e $NCCL_LIB/libnccl.so.2 ]] && run "$coll" 1 nccl
  done
done
reset_mps

python3 - "$TSV" "$COPY" "$SIZES" <<'EOF'
import csv, sys
tsv, copy, sizes = sys.argv[1], float(sys.argv[2]), [int(s) for s in sys.argv[3].split()]
rows = {}
for r in csv.DictReader(open(tsv), delimiter="\t"):
    rows[(r["coll"], int(r["K"]), r["lib"], int(r["bytes"]))] = r
# Every row counts for correctness, not only the table's sizes.
bad = sum(r["wrong"] not in ("0", "N/A") for r in rows.values())
def row_at(c, k, l, s):
    # nccl-tests rounds a size down to a whole number of elements per rank, so with K not a
    # power of two an all-gather or reduce-scatter of 1 GiB runs 1073741808 bytes at K = 3: the
    # cell takes the largest size within 1 % below the column's.
    best = None
    for (c2, k2, l2, b) in rows:
        if (c2, k2, l2) == (c, k, l) and s * 0.99 <= b <= s and (best is None or b > best):
            best = b
    return rows.get((c, k, l, best)) if best is not None else None
def roof_algbw(coll, k):
    # Each input byte read once and each output byte written once at the copy rate (C bytes
    # read plus C written per second). All-reduce: k x S read, k x S written (S = nccl-tests'
    # size); all-to-all likewise; reduce-scatter, all-gather: k x S on one side, S on the other;
    # broadcast: S read (the root's), k x S written; reduce: k x S read, S written.
    return copy / k if coll in ("all_reduce", "alltoall") else 2 * copy / (k + 1)
def bus_factor(coll, k):  # nccl-tests' busbw / algbw
    return {"all_reduce": 2 * (k - 1) / k, "broadcast": 1, "reduce": 1}.get(coll, (k - 1) / k)
def human(b):
    for unit, s in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= s: return f"{b // s} {unit}"
    return f"{b} B"
print(f"\ncopy roofline {copy:.0f} GB/s; cells: busbw GB/s (% of roofline); K = 1: algbw GB/s (% of copy)")
print("| collective | K | buffers | " + " | ".join(human(s) for s in sizes) + " |")
print("| --- | --- | --- |" + " --- |" * len(sizes))
keys = sorted({(c, k, l) for c, k, l, _ in rows}, key=lambda t: (t[0], -t[1], t[2]))
names = {"shim": "plain (shim)", "reg": "registered (shim -R 1)", "nccl": "real NCCL"}
for c, k, l in keys:
    cells = []
    for s in sizes:
        r = row_at(c, k, l, s)
        if r is None: cells.append("-"); continue
        if k == 1:
            v = float(r["algbw"]); cells.append(f"{v:.0f} ({100 * v / roof_algbw(c, 1):.0f} %)")
        else:
            v = float(r["busbw"]); roof = roof_algbw(c, k) * bus_factor(c, k)
            cells.append(f"{v:.0f} ({100 * v / roof:.0f} %)")
    print(f"| {c} | {k} | {names[l]} | " + " | ".join(cells) + " |")
for c in sorted({c for c, _, _, _ in rows}):
    line = []
    for s in sizes:
        a, b = rows.get((c, 1, "shim", s)), rows.get((c, 1, "nccl", s))
        if a and b and float(a["time_us"]) > 0: line.append(f"{human(s)} {float(b['time_us']) / float(a['time_us']):.2f}x")
    if line: print(f"K = 1 {c}, shim speed / real NCCL (time ratio): " + ", ".join(line))
print(f"rows with #wrong != 0: {bad}")
EOF
