// SPDX-License-Identifier: MIT
// The bulk protocol: peer loads (or stores) of 16-byte vectors straight from/to the peers' mapped
// buffers between barriers (kPeerReduce, kPeerReduceBcast, kPeerPush, kPeerGather, kPeerSwap).
// Device code of the symmetric executor, included only by sym_kernel.cu (hence the unnamed
// namespace: one copy of each function per launch file).
#pragma once

#include <cstdint>

#include "src/platform/gpu_runtime.h"
#include "src/kernels/gpu/device_common.h"
#include "src/kernels/gpu/sym_kernel.h"
#include "src/kernels/gpu/sym_barrier.cuh"
#include "src/kernels/gpu/sym_ops.cuh"

namespace ssc::gpu {
namespace {

// kPeers: 0 for the instantiation that serves any number of ranks; 4 or 2 for the ones that
// serve at most that many (launchSymKernel picks), whose vector loops keep more loads in flight
// per peer (see reduceFew()).
template <class Tr, int kKind, int kPeers>
struct SymRunner {
  using Ops = SymOps<Tr, kKind>;
  using S = typename Ops::S;
  using C = typename Ops::C;
  using Vec = typename Ops::Vec;
  static constexpr int kPerVec = Ops::kPerVec;

  const SymArgs& a;
  Ops ops;
  uint64_t gtid, gthreads;

  __device__ SymRunner(const SymArgs& args)
      : a(args),
        ops(args.reduce),
        gtid(static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x),
        gthreads(static_cast<uint64_t>(gridDim.x) * blockDim.x) {}

  __device__ __forceinline__ S* peerPtr(uint16_t buf, int q, uint64_t off) const {
    return static_cast<S*>(a.peer[buf][q]) + off;
  }
  __device__ __forceinline__ S* localPtr(uint16_t buf, uint64_t off) const {
    return static_cast<S*>(a.local[buf]) + off;
  }
  static __device__ __forceinline__ uint32_t mis(const void* p) {
    return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(p) & 15u);
  }
  // Elements before the first 16-byte boundary when every pointer shares one misalignment
  // (buffers at the same offset in 16-byte-aligned allocations always do); ~0 when they differ.
  __device__ uint64_t headOf(uint32_t m, bool same, uint64_t count) const {
    if (!same || m % sizeof(S) != 0) return ~0ull;
    const uint64_t h = ((16u - m) & 15u) / sizeof(S);
    return h < count ? h : count;
  }

