// SPDX-License-Identifier: MIT
// Element arithmetic shared by the bulk and LL protocols: widen, pre-scale, combine in rank
// order, post-step, narrow (see sym_kernel.cu's header comment for the exactness rules).
// Device code of the symmetric executor, included only by sym_kernel.cu (hence the unnamed
// namespace: one copy of each function per launch file).
#pragma once

#include <cstdint>

#include "src/platform/gpu_runtime.h"
#include "src/kernels/gpu/device_common.h"
#include "src/kernels/gpu/sym_kernel.h"
#include "src/kernels/gpu/elementwise.h"

namespace ssc::gpu {
namespace {

template <class Tr, int kKind>
struct SymOps {
  using S = typename Tr::Storage;
  using C = typename Tr::Compute;
  static constexpr int kPerVec = 16 / sizeof(S);
  union Vec {
    uint4 u;
    S e[kPerVec];
  };

  bool scale = false;
  C mult{};
  WrapType<C> imult{};
  ScalarOps<Tr> post;  // the integer divide, on the stored type

  __device__ explicit SymOps(const DevReduce& red) {
    post.divisor = red.postDivisor;
    if (!red.hasPreScale) return;
    scale = true;
    if constexpr (std::is_integral_v<C>) {
      int64_t m = red.scaleInt;
      if (red.scaleDevice != nullptr)
        m = static_cast<int64_t>(*static_cast<const S*>(red.scaleDevice));
      imult = static_cast<WrapType<C>>(m);
    } else {
      double m = red.scaleFloat;
      if (red.scaleDevice != nullptr)
        m = static_cast<double>(Tr::load(*static_cast<const S*>(red.scaleDevice)));
      mult = static_cast<C>(m);
    }
  }

  // One peer's value, widened and pre-scaled (no rounding for narrow floats).
  __device__ __forceinline__ C in(S v, bool pre) const {
    const C c = Tr::load(v);
    if (!pre) return c;
    if constexpr (std::is_integral_v<C>)
      return static_cast<C>(WrapType<C>(c) * imult);
    else
      return c * mult;
  }
  __device__ __forceinline__ C combine(C acc, C v, bool first) const {
    return first ? v : combineValues<kKind>(acc, v);
  }
  __device__ __forceinline__ S out(C acc, bool doPost) const {
    const S r = Tr::store(acc);
    return doPost ? post.post(r) : r;
  }
};

}  // namespace
}  // namespace ssc::gpu
