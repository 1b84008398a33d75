#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The README's example, as a new user runs it: installs the build into a temporary prefix,
# extracts the C program and the CMakeLists.txt from README.md (the blocks between
# <!-- readme-example:begin NAME --> and <!-- readme-example:end -->, so what is checked is what
# the README shows), builds the program with mpicc through pkg-config (the README's command
# line) and with CMake through find_package, and runs both on 2 ranks of the host backend. Then
# checks that the installed tree has the tools and topology files and that an installed perf
# program runs from there.
# Usage: check_readme_example.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build_dir=$(cd "$1" && pwd)
src_dir=$(cd "$2" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Extract every named block of the README into $tmp/work/NAME.
mkdir -p "$tmp/work"
awk -v out="$tmp/work" '
  /<!-- readme-example:begin / { name = $3; inside = 1; fence = 0; next }
  /<!-- readme-example:end -->/ { inside = 0; next }
  inside && /^```/ { fence = !fence; next }
  inside && fence { print > (out "/" name) }
' "$src_dir/README.md"
for f in example.c CMakeLists.txt; do
  [ -s "$tmp/work/$f" ] || { echo "README.md has no readme-example block for $f" >&2; exit 1; }
done

prefix=$tmp/prefix
cmake --install "$build_dir" --prefix "$prefix" > "$tmp/install.log"

mpi_flags=(--oversubscribe)
[ "$(id -u)" = 0 ] && mpi_flags+=(--allow-run-as-root)
# Without LD_LIBRARY_PATH: the rpath alone must find the installed library.
run2() {
  env -u LD_LIBRARY_PATH STARSCREAM_BACKEND=host STARSCREAM_TIMEOUT=60 \
    mpirun "${mpi_flags[@]}" -np 2 "$@"
}

# pkg-config and mpicc, the README's command line.
cd "$tmp/work"
libdir=$(ls -d "$prefix"/lib*/pkgconfig | head -1)
export PKG_CONFIG_PATH=$libdir
mpicc example.c -o example $(pkg-config --cflags --libs starscream) \
    -Wl,-rpath,$(pkg-config --variable=libdir starscream)
out=$(run2 ./example)
echo "$out"
[ "$(grep -c ', ok$' <<< "$out")" = 2 ] || { echo "pkg-config build: expected 2 ok lines" >&2; exit 1; }

# find_package, the README's CMakeLists.txt.
cmake -S . -B build-example -DCMAKE_PREFIX_PATH="$prefix" > "$tmp/configure.log"
cmake --build build-example > "$tmp/build.log"
out=$(run2 build-example/example)
echo "$out"
[ "$(grep -c ', ok$' <<< "$out")" = 2 ] || { echo "find_package build: expected 2 ok lines" >&2; exit 1; }

# The installed tools and topology files.
for f in bin/starscream-topo bin/starscream-env bin/starscream-sweep bin/all_reduce_perf \
         bin/sendrecv_perf share/starscream/topologies/mi300x-8x-cpx-nps4.json; do
  [ -e "$prefix/$f" ] || { echo "not installed: $f" >&2; exit 1; }
done
"$prefix/bin/starscream-topo" -f "$prefix/share/starscream/topologies/2x4.json" | head -1
run2 "$prefix/bin/all_reduce_perf" -b 8 -e 4K -f 8 \
  -T "$prefix/share/starscream/topologies/h200-mps-2.json" > "$tmp/perf.log" 2>&1 || { cat "$tmp/perf.log" >&2; echo "installed all_reduce_perf failed" >&2; exit 1; }
grep -q "Out of bounds values : 0 OK" "$tmp/perf.log" || { cat "$tmp/perf.log" >&2; exit 1; }
echo "readme example ok"
