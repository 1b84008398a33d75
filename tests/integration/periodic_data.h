// SPDX-License-Identifier: MIT
// Filling and checking the collective tests' buffers in time proportional to their bytes, not to
// a reference evaluation per element (test_mpi_collectives.cc, test_param_collectives.cc).
//
// Every value tests/support/reference.h defines is periodic in the element index with period
// kRefPeriod: inputValue reads the index only as (r + i) % 4 and i * 7 % 5, and the references
// combine inputValue over ranks at one index. referencePeriodHolds() checks that on every type,
// op and rank the tests use; the programs refuse to run when it fails.
//  - fillPeriodic encodes one period element by element and copies it over the rest.
//  - checkPeriodic encodes each residue's reference value once. An element whose bytes equal
//    that encoding passes when the encoding itself passes closeEnough (checked once per residue:
//    equal bytes decode to the same double); every other element is decoded and judged by
//    closeEnough against its reference, exactly as an element-by-element check would. The
//    verdict and the count of wrong elements are the element-by-element ones.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "src/core/dtype.h"
#include "src/kernels/host/reduce.h"
#include "starscream/starscream.h"
#include "tests/support/reference.h"

namespace ssc::test {

constexpr uint64_t kRefPeriod = 20;

// Whether inputValue(r, i) == inputValue(r, i % kRefPeriod) for ranks 0..maxRanks-1, every type,
// every op (sscNumOps standing for PreMulSum) and i over several periods.
inline bool referencePeriodHolds(int maxRanks) {
  for (int t = 0; t < sscNumTypes; ++t)
    for (int op = 0; op <= static_cast<int>(sscNumOps); ++op)
      for (int r = 0; r < maxRanks; ++r)
        for (uint64_t i = 0; i < 7 * kRefPeriod + 3; ++i)
          if (inputValue(r, i, static_cast<sscDataType_t>(t), static_cast<sscRedOp_t>(op)) !=
              inputValue(r, i % kRefPeriod, static_cast<sscDataType_t>(t),
                         static_cast<sscRedOp_t>(op)))
            return false;
  return true;
}

// buf[k] = value(k) for k < elems, in `type`'s encoding. value must have period kRefPeriod.
template <class Value>
void fillPeriodic(sscDataType_t type, char* buf, uint64_t elems, Value value) {
  const size_t es = dtypeSize(type);
  const uint64_t head = std::min(elems, kRefPeriod);
  for (uint64_t k = 0; k < head; ++k) setElementFromDouble(type, buf, k, value(k));
  // Doubling copies: `done` stays a multiple of the period.
  for (uint64_t done = head; done < elems;) {
    const uint64_t n = std::min(done, elems - done);
    std::memcpy(buf + done * es, buf, n * es);
    done += n;
  }
}

namespace detail {
// The element loop of checkPeriodic for elements of Es bytes (a fixed-size compare inlines).
template <size_t Es, class Bad>
long long checkElements(sscDataType_t type, sscRedOp_t op, int n, const char* buf, uint64_t elems,
                        const char* pattern, const double* wants, const bool* encodingPasses,
                        Bad& bad) {
  long long wrong = 0;
  uint64_t r = 0;
  for (uint64_t k = 0; k < elems; ++k, r = r + 1 == kRefPeriod ? 0 : r + 1) {
    if (encodingPasses[r] && std::memcmp(buf + k * Es, pattern + r * Es, Es) == 0) continue;
    const double got = getElementAsDouble(type, buf, k);
    if (closeEnough(got, wants[r], type, op, n)) continue;
    ++wrong;
    bad(k, got, wants[r]);
  }
  return wrong;
}
}  // namespace detail

// Checks buf[k] for k < elems against want(k) (period kRefPeriod) with closeEnough(got, want,
// type, op, n); calls bad(k, got, want) for each element that fails and returns their number.
template <class Want, class Bad>
long long checkPeriodic(sscDataType_t type, sscRedOp_t op, int n, const char* buf, uint64_t elems,
                        Want want, Bad bad) {
  const uint64_t head = std::min(elems, kRefPeriod);
  char pattern[kRefPeriod * 8];
  double wants[kRefPeriod];
  bool encodingPasses[kRefPeriod];
  for (uint64_t r = 0; r < head; ++r) {
    wants[r] = want(r);
    setElementFromDouble(type, pattern, r, wants[r]);
    encodingPasses[r] = closeEnough(getElementAsDouble(type, pattern, r), wants[r], type, op, n);
  }
  switch (dtypeSize(type)) {
    case 1:
      return detail::checkElements<1>(type, op, n, buf, elems, pattern, wants, encodingPasses, bad);
    case 2:
      return detail::checkElements<2>(type, op, n, buf, elems, pattern, wants, encodingPasses, bad);
    case 4:
      return detail::checkElements<4>(type, op, n, buf, elems, pattern, wants, encodingPasses, bad);
    default:
      return detail::checkElements<8>(type, op, n, buf, elems, pattern, wants, encodingPasses, bad);
  }
}

}  // namespace ssc::test
