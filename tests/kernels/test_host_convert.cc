// SPDX-License-Identifier: MIT
// Narrow-float conversions of the host backend (src/kernels/host/reduce.h) against the
// independent references of reduce_reference.h. Suites are named HostReduceConvert* so that
// `ctest -R HostReduce` runs them with the reduction tests.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "src/kernels/host/reduce.h"
#include "tests/kernels/reduce_reference.h"

namespace ssc {
namespace {

using testref::doubleToBf16Bits;
using testref::doubleToHalfBits;
using testref::Fp8Reference;
using testref::fp8SpecValue;
using testref::halfBitsToFloat;

uint32_t bitsOf(float f) { return std::bit_cast<uint32_t>(f); }
float floatOf(uint32_t b) { return std::bit_cast<float>(b); }
constexpr float kInf = std::numeric_limits<float>::infinity();

// Floats exercising a rounding: x itself, both neighbours, and the float grid around the
// midpoint between x and the next value `up` of the narrow format.
template <class Fn>
void forRoundingCases(float x, float up, Fn&& check) {
  const float mid = static_cast<float>((double(x) + double(up)) / 2);  // exact: few mantissa bits
  for (float f : {x, std::nextafter(x, -kInf), std::nextafter(x, kInf), mid,
                  std::nextafter(mid, -kInf), std::nextafter(mid, kInf)}) {
    check(f);
    check(-f);
  }
}

// ---------------------------------------------------------------- fp16

TEST(HostReduceConvertHalf, ToFloatExhaustive) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float want = halfBitsToFloat(static_cast<uint16_t>(h));
    const float got = halfToFloat(static_cast<uint16_t>(h));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << std::hex << h;
      ASSERT_EQ(std::signbit(got), std::signbit(want)) << std::hex << h;
      ASSERT_NE(bitsOf(got) & 0x00400000u, 0u) << std::hex << h;  // signalling comes out quiet
    } else {
      ASSERT_EQ(bitsOf(got), bitsOf(want)) << std::hex << h;  // also tells -0 from +0
    }
  }
}

TEST(HostReduceConvertHalf, FromFloatExhaustiveOverHalfValuesAndTies) {
  const auto check = [](float f) {
    const uint16_t want = doubleToHalfBits(f);
    const uint16_t got = floatToHalf(f);
    if (std::isnan(f)) {
      ASSERT_EQ(got & 0x7c00, 0x7c00) << f;
      ASSERT_NE(got & 0x03ff, 0) << f;
    } else {
      ASSERT_EQ(got, want) << std::hexfloat << f;
    }
  };
  for (uint32_t h = 0; h < 0x7c00; ++h) {  // every finite non-negative half; check() adds -f
    const float x = halfBitsToFloat(static_cast<uint16_t>(h));
    const float up = h + 1 == 0x7c00 ? 65536.0f : halfBitsToFloat(static_cast<uint16_t>(h + 1));
    forRoundingCases(x, up, check);
  }
  std::mt19937 rng(1234);
  for (int i = 0; i < (1 << 21); ++i) check(floatOf(rng()));
  for (uint64_t b = 0; b <= 0xffffffffu; b += 65521) check(floatOf(static_cast<uint32_t>(b)));
}

TEST(HostReduceConvertHalf, KnownVectors) {
  EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(floatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(65519.99f), 0x7bff);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00);  // max + half ulp: tie to even = infinity
  EXPECT_EQ(floatToHalf(-kInf), 0xfc00);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -24)), 0x0001);         // smallest subnormal
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -25)), 0x0000);         // half of it: tie to zero
  EXPECT_EQ(floatToHalf(std::ldexp(3.0f, -25)), 0x0002);         // 1.5 units: tie to even 2
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -14)), 0x0400);         // smallest normal
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie, even stays
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(3.0f, -11)), 0x3c02);  // tie, odd rounds up
  // A signalling NaN whose payload sits below the half mantissa must not become infinity.
  const uint16_t snan = floatToHalf(floatOf(0x7f800001u));
  EXPECT_EQ(snan & 0x7c00, 0x7c00);
  EXPECT_NE(snan & 0x0200, 0);                                    // quiet
  EXPECT_EQ(floatToHalf(floatOf(0xffc00000u)) & 0x8000, 0x8000);  // NaN sign kept
  EXPECT_TRUE(std::isnan(halfToFloat(0x7c01)));
  EXPECT_EQ(halfToFloat(0x0001), std::ldexp(1.0f, -24));
}

