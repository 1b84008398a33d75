// SPDX-License-Identifier: MIT
// Element-wise arithmetic of the host backend (see reduce.h).
//
// Structure: every public entry point maps the runtime sscDataType_t to a compile-time "element
// traits" type (visitType), and the runtime ReduceKind to an op type, then runs a loop templated
// on both. For int*, float and double the traits are the identity, so each loop is a plain
// `d[i] = a[i] op b[i]` over the element type that gcc vectorises; narrow float types load
// through a widening conversion, combine in float and store through an RNE narrowing
// (convert.h). Computing narrow results in float and rounding once gives the correctly rounded
// fp16/bf16/fp8 sum and product: float's 24 bits are at least 2p+2 for each of these formats'
// p-bit significands, so the double rounding is innocuous (Figueroa 1995); __hadd/__hmul give
// the same correctly rounded results on the GPU.
#include "src/kernels/host/reduce.h"

#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "src/kernels/host/convert.h"

namespace ssc {
namespace {

// ---------------------------------------------------------------- element traits

// Storage: the type in memory. Compute: the type values are combined in.
template <class T>
struct NativeType {
  using Storage = T;
  using Compute = T;
  static T load(T v) { return v; }
  static T store(T v) { return v; }
};

struct HalfType {
  using Storage = uint16_t;
  using Compute = float;
  static float load(uint16_t v) { return conv::halfToFloat(v); }
  static uint16_t store(float v) { return conv::floatToHalf(v); }
};

struct Bf16Type {
  using Storage = uint16_t;
  using Compute = float;
  static float load(uint16_t v) { return conv::bf16ToFloat(v); }
  static uint16_t store(float v) { return conv::floatToBf16(v); }
};

// An FP8 byte has only 256 values, so widening is a table look-up (1 KiB each, built at compile
// time by the same decoder the out-of-line fp8*ToFloat functions use).
template <class F>
constexpr std::array<float, 256> makeFp8Table() {
  std::array<float, 256> table{};
  for (uint32_t v = 0; v < 256; ++v) table[v] = conv::narrowToFloat<F>(v);
  return table;
}
constexpr std::array<float, 256> kE4M3Values = makeFp8Table<conv::Fp8E4M3>();
constexpr std::array<float, 256> kE5M2Values = makeFp8Table<conv::Fp8E5M2>();

struct E4M3Type {
  using Storage = uint8_t;
  using Compute = float;
  static float load(uint8_t v) { return kE4M3Values[v]; }
  static uint8_t store(float v) { return conv::floatToFp8e4m3(v); }
};

struct E5M2Type {
  using Storage = uint8_t;
  using Compute = float;
  static float load(uint8_t v) { return kE5M2Values[v]; }
  static uint8_t store(float v) { return conv::floatToFp8e5m2(v); }
};

// Calls fn(Traits{}) for `type`; returns false (and calls nothing) for an unknown type, which
// every entry point turns into "do nothing": the API layer has already rejected such types.
template <class Fn>
bool visitType(sscDataType_t type, Fn&& fn) {
  switch (type) {
    case sscInt8: fn(NativeType<int8_t>{}); return true;
    case sscUint8: fn(NativeType<uint8_t>{}); return true;
    case sscInt32: fn(NativeType<int32_t>{}); return true;
    case sscUint32: fn(NativeType<uint32_t>{}); return true;
    case sscInt64: fn(NativeType<int64_t>{}); return true;
    case sscUint64: fn(NativeType<uint64_t>{}); return true;
    case sscFloat16: fn(HalfType{}); return true;
    case sscFloat32: fn(NativeType<float>{}); return true;
    case sscFloat64: fn(NativeType<double>{}); return true;
    case sscBfloat16: fn(Bf16Type{}); return true;
    case sscFloat8e4m3: fn(E4M3Type{}); return true;
    case sscFloat8e5m2: fn(E5M2Type{}); return true;
    default: return false;
  }
}

// ---------------------------------------------------------------- the four combiners

// Integer sum/prod wrap modulo 2^n like the GPU does. The arithmetic runs in an unsigned type
// at least as wide as int: signed overflow would be UB, and so would uint8 * uint8 after the
// usual promotion to (signed) int if the product overflowed. The conversion back to a signed
// type is modular in C++20.
template <class T>
using WrapType =
    std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

template <class T>
constexpr bool isNaN(T x) {
  if constexpr (std::is_floating_point_v<T>) return x != x;
  return false;
}

struct OpSum {
  template <class T>
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>)
      return static_cast<T>(WrapType<T>(a) + WrapType<T>(b));
    else
      return a + b;
  }
};

