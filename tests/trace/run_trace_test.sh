#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# STARSCREAM_TRACE end to end on the host backend (ctest, tests/trace/CMakeLists.txt):
#   run_trace_test.sh on  TOOL RANKS MPIRUN [ARGS...]: every rank writes its file, the tool's
#     check, merge and summary succeed on them (every rank present, 10 calls each);
#   run_trace_test.sh off TOOL RANKS MPIRUN [ARGS...]: with STARSCREAM_TRACE unset no
#     communicator traces and no file appears.
# MPIRUN [ARGS...] is the whole launch line up to (and including) the test program.
set -euo pipefail
mode=$1 tool=$2 ranks=$3
shift 3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
if [[ $mode == on ]]; then
  STARSCREAM_TRACE="$work/trace" "$@"
  python3 "$tool" check "$work/trace" --ranks "$ranks" --calls 10
  python3 "$tool" merge "$work/trace" -o "$work/merged.json"
  python3 -c "import json, sys; d = json.load(open(sys.argv[1])); \
    pids = {e['pid'] for e in d['traceEvents'] if e.get('ph') == 'X'}; \
    assert pids == set(range(int(sys.argv[2]))), pids" "$work/merged.json" "$ranks"
  python3 "$tool" summary "$work/trace" --copy-gbps 10 | tee "$work/summary.txt"
  grep -q '^allreduce' "$work/summary.txt"
  grep -q '^sendrecv' "$work/summary.txt"
else
  unset STARSCREAM_TRACE
  "$@" --expect-off
  if find "$work" -name 'starscream-trace.*' | grep -q .; then
    echo "trace files written with STARSCREAM_TRACE unset" >&2
    exit 1
  fi
fi
echo "trace test ($mode) passed"
