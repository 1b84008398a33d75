#!/usr/bin/env bash
# Configures and builds into ./build (GPU backend auto-detected; STARSCREAM_GPU=none|cuda|hip
# overrides). Extra arguments go to the cmake configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DSTARSCREAM_GPU="${STARSCREAM_GPU:-auto}" "$@"
cmake --build build -j"$(nproc)"