  // kPeerReduce (bcast = false) and kPeerReduceBcast (bcast = true). Sources: every rank, or
  // recvPeer alone; destination: this rank's dst, dst@sendPeer, or (bcast) every rank's dst.
  __device__ void reduce(const DevStep& s, bool bcast) const {
    const int n = a.nranks;
    const uint64_t count = s.count;
    if (count == 0) return;
    const bool pre = (s.flags & kPreOpFlag) && ops.scale;
    const bool doPost = (s.flags & kPostOpFlag) && ops.post.divisor != 0;
    const int ndst = bcast ? n : 1;
    const auto dst = [&](int k) {
      return bcast             ? peerPtr(s.dstBuf, k, s.dstOff)
             : s.sendPeer >= 0 ? peerPtr(s.dstBuf, s.sendPeer, s.dstOff)
                               : localPtr(s.dstBuf, s.dstOff);
    };
    // One source with nothing to compute (broadcast): a plain copy, more loads in flight.
    if (s.recvPeer >= 0 && !pre && !doPost) {
      copyRange(peerPtr(s.srcBuf, s.recvPeer, s.srcOff), dst, ndst, count);
      return;
    }
    const int src0 = s.recvPeer >= 0 ? s.recvPeer : 0;
    const int nsrc = s.recvPeer >= 0 ? 1 : n;
    const uint32_t m = mis(dst(0));
    bool same = true;
    for (int q = src0; q < src0 + nsrc; ++q) same &= mis(peerPtr(s.srcBuf, q, s.srcOff)) == m;
    for (int k = 1; k < ndst; ++k) same &= mis(dst(k)) == m;
    uint64_t head = headOf(m, same, count);

    const auto scalar = [&](uint64_t lo, uint64_t hi) {
      for (uint64_t i = lo + gtid; i < hi; i += gthreads) {
        C acc{};
        for (int q = src0; q < src0 + nsrc; ++q) {
          const S v = *reinterpret_cast<const volatile S*>(peerPtr(s.srcBuf, q, s.srcOff) + i);
          acc = ops.combine(acc, ops.in(v, pre), q == src0);
        }
        const S r = ops.out(acc, doPost);
        for (int k = 0; k < ndst; ++k) dst(k)[i] = r;
      }
    };
    if (head == ~0ull) {
      scalar(0, count);
      return;
    }
    scalar(0, head);
    const uint64_t nvec = (count - head) / kPerVec;
    // Several 16-byte loads in flight per thread before any is used: 8 peers at once (n > 8 in
    // groups of 8, carrying the accumulator), or 2 peers x 2 vectors; the few-rank kernels in
    // reduceFew. They fit the 128 registers of a 512-thread block (ptxas -v) but for a few
    // bytes spilled where the element work is heaviest (fp8 min/max at 4 ranks: 8-32 bytes).
    if constexpr (kPeers != 0) {
      reduceFew(s, head, nvec, pre, doPost, dst, ndst, src0, nsrc);
      scalar(head + nvec * kPerVec, count);
      return;
    }
    if constexpr (sizeof(S) >= 4) {
      if (nsrc <= 2) {
        reduceVec<2, 2>(s, head, nvec, pre, doPost, dst, ndst, src0, nsrc);
        scalar(head + nvec * kPerVec, count);
        return;
      }
    }
    if (nsrc <= 8)
      reduceVec<8, 1>(s, head, nvec, pre, doPost, dst, ndst, src0, nsrc);
    else
      reduceGroups<8, 1>(s, head, nvec, pre, doPost, dst, ndst, src0, nsrc);
    scalar(head + nvec * kPerVec, count);
  }

  // At most kPeers ranks: 4 loads in flight per thread (2 peers x 2 vectors, 4 x 1). The H200
  // (perf/bulk_ab.cu) ran this loop's pattern at K = 2 and 4 in
  // 203 / 333 us (reduce-scatter, 256 MiB) with 4 loads against 220 / 355 us with 8, and
  // reduce + broadcast in 275 / 602 us against 324 / 663.
  template <class Dst>
  __device__ __forceinline__ void reduceFew(const DevStep& s, uint64_t head, uint64_t nvec,
                                            bool pre, bool doPost, const Dst& dst, int ndst,
                                            int src0, int nsrc) const {
    // 1-byte types widen 16 values per vector: one vector per peer (2 x 2 spilled fp8 min and
    // max, ptxas -v).
    if constexpr (kPeers == 2 && sizeof(S) > 1)
      reduceVec<2, 2>(s, head, nvec, pre, doPost, dst, ndst, src0, nsrc);
    else
      reduceVec<kPeers, 1>(s, head, nvec, pre, doPost, dst, ndst, src0, nsrc);
  }

