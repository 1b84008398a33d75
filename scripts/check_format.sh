#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Checks that C, C++, CUDA and HIP sources (.c .h .hpp .cc .cpp .cu .cuh) follow .clang-format:
# prints each file that differs, then the diff that would fix it; exit status 1 if any does.
#   scripts/check_format.sh              the files changed against the merge-base with origin/main
#                                        (committed or not); every tracked file where there is
#                                        no origin/main
#   scripts/check_format.sh --base REF   the files changed against REF
#   scripts/check_format.sh --all        every tracked file (the ctest tree.clang_format)
#   scripts/check_format.sh --fix [...]  rewrites the files it would report instead
# clang-format 14 (Debian 12's) defines the style; $CLANG_FORMAT names another binary. Deleted
# files and files outside git are not checked.
set -euo pipefail
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  sed -n '2,/^set -euo/p' "$0" | sed '/^# SPDX-License-Identifier:/d; $d; s/^# \{0,1\}//'
  exit 0
fi
cd "$(dirname "$0")/.."

mode=changed
base=""
fix=0
while [ $# -gt 0 ]; do
  case "$1" in
    --all) mode=all ;;
    --base) [ $# -ge 2 ] || { echo "check_format: --base needs a ref" >&2; exit 2; }
            mode=base; base="$2"; shift ;;
    --fix) fix=1 ;;
    *) echo "check_format: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

cf="${CLANG_FORMAT:-}"
if [ -z "$cf" ]; then
  for c in clang-format-14 clang-format; do
    if command -v "$c" >/dev/null 2>&1; then cf="$c"; break; fi
  done
fi
if [ -z "$cf" ] || ! command -v "$cf" >/dev/null 2>&1; then
  echo "check_format: clang-format not found (scripts/install-deps.sh installs it)" >&2
  exit 2
fi
version=$("$cf" --version | sed -n 's/.*version \([0-9]*\)\..*/\1/p')
if [ "$version" != 14 ]; then
  echo "check_format: note: $cf is version ${version:-unknown}; the tree is formatted with 14," \
       "and other versions may disagree on some lines" >&2
fi

exts=('*.c' '*.h' '*.hpp' '*.cc' '*.cpp' '*.cu' '*.cuh')
if [ "$mode" = changed ]; then
  if git rev-parse -q --verify origin/main >/dev/null; then
    base=$(git merge-base HEAD origin/main)
    mode=base
  else
    mode=all
  fi
fi
if [ "$mode" = all ]; then
  mapfile -t files < <(git ls-files -- "${exts[@]}")
else
  git rev-parse -q --verify "$base^{commit}" >/dev/null || {
    echo "check_format: '$base' is not a commit" >&2
    exit 2
  }
  # Added, copied, modified or renamed since base, in commits or in the working tree.
  mapfile -t files < <(git diff --name-only --diff-filter=ACMR "$base" -- "${exts[@]}")
fi

# One clang-format run names the files that differ (--dry-run -Werror reports each violation as
# FILE:LINE:COL: error: ...); only those are formatted again for their diff.
existing=()
for f in "${files[@]}"; do
  if [ -f "$f" ]; then existing+=("$f"); fi
done
bad=()
if [ ${#existing[@]} -gt 0 ]; then
  "$cf" --style=file --dump-config >/dev/null  # a broken .clang-format stops here
  report=$(mktemp)
  trap 'rm -f "$report"' EXIT
  printf '%s\0' "${existing[@]}" |
    xargs -0 -n 200 "$cf" --style=file --dry-run -Werror 2>"$report" >/dev/null || true
  violation=': error: code should be clang-formatted'
  if grep -v -e "$violation" "$report" | grep -q 'error'; then
    grep -v -e "$violation" "$report" | grep 'error' >&2
    echo "check_format: clang-format failed" >&2
    exit 2
  fi
  mapfile -t bad < <(sed -n "s/^\(.*\):[0-9]*:[0-9]*$violation.*/\1/p" "$report" | sort -u)
fi
diffs=""
for f in "${bad[@]}"; do
  d=$(diff -u --label "a/$f" --label "b/$f" "$f" <("$cf" --style=file "$f")) || true
  diffs+="$d"$'\n'
  if [ "$fix" = 1 ]; then "$cf" --style=file -i "$f"; fi
done
files=("${existing[@]}")

if [ ${#bad[@]} -eq 0 ]; then
  echo "check_format: ${#files[@]} files follow .clang-format"
  exit 0
fi
if [ "$fix" = 1 ]; then
  echo "check_format: reformatted ${#bad[@]} of ${#files[@]} files:"
  printf '  %s\n' "${bad[@]}"
  exit 0
fi
echo "check_format: ${#bad[@]} of ${#files[@]} files differ from .clang-format:"
printf '  %s\n' "${bad[@]}"
echo
printf '%s' "$diffs"
echo "check_format: the same command with --fix applies it (or clang-format -i FILE)"
exit 1
