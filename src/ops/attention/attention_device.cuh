// SPDX-License-Identifier: MIT
// Device helpers of the attention kernels (attention_kernel.cu, attention_exchange.cu,
// attention_prefill_kernel.cu and the headers they include): -inf, loads and stores of the io
// types, a block reduction. Device compilers only; each including file gets its own copy
// (unnamed namespace).
#pragma once

#include <cstddef>
#include <cstdint>

#include "src/platform/gpu_runtime.h"
#include "src/kernels/gpu/elementwise.h"
#include "starscream/starscream.h"

namespace ssc::gpu {
namespace {

__device__ __forceinline__ float negInf() { return -__int_as_float(0x7f800000); }

template <class Traits>
__device__ __forceinline__ float loadNarrow(const void* base, size_t i) {
  return Traits::load(static_cast<const uint16_t*>(base)[i]);
}

__device__ __forceinline__ float loadIo(const void* base, size_t i, int dtype) {
  if (dtype == sscFloat32) return static_cast<const float*>(base)[i];
  if (dtype == sscFloat16) return loadNarrow<HalfTraits>(base, i);
  return loadNarrow<Bf16Traits>(base, i);
}

// Calls f(load), load(i) being element i of base as a float, with the type's branch taken once
// here: loads through it can all be in flight together, where loadIo's per-element switch made
// a lane's loads issue one after another (measured on the H200: about 31 us a decode block).
template <class F>
__device__ __forceinline__ void withIoLoader(const void* base, int dtype, const F& f) {
  if (dtype == sscFloat32) {
    const float* q = static_cast<const float*>(base);
    f([q](size_t i) { return q[i]; });
  } else if (dtype == sscFloat16) {
    const uint16_t* q = static_cast<const uint16_t*>(base);
    f([q](size_t i) { return HalfTraits::load(q[i]); });
  } else {
    const uint16_t* q = static_cast<const uint16_t*>(base);
    f([q](size_t i) { return Bf16Traits::load(q[i]); });
  }
}

__device__ __forceinline__ void storeIo(void* base, size_t i, int dtype, float x) {
  if (dtype == sscFloat32)
    static_cast<float*>(base)[i] = x;
  else if (dtype == sscFloat16)
    static_cast<uint16_t*>(base)[i] = HalfTraits::store(x);
  else
    static_cast<uint16_t*>(base)[i] = Bf16Traits::store(x);
}

// The reduction (max or sum) of x over the block; red holds blockDim.x floats (<= 128).
__device__ __forceinline__ float blockReduce(float x, float* red, bool isMax) {
  red[threadIdx.x] = x;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (static_cast<int>(threadIdx.x) < s)
      red[threadIdx.x] = isMax ? fmaxf(red[threadIdx.x], red[threadIdx.x + s])
                               : red[threadIdx.x] + red[threadIdx.x + s];
    __syncthreads();
  }
  const float r = red[0];
  __syncthreads();
  return r;
}

}  // namespace
}  // namespace ssc::gpu