// ---------------------------------------------------------------- bf16

TEST(HostReduceConvertBf16, ToFloatExhaustive) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const float got = bf16ToFloat(static_cast<uint16_t>(b));
    const bool nan = (b & 0x7f80) == 0x7f80 && (b & 0x007f) != 0;
    if (nan) {
      ASSERT_TRUE(std::isnan(got)) << std::hex << b;
    } else {
      ASSERT_EQ(bitsOf(got), b << 16) << std::hex << b;
    }
  }
}

TEST(HostReduceConvertBf16, FromFloatMatchesReference) {
  const auto check = [](float f) {
    const uint16_t got = floatToBf16(f);
    if (std::isnan(f)) {
      ASSERT_EQ(got & 0x7f80, 0x7f80);
      ASSERT_NE(got & 0x0040, 0);  // quiet
      ASSERT_EQ(got & 0x8000, (bitsOf(f) >> 16) & 0x8000);
    } else {
      ASSERT_EQ(got, doubleToBf16Bits(f)) << std::hexfloat << f;
    }
  };
  for (uint32_t b = 0; b < 0x7f80; ++b) {  // every finite non-negative bf16, its ties and more
    const float x = floatOf(b << 16);
    const float up = b + 1 == 0x7f80 ? kInf : floatOf((b + 1) << 16);
    const uint32_t tie = (b << 16) | 0x8000u;
    for (uint32_t t : {tie - 1, tie, tie + 1, (b << 16) | 1u, (b << 16) | 0xffffu}) {
      check(floatOf(t));
      check(-floatOf(t));
    }
    if (b + 1 < 0x7f80) forRoundingCases(x, up, check);
  }
  std::mt19937 rng(99);
  for (int i = 0; i < (1 << 21); ++i) check(floatOf(rng()));
}

TEST(HostReduceConvertBf16, KnownVectors) {
  EXPECT_EQ(floatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(floatToBf16(3.14159265f), 0x4049);
  EXPECT_EQ(floatToBf16(floatOf(0x3f808000u)), 0x3f80);  // tie, even
  EXPECT_EQ(floatToBf16(floatOf(0x3f818000u)), 0x3f82);  // tie, odd rounds up
  EXPECT_EQ(floatToBf16(floatOf(0x3f808001u)), 0x3f81);
  EXPECT_EQ(floatToBf16(std::numeric_limits<float>::max()), 0x7f80);  // RNE overflows
  EXPECT_EQ(floatToBf16(floatOf(0x7f7f7fffu)), 0x7f7f);
  EXPECT_EQ(floatToBf16(-0.0f), 0x8000);
  EXPECT_EQ(floatToBf16(floatOf(0x00008000u)), 0x0000);  // subnormal tie to even
  EXPECT_EQ(floatToBf16(floatOf(0x00018000u)), 0x0002);
  EXPECT_EQ(floatToBf16(floatOf(0x80000001u)), 0x8000);
  EXPECT_EQ(floatToBf16(floatOf(0x7fc00000u)), 0x7fc0);
  EXPECT_EQ(floatToBf16(floatOf(0x7f800001u)), 0x7fc0);  // signalling -> quiet, not infinity
  EXPECT_EQ(floatToBf16(floatOf(0xff812345u)), 0xffc1);  // sign and top payload kept
}

// ---------------------------------------------------------------- fp8

struct Fp8Case {
  bool e4m3;
  float (*decode)(uint8_t);
  uint8_t (*encode)(float);
};
const Fp8Case kE4M3{true, fp8e4m3ToFloat, floatToFp8e4m3};
const Fp8Case kE5M2{false, fp8e5m2ToFloat, floatToFp8e5m2};

void checkDecodeAll(const Fp8Case& c) {
  for (int v = 0; v < 256; ++v) {
    const double want = fp8SpecValue(static_cast<uint8_t>(v), c.e4m3);
    const float got = c.decode(static_cast<uint8_t>(v));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << v;
      EXPECT_NE(bitsOf(got) & 0x00400000u, 0u) << v;  // quiet
    } else {
      EXPECT_EQ(static_cast<double>(got), want) << v;
      EXPECT_EQ(std::signbit(got), std::signbit(want)) << v;  // -0 is 0x80
    }
  }
}

