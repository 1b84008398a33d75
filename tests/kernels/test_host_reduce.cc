// SPDX-License-Identifier: MIT
// Host-backend element arithmetic (src/kernels/host/reduce.h): every dtype x {sum, prod, max,
// min}, scaling, division, scalar and element access, checked element by element against
// references that do not use the code under test (reduce_reference.h and plain wide integer
// arithmetic). Floating-point results compare bit for bit, NaNs by class.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "src/kernels/host/reduce.h"
#include "tests/kernels/reduce_reference.h"

namespace ssc {
namespace {

const std::vector<sscDataType_t> kAllTypes = {
    sscInt8,    sscUint8,   sscInt32,   sscUint32,   sscInt64,      sscUint64,
    sscFloat16, sscFloat32, sscFloat64, sscBfloat16, sscFloat8e4m3, sscFloat8e5m2};
const ReduceKind kAllKinds[] = {ReduceKind::kSum, ReduceKind::kProd, ReduceKind::kMax,
                                ReduceKind::kMin};
const size_t kCounts[] = {0, 1, 7, 1000, size_t{1} << 20, (size_t{1} << 20) + 3};
constexpr size_t kGuard = 16;  // elements past `count` that must stay untouched

// ---------------------------------------------------------------- test-side dtype model

size_t elemSize(sscDataType_t t) {
  switch (t) {
    case sscInt8:
    case sscUint8:
    case sscFloat8e4m3:
    case sscFloat8e5m2: return 1;
    case sscFloat16:
    case sscBfloat16: return 2;
    case sscInt32:
    case sscUint32:
    case sscFloat32: return 4;
    default: return 8;
  }
}
bool isInteger(sscDataType_t t) { return t <= sscUint64; }
bool isSigned(sscDataType_t t) { return t == sscInt8 || t == sscInt32 || t == sscInt64; }
uint64_t mask(sscDataType_t t) {
  return elemSize(t) == 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * elemSize(t))) - 1;
}
int64_t signExtend(sscDataType_t t, uint64_t bits) {
  const int shift = 64 - 8 * static_cast<int>(elemSize(t));
  return static_cast<int64_t>(bits << shift) >> shift;
}

