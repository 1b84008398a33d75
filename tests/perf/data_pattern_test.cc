// SPDX-License-Identifier: MIT
#include "perf/common/data_pattern.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

namespace ssc::perf {
namespace {

constexpr int kRankCounts[] = {1, 2, 3, 4, 5, 8, 16, 64, 128};
constexpr size_t kElements = 500;

double rounded(sscDataType_t type, double v) {
  unsigned char element[8] = {};
  encode(type, v, element);
  return decode(type, element);
}

// A reduction as a host-backend executor does it: each rank's input (pre-scaled for mulsum and
// float avg) folded in `order`, rounding to the type after every step. Returns the encoded
// result of element `index`.
std::vector<unsigned char> simulate(const Pattern& p, int nranks, size_t first, size_t count,
                                    bool reverse) {
  const sscDataType_t t = p.type();
  const size_t elt = typeSize(t);
  std::vector<unsigned char> out(count * elt);
  const double avgScale = rounded(t, 1.0 / nranks);
  for (size_t i = 0; i < count; ++i) {
    double acc = 0;
    for (int k = 0; k < nranks; ++k) {
      const int r = reverse ? nranks - 1 - k : k;
      double x = p.inputValue(r, first + i);
      if (p.op() == PerfOp::kMulSum) x = rounded(t, x * rounded(t, p.scalarValue(r)));
      if (p.op() == PerfOp::kAvg && isFloatType(t)) x = rounded(t, x * avgScale);
      if (k == 0) {
        acc = x;
      } else if (p.op() == PerfOp::kProd) {
        acc = rounded(t, acc * x);
      } else if (p.op() == PerfOp::kMax) {
        acc = std::max(acc, x);
      } else if (p.op() == PerfOp::kMin) {
        acc = std::min(acc, x);
      } else {
        acc = rounded(t, acc + x);
      }
    }
    if (p.op() == PerfOp::kAvg && !isFloatType(t)) acc = std::trunc(acc / nranks);
    encode(t, acc, &out[i * elt]);
  }
  return out;
}

// The heart of the check's design: for every type, op and rank count, a reduction in any order
// with rounding after every step gives exactly the expected bits (or, for inexact avg, a value
// within the stated tolerance), and the inputs fit the type.
TEST(PerfPattern, ReductionsAreExactInEveryTypeAndOrder) {
  for (sscDataType_t t : allTypes()) {
    for (PerfOp op : allReduceOps()) {
      for (int n : kRankCounts) {
        const size_t first = 7;
        const Pattern p(t, op, n, /*seed=*/42);
        for (size_t i = first; i < first + kElements; ++i) {
          for (int r = 0; r < n; ++r) {
            const double x = p.inputValue(r, i);
            ASSERT_EQ(rounded(t, x), x) << typeName(t) << " input not representable";
          }
        }
        for (bool reverse : {false, true}) {
          const std::vector<unsigned char> got = simulate(p, n, first, kElements, reverse);
          ASSERT_EQ(p.countReducedMismatches(got.data(), first, kElements), 0)
              << typeName(t) << " " << opName(op) << " nranks " << n
              << (reverse ? " reversed" : "");
        }
      }
    }
  }
}

TEST(PerfPattern, ToleranceOnlyForInexactAvg) {
  const Pattern inexact(sscFloat16, PerfOp::kAvg, 3, 1);
  double total = 0;
  for (size_t i = 0; i < 100; ++i) total += inexact.tolerance(i);
  EXPECT_GT(total, 0.0);
  EXPECT_EQ(Pattern(sscFloat16, PerfOp::kAvg, 4, 1).tolerance(5), 0.0);
  EXPECT_EQ(Pattern(sscInt32, PerfOp::kAvg, 3, 1).tolerance(5), 0.0);
  EXPECT_EQ(Pattern(sscFloat32, PerfOp::kSum, 3, 1).tolerance(5), 0.0);
}

TEST(PerfPattern, ResultsVaryWithIndexAndSeed) {
  // Data that does not vary would not catch misplaced blocks.
  for (PerfOp op : allReduceOps()) {
    const Pattern p(sscFloat8e5m2, op, 8, 1);
    const Pattern q(sscFloat8e5m2, op, 8, 2);
    int distinct = 0;
    int seedDiffers = 0;
    for (size_t i = 1; i < 1000; ++i) {
      distinct += p.expectedValue(i) != p.expectedValue(i - 1);
      seedDiffers += p.expectedValue(i) != q.expectedValue(i);
    }
    EXPECT_GT(distinct, 200) << opName(op);
    EXPECT_GT(seedDiffers, 200) << opName(op);
  }
}

TEST(PerfPattern, EveryRankContributes) {
  // The active window slides over every rank, so each rank's input matters somewhere.
  for (sscDataType_t t : {sscFloat8e5m2, sscInt8, sscFloat32}) {
    const int n = 64;
    const Pattern p(t, PerfOp::kSum, n, 3);
    for (int r = 0; r < n; ++r) {
      int nonzero = 0;
      for (size_t i = 0; i < 4096; ++i) nonzero += p.inputValue(r, i) != 0;
      EXPECT_GT(nonzero, 0) << typeName(t) << " rank " << r;
    }
  }
}

TEST(PerfPattern, DetectsAWrongElement) {
  const Pattern p(sscBfloat16, PerfOp::kSum, 5, 9);
  std::vector<unsigned char> got = simulate(p, 5, 0, 300, false);
  ASSERT_EQ(p.countReducedMismatches(got.data(), 0, 300), 0);
  got[2 * 100] ^= 0x01;  // element 100, lowest mantissa bit
  EXPECT_EQ(p.countReducedMismatches(got.data(), 0, 300), 1);
  // A block from the wrong offset is wrong almost everywhere.
  EXPECT_GT(p.countReducedMismatches(got.data(), 1, 299), 100);
}

TEST(PerfPattern, PeriodicReductionsAndGrowingTable) {
  const size_t period = Pattern::kPeriod;
  const Pattern p(sscInt32, PerfOp::kMax, 6, 5);
  // Small ranges first (a short table), then ranges that need more of it, and past a period.
  for (size_t i : {size_t{3}, size_t{12345}, period - 1}) {
    EXPECT_EQ(p.expectedValue(i), p.expectedValue(i + period));
    const int32_t want = static_cast<int32_t>(p.expectedValue(i));
    EXPECT_EQ(p.countReducedMismatches(&want, i, 1), 0);
    EXPECT_EQ(p.countReducedMismatches(&want, i + 3 * period, 1), 0);
    const int32_t other = want + 1;
    EXPECT_EQ(p.countReducedMismatches(&other, i, 1), 1);
  }
}

TEST(PerfPattern, RangesAcrossThePeriod) {
  const size_t period = Pattern::kPeriod;
  const Pattern p(sscFloat16, PerfOp::kSum, 3, 4);
  const size_t first = period - 10;
  std::vector<unsigned char> got = simulate(p, 3, first, 30, false);
  EXPECT_EQ(p.countReducedMismatches(got.data(), first, 30), 0);
  got[2 * 25] ^= 0x04;  // past the wrap
  EXPECT_EQ(p.countReducedMismatches(got.data(), first, 30), 1);
  // Inputs filled in one go equal inputs filled element by element, across the wrap too.
  std::vector<unsigned char> bulk(2 * (period + 40));
  p.fillInput(2, 5, period + 40, bulk.data());
  for (size_t i = 0; i < period + 40; i += 997) {
    unsigned char one[2];
    p.fillInput(2, 5 + i, 1, one);
    ASSERT_EQ(std::memcmp(one, &bulk[2 * i], 2), 0) << i;
  }
}

TEST(PerfPattern, CopyPatternsAreFiniteAndDistinct) {
  for (sscDataType_t t : allTypes()) {
    const Pattern p(t, PerfOp::kNone, 4, 11);
    const size_t elt = typeSize(t);
    std::vector<unsigned char> a(1000 * elt);
    std::vector<unsigned char> b(1000 * elt);
    p.fillInput(1, 50, 1000, a.data());
    p.fillInput(2, 50, 1000, b.data());
    for (size_t i = 0; i < 1000; ++i) ASSERT_TRUE(isFinite(t, &a[i * elt])) << typeName(t);
    EXPECT_EQ(p.countInputMismatches(a.data(), 1, 50, 1000), 0);
    EXPECT_GT(p.countInputMismatches(b.data(), 1, 50, 1000), 900) << typeName(t);  // other rank
    EXPECT_GT(p.countInputMismatches(a.data(), 1, 51, 999), 900) << typeName(t);   // shifted
    a[elt * 10] ^= 0x80;
    EXPECT_EQ(p.countInputMismatches(a.data(), 1, 50, 1000), 1);
    EXPECT_EQ(p.countNonZero(std::vector<unsigned char>(3 * elt, 0).data(), 3), 0);
  }
}

TEST(PerfPattern, PremulScalars) {
  const Pattern p(sscFloat8e4m3, PerfOp::kMulSum, 4, 0);
  unsigned char scalar = 0;
  p.premulScalar(1, &scalar);
  EXPECT_EQ(decode(sscFloat8e4m3, &scalar), 2.0);
  p.premulScalar(2, &scalar);
  EXPECT_EQ(decode(sscFloat8e4m3, &scalar), 1.0);
}

}  // namespace
}  // namespace ssc::perf