  // Sources are ranks src0 .. src0 + n - 1, n <= kG (more: reduceGroups): one pass, kG x kU
  // loads in flight, the first source's value starting the sum.
  template <int kG, int kU, class Dst>
  __device__ __forceinline__ void reduceVec(const DevStep& s, uint64_t head, uint64_t nvec,
                                            bool pre, bool doPost, const Dst& dst, int ndst,
                                            int src0, int n) const {
    // The few-rank kernels keep their sources' addresses in registers; 8 of them spilled the
    // all-sizes kernel (ptxas -v), which reads them from the parameter block in the loop.
    constexpr bool kHoist = kG <= 4;
    const uint4* src[kHoist ? kG : 1];
    const auto srcOf = [&](int j) {
      return reinterpret_cast<const uint4*>(peerPtr(s.srcBuf, src0 + j, s.srcOff + head));
    };
    if constexpr (kHoist) {
#pragma unroll
      for (int j = 0; j < kG; ++j) src[j] = srcOf(j < n ? j : 0);
    }
    for (uint64_t v0 = gtid; v0 < nvec; v0 += gthreads * kU) {
      Vec x[kG][kU];
#pragma unroll
      for (int j = 0; j < kG; ++j) {
        if (j < n) {
          const uint4* p;
          if constexpr (kHoist)
            p = src[j];
          else
            p = srcOf(j);
#pragma unroll
          for (int u = 0; u < kU; ++u) {
            const uint64_t i = v0 + u * gthreads;
            if (i < nvec) x[j][u].u = sscLoadCg(p + i);
          }
        }
      }
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const uint64_t i = v0 + u * gthreads;
        if (i >= nvec) break;
        C acc[kPerVec];
#pragma unroll
        for (int e = 0; e < kPerVec; ++e) acc[e] = ops.in(x[0][u].e[e], pre);
#pragma unroll
        for (int j = 1; j < kG; ++j) {
          if (j < n) {
#pragma unroll
            for (int e = 0; e < kPerVec; ++e)
              acc[e] = ops.combine(acc[e], ops.in(x[j][u].e[e], pre), false);
          }
        }
        Vec r;
#pragma unroll
        for (int e = 0; e < kPerVec; ++e) r.e[e] = ops.out(acc[e], doPost);
        for (int k = 0; k < ndst; ++k) reinterpret_cast<uint4*>(dst(k) + head)[i] = r.u;
      }
    }
  }