struct OpProd {
  template <class T>
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>)
      return static_cast<T>(WrapType<T>(a) * WrapType<T>(b));
    else
      return a * b;
  }
};

// Max/min. NCCL's device code computes max as `a > b ? a : b` and min as `a < b ? a : b`. We
// keep exactly that comparison, so ordinary values and signed-zero ties (the second operand
// wins) match NCCL bit for bit, but let NaN win: with the bare comparison a NaN would vanish or
// survive depending on which operand it is, i.e. on the ring/tree schedule, and different ranks
// or algorithms could disagree. Here the result is NaN iff either input is NaN (the first NaN
// operand when both are), so every schedule yields a NaN in the same places. fmax/fmin were
// rejected because they drop NaNs, hiding bad data.
struct OpMax {
  template <class T>
  static T apply(T a, T b) {
    if (isNaN(a)) return a;
    if (isNaN(b)) return b;
    return a > b ? a : b;
  }
};

struct OpMin {
  template <class T>
  static T apply(T a, T b) {
    if (isNaN(a)) return a;
    if (isNaN(b)) return b;
    return a < b ? a : b;
  }
};

// ---------------------------------------------------------------- reduction loops

// Three loop shapes, chosen at run time, so that the common cases carry __restrict and gcc
// vectorises them without run-time alias versioning: disjoint buffers, and in place (dst == a
// or dst == b, the host executor's accumulate-into-receive-buffer step). Operand order is kept
// in every shape because max/min are not symmetric in ties and NaN choice.
template <class Tr, class Op>
void combineDisjoint(const typename Tr::Storage* __restrict a,
                     const typename Tr::Storage* __restrict b, typename Tr::Storage* __restrict d,
                     size_t n) {
  for (size_t i = 0; i < n; ++i) d[i] = Tr::store(Op::apply(Tr::load(a[i]), Tr::load(b[i])));
}

template <class Tr, class Op, bool kDstIsFirst>
void combineInPlace(typename Tr::Storage* __restrict d,
                    const typename Tr::Storage* __restrict other, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const auto x = Tr::load(d[i]);
    const auto y = Tr::load(other[i]);
    d[i] = Tr::store(kDstIsFirst ? Op::apply(x, y) : Op::apply(y, x));
  }
}

// Anything else (a == b == dst, or partial overlaps, which reduce.h does not promise anything
// for): a plain loop without restrict, so no UB, each element read before it is written.
template <class Tr, class Op>
void combineAliased(const typename Tr::Storage* a, const typename Tr::Storage* b,
                    typename Tr::Storage* d, size_t n) {
  for (size_t i = 0; i < n; ++i) d[i] = Tr::store(Op::apply(Tr::load(a[i]), Tr::load(b[i])));
}

template <class Tr, class Op>
void combine(const void* a, const void* b, void* dst, size_t n) {
  using S = typename Tr::Storage;
  const S* pa = static_cast<const S*>(a);
  const S* pb = static_cast<const S*>(b);
  S* pd = static_cast<S*>(dst);
  // Compare addresses as integers: relational operators on unrelated pointers are unspecified.
  const uintptr_t bytes = n * sizeof(S);
  const auto overlap = [bytes](const void* x, const void* y) {
    const auto ux = reinterpret_cast<uintptr_t>(x), uy = reinterpret_cast<uintptr_t>(y);
    return ux < uy + bytes && uy < ux + bytes;
  };
  const bool dstOverlapsA = overlap(pd, pa), dstOverlapsB = overlap(pd, pb);
  if (!dstOverlapsA && !dstOverlapsB) {
    combineDisjoint<Tr, Op>(pa, pb, pd, n);
  } else if (pd == pa && !dstOverlapsB) {
    combineInPlace<Tr, Op, true>(pd, pb, n);
  } else if (pd == pb && !dstOverlapsA) {
    combineInPlace<Tr, Op, false>(pd, pa, n);
  } else {
    combineAliased<Tr, Op>(pa, pb, pd, n);
  }
}

