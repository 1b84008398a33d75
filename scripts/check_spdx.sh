#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Checks that every tracked source file (.c .h .hpp .cc .cpp .cu .cuh .py .sh .cmake and
# CMakeLists.txt) names its license with an `SPDX-License-Identifier: MIT` line among its first
# five lines, not counting a shebang line; prints the files that lack one, exit status 1 if any.
#   scripts/check_spdx.sh          the check (the ctest tree.spdx)
#   scripts/check_spdx.sh --fix    inserts the line into each file that lacks it, as a comment of
#                                  the file's language: `/* ... */` for C (.c and the public C
#                                  headers under include/), `// ...` for C++, CUDA and HIP, `# ...`
#                                  for Python, shell and CMake; first in the file, or after the
#                                  shebang line (and a Python coding line after it) where there is
#                                  one. Files that have the line are left as they are.
set -euo pipefail
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  sed -n '2,/^set -euo/p' "$0" | sed '/^# SPDX-License-Identifier:/d; $d; s/^# \{0,1\}//'
  exit 0
fi
cd "$(dirname "$0")/.."

fix=0
case "${1:-}" in
  "") ;;
  --fix) fix=1 ;;
  *) echo "check_spdx: unknown argument '$1' (see --help)" >&2; exit 2 ;;
esac

tag='SPDX-License-Identifier: MIT'
mapfile -t files < <(git ls-files -- '*.c' '*.h' '*.hpp' '*.cc' '*.cpp' '*.cu' '*.cuh' '*.py' \
                                     '*.sh' '*.cmake' 'CMakeLists.txt' '*/CMakeLists.txt')
regular=()
for f in "${files[@]}"; do
  if [ -f "$f" ] && [ ! -L "$f" ]; then regular+=("$f"); fi
done

# The files that carry the tag in their first five lines after an optional shebang, one awk run
# for the whole tree (an empty file never reaches FNR == 1, so it counts as lacking the tag).
declare -A tagged=()
if [ ${#regular[@]} -gt 0 ]; then
  while IFS= read -r f; do tagged["$f"]=1; done < <(
    printf '%s\0' "${regular[@]}" | xargs -0 awk -v tag="$tag" '
      FNR == 1 { limit = /^#!/ ? 6 : 5 }
      FNR <= limit && index($0, tag) { print FILENAME; nextfile }
      FNR > limit { nextfile }')
fi
missing=()
for f in "${regular[@]}"; do
  if [ -z "${tagged[$f]:-}" ]; then missing+=("$f"); fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "check_spdx: ${#regular[@]} files carry '$tag'"
  exit 0
fi

if [ "$fix" = 0 ]; then
  echo "check_spdx: ${#missing[@]} of ${#regular[@]} files lack '$tag' in their first 5 lines:"
  printf '  %s\n' "${missing[@]}"
  echo "check_spdx: scripts/check_spdx.sh --fix inserts it"
  exit 1
fi

comment_for() {  # the tag as a comment in the language of file $1
  case "$1" in
    *.c | include/*.h) echo "/* $tag */" ;;
    *.h | *.hpp | *.cc | *.cpp | *.cu | *.cuh) echo "// $tag" ;;
    *) echo "# $tag" ;;
  esac
}

for f in "${missing[@]}"; do
  line=$(comment_for "$f")
  tmp=$(mktemp)
  # After the shebang, and after a Python coding line that follows it (PEP 263 wants that in the
  # first two lines); else first.
  awk -v line="$line" -v py="$([[ $f == *.py ]] && echo 1 || echo 0)" '
    NR == 1 && /^#!/ { print; held = 1; next }
    NR == 2 && held && py && /^[ \t\f]*#.*coding[:=]/ { print; next }
    !done { print line; done = 1 }
    { print }
    END { if (!done) print line }' "$f" > "$tmp"
  cat "$tmp" > "$f"  # keeps the file's mode (scripts stay executable)
  rm -f "$tmp"
done
echo "check_spdx: inserted '$tag' into ${#missing[@]} files:"
printf '  %s\n' "${missing[@]}"