  // More than kG sources: groups of kG, the sums carried from group to group.
  template <int kG, int kU, class Dst>
  __device__ void reduceGroups(const DevStep& s, uint64_t head, uint64_t nvec, bool pre,
                               bool doPost, const Dst& dst, int ndst, int src0, int n) const {
    for (uint64_t v0 = gtid; v0 < nvec; v0 += gthreads * kU) {
      C acc[kU][kPerVec] = {};
      for (int g = 0; g < n; g += kG) {
        Vec x[kG][kU];
#pragma unroll
        for (int j = 0; j < kG; ++j) {
          if (g + j < n) {
            const uint4* p =
                reinterpret_cast<const uint4*>(peerPtr(s.srcBuf, src0 + g + j, s.srcOff + head));
#pragma unroll
            for (int u = 0; u < kU; ++u) {
              const uint64_t i = v0 + u * gthreads;
              if (i < nvec) x[j][u].u = sscLoadCg(p + i);
            }
          }
        }
#pragma unroll
        for (int j = 0; j < kG; ++j) {
          if (g + j < n) {
#pragma unroll
            for (int u = 0; u < kU; ++u)
#pragma unroll
              for (int e = 0; e < kPerVec; ++e)
                acc[u][e] = ops.combine(acc[u][e], ops.in(x[j][u].e[e], pre), g + j == 0);
          }
        }
      }
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const uint64_t i = v0 + u * gthreads;
        if (i >= nvec) break;
        Vec r;
#pragma unroll
        for (int e = 0; e < kPerVec; ++e) r.e[e] = ops.out(acc[u][e], doPost);
        for (int k = 0; k < ndst; ++k) reinterpret_cast<uint4*>(dst(k) + head)[i] = r.u;
      }
    }
  }

  // dstAt(k)[i] = src[i] for k < ndst: 16-byte vectors, kCopyUnroll loads in flight per thread
  // before any store.
  template <class DstAt>
  __device__ void copyRange(const S* src, const DstAt& dstAt, int ndst, uint64_t count) const {
    if (count == 0) return;
    const uint32_t m = mis(src);
    bool same = true;
    for (int k = 0; k < ndst; ++k) same &= mis(dstAt(k)) == m;
    const uint64_t head = headOf(m, same, count);
    const auto scalar = [&](uint64_t lo, uint64_t hi) {
      for (uint64_t i = lo + gtid; i < hi; i += gthreads) {
        const S v = *reinterpret_cast<const volatile S*>(src + i);
        for (int k = 0; k < ndst; ++k) dstAt(k)[i] = v;
      }
    };
    if (head == ~0ull) {
      scalar(0, count);
      return;
    }
    scalar(0, head);
    const uint64_t nvec = (count - head) / kPerVec;
    const uint4* vsrc = reinterpret_cast<const uint4*>(src + head);
    // 4 vectors in flight per thread. 8 for at most 4 ranks was tried: all-gather at K = 4 went
    // from 76-79 % of the copy roofline to 72-73 % (H200, nccl-tests, 256 MiB - 1 GiB).
    constexpr int kCopyUnroll = 4;
    for (uint64_t v0 = gtid; v0 < nvec; v0 += gthreads * kCopyUnroll) {
      uint4 x[kCopyUnroll];
#pragma unroll
      for (int u = 0; u < kCopyUnroll; ++u) {
        const uint64_t i = v0 + u * gthreads;
        if (i < nvec) x[u] = sscLoadCg(vsrc + i);
      }
      for (int k = 0; k < ndst; ++k) {
        uint4* d = reinterpret_cast<uint4*>(dstAt(k) + head);
#pragma unroll
        for (int u = 0; u < kCopyUnroll; ++u) {
          const uint64_t i = v0 + u * gthreads;
          if (i < nvec) d[i] = x[u];
        }
      }
    }
    scalar(head + nvec * kPerVec, count);
  }

  // kPeerPush: this rank's src into every rank's dst.
  __device__ void push(const DevStep& s) const {
    copyRange(
        localPtr(s.srcBuf, s.srcOff), [&](int k) { return peerPtr(s.dstBuf, k, s.dstOff); },
        a.nranks, s.count);
  }

  // kPeerGather: block q of this rank's dst from src@q. Each rank starts at its own neighbour,
  // so the ranks do not all read one peer's memory at the same time.
  __device__ void gather(const DevStep& s) const {
    const int n = a.nranks;
    for (int j = 0; j < n; ++j) {
      const int q = (a.rank + j) % n;
      S* d = localPtr(s.dstBuf, s.dstOff + static_cast<uint64_t>(q) * s.count);
      copyRange(
          peerPtr(s.srcBuf, q, s.srcOff), [d](int) { return d; }, 1, s.count);
    }
  }

  // x[i] <-> y[i] for i < count: both vectors of a pair loaded before either is stored, so the
  // registers are the only scratch. 16-byte vectors where x and y share one misalignment,
  // element by element otherwise (symVectorAligned sends no swap plan to the unaligned kernel).
  __device__ void swapRange(S* x, S* y, uint64_t count) const {
    if (count == 0) return;
    const uint32_t m = mis(x);
    const uint64_t head = headOf(m, mis(y) == m, count);
    const auto scalar = [&](uint64_t lo, uint64_t hi) {
      for (uint64_t i = lo + gtid; i < hi; i += gthreads) {
        // The peer's element past the L1, as copyRange reads its sources.
        const S u = x[i], v = *reinterpret_cast<const volatile S*>(y + i);
        x[i] = v;
        y[i] = u;
      }
    };
    if (head == ~0ull) {
      scalar(0, count);
      return;
    }
    scalar(0, head);
    const uint64_t nvec = (count - head) / kPerVec;
    uint4* vx = reinterpret_cast<uint4*>(x + head);
    uint4* vy = reinterpret_cast<uint4*>(y + head);
    constexpr int kSwapUnroll = 2;  // 4 loads in flight per thread, as copyRange's 4
    for (uint64_t v0 = gtid; v0 < nvec; v0 += gthreads * kSwapUnroll) {
      uint4 bx[kSwapUnroll], by[kSwapUnroll];
#pragma unroll
      for (int u = 0; u < kSwapUnroll; ++u) {
        const uint64_t i = v0 + u * gthreads;
        if (i < nvec) {
          bx[u] = sscLoadCg(vx + i);
          by[u] = sscLoadCg(vy + i);
        }
      }
#pragma unroll
      for (int u = 0; u < kSwapUnroll; ++u) {
        const uint64_t i = v0 + u * gthreads;
        if (i < nvec) {
          vx[i] = by[u];
          vy[i] = bx[u];
        }
      }
    }
    scalar(head + nvec * kPerVec, count);
  }

  // kPeerSwap: for every peer q (starting at this rank's neighbour, as gather), this rank's half
  // of the pair of blocks (its block q, q's block `rank`). The peer swaps the other half, so no
  // element is touched by two ranks between the barriers.
  __device__ void swap(const DevStep& s) const {
    const int n = a.nranks;
    const uint64_t count = s.count, mid = count / 2;
    for (int j = 1; j < n; ++j) {
      const int q = (a.rank + j) % n;
      const uint64_t lo = a.rank < q ? 0 : mid, hi = a.rank < q ? mid : count;
      swapRange(localPtr(s.srcBuf, s.srcOff + static_cast<uint64_t>(q) * count + lo),
                peerPtr(s.srcBuf, q, s.srcOff + static_cast<uint64_t>(a.rank) * count + lo),
                hi - lo);
    }
  }
};