// ---------------------------------------------------------------- scalars

// The scalar as an integer multiplier. A Scalar made by scalarFromElement for an integer type
// has isInteger set; a floating one (a caller mixing types) is truncated toward zero and
// saturated to int64 rather than hitting the UB of an out-of-range conversion.
template <class T>
T saturatingCast(double v) {
  static_assert(std::is_integral_v<T>);
  if (std::isnan(v)) return 0;
  // 2^digits is max + 1, exact in a double for every integer type; min is -2^digits or 0.
  constexpr double kHi = 2.0 * static_cast<double>(T(1) << (std::numeric_limits<T>::digits - 1));
  constexpr double kLo = std::is_signed_v<T> ? -kHi : 0.0;
  if (v >= kHi) return std::numeric_limits<T>::max();
  if (v <= kLo) return std::numeric_limits<T>::min();
  return static_cast<T>(v);  // in range: truncates toward zero
}

int64_t integerScalar(const Scalar& s) { return s.isInteger ? s.i : saturatingCast<int64_t>(s.f); }
double floatScalar(const Scalar& s) { return s.isInteger ? static_cast<double>(s.i) : s.f; }

// Rounds a double to float with round-to-odd: truncate, then set the last bit if anything was
// lost. Narrowing that float again with RNE gives the correctly rounded narrow value, because
// float has at least two more mantissa bits than bf16/fp16/fp8 (the classic double-rounding fix);
// plain RNE to float first could turn a value just past a narrow tie into the tie itself.
float doubleToFloatRoundOdd(double v) {
  const float f = static_cast<float>(v);  // RNE; out-of-range gives +-inf (IEEE)
  if (std::isnan(v) || static_cast<double>(f) == v) return f;
  uint32_t bits = std::bit_cast<uint32_t>(f);
  // Rounded away from zero: step one ulp back (sign-magnitude, so -1 on the bits shrinks |f|;
  // inf steps to FLT_MAX). Then the sticky bit.
  if (std::fabs(static_cast<double>(f)) > std::fabs(v)) bits -= 1;
  return std::bit_cast<float>(bits | 1u);
}

}  // namespace

// ---------------------------------------------------------------- arithmetic

void hostReduce(sscDataType_t type, ReduceKind kind, const void* a, const void* b, void* dst,
                size_t count) {
  if (count == 0) return;
  visitType(type, [&](auto tr) {
    using Tr = decltype(tr);
    switch (kind) {
      case ReduceKind::kSum: combine<Tr, OpSum>(a, b, dst, count); break;
      case ReduceKind::kProd: combine<Tr, OpProd>(a, b, dst, count); break;
      case ReduceKind::kMax: combine<Tr, OpMax>(a, b, dst, count); break;
      case ReduceKind::kMin: combine<Tr, OpMin>(a, b, dst, count); break;
    }
  });
}

void hostScale(sscDataType_t type, const void* src, void* dst, size_t count, Scalar s) {
  if (count == 0) return;
  visitType(type, [&](auto tr) {
    using Tr = decltype(tr);
    using S = typename Tr::Storage;
    using C = typename Tr::Compute;
    const S* in = static_cast<const S*>(src);
    S* out = static_cast<S*>(dst);
    if constexpr (std::is_integral_v<C>) {
      // Wrapping product; the multiplier reduced mod 2^n gives the same low n bits.
      const auto m = static_cast<WrapType<C>>(integerScalar(s));
      for (size_t i = 0; i < count; ++i) out[i] = static_cast<C>(WrapType<C>(in[i]) * m);
    } else {
      // fp64 multiplies in double, everything else in float, then rounds back (RNE).
      const C m = static_cast<C>(floatScalar(s));
      for (size_t i = 0; i < count; ++i) out[i] = Tr::store(Tr::load(in[i]) * m);
    }
  });
}

