// SPDX-License-Identifier: MIT
#include "perf/common/data_pattern.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace ssc::perf {
namespace {

// splitmix64's finaliser: cheap, and every input bit affects every output bit.
uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

bool isPowerOfTwo(int n) { return n > 0 && (n & (n - 1)) == 0; }

// Active ranks per index are capped so that the expected sum costs O(16) per table entry
// however many ranks there are; 16 contributions per element still catch a dropped or
// misplaced chunk from any rank, since the window slides over every rank as the index moves.
constexpr int kMaxWindow = 16;
// Prod multiplies at most this many 2s, so 2^t stays small for wide types too.
constexpr int kMaxTwos = 16;
// Min/max values are 1..64 where the type holds them (fp8 holds fewer).
constexpr uint64_t kMaxMinMaxRange = 64;
// Elements regenerated per block while comparing copies.
constexpr size_t kCompareBlock = 4096;

}  // namespace

Pattern::Pattern(sscDataType_t type, PerfOp op, int nranks, uint64_t seed)
    : type_(type),
      op_(op),
      nranks_(std::max(nranks, 1)),
      seedKey_(mix(seed + 0x9e3779b97f4a7c15ull)),
      elt_(typeSize(type)) {
  const uint64_t limit = exactIntegerLimit(type);
  switch (op) {
    case PerfOp::kNone: mode_ = Mode::kBits; break;
    case PerfOp::kSum:
    case PerfOp::kAvg:
    case PerfOp::kMulSum: {
      mode_ = Mode::kSumLike;
      const uint64_t scale = op == PerfOp::kMulSum ? 2 : 1;
      valueRange_ = limit >= 64 ? 4 : 2;
      const uint64_t fit = limit / (static_cast<uint64_t>(valueRange_) * scale);
      window_ = static_cast<int>(
          std::clamp<uint64_t>(fit, 1, static_cast<uint64_t>(std::min(nranks_, kMaxWindow))));
      break;
    }
    case PerfOp::kProd:
      mode_ = Mode::kProd;
      valueRange_ = 2;
      maxTwos_ = std::min({maxPowerOfTwo(type), kMaxTwos, nranks_});
      break;
    case PerfOp::kMax:
    case PerfOp::kMin:
      mode_ = Mode::kMinMax;
      valueRange_ = static_cast<int>(std::min(limit, kMaxMinMaxRange));
      break;
  }
  windowShift_ = static_cast<int>(seedKey_ % static_cast<uint64_t>(nranks_));
  exact_ = !(op == PerfOp::kAvg && isFloatType(type) && !isPowerOfTwo(nranks_));
  if (mode_ != Mode::kBits) {
    encodedSmall_.resize((static_cast<size_t>(valueRange_) + 1) * elt_);
    for (int v = 0; v <= valueRange_; ++v) encode(type_, v, &encodedSmall_[v * elt_]);
  }
}

uint64_t Pattern::hash(int rank, size_t index) const {
  return mix(seedKey_ + static_cast<uint64_t>(rank) * 0x9e3779b97f4a7c15ull +
             static_cast<uint64_t>(index) * 0xc2b2ae3d27d4eb4full);
}

bool Pattern::active(int rank, size_t residue, int windowSize) const {
  const size_t n = static_cast<size_t>(nranks_);
  return (residue % n + static_cast<size_t>(windowShift_) + static_cast<size_t>(rank)) % n <
         static_cast<size_t>(windowSize);
}

int Pattern::prodTwos(size_t residue) const {
  // Rank id nranks_ belongs to no rank, so this draw is independent of every input draw.
  return static_cast<int>(hash(nranks_, residue) % static_cast<uint64_t>(maxTwos_ + 1));
}

double Pattern::scalarValue(int rank) const {
  return op_ == PerfOp::kMulSum ? 1.0 + (rank & 1) : 1.0;
}

double Pattern::inputValue(int rank, size_t index) const {
  const size_t residue = index % kPeriod;
  switch (mode_) {
    case Mode::kSumLike:
      if (!active(rank, residue, window_)) return 0;
      return 1.0 + static_cast<double>(hash(rank, residue) % static_cast<uint64_t>(valueRange_));
    case Mode::kProd: return active(rank, residue, prodTwos(residue)) ? 2.0 : 1.0;
    case Mode::kMinMax:
      return 1.0 + static_cast<double>(hash(rank, residue) % static_cast<uint64_t>(valueRange_));
    case Mode::kBits: break;
  }
  return 0;
}

double Pattern::exactReduction(size_t residue) const {
  const size_t n = static_cast<size_t>(nranks_);
  switch (mode_) {
    case Mode::kSumLike: {
      // Only the window's ranks contribute: rank r is active at j = (residue + shift + r) % n.
      double sum = 0;
      for (int j = 0; j < window_; ++j) {
        const size_t r =
            (static_cast<size_t>(j) + 2 * n - residue % n - static_cast<size_t>(windowShift_)) % n;
        sum += scalarValue(static_cast<int>(r)) * inputValue(static_cast<int>(r), residue);
      }
      if (op_ != PerfOp::kAvg) return sum;
      return isFloatType(type_) ? sum / nranks_ : std::trunc(sum / nranks_);
    }
    case Mode::kProd: return std::ldexp(1.0, prodTwos(residue));
    case Mode::kMinMax: {
      double best = inputValue(0, residue);
      for (int r = 1; r < nranks_; ++r) {
        const double v = inputValue(r, residue);
        best = op_ == PerfOp::kMax ? std::max(best, v) : std::min(best, v);
      }
      return best;
    }
    case Mode::kBits: break;
  }
  return 0;
}

