// SPDX-License-Identifier: MIT
// The LL protocol's one-shot all-reduce: each rank pushes its input as LL packets (ll_packet.h)
// into every peer's inbox and reduces the packets it receives: no barrier, no peer buffers.
// Device code of the symmetric executor, included only by sym_kernel.cu (hence the unnamed
// namespace: one copy of each function per launch file).
#pragma once

#include <cstdint>

#include "src/platform/gpu_runtime.h"
#include "src/kernels/gpu/device_common.h"
#include "src/kernels/gpu/sym_kernel.h"
#include "src/kernels/gpu/ll_packet.h"
#include "src/kernels/gpu/sym_barrier.cuh"
#include "src/kernels/gpu/sym_ops.cuh"

namespace ssc::gpu {
namespace {

// ---------------------------------------------------------------- LL one-shot all-reduce

// 8 bytes of the input at line l, zero-padded past the end.
__device__ __forceinline__ void loadChunk(const char* src, uint64_t l, uint64_t bytes, uint32_t* d0,
                                          uint32_t* d1) {
  const uint64_t b = l * 8;
  if (b + 8 <= bytes && (reinterpret_cast<uintptr_t>(src) & 7u) == 0) {
    const uint2 v = *reinterpret_cast<const uint2*>(src + b);
    *d0 = v.x, *d1 = v.y;
    return;
  }
  uint32_t w[2] = {0, 0};
  for (uint64_t k = 0; k < 8 && b + k < bytes; ++k)
    w[k / 4] |= static_cast<uint32_t>(static_cast<uint8_t>(src[b + k])) << (8 * (k % 4));
  *d0 = w[0], *d1 = w[1];
}

template <class Tr, int kKind>
__global__ void __launch_bounds__(kLLThreads) llAllReduceKernel(const SSC_GRID_CONSTANT SymArgs a) {
  const KernelClock<> clock(a.timing);  // a traced call's start and end stamps
  using Ops = SymOps<Tr, kKind>;
  using S = typename Ops::S;
  using C = typename Ops::C;
  constexpr int kElems = 8 / sizeof(S);
  union Chunk {
    uint32_t w[2];
    S e[kElems];
  };
  const DevStep& s = a.steps[0];
  const Ops ops(a.reduce);
  const int n = a.nranks, me = a.rank;
  const uint64_t count = s.count, bytes = count * sizeof(S), lines = (bytes + 7) / 8;
  // This launch's round, counted on the device (sym_kernel.h): read by every thread before this
  // block arrives at the end, so the last block advances it only once every block has it.
  uint64_t* roundWord = reinterpret_cast<uint64_t*>(a.ctrl[me] + SymCtrlLayout::kLLRound);
  const uint64_t round = sscLoadVolatile(roundWord);
  const int parity = static_cast<int>(round & 1);
  const uint32_t flag = static_cast<uint32_t>(round);
  const bool pre = (s.flags & kPreOpFlag) && ops.scale;
  const bool doPost = (s.flags & kPostOpFlag) && ops.post.divisor != 0;
  const char* src = static_cast<const char*>(a.local[s.srcBuf]) + s.srcOff * sizeof(S);
  S* dst = static_cast<S*>(a.local[s.dstBuf]) + s.dstOff;
  const ErrorSink err = sinkOf(a);
  const auto inbox = [&](int owner, int sender) {
    return reinterpret_cast<SscLLLine*>(a.ctrl[owner] + SymCtrlLayout::inbox(parity, sender, n));
  };
  const uint64_t gtid = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const uint64_t gthreads = static_cast<uint64_t>(gridDim.x) * blockDim.x;

  // Send: a header naming the call, then every data line, to every peer.
  if (blockIdx.x == 0 && static_cast<int>(threadIdx.x) < n && static_cast<int>(threadIdx.x) != me)
    sscStoreLL(inbox(threadIdx.x, me), a.callHash, static_cast<uint32_t>(count), flag);
  for (uint64_t l = gtid; l < lines; l += gthreads) {
    uint32_t d0, d1;
    loadChunk(src, l, bytes, &d0, &d1);
    for (int q = 0; q < n; ++q)
      if (q != me) sscStoreLL(inbox(q, me) + 1 + l, d0, d1, flag);
  }
  // Headers: a peer that called something else fails the call instead of feeding it wrong data.
  int ok = 1;
  if (blockIdx.x == 0 && static_cast<int>(threadIdx.x) < n && static_cast<int>(threadIdx.x) != me) {
    const int q = threadIdx.x;
    const SscLLLine* h = inbox(me, q);
    SscLLLine v{};
    ok = boundedWait(
        err, a.timeoutTicks, kKernelTimeout,
        [&] {
          v = sscLoadLL(h);
          return v.f0 == flag && v.f1 == flag;
        },
        q, 0);
    if (ok && (v.d0 != a.callHash || v.d1 != static_cast<uint32_t>(count))) {
      recordError(err, kKernelCallMismatch, q, 0, v.d0);
      ok = 0;
    }
  }
  if (!__syncthreads_and(ok)) return;

  // Receive and reduce in rank order.
  for (uint64_t l = gtid; ok && l < lines; l += gthreads) {
    C acc[kElems] = {};
    for (int q = 0; ok && q < n; ++q) {
      Chunk c;
      if (q == me) {
        loadChunk(src, l, bytes, &c.w[0], &c.w[1]);
      } else {
        const SscLLLine* p = inbox(me, q) + 1 + l;
        SscLLLine v{};
        ok = boundedWait(
            err, a.timeoutTicks, kKernelTimeout,
            [&] {
              v = sscLoadLL(p);
              return v.f0 == flag && v.f1 == flag;
            },
            q, 0);
        c.w[0] = v.d0, c.w[1] = v.d1;
      }
#pragma unroll
      for (int e = 0; e < kElems; ++e) acc[e] = ops.combine(acc[e], ops.in(c.e[e], pre), q == 0);
    }
    const uint64_t first = l * kElems;
#pragma unroll
    for (int e = 0; ok && e < kElems; ++e)
      if (first + e < count) dst[first + e] = ops.out(acc[e], doPost);
  }

  // The last block to finish advances the round (after a failure nothing does: the
  // communicator is in error). Every thread reaches this bar.sync: none returned early.
  __shared__ int last;
  if (!__syncthreads_and(ok)) return;
  if (threadIdx.x == 0) {
    __threadfence();
    auto* done = reinterpret_cast<unsigned long long*>(a.ctrl[me] + SymCtrlLayout::kLLDone);
    last = atomicAdd(done, 1ull) + 1 == gridDim.x;
    if (last) atomicExch(done, 0ull);
  }
  __syncthreads();
  if (!last) return;
  if (llClearsAfterRound(round)) {
    // Every block of this rank has read this parity's lines (they arrived above).
    uint64_t* box = reinterpret_cast<uint64_t*>(a.ctrl[me] + SymCtrlLayout::inbox(parity, 0, n));
    const uint64_t words = static_cast<uint64_t>(n) * kLLPeerStride / 8;
    for (uint64_t w = threadIdx.x; w < words; w += blockDim.x) box[w] = 0;
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    __threadfence();
    *reinterpret_cast<volatile uint64_t*>(roundWord) = llNextRound(round);
  }
}

}  // namespace
}  // namespace ssc::gpu