namespace {

// Truncating division of integers through magnitudes in W (uint32_t or uint64_t, wide enough
// for |x|): a signed value divides as sign(x) * (|x| / d), which is C++'s truncation toward zero
// and stays defined for INT_MIN and for divisors beyond the signed range.
template <class T, class W>
void divideIntegers(const T* in, T* out, size_t n, W d) {
  for (size_t i = 0; i < n; ++i) {
    const T x = in[i];
    if constexpr (std::is_signed_v<T>) {
      const W mag = x < 0 ? W(0) - static_cast<W>(x) : static_cast<W>(x);
      const W q = mag / d;
      out[i] = static_cast<T>(x < 0 ? W(0) - q : q);
    } else {
      out[i] = static_cast<T>(static_cast<W>(x) / d);
    }
  }
}

}  // namespace

void hostDivide(sscDataType_t type, const void* src, void* dst, size_t count, uint64_t divisor) {
  if (count == 0) return;
  visitType(type, [&](auto tr) {
    using Tr = decltype(tr);
    using S = typename Tr::Storage;
    using C = typename Tr::Compute;
    const S* in = static_cast<const S*>(src);
    S* out = static_cast<S*>(dst);
    if constexpr (std::is_integral_v<C>) {
      if (divisor == 0) {  // a caller bug (the library divides by nranks >= 1): copy, no SIGFPE
        if (out != in) std::memmove(out, in, count * sizeof(S));
      } else if constexpr (sizeof(C) <= 4) {
        // 32-bit division is several times cheaper than 64-bit; |x| < 2^32, so a divisor that
        // does not fit in 32 bits makes every quotient 0.
        if (divisor > UINT32_MAX) {
          for (size_t i = 0; i < count; ++i) out[i] = 0;
        } else {
          divideIntegers<C, uint32_t>(in, out, count, static_cast<uint32_t>(divisor));
        }
      } else {
        divideIntegers<C, uint64_t>(in, out, count, divisor);
      }
    } else {
      // IEEE division (x / 0 gives inf or NaN); double for fp64, float for the rest.
      const C d = static_cast<C>(divisor);
      for (size_t i = 0; i < count; ++i) out[i] = Tr::store(Tr::load(in[i]) / d);
    }
  });
}

// ---------------------------------------------------------------- single elements

Scalar scalarFromElement(sscDataType_t type, const void* p) {
  Scalar s;
  if (p == nullptr) return s;
  visitType(type, [&](auto tr) {
    using Tr = decltype(tr);
    typename Tr::Storage v;
    std::memcpy(&v, p, sizeof(v));
    if constexpr (std::is_integral_v<typename Tr::Compute>) {
      s.isInteger = true;
      s.i = static_cast<int64_t>(v);  // signed: sign-extends; uint64: keeps the bits (C++20)
    } else {
      s.f = static_cast<double>(Tr::load(v));
    }
  });
  return s;
}

double getElementAsDouble(sscDataType_t type, const void* base, size_t i) {
  double result = 0.0;
  visitType(type, [&](auto tr) {
    using Tr = decltype(tr);
    typename Tr::Storage v;
    std::memcpy(&v, static_cast<const char*>(base) + i * sizeof(v), sizeof(v));
    result = static_cast<double>(Tr::load(v));
  });
  return result;
}

// Integers: truncation toward zero, saturated to the type's range, NaN -> 0 (a double outside
// the range has no defined conversion). float: RNE. Narrow types: one correct RNE rounding of the
// double (via round-to-odd float), with the format's own overflow rule.
void setElementFromDouble(sscDataType_t type, void* base, size_t i, double v) {
  visitType(type, [&](auto tr) {
    using Tr = decltype(tr);
    using S = typename Tr::Storage;
    using C = typename Tr::Compute;
    S out;
    if constexpr (std::is_integral_v<C>) {
      out = saturatingCast<C>(v);
    } else if constexpr (std::is_same_v<Tr, NativeType<C>>) {
      out = static_cast<C>(v);
    } else {
      out = Tr::store(doubleToFloatRoundOdd(v));
    }
    std::memcpy(static_cast<char*>(base) + i * sizeof(S), &out, sizeof(S));
  });
}

}  // namespace ssc
