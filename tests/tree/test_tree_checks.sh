#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The tree's format, license and environment checks find what they should, on a scratch git
# repository with copies of the scripts and of .clang-format: scripts/check_spdx.sh reports files
# without the SPDX line and --fix inserts it in each language's comment, after a shebang,
# idempotently; scripts/check_format.sh passes formatted files, reports and diffs the others
# (--all, and only the files changed since --base), and --fix formats them;
# scripts/check_env_reads.sh reports a read of the environment outside the registry and a live
# registry read outside the files that create communicators and contexts, and nothing in
# comments. Prints "tree checks ok".
set -euo pipefail
src="$(cd "$(dirname "$0")/../.." && pwd)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
git init -q .
git config user.email test@example.com
git config user.name test
mkdir -p scripts include/x src
cp "$src/scripts/check_spdx.sh" "$src/scripts/check_format.sh" "$src/scripts/check_env_reads.sh" \
  scripts/
cp "$src/.clang-format" .

fail() { echo "FAIL: $*" >&2; exit 1; }
expect_rc() {  # expect_rc RC COMMAND...: runs COMMAND, output in $work/out, checks its status
  local want=$1 rc=0
  shift
  "$@" > out 2>&1 || rc=$?
  [ "$rc" = "$want" ] || { cat out >&2; fail "$* exited $rc, not $want"; }
}

# ---- SPDX
printf '#!/usr/bin/env python3\n# -*- coding: utf-8 -*-\n"""Doc."""\n' > tool.py
printf '#!/usr/bin/env bash\necho hi\n' > run.sh
chmod +x run.sh
printf '/* A public C header. */\n#pragma once\n' > include/x/api.h
printf '#pragma once\nint f();\n' > src/f.h
printf 'int f() { return 1; }\n' > src/f.cc
printf 'add_library(x f.cc)\n' > src/CMakeLists.txt
printf '// 1\n// 2\n// 3\n// 4\n// 5\n// SPDX-License-Identifier: MIT\n' > src/late.h
printf '#!/bin/sh\n# 1\n# 2\n# 3\n# 4\n# SPDX-License-Identifier: MIT\n' > src/tagged.sh
git add -A
expect_rc 1 scripts/check_spdx.sh
for f in tool.py run.sh include/x/api.h src/f.h src/f.cc src/CMakeLists.txt src/late.h; do
  grep -qx "  $f" out || fail "check_spdx does not report $f"
done
for f in scripts/check_spdx.sh scripts/check_format.sh src/tagged.sh; do
  if grep -qx "  $f" out; then fail "check_spdx reports $f, which carries the line"; fi
done
expect_rc 0 scripts/check_spdx.sh --fix
expect_rc 0 scripts/check_spdx.sh
[ "$(sed -n 3p tool.py)" = "# SPDX-License-Identifier: MIT" ] || fail "tool.py: not after shebang and coding line"
[ "$(sed -n 2p run.sh)" = "# SPDX-License-Identifier: MIT" ] || fail "run.sh: not after the shebang"
[ -x run.sh ] || fail "run.sh lost its mode"
[ "$(sed -n 1p include/x/api.h)" = "/* SPDX-License-Identifier: MIT */" ] || fail "C header comment"
[ "$(sed -n 1p src/f.cc)" = "// SPDX-License-Identifier: MIT" ] || fail "C++ comment"
[ "$(sed -n 1p src/CMakeLists.txt)" = "# SPDX-License-Identifier: MIT" ] || fail "CMake comment"
git add -A
git commit -qm spdx
expect_rc 0 scripts/check_spdx.sh --fix
git diff --quiet || fail "check_spdx --fix changed files that carry the line"

# ---- clang-format
if ! command -v clang-format-14 >/dev/null && ! command -v clang-format >/dev/null; then
  fail "clang-format is not installed (scripts/install-deps.sh installs it)"
fi
printf '// SPDX-License-Identifier: MIT\nint g(int* p) { return *p; }\n' > src/good.cc
printf '// SPDX-License-Identifier: MIT\nint  h( int *p ){return *p;}\n' > src/bad.cc
git add -A
git commit -qm sources
expect_rc 1 scripts/check_format.sh --all
grep -qx "  src/bad.cc" out || fail "check_format --all does not report src/bad.cc"
if grep -qx "  src/good.cc" out; then fail "check_format --all reports src/good.cc"; fi
grep -q '^+int h(int\* p) { return \*p; }$' out || fail "check_format prints no diff for src/bad.cc"
base=$(git rev-parse HEAD)
expect_rc 0 scripts/check_format.sh --base "$base"  # nothing changed since base
printf '// SPDX-License-Identifier: MIT\nint g(int* p)  { return *p; }\n' > src/good.cc
expect_rc 1 scripts/check_format.sh --base "$base"  # the working tree's change
grep -qx "  src/good.cc" out || fail "check_format --base does not report the changed file"
if grep -qx "  src/bad.cc" out; then fail "check_format --base reports an unchanged file"; fi
expect_rc 2 scripts/check_format.sh --base no-such-ref
expect_rc 0 scripts/check_format.sh --all --fix
expect_rc 0 scripts/check_format.sh --all

# ---- environment reads
mkdir -p src/core src/comm tuner transports/host tools/x
printf '// SPDX-License-Identifier: MIT\nextern char** environ;\nconst char* v = std::getenv("X");\n' \
  > src/core/env.cc
printf '// SPDX-License-Identifier: MIT\nauto l = env::getString("STARSCREAM_DEBUG");\n' > src/core/log.cc
printf '// SPDX-License-Identifier: MIT\n// no std::getenv( here, nor env::getInt(\nint n = 0;\n' > src/comm/quiet.cc
printf '// SPDX-License-Identifier: MIT\nconst char* v = getenv("HOME");\n' > tools/x/main.cc
git add -A
expect_rc 0 scripts/check_env_reads.sh
printf '// SPDX-License-Identifier: MIT\nconst char* h = std::getenv("HOME");\n' > tuner/cache.cc
printf '// SPDX-License-Identifier: MIT\nchar** e = environ;\n' > transports/host/walk.h
printf '// SPDX-License-Identifier: MIT\nint s = ssc::env::getInt("STARSCREAM_SPIN");\n' > src/comm/wait.cc
printf '// SPDX-License-Identifier: MIT\nauto t = env::Snapshot::take();\n' > src/comm/take.cc
git add -A
expect_rc 1 scripts/check_env_reads.sh
for where in tuner/cache.cc:2 transports/host/walk.h:2 src/comm/wait.cc:2 src/comm/take.cc:2; do
  grep -q "^  $where: " out || fail "check_env_reads does not report $where"
done
for quiet in src/core/env.cc src/core/log.cc src/comm/quiet.cc tools/x/main.cc; do
  if grep -q "^  $quiet:" out; then fail "check_env_reads reports $quiet"; fi
done
echo "tree checks ok"
