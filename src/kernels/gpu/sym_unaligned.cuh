// SPDX-License-Identifier: MIT
// The bulk protocol for plans whose pointers disagree at 16 bytes (symVectorAligned false in
// sym_kernel.h): an all-gather or reduce-scatter whose per-rank block is not a multiple of 16
// bytes reads or writes some block at another 16-byte misalignment than its partner. The bulk
// kernels (sym_bulk.cuh) then fall to element-by-element loops, measured at 17-31 % of the
// roofline at K = 3 and 5 on the H200. Here every destination vector is a
// whole aligned 16-byte store and every source is read as aligned 16-byte vectors, two of them
// funnel-shifted into the bytes the destination needs, so the loads stay as wide as in the
// aligned kernels.
//
// A kernel of its own, chosen on the host: narrower loops inlined into the bulk kernels raised
// their registers (ptxas: the reduction kernels from 60-96 to 115-128, the all-plans kernel
// spilling 2.8 KB) and cost aligned calls 10-25 % on the H200, __noinline__ as much. Device
// code, included only by sym_launch.cuh.
#pragma once

#include <cstdint>

#include "src/platform/gpu_runtime.h"
#include "src/kernels/gpu/device_common.h"
#include "src/kernels/gpu/sym_barrier.cuh"
#include "src/kernels/gpu/sym_bulk.cuh"
#include "src/kernels/gpu/sym_kernel.h"
#include "src/kernels/gpu/sym_ops.cuh"

namespace ssc::gpu {
namespace {

// Bytes [s, s + 16) of the 32 bytes lo, hi (little-endian), 0 < s < 16.
__device__ __forceinline__ uint4 funnel16(uint4 lo, uint4 hi, uint32_t s) {
  const uint64_t w0 = lo.x | static_cast<uint64_t>(lo.y) << 32,
                 w1 = lo.z | static_cast<uint64_t>(lo.w) << 32;
  const uint64_t w2 = hi.x | static_cast<uint64_t>(hi.y) << 32,
                 w3 = hi.z | static_cast<uint64_t>(hi.w) << 32;
  const bool up = s >= 8;  // the first word of the result starts in w1
  const uint64_t a0 = up ? w1 : w0, a1 = up ? w2 : w1, a2 = up ? w3 : w2;
  const uint32_t r = (s & 7u) * 8u;
  const uint64_t r0 = r == 0 ? a0 : (a0 >> r) | (a1 << (64u - r));
  const uint64_t r1 = r == 0 ? a1 : (a1 >> r) | (a2 << (64u - r));
  return make_uint4(static_cast<uint32_t>(r0), static_cast<uint32_t>(r0 >> 32),
                    static_cast<uint32_t>(r1), static_cast<uint32_t>(r1 >> 32));
}

// A source read as aligned vectors: vector i of the data starting at byte address p is bytes
// [16 i, 16 i + 16) from p, i.e. base[i] and base[i + 1] funnel-shifted by `shift`. The second
// load of the last vector reads only bytes of the aligned 16-byte unit that holds the data's last
// byte, so it never leaves the buffer's last such unit.
struct ShiftedSrc {
  const uint4* base;
  uint32_t shift;
};
__device__ __forceinline__ ShiftedSrc shiftedSrc(const void* p) {
  const uintptr_t u = reinterpret_cast<uintptr_t>(p);
  return {reinterpret_cast<const uint4*>(u & ~uintptr_t{15}), static_cast<uint32_t>(u & 15u)};
}
__device__ __forceinline__ uint4 loadShifted(const ShiftedSrc& s, uint64_t i) {
  const uint4 lo = sscLoadCg(s.base + i);
  if (s.shift == 0) return lo;
  return funnel16(lo, sscLoadCg(s.base + i + 1), s.shift);
}

// SymRunner's pointers and element loops (sym_bulk.cuh), with data paths of its own: SymRunner
// itself is left exactly as it is, since any change to it changes how its loops are compiled.
template <class Tr, int kKind>
struct SymShiftedRunner : SymRunner<Tr, kKind, 0> {
  using Base = SymRunner<Tr, kKind, 0>;
  using S = typename Base::S;
  using C = typename Base::C;
  using Vec = typename Base::Vec;
  using Base::a;
  using Base::gthreads;
  using Base::gtid;
  using Base::headOf;
  using Base::localPtr;
  using Base::mis;
  using Base::ops;
  using Base::peerPtr;
  static constexpr int kPerVec = Base::kPerVec;
  static constexpr int kReduceUnroll = 2;  // vectors per thread and source in flight
  static constexpr int kCopyUnroll = 4;

  __device__ explicit SymShiftedRunner(const SymArgs& args) : Base(args) {}