// Endian-neutral element access: the element's value, not its bytes, lives in a uint64_t.
uint64_t loadBits(sscDataType_t t, const void* base, size_t i) {
  const char* p = static_cast<const char*>(base) + i * elemSize(t);
  switch (elemSize(t)) {
    case 1: {
      uint8_t v;
      std::memcpy(&v, p, 1);
      return v;
    }
    case 2: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case 4: {
      uint32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    default: {
      uint64_t v;
      std::memcpy(&v, p, 8);
      return v;
    }
  }
}
void storeBits(sscDataType_t t, void* base, size_t i, uint64_t bits) {
  char* p = static_cast<char*>(base) + i * elemSize(t);
  const uint8_t b1 = static_cast<uint8_t>(bits);
  const uint16_t b2 = static_cast<uint16_t>(bits);
  const uint32_t b4 = static_cast<uint32_t>(bits);
  switch (elemSize(t)) {
    case 1: std::memcpy(p, &b1, 1); break;
    case 2: std::memcpy(p, &b2, 2); break;
    case 4: std::memcpy(p, &b4, 4); break;
    default: std::memcpy(p, &bits, 8); break;
  }
}

// Exact value of a floating-point element (NaN for NaN).
double refDecode(sscDataType_t t, uint64_t bits) {
  switch (t) {
    case sscFloat16: return testref::halfBitsToFloat(static_cast<uint16_t>(bits));
    case sscFloat32: return std::bit_cast<float>(static_cast<uint32_t>(bits));
    case sscFloat64: return std::bit_cast<double>(bits);
    case sscBfloat16: return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
    case sscFloat8e4m3: return testref::fp8SpecValue(static_cast<uint8_t>(bits), true);
    case sscFloat8e5m2: return testref::fp8SpecValue(static_cast<uint8_t>(bits), false);
    default: return isSigned(t) ? double(signExtend(t, bits)) : double(bits);
  }
}

// One RNE rounding of x to a floating-point type (float: double -> float is RNE).
uint64_t refEncode(sscDataType_t t, double x) {
  static const testref::Fp8Reference e4m3(true), e5m2(false);
  switch (t) {
    case sscFloat16: return testref::doubleToHalfBits(x);
    case sscFloat32: return std::bit_cast<uint32_t>(static_cast<float>(x));
    case sscFloat64: return std::bit_cast<uint64_t>(x);
    case sscBfloat16: return testref::doubleToBf16Bits(x);
    case sscFloat8e4m3: return e4m3.encode(x);
    case sscFloat8e5m2: return e5m2.encode(x);
    default: return 0;
  }
}

bool refIsNaN(sscDataType_t t, uint64_t bits) {
  return !isInteger(t) && std::isnan(refDecode(t, bits));
}

// Reference a (op) b. Integer sum/prod: uint64 arithmetic is exact mod 2^64, hence mod 2^n.
// Floats: the exact double result (fp16/fp8 sums and products are exact in double; for
// float/bf16, rounding twice via double is innocuous since 53 >= 2p + 2), rounded once.
uint64_t refReduce(sscDataType_t t, ReduceKind k, uint64_t a, uint64_t b) {
  if (isInteger(t)) {
    const bool aBigger = isSigned(t) ? signExtend(t, a) > signExtend(t, b) : a > b;
    switch (k) {
      case ReduceKind::kSum: return (a + b) & mask(t);
      case ReduceKind::kProd: return (a * b) & mask(t);
      case ReduceKind::kMax: return aBigger ? a : b;
      case ReduceKind::kMin: return aBigger ? b : a;
    }
  }
  const double x = refDecode(t, a), y = refDecode(t, b);
  switch (k) {
    case ReduceKind::kSum: return refEncode(t, x + y);
    case ReduceKind::kProd: return refEncode(t, x * y);
    case ReduceKind::kMax:
      return std::isnan(x) || std::isnan(y) ? refEncode(t, NAN) : x > y ? a : b;
    case ReduceKind::kMin:
      return std::isnan(x) || std::isnan(y) ? refEncode(t, NAN) : x < y ? a : b;
  }
  return 0;
}

// Random element bits: integers with a share of edge values, floats never NaN (NaN has its own
// tests) but with signed zeros, float/double half the time moderate values so sums round.
uint64_t randomElement(sscDataType_t t, std::mt19937_64& rng) {
  if (isInteger(t)) {
    const uint64_t m = mask(t);
    const uint64_t edges[] = {0, 1, m, m >> 1, (m >> 1) + 1, 2};
    if (rng() % 8 == 0) return edges[rng() % 6];
    return rng() & m;
  }
  if (rng() % 16 == 0) return refEncode(t, rng() % 2 ? 0.0 : -0.0);  // order-sensitive ties
  for (;;) {
    uint64_t bits = rng() & mask(t);
    if (rng() % 2 == 0) {
      const double v = std::uniform_real_distribution<double>(-1000.0, 1000.0)(rng);
      if (t == sscFloat64) bits = std::bit_cast<uint64_t>(v);
      if (t == sscFloat32) bits = std::bit_cast<uint32_t>(static_cast<float>(v));
    }
    if (!refIsNaN(t, bits)) return bits;
  }
}

std::vector<uint64_t> randomElements(sscDataType_t t, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> v(n);
  for (auto& x : v) x = randomElement(t, rng);
  return v;
}

// A buffer of n elements plus kGuard canary elements.
std::vector<char> makeBuffer(sscDataType_t t, const std::vector<uint64_t>& values) {
  std::vector<char> buf((values.size() + kGuard) * elemSize(t), '\xa5');
  for (size_t i = 0; i < values.size(); ++i) storeBits(t, buf.data(), i, values[i]);
  return buf;
}

// Checks out[i] against want[i] and that the guard is intact; stops at the first mismatch.
void expectElements(sscDataType_t t, const std::vector<char>& out,
                    const std::vector<uint64_t>& want, const char* what) {
  for (size_t i = 0; i < want.size(); ++i) {
    const uint64_t got = loadBits(t, out.data(), i);
    if (refIsNaN(t, want[i])) {
      ASSERT_TRUE(refIsNaN(t, got)) << what << " [" << i << "] got 0x" << std::hex << got;
    } else {
      ASSERT_EQ(got, want[i]) << what << " [" << i << "]";
    }
  }
  for (size_t i = want.size() * elemSize(t); i < out.size(); ++i) {
    ASSERT_EQ(out[i], '\xa5') << what << ": wrote past count";
  }
}

const char* kindName(ReduceKind k) {
  const char* names[] = {"sum", "prod", "max", "min"};
  return names[static_cast<int>(k)];
}

// ---------------------------------------------------------------- every dtype

class HostReduceTyped : public ::testing::TestWithParam<sscDataType_t> {};

TEST_P(HostReduceTyped, ReduceMatchesReference) {
  const sscDataType_t t = GetParam();
  for (size_t count : kCounts) {
    const auto a = randomElements(t, count, 11 + count), b = randomElements(t, count, 22 + count);
    const auto bufA = makeBuffer(t, a), bufB = makeBuffer(t, b);
    for (ReduceKind k : kAllKinds) {
      SCOPED_TRACE(::testing::Message() << kindName(k) << " count=" << count);
      auto out = makeBuffer(t, std::vector<uint64_t>(count, 0));
      hostReduce(t, k, bufA.data(), bufB.data(), out.data(), count);
      std::vector<uint64_t> want(count);
      for (size_t i = 0; i < count; ++i) want[i] = refReduce(t, k, a[i], b[i]);
      expectElements(t, out, want, "disjoint");
    }
  }
}

TEST_P(HostReduceTyped, AliasedOperands) {
  const sscDataType_t t = GetParam();
  const size_t n = 1003;
  auto a = randomElements(t, n, 5), b = randomElements(t, n, 6);
  if (!isInteger(t)) {  // signed-zero ties make max/min results depend on operand order
    for (size_t i = 0; i + 1 < n; i += 10) {
      a[i] = b[i + 1] = refEncode(t, 0.0);
      a[i + 1] = b[i] = refEncode(t, -0.0);
    }
  }
  for (ReduceKind k : kAllKinds) {
    SCOPED_TRACE(kindName(k));
    std::vector<uint64_t> wantAB(n), wantAA(n);
    for (size_t i = 0; i < n; ++i) {
      wantAB[i] = refReduce(t, k, a[i], b[i]);
      wantAA[i] = refReduce(t, k, a[i], a[i]);
    }
    auto bufA = makeBuffer(t, a), bufB = makeBuffer(t, b);
    hostReduce(t, k, bufA.data(), bufB.data(), bufA.data(), n);  // dst == a
    expectElements(t, bufA, wantAB, "dst==a");
    bufA = makeBuffer(t, a);
    hostReduce(t, k, bufA.data(), bufB.data(), bufB.data(), n);  // dst == b
    expectElements(t, bufB, wantAB, "dst==b");
    bufA = makeBuffer(t, a);
    hostReduce(t, k, bufA.data(), bufA.data(), bufA.data(), n);  // a == b == dst
    expectElements(t, bufA, wantAA, "a==b==dst");
  }
}

TEST_P(HostReduceTyped, ScaleMatchesReference) {
  const sscDataType_t t = GetParam();
  const size_t n = 1003;
  const auto x = randomElements(t, n, 31);
  const auto in = makeBuffer(t, x);
  std::vector<Scalar> scalars;
  if (isInteger(t)) {
    for (int64_t s : {int64_t{0}, int64_t{1}, int64_t{-3}, int64_t{7}, (int64_t{1} << 40) + 7}) {
      scalars.push_back(Scalar{true, s, 0.0});
    }
  } else {
    for (double s : {0.1, -2.5, 3.0, 1.0 / 3.0}) scalars.push_back(Scalar{false, 0, s});
  }
  for (const Scalar& s : scalars) {
    SCOPED_TRACE(::testing::Message() << "scalar " << (s.isInteger ? double(s.i) : s.f));
    std::vector<uint64_t> want(n);
    for (size_t i = 0; i < n; ++i) {
      if (isInteger(t)) {
        want[i] = (x[i] * static_cast<uint64_t>(s.i)) & mask(t);
      } else if (t == sscFloat64) {
        want[i] = refEncode(t, refDecode(t, x[i]) * s.f);
      } else {  // float multiply (the product of two floats is exact in double), then round
        const float p = static_cast<float>(refDecode(t, x[i]) * double(static_cast<float>(s.f)));
        want[i] = refEncode(t, p);
      }
    }
    auto out = makeBuffer(t, std::vector<uint64_t>(n, 0));
    hostScale(t, in.data(), out.data(), n, s);
    expectElements(t, out, want, "scale");
    out = in;
    hostScale(t, out.data(), out.data(), n, s);
    expectElements(t, out, want, "scale in place");
  }
}

TEST_P(HostReduceTyped, DivideMatchesReference) {
  const sscDataType_t t = GetParam();
  const size_t n = 1003;
  const auto x = randomElements(t, n, 41);
  const auto in = makeBuffer(t, x);
  constexpr uint64_t kTwo63 = uint64_t{1} << 63;
  for (uint64_t d :
       {uint64_t{1}, uint64_t{2}, uint64_t{3}, uint64_t{7}, uint64_t{8}, uint64_t{1000},
        uint64_t{UINT32_MAX}, (uint64_t{1} << 32) + 1, kTwo63, UINT64_MAX}) {
    SCOPED_TRACE(::testing::Message() << "divisor " << d);
    std::vector<uint64_t> want(n);
    for (size_t i = 0; i < n; ++i) {
      if (isSigned(t)) {
        const int64_t v = signExtend(t, x[i]);
        int64_t q;
        if (d <= uint64_t{INT64_MAX})
          q = v / static_cast<int64_t>(d);  // C++: toward zero
        else
          q = (v == INT64_MIN && d == kTwo63) ? -1 : 0;  // |v| <= 2^63
        want[i] = static_cast<uint64_t>(q) & mask(t);
      } else if (isInteger(t)) {
        want[i] = x[i] / d;
      } else if (t == sscFloat64) {
        want[i] = refEncode(t, refDecode(t, x[i]) / static_cast<double>(d));
      } else {
        const float q = static_cast<float>(refDecode(t, x[i])) / static_cast<float>(d);
        want[i] = refEncode(t, q);
      }
    }
    auto out = makeBuffer(t, std::vector<uint64_t>(n, 0));
    hostDivide(t, in.data(), out.data(), n, d);
    expectElements(t, out, want, "divide");
  }
}

TEST_P(HostReduceTyped, ScalarAndElementAccess) {
  const sscDataType_t t = GetParam();
  auto x = randomElements(t, 4000, 51);
  for (uint64_t& v : x) {  // keep 64-bit integers exact in a double for the round trip
    if (isInteger(t) && elemSize(t) == 8) v = isSigned(t) ? uint64_t(int64_t(v) >> 11) : v >> 11;
  }
  const auto buf = makeBuffer(t, x);
  auto back = makeBuffer(t, std::vector<uint64_t>(x.size(), 0));
  for (size_t i = 0; i < x.size(); ++i) {
    const Scalar s = scalarFromElement(t, buf.data() + i * elemSize(t));
    const double want = refDecode(t, x[i]);
    const double got = getElementAsDouble(t, buf.data(), i);
    ASSERT_EQ(s.isInteger, isInteger(t));
    if (isInteger(t)) {
      ASSERT_EQ(s.i, isSigned(t) ? signExtend(t, x[i]) : static_cast<int64_t>(x[i])) << i;
    } else {
      ASSERT_EQ(std::bit_cast<uint64_t>(s.f), std::bit_cast<uint64_t>(want)) << i;  // -0 too
    }
    ASSERT_EQ(std::bit_cast<uint64_t>(got), std::bit_cast<uint64_t>(want)) << i;
    setElementFromDouble(t, back.data(), i, got);
  }
  expectElements(t, back, x, "set(get(x))");
}

INSTANTIATE_TEST_SUITE_P(AllTypes, HostReduceTyped, ::testing::ValuesIn(kAllTypes),
                         [](const ::testing::TestParamInfo<sscDataType_t>& info) {
                           return std::string(dtypeName(info.param));
                         });

// ---------------------------------------------------------------- targeted cases

template <class T>
std::vector<T> reduceVec(sscDataType_t t, ReduceKind k, std::vector<T> a, const std::vector<T>& b) {
  hostReduce(t, k, a.data(), b.data(), a.data(), a.size());
  return a;
}

TEST(HostReduceInteger, SumAndProdWrap) {
  using V8 = std::vector<int8_t>;
  EXPECT_EQ(reduceVec<int8_t>(sscInt8, ReduceKind::kSum, {127, -128, -1}, {1, -1, 1}),
            (V8{-128, 127, 0}));
  EXPECT_EQ(reduceVec<int8_t>(sscInt8, ReduceKind::kProd, {-128, 16, -7}, {-1, 16, 3}),
            (V8{-128, 0, -21}));
  EXPECT_EQ(reduceVec<uint8_t>(sscUint8, ReduceKind::kSum, {255, 200}, {1, 100}),
            (std::vector<uint8_t>{0, 44}));
  EXPECT_EQ(reduceVec<int32_t>(sscInt32, ReduceKind::kSum, {INT32_MAX, INT32_MIN}, {1, -1}),
            (std::vector<int32_t>{INT32_MIN, INT32_MAX}));
  EXPECT_EQ(reduceVec<uint32_t>(sscUint32, ReduceKind::kProd, {UINT32_MAX}, {UINT32_MAX}),
            (std::vector<uint32_t>{1}));
  EXPECT_EQ(reduceVec<int64_t>(sscInt64, ReduceKind::kSum, {INT64_MAX}, {1}),
            (std::vector<int64_t>{INT64_MIN}));
  EXPECT_EQ(reduceVec<int64_t>(sscInt64, ReduceKind::kProd, {INT64_MIN, INT64_MAX}, {-1, 2}),
            (std::vector<int64_t>{INT64_MIN, -2}));
  EXPECT_EQ(reduceVec<uint64_t>(sscUint64, ReduceKind::kSum, {UINT64_MAX}, {2}),
            (std::vector<uint64_t>{1}));
  EXPECT_EQ(reduceVec<int8_t>(sscInt8, ReduceKind::kMax, {-128, 5}, {127, -5}), (V8{127, 5}));
  EXPECT_EQ(reduceVec<uint64_t>(sscUint64, ReduceKind::kMin, {UINT64_MAX}, {1}),
            (std::vector<uint64_t>{1}));
}

TEST(HostReduceFloat, NaNPropagatesThroughMaxMin) {
  for (sscDataType_t t : kAllTypes) {
    if (isInteger(t)) continue;
    SCOPED_TRACE(dtypeName(t));
    const uint64_t nan = refEncode(t, NAN), one = refEncode(t, 1.0), two = refEncode(t, 2.0);
    const uint64_t negInf = refEncode(t, -INFINITY);  // -448 for e4m3 (no infinity)
    for (ReduceKind k : {ReduceKind::kMax, ReduceKind::kMin, ReduceKind::kSum}) {
      for (auto [x, y] : {std::pair{nan, one}, {one, nan}, {nan, negInf}, {negInf, nan}}) {
        const auto a = makeBuffer(t, {x}), b = makeBuffer(t, {y});
        auto out = makeBuffer(t, {0});
        hostReduce(t, k, a.data(), b.data(), out.data(), 1);
        EXPECT_TRUE(refIsNaN(t, loadBits(t, out.data(), 0))) << kindName(k);
      }
    }
    auto out = makeBuffer(t, {0});
    const auto a = makeBuffer(t, {one}), b = makeBuffer(t, {two});
    hostReduce(t, ReduceKind::kMax, a.data(), b.data(), out.data(), 1);
    EXPECT_EQ(loadBits(t, out.data(), 0), two);
    hostReduce(t, ReduceKind::kMin, b.data(), a.data(), out.data(), 1);
    EXPECT_EQ(loadBits(t, out.data(), 0), one);
    // Signed-zero ties go to the second operand, as NCCL's `a > b ? a : b` does.
    const uint64_t pz = refEncode(t, 0.0), nz = refEncode(t, -0.0);
    const auto bp = makeBuffer(t, {pz}), bn = makeBuffer(t, {nz});
    hostReduce(t, ReduceKind::kMax, bn.data(), bp.data(), out.data(), 1);
    EXPECT_EQ(loadBits(t, out.data(), 0), pz);
    hostReduce(t, ReduceKind::kMax, bp.data(), bn.data(), out.data(), 1);
    EXPECT_EQ(loadBits(t, out.data(), 0), nz);
  }
}

TEST(HostReduceHalf, SumAndProdRoundLikeFloat16Arithmetic) {
  const auto h = [](double v) { return testref::doubleToHalfBits(v); };
  using V = std::vector<uint16_t>;
  EXPECT_EQ(reduceVec<uint16_t>(sscFloat16, ReduceKind::kSum,
                                {h(2048), h(2050), h(65504), h(65504)}, {h(1), h(1), h(8), h(16)}),
            (V{h(2048), h(2052), h(65504), 0x7c00}));  // ties to even; max + half ulp -> inf
  EXPECT_EQ(reduceVec<uint16_t>(sscFloat16, ReduceKind::kSum, {h(1), h(1 + std::ldexp(1, -10))},
                                {h(std::ldexp(1, -11)), h(std::ldexp(1, -11))}),
            (V{h(1), h(1 + std::ldexp(1, -9))}));
  std::mt19937 rng(77);
  std::vector<uint16_t> a(1 << 18), b(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    do a[i] = static_cast<uint16_t>(rng());
    while ((a[i] & 0x7c00) == 0x7c00);
    do b[i] = static_cast<uint16_t>(rng());
    while ((b[i] & 0x7c00) == 0x7c00);
  }
  for (ReduceKind k : {ReduceKind::kSum, ReduceKind::kProd}) {
    const auto got = reduceVec<uint16_t>(sscFloat16, k, a, b);
    for (size_t i = 0; i < a.size(); ++i) {
      const _Float16 x = std::bit_cast<_Float16>(a[i]), y = std::bit_cast<_Float16>(b[i]);
      const _Float16 r = k == ReduceKind::kSum ? _Float16(x + y) : _Float16(x * y);
      ASSERT_EQ(got[i], std::bit_cast<uint16_t>(r)) << std::hex << a[i] << " " << b[i];
    }
  }
}

TEST(HostReduceDivide, IntegersTruncateTowardZero) {
  std::vector<int8_t> i8 = {-7, 7, -128, 127, -1, 0};
  hostDivide(sscInt8, i8.data(), i8.data(), i8.size(), 2);
  EXPECT_EQ(i8, (std::vector<int8_t>{-3, 3, -64, 63, 0, 0}));
  std::vector<int32_t> i32 = {-5, -9, INT32_MIN, 9};
  hostDivide(sscInt32, i32.data(), i32.data(), i32.size(), 4);
  EXPECT_EQ(i32, (std::vector<int32_t>{-1, -2, INT32_MIN / 4, 2}));
  std::vector<int64_t> i64 = {INT64_MIN, INT64_MIN + 1, -3};
  hostDivide(sscInt64, i64.data(), i64.data(), i64.size(), uint64_t{1} << 63);
  EXPECT_EQ(i64, (std::vector<int64_t>{-1, 0, 0}));
  std::vector<uint64_t> u64 = {UINT64_MAX, UINT64_MAX - 1};
  hostDivide(sscUint64, u64.data(), u64.data(), u64.size(), UINT64_MAX);
  EXPECT_EQ(u64, (std::vector<uint64_t>{1, 0}));
  std::vector<int32_t> unchanged = {-5, 5};  // divisor 0: a caller bug, must not trap
  hostDivide(sscInt32, unchanged.data(), unchanged.data(), unchanged.size(), 0);
  EXPECT_EQ(unchanged, (std::vector<int32_t>{-5, 5}));
  std::vector<float> f = {1.0f, -7.0f};
  hostDivide(sscFloat32, f.data(), f.data(), f.size(), 2);
  EXPECT_EQ(f, (std::vector<float>{0.5f, -3.5f}));
}

TEST(HostReduceScale, IntegersWrapAndKeepSign) {
  std::vector<int8_t> i8 = {-3, 100, -128};
  hostScale(sscInt8, i8.data(), i8.data(), i8.size(), Scalar{true, 5, 0.0});
  EXPECT_EQ(i8, (std::vector<int8_t>{-15, -12, -128}));  // 500 mod 256 = 244 = -12
  const int32_t minusTwo = -2;
  std::vector<int32_t> i32 = {-7, INT32_MIN, 3};
  hostScale(sscInt32, i32.data(), i32.data(), i32.size(), scalarFromElement(sscInt32, &minusTwo));
  EXPECT_EQ(i32, (std::vector<int32_t>{14, 0, -6}));
  const uint64_t allOnes = UINT64_MAX;  // as a uint64 scalar: multiplies by -1 mod 2^64
  std::vector<uint64_t> u64 = {1, 5};
  hostScale(sscUint64, u64.data(), u64.data(), u64.size(), scalarFromElement(sscUint64, &allOnes));
  EXPECT_EQ(u64, (std::vector<uint64_t>{UINT64_MAX, UINT64_MAX - 4}));
}

TEST(HostReduceElement, SetRoundsOnceAndSaturates) {
  uint16_t h = 0;
  setElementFromDouble(sscFloat16, &h, 0, 1 + std::ldexp(1, -11));
  EXPECT_EQ(h, 0x3c00);  // exact tie: even
  setElementFromDouble(sscFloat16, &h, 0, 1 + std::ldexp(1, -11) + std::ldexp(1, -40));
  EXPECT_EQ(h, 0x3c01);  // just past the tie; rounding to float first would make it a tie
  setElementFromDouble(sscBfloat16, &h, 0, 1 + std::ldexp(1, -8) + std::ldexp(1, -40));
  EXPECT_EQ(h, 0x3f81);
  uint8_t f8 = 0;
  setElementFromDouble(sscFloat8e4m3, &f8, 0, 1e300);
  EXPECT_EQ(f8, 0x7e);
  setElementFromDouble(sscFloat8e5m2, &f8, 0, 61440.0 - std::ldexp(1, -30));
  EXPECT_EQ(f8, 0x7b);
  int8_t i8 = 0;
  for (auto [v, want] : {std::pair{300.0, 127}, {-300.0, -128}, {-1.7, -1}, {NAN, 0}}) {
    setElementFromDouble(sscInt8, &i8, 0, v);
    EXPECT_EQ(i8, want) << v;
  }
  uint64_t u64 = 0;
  setElementFromDouble(sscUint64, &u64, 0, 1e30);
  EXPECT_EQ(u64, UINT64_MAX);
  setElementFromDouble(sscUint64, &u64, 0, -5.0);
  EXPECT_EQ(u64, 0u);
  int64_t i64 = 0;
  setElementFromDouble(sscInt64, &i64, 0, std::ldexp(1, 63));
  EXPECT_EQ(i64, INT64_MAX);
  setElementFromDouble(sscInt64, &i64, 0, -1e30);
  EXPECT_EQ(i64, INT64_MIN);
}

TEST(HostReduceDtype, NamesSizesAndClasses) {
  const char* names[] = {"int8", "uint8", "int32",  "uint32",   "int64",  "uint64",
                         "half", "float", "double", "bfloat16", "f8e4m3", "f8e5m2"};
  for (sscDataType_t t : kAllTypes) {
    EXPECT_STREQ(dtypeName(t), names[t]);
    EXPECT_EQ(dtypeSize(t), elemSize(t)) << names[t];
    EXPECT_TRUE(dtypeValid(t));
    EXPECT_EQ(dtypeIsFloat(t), !isInteger(t)) << names[t];
  }
}

TEST(HostReduceDtype, UnknownTypeIsHarmless) {
  for (int raw : {int(sscNumTypes), 13, 15}) {
    const auto t = static_cast<sscDataType_t>(raw);
    EXPECT_EQ(dtypeSize(t), 0u);
    EXPECT_FALSE(dtypeValid(t));
    EXPECT_FALSE(dtypeIsFloat(t));
    EXPECT_NE(dtypeName(t), nullptr);
    std::vector<uint64_t> a = {1, 2}, b = {3, 4}, d = {5, 6};
    hostReduce(t, ReduceKind::kSum, a.data(), b.data(), d.data(), d.size());
    hostScale(t, a.data(), d.data(), d.size(), Scalar{true, 2, 0.0});
    hostDivide(t, a.data(), d.data(), d.size(), 2);
    setElementFromDouble(t, d.data(), 0, 9.0);
    EXPECT_EQ(d, (std::vector<uint64_t>{5, 6}));
    EXPECT_EQ(getElementAsDouble(t, a.data(), 0), 0.0);
    const Scalar s = scalarFromElement(t, a.data());
    EXPECT_FALSE(s.isInteger);
    EXPECT_EQ(s.i, 0);
    EXPECT_EQ(s.f, 0.0);
  }
}

// Sanity, not a benchmark: a 4 MiB float accumulation runs to completion with the right sums.
TEST(HostReduceFloat, LargeSumCompletes) {
  const size_t n = size_t{1} << 20;
  std::vector<float> acc(n, 1.0f), in(n, 0.5f);
  for (int round = 0; round < 8; ++round) {
    hostReduce(sscFloat32, ReduceKind::kSum, acc.data(), in.data(), acc.data(), n);
  }
  for (size_t i = 0; i < n; i += 4099) ASSERT_EQ(acc[i], 5.0f) << i;
  ASSERT_EQ(acc[n - 1], 5.0f);
}

}  // namespace
}  // namespace ssc
