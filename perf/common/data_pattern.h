// SPDX-License-Identifier: MIT
// The data the correctness check (-c) puts in every rank's input, and the results it expects.
//
// Each element of each rank's input is a deterministic function of (seed, rank, index), so any
// rank can regenerate any other rank's input, and the expected result of a reduction is computed
// on the host independently of the library. Values are chosen so that the exact result, and
// every partial result in any reduction order, is representable in the element type, for every
// type from fp8 e5m2 (integers exact only up to 8) to uint64 and for any rank count: the check
// then compares bits, whatever order an algorithm reduces in. Only avg over a rank count that is
// not a power of two rounds (x * (1/n) is inexact), and is compared with a stated tolerance.
//
//   op              input of rank r at index i                           expected
//   sum, avg,       0 except on k "active" ranks per index (a window      the exact sum S; avg:
//   mulsum          sliding with i), where it is 1..V; mulsum scales      S / n (integers: trunc)
//                   rank r by 1 + (r & 1). k * V * scale <= the type's
//                   exact-integer limit (e5m2: k = 4, V = 2).
//   prod            2 on t_i active ranks (t_i varies with i, 2^t_i fits  2^t_i
//                   the type: int8 t <= 6, e4m3 t <= 8), else 1
//   min, max        1..M, M = min(64, exact-integer limit)                min / max over ranks
//   none (copies)   hashed bits, made finite for float types              the source rank's bits
//
// Reduction patterns repeat with a prime period (65521 elements) so expected values are
// tabulated once per check, on first use; a misplaced block goes unnoticed only if it moved by a
// multiple of that period. Copy patterns do not repeat.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "perf/common/datatype.h"

namespace ssc::perf {

class Pattern {
 public:
  Pattern(sscDataType_t type, PerfOp op, int nranks, uint64_t seed);

  sscDataType_t type() const { return type_; }
  PerfOp op() const { return op_; }
  size_t elementSize() const { return elt_; }

  // Writes elements [first, first + count) of rank `rank`'s input to dst.
  void fillInput(int rank, size_t first, size_t count, void* dst) const;
  // The scalar rank `rank` passes to sscRedOpCreatePreMulSum, encoded in the element type.
  void premulScalar(int rank, void* dst) const;

  // Elements of got[0, count) whose bits differ from rank srcRank's input at [srcFirst, ...).
  int64_t countInputMismatches(const void* got, int srcRank, size_t srcFirst, size_t count) const;
  // Elements of got[0, count) that differ from the reduction over all ranks of input elements
  // [first, first + count) (beyond the tolerance, for inexact avg).
  int64_t countReducedMismatches(const void* got, size_t first, size_t count) const;
  // Elements of got[0, count) that are not all-zero bits (a buffer that must stay untouched).
  int64_t countNonZero(const void* got, size_t count) const;

  // The pieces above, exposed for the unit tests. inputValue is for reducing ops only.
  double inputValue(int rank, size_t index) const;
  double expectedValue(size_t index) const;
  double tolerance(size_t index) const;  // 0 when the result must be exact
  double scalarValue(int rank) const;    // mulsum's per-rank scalar (1 otherwise)

  static constexpr size_t kPeriod = 65521;  // largest prime below 2^16

 private:
  enum class Mode { kBits, kSumLike, kProd, kMinMax };

  uint64_t hash(int rank, size_t index) const;
  bool active(int rank, size_t residue, int windowSize) const;
  int prodTwos(size_t residue) const;
  double exactReduction(size_t residue) const;  // the mathematically exact result
  // Extends the expected-value table to cover residues [0, residues).
  void tabulate(size_t residues) const;

  sscDataType_t type_;
  PerfOp op_;
  int nranks_;
  uint64_t seedKey_;
  size_t elt_;
  Mode mode_;
  int valueRange_ = 1;   // V (sum-like) or M (min/max): inputs are 1..valueRange_
  int window_ = 0;       // k: active ranks per index (sum-like)
  int maxTwos_ = 0;      // largest t_i (prod)
  int windowShift_ = 0;  // rotates which ranks are active, per seed
  bool exact_ = true;    // false only for avg over a non-power-of-two rank count on floats
  // Encoded inputs 0..valueRange_ (and 2 for prod), so filling is a copy per element.
  std::vector<unsigned char> encodedSmall_;
  // Per residue, built on first use (filling inputs needs none of it): expected bits (exact_),
  // or expected value and tolerance (otherwise).
  mutable size_t tabulated_ = 0;
  mutable std::vector<unsigned char> expectedBits_;
  mutable std::vector<double> expectedValue_;
  mutable std::vector<double> tolerance_;
};

}  // namespace ssc::perf
