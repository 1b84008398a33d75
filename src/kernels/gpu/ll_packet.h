// SPDX-License-Identifier: MIT
// The LL packet (NCCL's low-latency protocol) as one device header: the line format and its two
// vendor-specific accesses. Device code only.
#pragma once

#include <cstdint>

#include "src/platform/gpu_runtime.h"

// LL packets (NCCL's low-latency protocol): 16 bytes = two 8-byte halves {4 data bytes, 4 flag
// bytes}. Each half is written by one 8-byte store, which is single-copy atomic, so a reader that
// sees the flag also sees the data next to it: no fence, no separate flag write. The 16-byte
// access is one instruction on NVIDIA; only 8-byte atomicity is relied upon.
struct alignas(16) SscLLLine {
  uint32_t d0, f0, d1, f1;
};

__device__ __forceinline__ void sscStoreLL(SscLLLine* p, uint32_t d0, uint32_t d1, uint32_t flag) {
#if defined(SSC_GPU_IS_HIP)
  uint64_t* q = reinterpret_cast<uint64_t*>(p);
  __hip_atomic_store(q, (uint64_t(flag) << 32) | d0, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);
  __hip_atomic_store(q + 1, (uint64_t(flag) << 32) | d1, __ATOMIC_RELAXED,
                     __HIP_MEMORY_SCOPE_SYSTEM);
#else
  asm volatile("st.volatile.global.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(d0), "r"(flag),
               "r"(d1), "r"(flag)
               : "memory");
#endif
}

__device__ __forceinline__ SscLLLine sscLoadLL(const SscLLLine* p) {
  SscLLLine v;
#if defined(SSC_GPU_IS_HIP)
  const uint64_t* q = reinterpret_cast<const uint64_t*>(p);
  const uint64_t a = __hip_atomic_load(q, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);
  const uint64_t b = __hip_atomic_load(q + 1, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);
  v.d0 = static_cast<uint32_t>(a), v.f0 = static_cast<uint32_t>(a >> 32);
  v.d1 = static_cast<uint32_t>(b), v.f1 = static_cast<uint32_t>(b >> 32);
#else
  asm volatile("ld.volatile.global.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.d0), "=r"(v.f0), "=r"(v.d1), "=r"(v.f1)
               : "l"(p)
               : "memory");
#endif
  return v;
}
