// SPDX-License-Identifier: MIT
// The data loop of perf/bulk_shapes.cu, shared with perf/bulk_ab.cu (which runs it next to the
// library's kernel): float sums of nsrc sources into ndst destinations, 16-byte vectors, no
// library code. Device code for the standalone K-rank benchmarks.
#pragma once

#include <cstdint>

#include "src/platform/gpu_runtime.h"

namespace bulk {

constexpr int kMaxPeers = 8;

struct Move {
  const float* src[kMaxPeers];  // nsrc sources (slice start), summed
  float* dst[kMaxPeers];        // ndst destinations (slice start)
  int nsrc, ndst;
  uint64_t nvec;  // 16-byte vectors of the slice
  uint64_t rot;   // grid-stride only: start at vector rot, wrap to [0, rot) after
};

// The zero-copy patterns on this rank's slice [off, off + slice) (floats) of every rank's
// buffers, as bulk_shapes and bulk_ab run them. ins / outs: every rank's buffers, mapped here.
enum class Pattern { kReduceScatter, kAllReduce, kAllGather };
inline Move peerMove(Pattern p, const float* in, float* out, void* const* ins, void* const* outs,
                     int nranks, uint64_t off, uint64_t slice) {
  Move m{};
  m.nvec = slice * sizeof(float) / 16;
  if (p == Pattern::kAllGather) {  // push: this rank's slice into every output
    m.nsrc = 1;
    m.src[0] = in + off;
    m.ndst = nranks;
  } else {  // every rank's slice summed, into this rank's output (rs) or every output (ar)
    m.nsrc = nranks;
    m.ndst = p == Pattern::kAllReduce ? nranks : 1;
    for (int q = 0; q < nranks; ++q) m.src[q] = static_cast<const float*>(ins[q]) + off;
  }
  for (int k = 0; k < m.ndst; ++k)
    m.dst[k] = (m.ndst == 1 ? out : static_cast<float*>(outs[k])) + off;
  return m;
}

template <int kStore>
__device__ __forceinline__ void store(uint4* p, uint4 v) {
  if constexpr (kStore == 1) {  // streaming (evict first)
#if defined(SSC_GPU_IS_HIP)
    unsigned* d =
        reinterpret_cast<unsigned*>(p);  // the builtin takes scalars, not HIP's vector class
    __builtin_nontemporal_store(v.x, d);
    __builtin_nontemporal_store(v.y, d + 1);
    __builtin_nontemporal_store(v.z, d + 2);
    __builtin_nontemporal_store(v.w, d + 3);
#else
    __stcs(p, v);
#endif
  } else {
    *p = v;
  }
}

__device__ __forceinline__ uint4 add(uint4 a, uint4 b) {
  float4 x = *reinterpret_cast<float4*>(&a), y = *reinterpret_cast<float4*>(&b);
  x.x += y.x;
  x.y += y.y;
  x.z += y.z;
  x.w += y.w;
  return *reinterpret_cast<uint4*>(&x);
}

// The plain loop's element work: the float sum of the nsrc loaded vectors x[0..nsrc)[u].
struct SumFloats {
  template <int kSrc, int kU>
  __device__ __forceinline__ uint4 operator()(const uint4 (&x)[kSrc][kU], int u, int nsrc) const {
    uint4 r = x[0][u];
#pragma unroll
    for (int j = 1; j < kSrc; ++j)
      if (j < nsrc) r = add(r, x[j][u]);
    return r;
  }
};

// kSrc: sources unrolled (nsrc <= kSrc); kU: vectors per source per iteration, so kSrc x kU
// 16-byte loads are in flight per thread before the first is used. kContig: block b takes one
// contiguous range instead of a grid stride; kStore 1: streaming stores. `combine` turns the
// loaded vectors into the one stored (SumFloats; perf/bulk_ab.cu passes the library's ops).
template <int kThreads, int kSrc, int kU, bool kContig, int kStore, class Combine = SumFloats>
__device__ __forceinline__ void moveRange(const Move& m, uint64_t lo, uint64_t hi,
                                          const Combine& combine = {}) {
  uint64_t begin, end, stride;
  if constexpr (kContig) {  // block b: one contiguous range
    const uint64_t per = (hi - lo + gridDim.x - 1) / gridDim.x;
    begin = lo + blockIdx.x * per + threadIdx.x;
    const uint64_t stop = lo + (blockIdx.x + 1) * per;
    end = stop < hi ? stop : hi;
    stride = kThreads;
  } else {
    begin = lo + static_cast<uint64_t>(blockIdx.x) * kThreads + threadIdx.x;
    end = hi;
    stride = static_cast<uint64_t>(gridDim.x) * kThreads;
  }
  for (uint64_t v0 = begin; v0 < end; v0 += stride * kU) {
    uint4 x[kSrc][kU];
#pragma unroll
    for (int j = 0; j < kSrc; ++j)
      if (j < m.nsrc) {
        const uint4* s = reinterpret_cast<const uint4*>(m.src[j]);
#pragma unroll
        for (int u = 0; u < kU; ++u)
          if (v0 + u * stride < end) x[j][u] = sscLoadCg(s + v0 + u * stride);
      }
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      if (v0 + u * stride >= end) break;
      const uint4 r = combine(x, u, m.nsrc);
      for (int k = 0; k < m.ndst; ++k)
        store<kStore>(reinterpret_cast<uint4*>(m.dst[k]) + v0 + u * stride, r);
    }
  }
}

template <int kThreads, int kSrc, int kU, bool kContig, int kStore>
__device__ __forceinline__ void moveBody(const Move& m) {
  if (kContig || m.rot == 0 || m.rot >= m.nvec) {
    moveRange<kThreads, kSrc, kU, kContig, kStore>(m, 0, m.nvec);
    return;
  }
  moveRange<kThreads, kSrc, kU, kContig, kStore>(m, m.rot, m.nvec);
  moveRange<kThreads, kSrc, kU, kContig, kStore>(m, 0, m.rot);
}

// Every element of p[0, n) = v.
__global__ void fillKernel(float* p, uint64_t n, float v) {
  for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<uint64_t>(gridDim.x) * blockDim.x)
    p[i] = v;
}

// Elements of out[lo, hi) that are not what the pattern wants (rank q holds q + 1 everywhere).
__global__ void countWrong(const float* out, uint64_t lo, uint64_t hi, uint64_t slice, int mode,
                           int nranks, unsigned long long* wrong) {
  for (uint64_t i = lo + blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; i < hi;
       i += static_cast<uint64_t>(gridDim.x) * blockDim.x) {
    // rs, ar: the sum of 1 .. K; ag: rank q's value q + 1 in slice q; copy: this rank's value.
    const float want = mode == 3 ? static_cast<float>(i / slice + 1)
                                 : static_cast<float>(nranks * (nranks + 1) / 2);
    if (out[i] != want) atomicAdd(wrong, 1ull);
  }
}

}  // namespace bulk
