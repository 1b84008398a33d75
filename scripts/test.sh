#!/usr/bin/env bash
# Installs dependencies, builds, and runs every test (unit tests and the mpirun integration
# tests on the host backend; GPU tests run when a GPU is present and skip visibly otherwise),
# then the reliability suite again under AddressSanitizer (scripts/test-asan.sh: a second build,
# in ./build-asan). On a 2-core machine the first run builds for a long while; later runs rebuild
# only what changed. Extra arguments go to ctest, e.g. to run only some tests (the ASan suite
# still runs after them):
#   scripts/test.sh -R '^docs\.'
#   ctest --test-dir build -R '^install\.'   (no rebuild, no ASan: the tests of ./build only)
set -euo pipefail
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  exit 0
fi
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
# One test at a time: the mpirun tests start up to 8 processes each on a 2-core machine.
ctest --test-dir build --output-on-failure -j1 "$@"
leftover=$(ls /dev/shm 2>/dev/null | grep -c '^ssc-' || true)
if [ "$leftover" -ne 0 ]; then
  echo "test.sh: $leftover Starscream shared-memory segment(s) left in /dev/shm" >&2
  exit 1
fi
# The reliability suite again, built with AddressSanitizer (abort and destroy races).
scripts/test-asan.sh
