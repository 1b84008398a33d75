// SPDX-License-Identifier: MIT
// Element arithmetic of the GPU executor, bit for bit the host backend's (src/kernels/host/
// reduce.cc): fp16/bf16/fp8 widen to float, combine, round back to nearest-even (e4m3
// satfinite, e5m2 to infinity); integers wrap; max/min let NaN win; pre-scale and post-divide as
// NCCL's PreMulSum/Avg. Every stage stores the narrow type, exactly as the host executor stores
// each stage into a buffer, so the two executors agree on every bit.
//
// The conversions reuse the host's constexpr templates (convert.h) so there is one definition of
// rounding; nvcc needs --expt-relaxed-constexpr for that, clang/hipcc treats constexpr functions
// as host+device anyway.
#pragma once

#include <bit>
#include <cstdint>
#include <type_traits>

#include "src/kernels/host/convert.h"

namespace ssc::gpu {

#define SSC_HD __host__ __device__ __forceinline__

template <class T>
struct NativeTraits {
  using Storage = T;
  using Compute = T;
  static SSC_HD T load(T v) { return v; }
  static SSC_HD T store(T v) { return v; }
};

struct HalfTraits {
  using Storage = uint16_t;
  using Compute = float;
  static SSC_HD float load(uint16_t v) { return conv::narrowToFloat<conv::Binary16>(v); }
  static SSC_HD uint16_t store(float v) {
    return static_cast<uint16_t>(conv::floatToNarrow<conv::Binary16>(v));
  }
};

struct Bf16Traits {
  using Storage = uint16_t;
  using Compute = float;
  static SSC_HD float load(uint16_t v) { return std::bit_cast<float>(uint32_t(v) << 16); }
  static SSC_HD uint16_t store(float f) {
    const uint32_t bits = std::bit_cast<uint32_t>(f);
    const uint32_t abs = bits & 0x7fffffffu;
    if (abs > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x0040u);
    return static_cast<uint16_t>(((bits >> 16) & 0x8000u) | conv::detail::shiftRightRne(abs, 16));
  }
};

template <class F>
struct Fp8Traits {
  using Storage = uint8_t;
  using Compute = float;
  static SSC_HD float load(uint8_t v) { return conv::narrowToFloat<F>(v); }
  static SSC_HD uint8_t store(float v) { return static_cast<uint8_t>(conv::floatToNarrow<F>(v)); }
};

// Integer sum/prod wrap like the host's: arithmetic in an unsigned type at least as wide as int.
// Floating types map to themselves so ScalarOps can name the type for every dtype.
template <class T, bool = std::is_integral_v<T>>
struct WrapOf {
  using type = T;
};
template <class T>
struct WrapOf<T, true> {
  using type =
      std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
};
template <class T>
using WrapType = typename WrapOf<T>::type;

template <class T>
SSC_HD bool isNaN(T x) {
  if constexpr (std::is_floating_point_v<T>) return x != x;
  return false;
}

// kind: 0 sum, 1 prod, 2 max, 3 min (ssc::ReduceKind).
template <int kKind, class T>
SSC_HD T combineValues(T a, T b) {
  if constexpr (kKind == 0) {
    if constexpr (std::is_integral_v<T>)
      return static_cast<T>(WrapType<T>(a) + WrapType<T>(b));
    else
      return a + b;
  } else if constexpr (kKind == 1) {
    if constexpr (std::is_integral_v<T>)
      return static_cast<T>(WrapType<T>(a) * WrapType<T>(b));
    else
      return a * b;
  } else if constexpr (kKind == 2) {
    if (isNaN(a)) return a;
    if (isNaN(b)) return b;
    return a > b ? a : b;
  } else {
    if (isNaN(a)) return a;
    if (isNaN(b)) return b;
    return a < b ? a : b;
  }
}

// The pre-step multiplier and post-step divisor, resolved once per block.
template <class Tr>
struct ScalarOps {
  using S = typename Tr::Storage;
  using C = typename Tr::Compute;
  bool scale = false;
  C mult{};             // float types: the multiplier in the compute type
  WrapType<C> imult{};  // integer types
  uint64_t divisor = 0;

  SSC_HD S pre(S v) const {
    if constexpr (std::is_integral_v<C>)
      return static_cast<C>(WrapType<C>(v) * imult);
    else
      return Tr::store(Tr::load(v) * mult);
  }
  SSC_HD S post(S v) const {
    if constexpr (std::is_integral_v<C>) {
      if constexpr (sizeof(C) <= 4) {
        if (divisor > 0xffffffffull) return 0;
        return divideInt<uint32_t>(v, static_cast<uint32_t>(divisor));
      } else {
        return divideInt<uint64_t>(v, divisor);
      }
    } else {
      return Tr::store(Tr::load(v) / static_cast<C>(divisor));
    }
  }
  // Truncation toward zero through magnitudes (defined for INT_MIN), as hostDivide.
  template <class W>
  static SSC_HD S divideInt(S x, W d) {
    if constexpr (std::is_signed_v<S>) {
      const W mag = x < 0 ? W(0) - static_cast<W>(x) : static_cast<W>(x);
      const W q = mag / d;
      return static_cast<S>(x < 0 ? W(0) - q : q);
    } else {
      return static_cast<S>(static_cast<W>(x) / d);
    }
  }
};

#undef SSC_HD

}  // namespace ssc::gpu