// symKernel<..., kAnyDataOp> runs any plan (a loop over its steps, a run-time switch over every
// data step kind); symKernel<..., op> the plans [barrier, op, barrier] of one reduction op
// (symReductionOp, sym_kernel.h). The H200 ran the same reduction loop up to a third slower
// inside the all-plans kernel than in a kernel of its own that reads its one step at a fixed
// place in the parameters (reduce-scatter at K = 2, 256 MiB: 292-329 vs 216-229 us;
// perf/bulk_ab.cu): what the compiler makes of the loop depends on the code around it. Copies
// (all-gather's push, all-to-all's gather) ran as fast or faster in the all-plans kernel and
// stay there (but for symPushKernel below).

template <class Tr, int kKind, int kPeers>
__device__ __forceinline__ void runDataStep(const SymRunner<Tr, kKind, kPeers>& r,
                                            const DevStep& s) {
  switch (s.op) {
    case kOpPeerReduce: r.reduce(s, false); break;
    case kOpPeerReduceBcast: r.reduce(s, true); break;
    case kOpPeerPush: r.push(s); break;
    case kOpPeerGather: r.gather(s); break;
    case kOpPeerSwap: r.swap(s); break;
    default: break;  // the host accepts only these ops
  }
}

template <class Tr, int kKind, int kPeers, int kOp>
__global__ void __launch_bounds__(kSymThreads) symKernel(const SSC_GRID_CONSTANT SymArgs a) {
  const KernelClock<> clock(a.timing);  // a traced call's start and end stamps
  const SymRunner<Tr, kKind, kPeers> r(a);
  uint64_t epoch = barrierBase(a);  // numbered on the device (sym_kernel.h)
  if constexpr (kOp != kAnyDataOp) {
    static_assert(kOp == kOpPeerReduce || kOp == kOpPeerReduceBcast);
    if (!peerBarrier(a, ++epoch)) return;
    r.reduce(a.steps[1], kOp == kOpPeerReduceBcast);
    peerBarrier(a, ++epoch);
  } else {
    for (int i = 0; i < a.nsteps; ++i) {
      const DevStep& s = a.steps[i];
      if (s.op == kOpBarrier) {
        if (i > 0 && i + 1 < a.nsteps && !gridSync(a)) return;
        if (!peerBarrier(a, ++epoch)) return;
      } else {
        runDataStep(r, s);
      }
    }
  }
}

// All-gather's push on the wide grid (sym_kernel.h, symUsesPushKernel): 256-thread blocks, several
// per SM, the plan's one step at a fixed place.
template <class Tr, bool kTimed = false>
__global__ void __launch_bounds__(kSymPushThreads, kSymPushBlocksPerSM)
    symPushKernel(const SSC_GRID_CONSTANT SymArgs a) {
  // Traced calls run an instantiation of their own (kTimed): at its 32 registers the kernel
  // spills with the clock's instructions in it (ptxas -v: 104 bytes of stores), so untraced
  // calls keep the code they had.
  const KernelClock<kTimed> clock(a.timing);
  const SymRunner<Tr, 0, 0> r(a);
  uint64_t epoch = barrierBase(a);
  if (!peerBarrier(a, ++epoch)) return;
  r.push(a.steps[1]);
  peerBarrier(a, ++epoch);
}

}  // namespace
}  // namespace ssc::gpu
