// SPDX-License-Identifier: MIT
// Bit-exact conversions between binary32 and the narrow floating-point storage types the host
// backend reduces: IEEE binary16 ("half"), bfloat16, OCP FP8 E4M3FN and OCP FP8 E5M2.
//
// They are inline so the reduction loops in reduce.cc compile to straight-line code per element;
// the out-of-line halfToFloat()/floatToHalf()/... declared in reduce.h wrap them (convert.cc).
//
// One template handles every format. It is bit manipulation plus two float operations whose
// operands and results are normal numbers, so flush-to-zero / denormals-are-zero modes a caller
// may have switched on do not change results; the rounding mode is assumed to be the default
// (nearest-even), as it is for the reduction arithmetic itself.
//
// Rounding is to nearest, ties to even, everywhere. Overflow follows each format's convention:
// binary16, bfloat16 and E5M2 overflow to infinity exactly as IEEE 754 RNE does (a value rounds
// to infinity iff it is >= max finite + half an ulp); E4M3FN has no infinity and saturates to
// +-448 ("satfinite", as CUDA's __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3)), infinities
// included. NaN stays NaN, quiet, keeping its sign and the top bits of its payload where the
// narrow format has room (E4M3FN has a single NaN per sign, S.1111.111; CUDA's conversion
// returns +NaN for any NaN, which differs only in the sign of a NaN).
#pragma once

#include <bit>
#include <cstdint>
#include <limits>

