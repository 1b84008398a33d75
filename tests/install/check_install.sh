#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the build into a temporary prefix and builds and runs a downstream project against it
# (CMake package config and pkg-config file). Checks what the install promises a packager:
#  - the version: the generated starscream/version.h, the pkg-config file and the library all
#    say VERSION (CMakeLists.txt's project(VERSION));
#  - the ABI name: the SONAME is libstarscream.so.MAJOR.MINOR while MAJOR is 0 (a 0.x minor
#    release may break the ABI), libstarscream.so.MAJOR from 1.0 on;
#  - the package's compatibility: find_package(Starscream MAJOR.MINOR) finds it, and a request
#    the ABI rule refuses (another 0.x minor, another major) does not;
#  - the exports: libstarscream.so exports exactly the ssc* functions the installed headers
#    declare with SSC_EXPORT, plus the one function of its internal interface for the NCCL shim
#    (src/api/ssc_internal.h, not installed).
# Usage: check_install.sh BUILD_DIR VERSION
set -euo pipefail
build_dir=$1
version=$2
src_dir=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "check_install: $*" >&2; exit 1; }

IFS=. read -r major minor patch <<< "$version"
cmake --install "$build_dir" --prefix "$tmp/prefix" > "$tmp/install.log"
libdir=$(ls -d "$tmp"/prefix/lib* | head -1)
incdir=$tmp/prefix/include/starscream

# Version: the generated header (and not its template) is installed next to starscream.h.
[ -f "$incdir/version.h" ] || fail "starscream/version.h is not installed"
[ ! -e "$incdir/version.h.in" ] || fail "the template version.h.in is installed"
for macro in "SSC_MAJOR $major" "SSC_MINOR $minor" "SSC_PATCH $patch" \
             "SSC_VERSION_STRING \"$version\""; do
  grep -q "^#define $macro\$" "$incdir/version.h" || fail "version.h lacks '#define $macro'"
done
export PKG_CONFIG_PATH="$libdir/pkgconfig"
[ "$(pkg-config --modversion starscream)" = "$version" ] ||
  fail "starscream.pc says $(pkg-config --modversion starscream), not $version"

# ABI name.
if [ "$major" = 0 ]; then soname=libstarscream.so.$major.$minor; else soname=libstarscream.so.$major; fi
[ -e "$libdir/$soname" ] || fail "$soname is not installed"
got=$(readelf -d "$libdir/libstarscream.so" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
[ "$got" = "$soname" ] || fail "SONAME is '$got', expected $soname"

# Exports: the SSC_EXPORT declarations of the installed headers and of the internal interface,
# and the library's ssc* symbols.
[ ! -e "$incdir/ssc_internal.h" ] || fail "the internal interface ssc_internal.h is installed"
grep -ho 'SSC_EXPORT [^(]*\bssc[A-Za-z0-9_]*(' "$incdir"/*.h "$src_dir/../../src/api/ssc_internal.h" |
  sed 's/.*\(ssc[A-Za-z0-9_]*\)($/\1/' | sort -u > "$tmp/declared"
nm -D --defined-only "$libdir/libstarscream.so" | awk '$3 ~ /^ssc/ { print $3 }' | sort -u \
  > "$tmp/exported"
[ -s "$tmp/declared" ] || fail "no SSC_EXPORT declaration found in the installed headers"
if ! diff "$tmp/declared" "$tmp/exported" > "$tmp/exports.diff"; then
  cat "$tmp/exports.diff" >&2
  fail "exported ssc* symbols (>) differ from the headers' SSC_EXPORT declarations (<)"
fi

# The package: a request for this major.minor is accepted, one the ABI rule refuses is not.
cmake -S "$src_dir/consumer" -B "$tmp/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
  -DSSC_FIND_VERSION="$major.$minor" > "$tmp/configure.log"
if [ "$major" = 0 ]; then
  refused=0.$(( minor > 0 ? minor - 1 : minor + 1 ))  # another 0.x minor: another ABI
else
  refused=$(( major + 1 )).0
fi
if cmake -S "$src_dir/consumer" -B "$tmp/build-refused" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
     -DSSC_FIND_VERSION="$refused" > "$tmp/refused.log" 2>&1; then
  fail "find_package(Starscream $refused) accepted the installed $version"
fi
grep -q "compatible with requested version" "$tmp/refused.log" || {
  cat "$tmp/refused.log" >&2; fail "find_package(Starscream $refused) failed for another reason"; }

cmake --build "$tmp/build" > "$tmp/build.log"
LD_LIBRARY_PATH="$libdir" STARSCREAM_BACKEND=host "$tmp/build/consumer"
LD_LIBRARY_PATH="$libdir" STARSCREAM_BACKEND=host "$tmp/build/consumer_pc"
LD_LIBRARY_PATH="$libdir" STARSCREAM_BACKEND=host "$tmp/build/consumer_cxx"
echo "check_install: ok"
