#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Checks libstarscream-nccl.so as built against what docs/nccl-shim.md ("Build") promises:
#  - it exports the NCCL/RCCL API (nccl*, and the pnccl* profiling aliases) and nothing else, so
#    it interposes nothing but NCCL symbols on the application;
#  - it links libstarscream.so and holds no copy of it: no Starscream function or data that
#    libstarscream.so also defines, so a process has one environment registry, one logger, one
#    last-error slot and one group state, the library's;
#  - what it takes from libstarscream.so is the public API (the SSC_EXPORT declarations of
#    include/starscream/) and the internal interface (src/api/ssc_internal.h), nothing else.
# Usage: check_shim_library.sh SHIM CORE SOURCE_DIR   (the two built libraries, the source tree)
set -euo pipefail
shim=$1
core=$2
src=$3
fail() { echo "check_shim_library: $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Exports.
nm -D --defined-only "$shim" | awk 'NF == 3 { print $3 }' | sort -u > "$tmp/exported"
grep -qx ncclAllReduce "$tmp/exported" || fail "$shim does not export ncclAllReduce"
if grep -v -E '^p?nccl' "$tmp/exported" > "$tmp/extra"; then
  fail "$shim exports more than nccl*/pnccl*: $(tr '\n' ' ' < "$tmp/extra")"
fi

# Links the library, by its SONAME.
soname=$(readelf -d "$core" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
readelf -d "$shim" | grep -q "(NEEDED).*\[$soname\]" || fail "$shim does not link $soname"

# No copy of the library: no Starscream symbol (its C functions, ssc::'s functions, data,
# file-local statics, guard and TLS variables, vtables) defined in both. std:: and fmt:: code
# that both instantiate from the same headers is theirs, not a copy of Starscream, and ignored.
starscream() {
  nm --defined-only "$1" | awk 'NF == 3 { print $3 }' | grep -E '^(_Z[A-Z]*N[KVRO]*3ssc|ssc)' |
    sort -u || true
}
starscream "$shim" > "$tmp/shim.syms"
starscream "$core" > "$tmp/core.syms"
[ -s "$tmp/shim.syms" ] && [ -s "$tmp/core.syms" ] ||
  fail "no Starscream symbol found in one of the libraries (stripped?)"
comm -12 "$tmp/shim.syms" "$tmp/core.syms" > "$tmp/both"
if [ -s "$tmp/both" ]; then
  c++filt < "$tmp/both" | head -20 >&2
  fail "$shim holds $(wc -l < "$tmp/both") symbol(s) of libstarscream.so's own (above)"
fi

# What it takes from the library.
grep -ho 'SSC_EXPORT [^(]*\bssc[A-Za-z0-9_]*(' "$src"/include/starscream/*.h "$src"/src/api/ssc_internal.h |
  sed 's/.*\(ssc[A-Za-z0-9_]*\)($/\1/' | sort -u > "$tmp/declared"
nm -D --undefined-only "$shim" | awk '{ print $NF }' | sed 's/@.*//' | grep -E '^ssc' | sort -u \
  > "$tmp/used" || true
grep -qx sscInternalInterface "$tmp/used" || fail "$shim does not use the internal interface"
if comm -23 "$tmp/used" "$tmp/declared" | grep . > "$tmp/undeclared"; then
  fail "$shim uses ssc* symbols that are neither public nor the internal interface: $(tr '\n' ' ' < "$tmp/undeclared")"
fi
echo "check_shim_library: ok ($(wc -l < "$tmp/exported") exports, $(wc -l < "$tmp/used") ssc* imports)"