namespace ssc::conv {

static_assert(std::numeric_limits<float>::is_iec559 && std::numeric_limits<double>::is_iec559,
              "the host reductions assume IEEE 754 binary32/binary64");

// A narrow binary floating-point format: 1 sign bit, kExpBits exponent bits, kManBits mantissa
// bits, exponent bias 2^(kExpBits-1) - 1. kIeee: the all-ones exponent encodes infinity
// (mantissa 0) and NaN (mantissa != 0). Otherwise (E4M3FN, "finite"): all-ones exponent and
// all-ones mantissa is NaN, every other all-ones-exponent encoding is an ordinary normal number.
template <int kExpBits, int kManBits, bool kIeeeSpecials>
struct Format {
  static constexpr int kExp = kExpBits;
  static constexpr int kMan = kManBits;
  static constexpr bool kIeee = kIeeeSpecials;
  static constexpr int kBias = (1 << (kExp - 1)) - 1;
  static constexpr int kEmin = 1 - kBias;  // unbiased exponent of the smallest normal
  static constexpr uint32_t kSignBit = 1u << (kExp + kMan);
  static constexpr uint32_t kAbsMask = kSignBit - 1;
  static constexpr uint32_t kManMask = (1u << kMan) - 1;
  static constexpr uint32_t kExpField = (1u << kExp) - 1;  // all-ones exponent, unshifted
  static constexpr uint32_t kInf = kExpField << kMan;      // meaningful only when kIeee
  static constexpr uint32_t kMaxFinite = kIeee ? kInf - 1 : kAbsMask - 1;
  static constexpr uint32_t kQuietBit = 1u << (kMan - 1);
};

using Binary16 = Format<5, 10, true>;
using Fp8E4M3 = Format<4, 3, false>;
using Fp8E5M2 = Format<5, 2, true>;

namespace detail {

// x / 2^shift rounded to nearest, ties to even; 1 <= shift <= 31. The carry out of the kept
// bits is what the callers want: a mantissa of all ones rounding up bumps the exponent.
constexpr uint32_t shiftRightRne(uint32_t x, int shift) {
  const uint32_t half = 1u << (shift - 1);
  const uint32_t lsb = (x >> shift) & 1u;
  // x + half - 1 + lsb cannot wrap for x < 2^31; callers passing more discard the result.
  return (x + half - 1u + lsb) >> shift;
}

}  // namespace detail

// Both directions below compute every case and select the answer instead of branching, so a
// loop over elements if-converts and gcc vectorises it (the reduction loops in reduce.cc);
// the branchy form made fp16 reductions about twice as slow.

// Decodes a narrow encoding (the low 1 + kExp + kMan bits of v) to the float of the same value.
// Exact: every value of these formats is a float. constexpr so reduce.cc can tabulate FP8.
template <class F>
constexpr float narrowToFloat(uint32_t v) {
  const uint32_t sign = (v & F::kSignBit) << (31 - F::kExp - F::kMan);
  const uint32_t exp = (v >> F::kMan) & F::kExpField;
  const uint32_t man = v & F::kManMask;
  // Normal: re-bias the exponent, left-align the mantissa.
  const uint32_t normal = ((exp + uint32_t(127 - F::kBias)) << 23) | (man << (23 - F::kMan));
  // Zero or subnormal: man * 2^(kEmin - kMan), an exact product (man < 2^kMan, a power-of-two
  // scale, a normal float result for every format here, so FTZ/DAZ modes cannot touch it).
  constexpr float kUnit = std::bit_cast<float>(uint32_t(127 + F::kEmin - F::kMan) << 23);
  const uint32_t subnormal =
      std::bit_cast<uint32_t>(static_cast<float>(static_cast<int32_t>(man)) * kUnit);
  // Infinity (IEEE formats, man == 0) or NaN: the payload moves to the top of the float
  // mantissa and the quiet bit is forced, as an IEEE 754 format conversion does.
  const uint32_t special = 0x7f800000u | (man << (23 - F::kMan)) | (man != 0 ? 0x00400000u : 0u);
  const bool isSpecial = exp == F::kExpField && (F::kIeee || man == F::kManMask);
  const uint32_t bits = isSpecial ? special : exp == 0 ? subnormal : normal;
  return std::bit_cast<float>(bits | sign);
}

// Rounds a float to the narrow format F, to nearest even (see the file comment for overflow).
template <class F>
constexpr uint32_t floatToNarrow(float f) {
  constexpr int kDrop = 23 - F::kMan;  // float mantissa bits dropped in F's normal range
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (bits >> 31) << (F::kExp + F::kMan);
  const uint32_t abs = bits & 0x7fffffffu;

  // |f| in F's normal range (or beyond): re-bias the exponent in place and drop kDrop mantissa
  // bits with RNE. A carry out of the mantissa increments the exponent, and past the largest
  // binade lands on or beyond the all-ones exponent, which the overflow select below sorts out;
  // infinity takes this path too. (For smaller |f| the subtraction wraps; the value is unused.)
  const uint32_t normal = detail::shiftRightRne(abs - (uint32_t(127 - F::kBias) << 23), kDrop);

  // |f| below F's smallest normal 2^kEmin: the result is |f| rounded to a multiple of the
  // subnormal unit u = 2^(kEmin - kMan). Adding C = 2^23 * u does exactly that rounding: every
  // sum lies in [C, 2C), where the float spacing is u, so the FPU's round-to-nearest-even picks
  // the multiple, and the sum's low bits count the units (2^kMan units = the smallest normal's
  // encoding). This uses the default rounding mode like the float arithmetic around it; both
  // operands and the sum are normal floats, so FTZ/DAZ do not interfere.
  constexpr float kC = std::bit_cast<float>(uint32_t(127 + F::kEmin - F::kMan + 23) << 23);
  const uint32_t subnormal =
      std::bit_cast<uint32_t>(std::bit_cast<float>(abs) + kC) - std::bit_cast<uint32_t>(kC);

  constexpr uint32_t kMinNormal = uint32_t(127 + F::kEmin) << 23;
  constexpr uint32_t kOverflow = F::kIeee ? F::kInf : F::kMaxFinite;  // E4M3FN: satfinite
  // NaN: quiet, with the top payload bits where there is room (E4M3FN has one NaN per sign).
  const uint32_t nan =
      F::kIeee ? (F::kInf | F::kQuietBit | ((abs & 0x7fffffu) >> kDrop)) : F::kAbsMask;

  uint32_t r = abs < kMinNormal ? subnormal : normal;
  r = r > F::kMaxFinite ? kOverflow : r;
  r = abs > 0x7f800000u ? nan : r;
  return sign | r;
}

inline float halfToFloat(uint16_t h) { return narrowToFloat<Binary16>(h); }
inline uint16_t floatToHalf(float f) { return static_cast<uint16_t>(floatToNarrow<Binary16>(f)); }

// bfloat16 is the upper half of a binary32, so widening is a shift and narrowing a single RNE
// on the low 16 bits: carries roll into the exponent and FLT_MAX-sized values overflow to
// infinity exactly as RNE prescribes; subnormals need nothing special. NaN: truncating could
// clear every payload bit and turn a NaN into infinity, hence the explicit quiet bit.
inline float bf16ToFloat(uint16_t b) { return std::bit_cast<float>(uint32_t(b) << 16); }
inline uint16_t floatToBf16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const uint32_t abs = bits & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  return static_cast<uint16_t>(((bits >> 16) & 0x8000u) | detail::shiftRightRne(abs, 16));
}

inline float fp8e4m3ToFloat(uint8_t v) { return narrowToFloat<Fp8E4M3>(v); }
inline uint8_t floatToFp8e4m3(float f) { return static_cast<uint8_t>(floatToNarrow<Fp8E4M3>(f)); }
inline float fp8e5m2ToFloat(uint8_t v) { return narrowToFloat<Fp8E5M2>(v); }
inline uint8_t floatToFp8e5m2(float f) { return static_cast<uint8_t>(floatToNarrow<Fp8E5M2>(f)); }

}  // namespace ssc::conv
