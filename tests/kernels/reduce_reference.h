// SPDX-License-Identifier: MIT
// Reference codecs for the host-reduce tests, written independently of src/kernels/host so that
// a shared misunderstanding cannot make both sides agree:
//   * fp16: gcc's _Float16 (libgcc soft-fp conversions, correctly rounded).
//   * bf16: nearest-candidate search with exact double distances (not a rounding-bias trick).
//   * fp8:  values from the OCP 8-bit FP spec formula (ldexp in double), and rounding as "the
//           nearest representable value, ties to the even encoding" by search over that table.
// All encoders take a double so the tests can round exact results exactly once.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

namespace ssc::testref {

inline float halfBitsToFloat(uint16_t h) { return static_cast<float>(std::bit_cast<_Float16>(h)); }
inline uint16_t doubleToHalfBits(double x) {
  return std::bit_cast<uint16_t>(static_cast<_Float16>(x));
}

// OCP FP8 spec, section "Encodings": value = (-1)^S * 2^(E - bias) * (1 + M / 2^m) for E > 0,
// (-1)^S * 2^(1 - bias) * (M / 2^m) for E == 0. E4M3: bias 7, S.1111.111 is NaN, no infinities.
// E5M2: bias 15, E == 31 is infinity (M == 0) or NaN (M != 0).
inline double fp8SpecValue(uint8_t v, bool e4m3) {
  const int expBits = e4m3 ? 4 : 5, manBits = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
  const int s = v >> 7;
  const int e = (v >> manBits) & ((1 << expBits) - 1);
  const int m = v & ((1 << manBits) - 1);
  const double sign = s ? -1.0 : 1.0;
  if (e4m3 && e == 15 && m == 7) return std::numeric_limits<double>::quiet_NaN();
  if (!e4m3 && e == 31) {
    return m == 0 ? sign * std::numeric_limits<double>::infinity()
                  : std::numeric_limits<double>::quiet_NaN();
  }
  if (e == 0) return sign * std::ldexp(m / double(1 << manBits), 1 - bias);
  return sign * std::ldexp(1.0 + m / double(1 << manBits), e - bias);
}

// Round-to-nearest-even onto the fp8 value set by search. E4M3 (satfinite): the candidates are
// the finite values only, so anything beyond 448 lands on 448. E5M2 (IEEE): infinity joins the
// candidates as 2^16 with its (even) encoding 0x7c, which reproduces IEEE's overflow threshold
// of max + half an ulp (61440). Returns 0x7f | sign for NaN.
class Fp8Reference {
 public:
  explicit Fp8Reference(bool e4m3) {
    for (int v = 0; v < 0x80; ++v) {
      const double value = fp8SpecValue(static_cast<uint8_t>(v), e4m3);
      if (std::isnan(value)) continue;
      table_.emplace_back(std::isinf(value) ? 65536.0 : value, static_cast<uint8_t>(v));
    }
    std::sort(table_.begin(), table_.end());
  }
  uint8_t encode(double x) const {
    const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
    if (std::isnan(x)) return sign | 0x7f;
    const double ax = std::fabs(x);
    auto hi = std::lower_bound(table_.begin(), table_.end(), std::make_pair(ax, uint8_t{0}));
    if (hi == table_.end()) return sign | table_.back().second;
    if (hi->first == ax || hi == table_.begin()) return sign | hi->second;
    const auto lo = hi - 1;
    const double dlo = ax - lo->first, dhi = hi->first - ax;
    if (dlo < dhi) return sign | lo->second;
    if (dhi < dlo) return sign | hi->second;
    return sign | ((lo->second & 1) == 0 ? lo->second : hi->second);
  }

 private:
  std::vector<std::pair<double, uint8_t>> table_;  // positive values, ascending
};

// bf16 RNE of a double: bracket |x| between two adjacent bf16 values (floats whose low 16 bits
// are zero) and pick the nearer; distances are exact in double (Sterbenz). Infinity stands in as
// 2^128 for the bracket above the largest finite value.
inline uint16_t doubleToBf16Bits(double x) {
  if (std::isnan(x)) return std::signbit(x) ? 0xffc0 : 0x7fc0;
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0x0000;
  const double ax = std::fabs(x);
  if (std::isinf(ax)) return sign | 0x7f80;
  float below = static_cast<float>(ax);
  if (static_cast<double>(below) > ax) below = std::nextafter(below, 0.0f);  // toward zero
  const uint32_t loBits = std::bit_cast<uint32_t>(below) & 0xffff0000u;
  const uint32_t hiBits = loBits + 0x10000u;
  const double lo = std::bit_cast<float>(loBits);
  const double hi = hiBits == 0x7f800000u ? std::ldexp(1.0, 128) : std::bit_cast<float>(hiBits);
  const double dlo = ax - lo, dhi = hi - ax;
  uint32_t pick;
  if (dlo < dhi)
    pick = loBits;
  else if (dhi < dlo)
    pick = hiBits;
  else
    pick = (loBits & 0x10000u) == 0 ? loBits : hiBits;
  return static_cast<uint16_t>(sign | (pick >> 16));
}

}  // namespace ssc::testref