void checkEncodeAgainstReference(const Fp8Case& c) {
  const Fp8Reference ref(c.e4m3);
  const auto check = [&](float f) {
    const uint8_t got = c.encode(f);
    if (std::isnan(f)) {
      ASSERT_TRUE(std::isnan(c.decode(got))) << f;
    } else {
      ASSERT_EQ(got, ref.encode(f)) << std::hexfloat << f;
    }
  };
  // Round trip of every non-NaN encoding, and the rounding grid around every value.
  for (int v = 0; v < 256; ++v) {
    const double value = fp8SpecValue(static_cast<uint8_t>(v), c.e4m3);
    if (std::isnan(value)) continue;
    ASSERT_EQ(c.encode(static_cast<float>(value)), v);
    if (v < 0x7f && !std::isinf(value)) {
      const double next = fp8SpecValue(static_cast<uint8_t>(v + 1), c.e4m3);
      const double up = std::isnan(next) ? 480.0 : std::isinf(next) ? 65536.0 : next;
      forRoundingCases(static_cast<float>(value), static_cast<float>(up), check);
    }
  }
  std::mt19937 rng(c.e4m3 ? 7 : 8);
  std::uniform_real_distribution<float> range(-70000.0f, 70000.0f);
  for (int i = 0; i < 200000; ++i) {
    check(floatOf(rng()));
    check(range(rng));
    check(std::ldexp(range(rng), -20));  // small and subnormal values
  }
}

TEST(HostReduceConvertFp8E4M3, DecodeAll256FromSpecFormula) { checkDecodeAll(kE4M3); }
TEST(HostReduceConvertFp8E5M2, DecodeAll256FromSpecFormula) { checkDecodeAll(kE5M2); }
TEST(HostReduceConvertFp8E4M3, EncodeMatchesNearestEvenSearch) {
  checkEncodeAgainstReference(kE4M3);
}
TEST(HostReduceConvertFp8E5M2, EncodeMatchesNearestEvenSearch) {
  checkEncodeAgainstReference(kE5M2);
}

TEST(HostReduceConvertFp8E4M3, SpecTableAndSaturation) {
  // Values from the OCP spec's E4M3 table.
  EXPECT_EQ(fp8e4m3ToFloat(0x7e), 448.0f);                  // S.1111.110, max normal
  EXPECT_EQ(fp8e4m3ToFloat(0x08), std::ldexp(1.0f, -6));    // min normal
  EXPECT_EQ(fp8e4m3ToFloat(0x07), std::ldexp(0.875f, -6));  // max subnormal
  EXPECT_EQ(fp8e4m3ToFloat(0x01), std::ldexp(1.0f, -9));    // min subnormal
  EXPECT_EQ(fp8e4m3ToFloat(0x38), 1.0f);
  EXPECT_EQ(fp8e4m3ToFloat(0x78), 256.0f);  // all-ones exponent is finite in E4M3FN
  EXPECT_TRUE(std::isnan(fp8e4m3ToFloat(0x7f)));
  EXPECT_TRUE(std::isnan(fp8e4m3ToFloat(0xff)));
  EXPECT_TRUE(std::signbit(fp8e4m3ToFloat(0x80)));
  // satfinite: finite overflow and infinities clamp to +-448, RNE below.
  EXPECT_EQ(floatToFp8e4m3(448.0f), 0x7e);
  EXPECT_EQ(floatToFp8e4m3(463.99f), 0x7e);
  EXPECT_EQ(floatToFp8e4m3(464.0f), 0x7e);  // tie between 448 and (absent) 480
  EXPECT_EQ(floatToFp8e4m3(480.0f), 0x7e);
  EXPECT_EQ(floatToFp8e4m3(1e30f), 0x7e);
  EXPECT_EQ(floatToFp8e4m3(kInf), 0x7e);
  EXPECT_EQ(floatToFp8e4m3(-kInf), 0xfe);
  EXPECT_EQ(floatToFp8e4m3(-500.0f), 0xfe);
  EXPECT_EQ(floatToFp8e4m3(std::nanf("")) & 0x7f, 0x7f);
  EXPECT_EQ(floatToFp8e4m3(-std::nanf("")), 0xff);
  // Ties and subnormals.
  EXPECT_EQ(floatToFp8e4m3(1.0625f), 0x38);  // 1 + 1/16: tie, even mantissa 000
  EXPECT_EQ(floatToFp8e4m3(1.1875f), 0x3a);  // 1 + 3/16: tie, odd 001 rounds up to 010
  EXPECT_EQ(floatToFp8e4m3(std::ldexp(1.0f, -10)), 0x00);  // half the min subnormal
  EXPECT_EQ(floatToFp8e4m3(std::ldexp(1.0001f, -10)), 0x01);
  EXPECT_EQ(floatToFp8e4m3(std::ldexp(3.0f, -10)), 0x02);   // 1.5 units: tie to 2
  EXPECT_EQ(floatToFp8e4m3(std::ldexp(5.0f, -10)), 0x02);   // 2.5 units: tie to 2
  EXPECT_EQ(floatToFp8e4m3(std::ldexp(15.0f, -10)), 0x08);  // 7.5 units: up into min normal
  EXPECT_EQ(floatToFp8e4m3(-std::ldexp(1.0f, -11)), 0x80);  // underflow keeps the sign
  EXPECT_EQ(floatToFp8e4m3(-0.0f), 0x80);
}