void Pattern::tabulate(size_t residues) const {
  residues = std::min(residues, kPeriod);
  if (residues <= tabulated_) return;
  if (exact_) {
    expectedBits_.resize(residues * elt_);
    for (size_t i = tabulated_; i < residues; ++i) {
      encode(type_, exactReduction(i), &expectedBits_[i * elt_]);
    }
  } else {
    expectedValue_.resize(residues);
    tolerance_.resize(residues);
    for (size_t i = tabulated_; i < residues; ++i) {
      expectedValue_[i] = exactReduction(i);
      tolerance_[i] = tolerance(i);
    }
  }
  tabulated_ = residues;
}

double Pattern::expectedValue(size_t index) const { return exactReduction(index % kPeriod); }

double Pattern::tolerance(size_t index) const {
  if (exact_) return 0;
  // Inexact avg = sum over ranks of fl(x_r * fl(1/n)), the terms nonnegative. Each term carries
  // at most ~2u relative error and a sum of n terms in any order at most (n-1)u of the total,
  // so (n+2)u of the result bounds both; the n * min-subnormal term covers terms that fall
  // below the normal range (fp8) and lose absolute rather than relative precision.
  const double expected = exactReduction(index % kPeriod);
  return (nranks_ + 2) * unitRoundoff(type_) * std::fabs(expected) + nranks_ * minSubnormal(type_);
}

void Pattern::fillInput(int rank, size_t first, size_t count, void* dst) const {
  auto* out = static_cast<unsigned char*>(dst);
  if (mode_ == Mode::kBits) {
    for (size_t i = 0; i < count; ++i) {
      const uint64_t bits = hash(rank, first + i);
      std::memcpy(out + i * elt_, &bits, elt_);  // little-endian: the low bytes
      makeFinite(type_, out + i * elt_);
    }
    return;
  }
  // Reduction inputs repeat every kPeriod elements: generate one period, copy the rest.
  const size_t generated = std::min(count, kPeriod);
  for (size_t i = 0; i < generated; ++i) {
    const auto v = static_cast<size_t>(inputValue(rank, first + i));
    std::memcpy(out + i * elt_, &encodedSmall_[v * elt_], elt_);
  }
  for (size_t done = generated; done < count; done += kPeriod) {
    std::memcpy(out + done * elt_, out, std::min(kPeriod, count - done) * elt_);
  }
}

void Pattern::premulScalar(int rank, void* dst) const { encode(type_, scalarValue(rank), dst); }

int64_t Pattern::countInputMismatches(const void* got, int srcRank, size_t srcFirst,
                                      size_t count) const {
  const auto* in = static_cast<const unsigned char*>(got);
  std::vector<unsigned char> want(std::min(count, kCompareBlock) * elt_);
  int64_t wrong = 0;
  for (size_t done = 0; done < count; done += kCompareBlock) {
    const size_t n = std::min(kCompareBlock, count - done);
    fillInput(srcRank, srcFirst + done, n, want.data());
    for (size_t i = 0; i < n; ++i) {
      wrong += std::memcmp(in + (done + i) * elt_, &want[i * elt_], elt_) != 0;
    }
  }
  return wrong;
}

int64_t Pattern::countReducedMismatches(const void* got, size_t first, size_t count) const {
  if (count == 0) return 0;
  // Residues [0, first + count) cover every one the range hits (all of them past one period).
  tabulate(first + count > kPeriod ? kPeriod : first + count);
  const auto* in = static_cast<const unsigned char*>(got);
  int64_t wrong = 0;
  if (!exact_) {
    for (size_t i = 0; i < count; ++i) {
      const size_t residue = (first + i) % kPeriod;
      // Written so that a NaN result counts as wrong.
      wrong += !(std::fabs(decode(type_, in + i * elt_) - expectedValue_[residue]) <=
                 tolerance_[residue]);
    }
    return wrong;
  }
  // Exact results: compare whole runs of the table with memcmp, element by element only where
  // a run differs. Runs end where the residue wraps to 0.
  for (size_t i = 0; i < count;) {
    const size_t residue = (first + i) % kPeriod;
    const size_t run = std::min(count - i, kPeriod - residue);
    const unsigned char* have = in + i * elt_;
    const unsigned char* want = &expectedBits_[residue * elt_];
    if (std::memcmp(have, want, run * elt_) != 0) {
      for (size_t k = 0; k < run; ++k) {
        wrong += std::memcmp(have + k * elt_, want + k * elt_, elt_) != 0;
      }
    }
    i += run;
  }
  return wrong;
}

int64_t Pattern::countNonZero(const void* got, size_t count) const {
  const auto* in = static_cast<const unsigned char*>(got);
  int64_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    bool zero = true;
    for (size_t b = 0; b < elt_; ++b) zero = zero && in[i * elt_ + b] == 0;
    wrong += !zero;
  }
  return wrong;
}

}  // namespace ssc::perf
