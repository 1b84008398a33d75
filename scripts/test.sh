#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs dependencies, builds, and runs every test (unit tests and the mpirun integration
# tests on the host backend; GPU tests run when a GPU is present and skip visibly otherwise),
# then the reliability suite again under AddressSanitizer (scripts/test-asan.sh: a second build,
# in ./build-asan). ctest runs nproc tests at a time; tests that start several processes or
# use every core reserve that many (ctest PROCESSORS), and tests that look at machine-wide state
# run alone (RUN_SERIAL, RESOURCE_LOCK), so parallel runs stay safe. On a 2-core machine the
# first run builds for a long while; later runs rebuild only what changed.
#   scripts/test.sh                  everything, as CI runs it
#   scripts/test.sh --quick          the edit loop: builds, then runs only the tests labelled
#                                    quick (ctest -L quick: the unit tests of every layer, the
#                                    tree's checks, one short mpirun run); no ASan suite
# Extra arguments go to ctest, e.g. to run only some tests (without --quick the ASan suite still
# runs after them):
#   scripts/test.sh -R '^docs\.'
#   scripts/test.sh --quick -R Topo
#   ctest --test-dir build -R '^install\.'   (no rebuild, no ASan: the tests of ./build only)
#   ctest --test-dir build -L quick -j"$(nproc)"   (the quick tier without rebuilding)
set -euo pipefail
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  sed -n '2,/^set -euo/p' "$0" | sed '/^# SPDX-License-Identifier:/d; $d; s/^# \{0,1\}//'
  exit 0
fi
quick=0
if [[ ${1:-} == --quick ]]; then
  quick=1
  shift
fi
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
labels=()
[[ $quick -eq 1 ]] && labels=(-L quick)
status=0
ctest --test-dir build --output-on-failure -j"$(nproc)" "${labels[@]}" "$@" || status=$?
# The suites this configuration could not run (cmake/SkippedSuites.cmake), with why: ctest's
# summary names them (skipped.*), this says what was missing.
if [ -s build/skipped-suites.txt ]; then
  echo "test.sh: suites skipped for a missing optional dependency:"
  sed 's/^/  /' build/skipped-suites.txt
fi
[ "$status" -eq 0 ] || exit "$status"
leftover=$(ls /dev/shm 2>/dev/null | grep -c '^ssc-' || true)
if [ "$leftover" -ne 0 ]; then
  echo "test.sh: $leftover Starscream shared-memory segment(s) left in /dev/shm" >&2
  exit 1
fi
[[ $quick -eq 1 ]] && exit 0
# The reliability suite again, built with AddressSanitizer (abort and destroy races).
scripts/test-asan.sh