TEST(HostReduceConvertFp8E5M2, SpecTableAndOverflow) {
  EXPECT_EQ(fp8e5m2ToFloat(0x7b), 57344.0f);                // max normal
  EXPECT_EQ(fp8e5m2ToFloat(0x04), std::ldexp(1.0f, -14));   // min normal
  EXPECT_EQ(fp8e5m2ToFloat(0x03), std::ldexp(0.75f, -14));  // max subnormal
  EXPECT_EQ(fp8e5m2ToFloat(0x01), std::ldexp(1.0f, -16));   // min subnormal
  EXPECT_EQ(fp8e5m2ToFloat(0x3c), 1.0f);
  EXPECT_EQ(fp8e5m2ToFloat(0x7c), kInf);
  EXPECT_EQ(fp8e5m2ToFloat(0xfc), -kInf);
  for (uint8_t nan : {0x7d, 0x7e, 0x7f, 0xfd, 0xfe, 0xff})
    EXPECT_TRUE(std::isnan(fp8e5m2ToFloat(nan)));
  EXPECT_EQ(floatToFp8e5m2(57344.0f), 0x7b);
  EXPECT_EQ(floatToFp8e5m2(61439.0f), 0x7b);
  EXPECT_EQ(floatToFp8e5m2(61440.0f), 0x7c);  // max + half ulp: tie to even = infinity
  EXPECT_EQ(floatToFp8e5m2(65536.0f), 0x7c);
  EXPECT_EQ(floatToFp8e5m2(kInf), 0x7c);
  EXPECT_EQ(floatToFp8e5m2(-1e9f), 0xfc);
  const uint8_t nan = floatToFp8e5m2(std::nanf(""));
  EXPECT_EQ(nan & 0x7c, 0x7c);
  EXPECT_NE(nan & 0x03, 0);
  EXPECT_EQ(floatToFp8e5m2(floatOf(0x7f800001u)) & 0x03, 0x02);  // signalling -> quiet
  EXPECT_EQ(floatToFp8e5m2(1.125f), 0x3c);                       // 1 + 1/8: tie, even mantissa 00
  EXPECT_EQ(floatToFp8e5m2(1.375f), 0x3e);  // 1 + 3/8: tie, odd 01 rounds up to 10
  EXPECT_EQ(floatToFp8e5m2(std::ldexp(1.0f, -17)), 0x00);
  EXPECT_EQ(floatToFp8e5m2(std::ldexp(3.0f, -17)), 0x02);
  EXPECT_EQ(floatToFp8e5m2(std::ldexp(7.0f, -17)), 0x04);  // 3.5 units: up into min normal
  EXPECT_EQ(floatToFp8e5m2(-0.0f), 0x80);
}

}  // namespace
}  // namespace ssc
