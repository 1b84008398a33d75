#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the 7 nccl-tests binaries the conformance runner uses (MPI=1), from a fetched copy of
# github.com/NVIDIA/nccl-tests (tag 2.19.6; never vendored into this repository).
#
#   tools/conformance/build-nccl-tests.sh SRC_DIR OUT_DIR
#
# SRC_DIR: the nccl-tests checkout (holds src/common.cu). OUT_DIR: where the *_perf binaries go
# (make's BUILDDIR). Environment overrides:
#   NCCL_HOME     NCCL headers + library to build against (default: the CUDA toolkit if it has
#                 include/nccl.h, else /usr, else pip nvidia-nccl-cu*)
#   MPI_HOME      MPI install (default: from `mpicc -showme:incdirs`, else common paths)
#   CUDA_HOME     CUDA toolkit (default: from nvcc on PATH, else /usr/local/cuda)
#   NVCC_GENCODE  default -gencode=arch=compute_90,code=sm_90 (H100/H200)
#   JOBS          parallel make jobs (default: nproc)
set -euo pipefail

die() { echo "build-nccl-tests: $*" >&2; exit 2; }
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'
  echo "Example (SRC_DIR: your checkout of github.com/NVIDIA/nccl-tests at tag 2.19.6):"
  echo "  tools/conformance/build-nccl-tests.sh ~/src/nccl-tests build/nccl-tests"
  exit 0
fi
[[ $# -eq 2 ]] || die "usage: $0 SRC_DIR OUT_DIR"
[[ -f $1/src/common.cu && -f $1/src/Makefile ]] || die "$1 is not an nccl-tests checkout (no src/common.cu)"
SRC=$(cd "$1" && pwd)
mkdir -p "$2"
OUT=$(cd "$2" && pwd)  # make runs in SRC/src: BUILDDIR must be absolute
TESTS=(all_reduce all_gather broadcast reduce_scatter reduce alltoall sendrecv)

# CUDA toolkit.
if [[ -z ${CUDA_HOME:-} ]]; then
  if nvcc=$(command -v nvcc); then
    CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$nvcc")")")
  elif [[ -x /usr/local/cuda/bin/nvcc ]]; then
    CUDA_HOME=/usr/local/cuda
  else
    die "nvcc not found: set CUDA_HOME"
  fi
fi
[[ -x $CUDA_HOME/bin/nvcc ]] || die "no $CUDA_HOME/bin/nvcc"

# MPI (the library the binaries link must match the mpirun that launches them).
mpi_ok() { [[ -f $1/include/mpi.h ]] && compgen -G "$1/lib/libmpi.so*" >/dev/null; }
if [[ -z ${MPI_HOME:-} ]]; then
  if command -v mpicc >/dev/null; then
    for inc in $(mpicc -showme:incdirs 2>/dev/null || true); do
      if [[ -f $inc/mpi.h ]] && mpi_ok "$(dirname "$inc")"; then MPI_HOME=$(dirname "$inc"); break; fi
    done
  fi
  if [[ -z ${MPI_HOME:-} ]]; then
    for d in /usr/lib/x86_64-linux-gnu/openmpi /usr/lib64/openmpi /usr/local/mpi /opt/hpcx/ompi \
             /usr/mpi/gcc/openmpi* /opt/openmpi /usr/local; do
      if mpi_ok "$d"; then MPI_HOME=$d; break; fi
    done
  fi
fi
[[ -n ${MPI_HOME:-} ]] || die "MPI not found: set MPI_HOME (a directory with include/mpi.h and lib/libmpi.so)"
mpi_ok "$MPI_HOME" || die "MPI_HOME=$MPI_HOME has no include/mpi.h or lib/libmpi.so"

# NCCL headers + library (the shim replaces the library at run time; the headers fix the API level
# nccl-tests compiles: 2.28 headers enable -R 2 window registration).
pip_nccl() {
  python3 -c 'import os, nvidia.nccl as m
f = getattr(m, "__file__", None)
print(os.path.dirname(f) if f else list(m.__path__)[0])' 2>/dev/null
}
if [[ -z ${NCCL_HOME:-} ]]; then
  for d in "$CUDA_HOME" /usr "$(pip_nccl || true)"; do
    if [[ -n $d && -f $d/include/nccl.h ]]; then NCCL_HOME=$d; break; fi
  done
fi
[[ -n ${NCCL_HOME:-} && -f $NCCL_HOME/include/nccl.h ]] || die "nccl.h not found: set NCCL_HOME"
# The Makefile links with -L$NCCL_HOME/lib -lnccl. Make lib64 and a bare libnccl.so.2 (pip wheels
# ship no libnccl.so) visible to the linker too, through LIBRARY_PATH.
linkdir=$OUT/.nccl-link
for d in "$NCCL_HOME/lib" "$NCCL_HOME/lib64" "$NCCL_HOME/lib/x86_64-linux-gnu"; do
  if [[ -e $d/libnccl.so ]]; then LIBRARY_PATH=$d${LIBRARY_PATH:+:$LIBRARY_PATH}; break; fi
  if [[ -e $d/libnccl.so.2 ]]; then
    mkdir -p "$linkdir"; ln -sf "$d/libnccl.so.2" "$linkdir/libnccl.so"
    LIBRARY_PATH=$linkdir${LIBRARY_PATH:+:$LIBRARY_PATH}; break
  fi
done
export LIBRARY_PATH=${LIBRARY_PATH:-}

GENCODE=${NVCC_GENCODE:--gencode=arch=compute_90,code=sm_90}
JOBS=${JOBS:-$(nproc)}
ver=$(sed -n 's/^#define NCCL_TESTS_VERSION "\(.*\)"/\1/p' "$SRC/src/common.h")
echo "nccl-tests ${ver:-?}: CUDA_HOME=$CUDA_HOME MPI_HOME=$MPI_HOME NCCL_HOME=$NCCL_HOME"
echo "NVCC_GENCODE=$GENCODE jobs=$JOBS -> $OUT"
[[ $ver == 2.19.6 ]] || echo "build-nccl-tests: warning: the runner was written for nccl-tests 2.19.6" >&2

targets=()
for t in "${TESTS[@]}"; do targets+=("$OUT/${t}_perf"); done
make -C "$SRC/src" -j"$JOBS" MPI=1 MPI_HOME="$MPI_HOME" NCCL_HOME="$NCCL_HOME" CUDA_HOME="$CUDA_HOME" \
  NVCC_GENCODE="$GENCODE" BUILDDIR="$OUT" "${targets[@]}"

for t in "${targets[@]}"; do [[ -x $t ]] || die "missing after the build: $t"; done
echo "built: ${TESTS[*]/%/_perf} in $OUT"
ldd "$OUT/all_reduce_perf" | grep -E 'libnccl|libmpi|libcudart' || true
