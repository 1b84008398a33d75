#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Configures and builds into ./build (GPU backend auto-detected; STARSCREAM_GPU=none|cuda|hip
# overrides: 'auto' builds the CUDA backend whenever nvcc is on PATH, GPU or not, which takes
# longer; STARSCREAM_GPU=none builds the host backend only). Extra arguments go to the cmake
# configure step, e.g. scripts/build.sh -DSTARSCREAM_BUILD_TESTS=OFF. Programs land in
# build/bin, libraries in build/lib.
set -euo pipefail
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  sed -n '2,/^set -euo/p' "$0" | sed '/^# SPDX-License-Identifier:/d; $d; s/^# \{0,1\}//'
  exit 0
fi
cd "$(dirname "$0")/.."
cmake -S . -B build -DSTARSCREAM_GPU="${STARSCREAM_GPU:-auto}" "$@"
cmake --build build -j"$(nproc)"