  // As SymRunner::reduce (sym_bulk.cuh), sources at any misalignment.
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
    if (s.recvPeer >= 0 && !pre && !doPost) {  // one source, nothing to compute: a copy
      copyRange(peerPtr(s.srcBuf, s.recvPeer, s.srcOff), dst, ndst, count);
      return;
    }
    const int src0 = s.recvPeer >= 0 ? s.recvPeer : 0;
    const int nsrc = s.recvPeer >= 0 ? 1 : n;
    const uint32_t m = mis(dst(0));
    bool same = true;
    for (int k = 1; k < ndst; ++k) same &= mis(dst(k)) == m;
    const uint64_t head = headOf(m, same, count);
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
    for (uint64_t v0 = gtid; v0 < nvec; v0 += gthreads * kReduceUnroll) {
      C acc[kReduceUnroll][kPerVec] = {};
#pragma unroll 2
      for (int q = src0; q < src0 + nsrc; ++q) {
        const ShiftedSrc src = shiftedSrc(peerPtr(s.srcBuf, q, s.srcOff + head));
        Vec x[kReduceUnroll];
#pragma unroll
        for (int u = 0; u < kReduceUnroll; ++u) {
          const uint64_t i = v0 + u * gthreads;
          if (i < nvec) x[u].u = loadShifted(src, i);
        }
#pragma unroll
        for (int u = 0; u < kReduceUnroll; ++u)
#pragma unroll
          for (int e = 0; e < kPerVec; ++e)
            acc[u][e] = ops.combine(acc[u][e], ops.in(x[u].e[e], pre), q == src0);
      }
#pragma unroll
      for (int u = 0; u < kReduceUnroll; ++u) {
        const uint64_t i = v0 + u * gthreads;
        if (i >= nvec) break;
        Vec r;
#pragma unroll
        for (int e = 0; e < kPerVec; ++e) r.e[e] = ops.out(acc[u][e], doPost);
        for (int k = 0; k < ndst; ++k) reinterpret_cast<uint4*>(dst(k) + head)[i] = r.u;
      }
    }
    scalar(head + nvec * kPerVec, count);
  }

  struct OneDst {
    S* d;
    __device__ S* operator()(int) const { return d; }
  };

  // dstAt(k)[i] = src[i] for k < ndst, src at any misalignment; destinations that disagree with
  // the first are copied one at a time.
  template <class DstAt>
  __device__ void copyRange(const S* src, const DstAt& dstAt, int ndst, uint64_t count) const {
    if (count == 0) return;
    const uint32_t m = mis(dstAt(0));
    bool same = true;
    for (int k = 1; k < ndst; ++k) same &= mis(dstAt(k)) == m;
    if (same) {
      copyTo(src, dstAt, ndst, count, m);
      return;
    }
    for (int k = 0; k < ndst; ++k) copyTo(src, OneDst{dstAt(k)}, 1, count, mis(dstAt(k)));
  }

  // copyRange for destinations that share the misalignment m.
  template <class DstAt>
  __device__ void copyTo(const S* src, const DstAt& dstAt, int ndst, uint64_t count,
                         uint32_t m) const {
    const uint64_t head = headOf(m, true, count);
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
    const ShiftedSrc vsrc = shiftedSrc(src + head);
    for (uint64_t v0 = gtid; v0 < nvec; v0 += gthreads * kCopyUnroll) {
      uint4 x[kCopyUnroll];
#pragma unroll
      for (int u = 0; u < kCopyUnroll; ++u) {
        const uint64_t i = v0 + u * gthreads;
        if (i < nvec) x[u] = loadShifted(vsrc, i);
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

  __device__ void push(const DevStep& s) const {
    copyRange(
        localPtr(s.srcBuf, s.srcOff), [&](int k) { return peerPtr(s.dstBuf, k, s.dstOff); },
        a.nranks, s.count);
  }

  __device__ void gather(const DevStep& s) const {
    const int n = a.nranks;
    for (int j = 0; j < n; ++j) {
      const int q = (a.rank + j) % n;
      S* d = localPtr(s.dstBuf, s.dstOff + static_cast<uint64_t>(q) * s.count);
      copyRange(peerPtr(s.srcBuf, q, s.srcOff), OneDst{d}, 1, s.count);
    }
  }
};

// Any symmetric plan whose steps' pointers disagree at 16 bytes: the plan loop of symKernel's
// kAnyDataOp instantiation, with the shifted data paths. Launched with the block size of the
// kernel it replaces (512 threads, or the push kernel's 256).
template <class Tr, int kKind>
__global__ void __launch_bounds__(kSymThreads)
    symUnalignedKernel(const SSC_GRID_CONSTANT SymArgs a) {
  const KernelClock<> clock(a.timing);  // a traced call's start and end stamps
  const SymShiftedRunner<Tr, kKind> r(a);
  uint64_t epoch = barrierBase(a);
  for (int i = 0; i < a.nsteps; ++i) {
    const DevStep& s = a.steps[i];
    switch (s.op) {
      case kOpBarrier:
        if (i > 0 && i + 1 < a.nsteps && !gridSync(a)) return;
        if (!peerBarrier(a, ++epoch)) return;
        break;
      case kOpPeerReduce: r.reduce(s, false); break;
      case kOpPeerReduceBcast: r.reduce(s, true); break;
      case kOpPeerPush: r.push(s); break;
      case kOpPeerGather: r.gather(s); break;
      default: break;
    }
  }
}

}  // namespace
}  // namespace ssc::gpu
