#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the host backend and the reliability suite with AddressSanitizer into ./build-asan and
# runs the suite (soak runs excepted: they are about bounds, not memory errors, and slow under
# ASan). scripts/test.sh calls it after the main tests; it also runs on its own.
set -euo pipefail
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  sed -n '2,/^set -euo/p' "$0" | sed '/^# SPDX-License-Identifier:/d; $d; s/^# \{0,1\}//'
  exit 0
fi
cd "$(dirname "$0")/.."
cmake -S . -B build-asan -DSTARSCREAM_GPU=none -DSTARSCREAM_SANITIZE=address \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTARSCREAM_BUILD_PERF=OFF -DSTARSCREAM_BUILD_TOOLS=OFF "$@"
targets=$(sed -n 's/^ssc_reliability_test(\([a-z_]*\) reliability)$/\1/p' tests/reliability/CMakeLists.txt)
cmake --build build-asan -j"$(nproc)" --target $targets test_bootstrap
# detect_leaks=0: the suite forks and kills ranks on purpose; leaks are the soak's subject.
ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j1 -L reliability
ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j1 -R '^Bootstrap'
