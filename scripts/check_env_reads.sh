#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Checks that the library reads the process environment in one place: src/core/env.cc, the
# registry (docs/environment.md). Two rules over the tracked C, C++, CUDA and HIP sources of
# src/, transports/, tuner/ and include/ (programs under tools/, perf/, tests/ and examples/ may
# read what they like):
#   1. getenv, secure_getenv, setenv, unsetenv, putenv, clearenv and environ appear in
#      src/core/env.cc only: every other file asks the registry, so every variable the library
#      depends on is declared, documented and validated there.
#   2. The registry's readers of the environment as it is now (env::getString, env::getInt,
#      env::getDouble, env::getExternal, env::Snapshot::take) appear only in the files listed
#      below, each with why it may read then: where a communicator or a context object is
#      created, or a setting of the whole process is read once. Everything else takes its
#      settings from the snapshot its communicator (PeerView::settings) or context took when it
#      was created, so that no call reads the environment and a variable set afterwards changes
#      nothing about objects that exist.
# Text after // on a line is a comment and is not checked. Prints each offending line and exits
# 1 if there is one.
#   scripts/check_env_reads.sh     the check (the ctest tree.env_reads)
set -euo pipefail
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  sed -n '2,/^set -euo/p' "$0" | sed '/^# SPDX-License-Identifier:/d; $d; s/^# \{0,1\}//'
  exit 0
fi
if [ $# -gt 0 ]; then
  echo "check_env_reads: unknown argument '$1' (see --help)" >&2
  exit 2
fi
cd "$(dirname "$0")/.."

registry=src/core/env.cc
# Files that may read the environment as it is now, and when they do.
allowed=(
  src/api/comm_api.cc                 # a communicator's (and its unique id's) creation
  src/ops/gemm/gemm_api.cc            # sscGemmCreate: the GEMM context's settings
  src/ops/attention/attention_api.cc  # sscKvCacheCreate: the KV cache's settings
  src/core/log.cc                     # STARSCREAM_DEBUG, once per process
  src/device/backend_select.cc        # STARSCREAM_BACKEND, once per process (one backend)
  src/api/ssc_internal.cc             # the NCCL shim's settings, through the internal interface
  tuner/setup.cc                      # STARSCREAM_TUNER_PROFILE, in communicator init
  tuner/profile.cc                    # the same, and for the tools and the NCCL tuner plugin
  tuner/calibrate.cc                  # the calibration cache's directory, in communicator init
  tuner/plugin/plugin.cc              # the NCCL tuner plugin's topology, at its init
)

mapfile -t files < <(git ls-files -- 'src/*' 'transports/*' 'tuner/*' 'include/*' |
                     grep -E '\.(c|h|hpp|cc|cpp|cu|cuh)$' || true)

# Lines of the given files whose code (the text before //) matches the extended regex $1.
matches() {
  local pattern=$1
  shift
  [ $# -gt 0 ] || return 0
  awk -v re="$pattern" '{ code = $0; sub(/\/\/.*/, "", code); if (code ~ re) print FILENAME ":" FNR ": " $0 }' "$@"
}

raw=() readers=()
for f in "${files[@]}"; do
  [ -f "$f" ] || continue
  [ "$f" = "$registry" ] && continue
  raw+=("$f")
  allow=0
  for a in "${allowed[@]}"; do [ "$f" = "$a" ] && allow=1; done
  [ "$allow" = 1 ] || readers+=("$f")
done

status=0
found=$(matches '(^|[^A-Za-z0-9_])((secure_)?getenv|setenv|unsetenv|putenv|clearenv)[ \t]*[(]|(^|[^A-Za-z0-9_])(__)?environ([^A-Za-z0-9_]|$)' "${raw[@]}")
if [ -n "$found" ]; then
  echo "check_env_reads: the environment is read outside $registry (declare the variable there and"
  echo "read it through the registry: an env::Snapshot for settings, externalInputs() for others):"
  printf '%s\n' "$found" | sed 's/^/  /'
  status=1
fi
found=$(matches '(^|[^A-Za-z0-9_])env::(getString|getInt|getDouble|getExternal|Snapshot::take)[ \t]*[(]' "${readers[@]}")
if [ -n "$found" ]; then
  echo "check_env_reads: the registry's live readers are used outside the files that create a"
  echo "communicator or a context (read the setting from the settings its owner took when it was"
  echo "created, PeerView::settings, or list the file in $0 with why it may read then):"
  printf '%s\n' "$found" | sed 's/^/  /'
  status=1
fi
if [ "$status" = 0 ]; then
  echo "check_env_reads: ok (${#files[@]} library sources; the environment is read in $registry)"
fi
exit "$status"
