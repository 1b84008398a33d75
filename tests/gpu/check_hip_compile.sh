#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# CI's HIP build check: compiles every GPU source of the backend for gfx90a and gfx940
# without running anything, the way cmake/GpuBackend.cmake's HIP build compiles them:
#  - device code (src/kernels/gpu/*.cu and the ops' kernels, src/ops/*/*.cu) with hipcc -x hip,
#    to objects for both targets;
#  - host code against the HIP runtime API (src/device/gpu, transports/usr, transports/xgmi, the
#    perf device seam, and the GPU test programs when mpi.h is found) with the C++ compiler and
#    the HIP headers (CMake's hip::host: __HIP_PLATFORM_AMD__), syntax only. Not as -x hip:
#    Debian's clang 15 crashes (an internal compiler error in Sema::checkTypeSupport) on
#    gpu_backend.cc and gpu_plan_cache.cc in HIP mode, and the build never compiles them so.
# The compiles run in parallel, SSC_HIP_CHECK_JOBS at a time (default: nproc; ctest sets it to
# the PROCESSORS it reserves for the test). Reports every file in a fixed order, with the first
# 40 lines of each failing compile's output, then exits non-zero if any failed.
#
#   tests/gpu/check_hip_compile.sh [hipcc]      (default: hipcc on PATH, then /opt/rocm/bin)
#
# Meant for Debian 12's hipcc (ROCm 5.2, clang 15): gfx942 needs a newer ROCm than Debian ships,
# so it is not in the list; the sources keep ROCm >= 6 paths behind HIP_VERSION checks.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
hipcc=${1:-$(command -v hipcc || echo /opt/rocm/bin/hipcc)}
if [[ ! -x $hipcc ]]; then
  echo "check_hip_compile: no hipcc found" >&2
  exit 2
fi
ver=$("$hipcc" --version 2>/dev/null | awk '/HIP version/ {print $3; exit}') || true
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
archs=(--offload-arch=gfx90a --offload-arch=gfx940)
common=(-std=c++20 -I"$repo" -I"$repo/include" -DSTARSCREAM_GPU_HIP=1 -DSTARSCREAM_HAVE_GPU=1 -DSSC_SYM_DTYPE=10
        -Wno-unused-command-line-argument)
# hipcc runs rocm_agent_enumerator when it is not told a target; with --offload-arch it is not
# needed, but silence its traceback on machines without /sys/class/kfd anyway.
export ROCM_TARGET_LST=${ROCM_TARGET_LST:-/dev/null}

# run WHAT COMMAND...: queues one compile (job i: $out/cmd.i, its output $out/log.i, its exit
# status $out/rc.i); the queue runs after the last one is added.
whats=()
run() {
  local i=${#whats[@]}
  whats+=("$1")
  shift
  printf '%q ' "$@" >"$out/cmd.$i"
}

for src in "$repo"/src/kernels/gpu/*.cu "$repo"/src/ops/*/*.cu; do
  run "${src#$repo/} (gfx90a, gfx940)" \
    "$hipcc" "${common[@]}" "${archs[@]}" -x hip -c "$src" -o "$out/$(basename "$src").o"
done
host=("$repo"/src/device/gpu/*.cc "$repo"/transports/usr/*.cc "$repo"/transports/xgmi/*.cc
      "$repo"/perf/common/device_buffer.cc "$repo"/src/ops/attention/gpu_ops.cc
      "$repo"/src/ops/attention/gpu_prefill.cc
      "$repo"/src/ops/gemm/gpu_gemm.cc)
mpi=()
if command -v mpicxx >/dev/null 2>&1; then
  read -r -a mpi <<<"$(mpicxx --showme:compile 2>/dev/null || true)"
  host+=("$repo"/tests/gpu/*.cc "$repo"/perf/attention_perf.cc)
  # The standalone K-rank benchmarks are device code and MPI programs at once.
  for tool in mps_floor bulk_shapes; do
    run "perf/$tool.cu (gfx90a, gfx940)" \
      "$hipcc" "${common[@]}" "${archs[@]}" "${mpi[@]}" -x hip -c "$repo/perf/$tool.cu" -o "$out/$tool.o"
  done
fi
# ROCm's own include directory (/opt/rocm/include); Debian's headers are in /usr/include already,
# and naming that with -isystem would break the C++ headers' #include_next.
hipinc=()
inc=$(dirname "$(dirname "$(readlink -f "$hipcc")")")/include
[[ $inc != /usr/include && -d $inc/hip ]] && hipinc=(-isystem "$inc")
for src in "${host[@]}"; do
  run "${src#$repo/}" "${CXX:-g++}" -std=c++20 -I"$repo" -I"$repo/include" "${hipinc[@]}" \
    -D__HIP_PLATFORM_AMD__=1 -DSTARSCREAM_GPU_HIP=1 -DSTARSCREAM_HAVE_GPU=1 "${mpi[@]}" -fsyntax-only "$src"
done

# The queue, SSC_HIP_CHECK_JOBS compiles at a time; each records its own exit status, so a failed
# compile never stops the others and xargs' own status does not matter.
parallel=${SSC_HIP_CHECK_JOBS:-$(nproc)}
seq 0 $((${#whats[@]} - 1)) |
  xargs -P "$parallel" -I{} bash -c 'bash "$1/cmd.$2" >"$1/log.$2" 2>&1; echo $? >"$1/rc.$2"' _ "$out" {} || true
fail=0
for i in "${!whats[@]}"; do
  if [[ $(cat "$out/rc.$i" 2>/dev/null) == 0 ]]; then
    echo "ok   ${whats[$i]}"
  else
    echo "FAIL ${whats[$i]}" >&2
    sed -n 1,40p "$out/log.$i" >&2
    fail=1
  fi
done
if [[ $fail -ne 0 ]]; then
  echo "check_hip_compile: FAILED (HIP ${ver:-version unknown})" >&2
  exit 1
fi
echo "check_hip_compile: all GPU sources compile (HIP ${ver:-version unknown}, gfx90a and gfx940)"
