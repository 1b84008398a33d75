// SPDX-License-Identifier: MIT
#include "perf/common/datatype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace ssc::perf {
namespace {

uint32_t bitsOf(sscDataType_t type, double v) {
  uint64_t bits = 0;
  encode(type, v, &bits);
  return static_cast<uint32_t>(bits);
}

double fromBits(sscDataType_t type, uint64_t bits) { return decode(type, &bits); }

double roundTrip(sscDataType_t type, double v) {
  unsigned char element[8] = {};
  encode(type, v, element);
  return decode(type, element);
}

TEST(PerfDatatype, NamesAndSizes) {
  EXPECT_EQ(allTypes().size(), static_cast<size_t>(sscNumTypes));
  size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  for (size_t i = 0; i < allTypes().size(); ++i) {
    const sscDataType_t t = allTypes()[i];
    EXPECT_EQ(t, static_cast<sscDataType_t>(i));  // nccl-tests' order is the enum's
    EXPECT_EQ(typeSize(t), sizes[i]) << typeName(t);
    EXPECT_EQ(parseType(typeName(t)), t);
  }
  EXPECT_EQ(parseType("fp16"), sscFloat16);
  EXPECT_EQ(parseType("bf16"), sscBfloat16);
  EXPECT_FALSE(parseType("all"));
  EXPECT_EQ(allReduceOps().size(), 6u);
  EXPECT_FALSE(parseOp("none"));  // not a -o value
  EXPECT_EQ(toSscOp(PerfOp::kAvg), sscAvg);
}

TEST(PerfDatatype, KnownEncodings) {
  EXPECT_EQ(bitsOf(sscFloat16, 1.0), 0x3C00u);
  EXPECT_EQ(bitsOf(sscFloat16, -2.0), 0xC000u);
  EXPECT_EQ(bitsOf(sscFloat16, 65504.0), 0x7BFFu);
  EXPECT_EQ(bitsOf(sscFloat16, std::ldexp(1.0, -24)), 0x0001u);  // smallest subnormal
  EXPECT_EQ(bitsOf(sscBfloat16, 1.0), 0x3F80u);
  EXPECT_EQ(bitsOf(sscBfloat16, 256.0), 0x4380u);
  EXPECT_EQ(bitsOf(sscFloat8e4m3, 1.0), 0x38u);
  EXPECT_EQ(bitsOf(sscFloat8e4m3, 448.0), 0x7Eu);
  EXPECT_EQ(bitsOf(sscFloat8e4m3, std::ldexp(1.0, -9)), 0x01u);
  EXPECT_EQ(bitsOf(sscFloat8e4m3, -1.5), 0xBCu);
  EXPECT_EQ(bitsOf(sscFloat8e5m2, 1.0), 0x3Cu);
  EXPECT_EQ(bitsOf(sscFloat8e5m2, 57344.0), 0x7Bu);
  EXPECT_EQ(bitsOf(sscFloat8e5m2, std::ldexp(1.0, -16)), 0x01u);
  EXPECT_DOUBLE_EQ(fromBits(sscFloat8e4m3, 0x7E), 448.0);
  EXPECT_TRUE(std::isnan(fromBits(sscFloat8e4m3, 0x7F)));
  EXPECT_TRUE(std::isinf(fromBits(sscFloat8e5m2, 0x7C)));
  EXPECT_TRUE(std::isinf(fromBits(sscFloat16, 0x7C00)));
}

TEST(PerfDatatype, RoundsToNearestEven) {
  EXPECT_EQ(roundTrip(sscFloat16, 2049.0), 2048.0);  // tie -> even mantissa
  EXPECT_EQ(roundTrip(sscFloat16, 2051.0), 2052.0);
  EXPECT_EQ(roundTrip(sscFloat8e4m3, 17.0), 16.0);
  EXPECT_EQ(roundTrip(sscFloat8e4m3, 19.0), 20.0);
  EXPECT_EQ(roundTrip(sscFloat8e5m2, 9.0), 8.0);
  EXPECT_EQ(roundTrip(sscFloat8e5m2, 11.0), 12.0);
  EXPECT_EQ(roundTrip(sscBfloat16, 257.0), 256.0);
  // Rounding up out of the largest binade carries into the exponent.
  EXPECT_EQ(roundTrip(sscFloat8e4m3, 15.5), 16.0);
  // Up out of the subnormals into the smallest normal.
  EXPECT_EQ(roundTrip(sscFloat8e4m3, std::ldexp(7.6, -9)), std::ldexp(1.0, -6));
}

TEST(PerfDatatype, Overflow) {
  EXPECT_EQ(bitsOf(sscFloat8e4m3, 1000.0), 0x7Eu);  // e4m3fn saturates
  EXPECT_EQ(bitsOf(sscFloat8e4m3, -1e9), 0xFEu);
  EXPECT_EQ(bitsOf(sscFloat8e5m2, 1e6), 0x7Cu);  // infinity
  EXPECT_EQ(bitsOf(sscFloat16, 1e6), 0x7C00u);
  EXPECT_EQ(roundTrip(sscInt8, 300.0), 127.0);
  EXPECT_EQ(roundTrip(sscUint8, -3.0), 0.0);
}

TEST(PerfDatatype, ExactIntegerLimitsHold) {
  for (sscDataType_t t : allTypes()) {
    const uint64_t limit = exactIntegerLimit(t);
    const uint64_t probe = std::min<uint64_t>(limit, 5000);
    for (uint64_t v = 0; v <= probe; ++v) {
      ASSERT_EQ(roundTrip(t, static_cast<double>(v)), static_cast<double>(v)) << typeName(t);
    }
    ASSERT_EQ(roundTrip(t, static_cast<double>(limit)), static_cast<double>(limit)) << typeName(t);
    if (isFloatType(t) && limit < (uint64_t{1} << 53)) {
      EXPECT_NE(roundTrip(t, static_cast<double>(limit + 1)), static_cast<double>(limit + 1))
          << typeName(t) << ": the limit is not the largest";
    }
  }
}

TEST(PerfDatatype, PowersOfTwoHold) {
  for (sscDataType_t t : allTypes()) {
    const int e = maxPowerOfTwo(t);
    EXPECT_EQ(roundTrip(t, std::ldexp(1.0, e)), std::ldexp(1.0, e)) << typeName(t);
    if (e < 52) {
      EXPECT_NE(roundTrip(t, std::ldexp(1.0, e + 1)), std::ldexp(1.0, e + 1)) << typeName(t);
    }
  }
}

TEST(PerfDatatype, EverySmallFormatCodeRoundTrips) {
  for (sscDataType_t t : {sscFloat8e4m3, sscFloat8e5m2, sscFloat16, sscBfloat16}) {
    const uint32_t codes = typeSize(t) == 1 ? 256 : 65536;
    for (uint32_t code = 0; code < codes; ++code) {
      uint64_t bits = code;
      if (!isFinite(t, &bits)) continue;
      EXPECT_EQ(bitsOf(t, decode(t, &bits)), code) << typeName(t) << " code " << code;
    }
  }
}

TEST(PerfDatatype, MakeFinite) {
  for (sscDataType_t t : allTypes()) {
    if (!isFloatType(t)) continue;
    unsigned char element[8];
    std::memset(element, 0xFF, sizeof(element));  // NaN in every float format
    EXPECT_FALSE(isFinite(t, element)) << typeName(t);
    makeFinite(t, element);
    EXPECT_TRUE(isFinite(t, element)) << typeName(t);
  }
  uint64_t inf = 0x7C00;
  makeFinite(sscFloat16, &inf);
  EXPECT_TRUE(isFinite(sscFloat16, &inf));
}

TEST(PerfDatatype, RoundoffAndSubnormals) {
  EXPECT_EQ(unitRoundoff(sscInt32), 0.0);
  EXPECT_EQ(unitRoundoff(sscFloat8e5m2), 0.125);
  EXPECT_EQ(minSubnormal(sscFloat8e4m3), std::ldexp(1.0, -9));
  EXPECT_EQ(minSubnormal(sscFloat16), std::ldexp(1.0, -24));
  EXPECT_EQ(minSubnormal(sscFloat32), std::numeric_limits<float>::denorm_min());
}

}  // namespace
}  // namespace ssc::perf
