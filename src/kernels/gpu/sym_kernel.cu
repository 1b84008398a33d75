// The symmetric executor's kernels (protocols in sym_kernel.h). Peer steps:
//   kPeerReduce       dst[i]   = post(op over q = 0..n-1 of pre(src@q[i]))
//   kPeerReduceBcast  dst@q[i] = the same, for every q (this rank computes its slice once)
//   kPeerPush         dst@q[i] = src[i], for every q
// Reductions run in rank order, so every rank (and the host backend) gets the same bits, and
// fp16/bf16/fp8 accumulate in float: each value is widened exactly, pre-scaled in float,
// combined in float, and rounded once at the end (one rounding instead of n - 1). Integers wrap,
// the post-step (integer Avg) divides once.
//
// Data path: every thread of the grid takes 16-byte vectors grid-stride, kU at a time, and loads
// the vectors of kG peers before reducing any of them, so kG * kU loads are in flight per
// thread. Peers' data is read with L2-only loads (.cg): the L1 is not coherent with other
// processes' stores.
#include <cstdint>

#include "src/device/gpu/gpu_runtime.h"
#include "src/kernels/gpu/device_common.h"
#include "src/kernels/gpu/elementwise.h"
#include "src/kernels/gpu/sym_kernel.h"

namespace ssc::gpu {
namespace {

__device__ __forceinline__ ErrorSink sinkOf(const SymArgs& a) {
  return ErrorSink{a.errorDevice, a.errorHost, a.abortHost};
}

__device__ __forceinline__ uint64_t loadAcquire(const uint64_t* p, bool deviceScope) {
  return deviceScope ? sscLoadAcquireGpu(p) : sscLoadAcquireSys(p);
}

__device__ __forceinline__ void storeRelease(uint64_t* p, uint64_t v, bool deviceScope) {
  if (deviceScope) sscStoreReleaseGpu(p, v);
  else sscStoreReleaseSys(p, v);
}

__device__ __forceinline__ SymBarrierSlot* slotOf(const SymArgs& a, int rank, int block) {
  return reinterpret_cast<SymBarrierSlot*>(a.ctrl[rank] + SymCtrlLayout::kBarriers) + block;
}

// All blocks of this launch have finished their earlier steps (middle barriers only). The host
// tracks the counter, so `target` is exact even though launches differ in grid size.
__device__ bool gridSync(const SymArgs& a, uint64_t target) {
  __syncthreads();
  int ok = 1;
  if (threadIdx.x == 0) {
    uint64_t* ctr = reinterpret_cast<uint64_t*>(a.ctrl[a.rank] + SymCtrlLayout::kGridCounter);
    __threadfence();
    atomicAdd(reinterpret_cast<unsigned long long*>(ctr), 1ull);
    ok = boundedWait(sinkOf(a), a.timeoutTicks, kKernelTimeout,
                     [&] { return sscLoadVolatile(ctr) >= target; }, -1, 0);
    __threadfence();
  }
  return __syncthreads_and(ok) != 0;
}

// Block blockIdx.x meets block blockIdx.x of every peer at barrier number `epoch`.
__device__ bool peerBarrier(const SymArgs& a, uint64_t epoch) {
  const bool dev = a.deviceScope != 0;
  // bar.sync first: the release below then covers every thread's earlier stores (cumulativity).
  __syncthreads();
  if (threadIdx.x == 0) {
    SymBarrierSlot* mine = slotOf(a, a.rank, blockIdx.x);
    reinterpret_cast<volatile uint32_t*>(mine->hash)[epoch & 1] = a.callHash;
    storeRelease(&mine->epoch, epoch, dev);
  }
  int ok = 1;
  const int q = static_cast<int>(threadIdx.x);
  if (q < a.nranks && q != a.rank) {  // one thread per peer: all n - 1 polls run at once
    const SymBarrierSlot* ps = slotOf(a, q, blockIdx.x);
    uint64_t seen = 0;
    ok = boundedWait(sinkOf(a), a.timeoutTicks, kKernelTimeout,
                     [&] { return (seen = loadAcquire(&ps->epoch, dev)) >= epoch; }, q,
                     static_cast<int>(blockIdx.x));
    if (ok && seen == epoch) {
      const uint32_t h = reinterpret_cast<const volatile uint32_t*>(ps->hash)[epoch & 1];
      if (h != a.callHash) {
        recordError(sinkOf(a), kKernelCallMismatch, q, static_cast<int>(blockIdx.x), h);
        ok = 0;
      }
    }
  }
  // The acquiring threads' bar.sync makes the peers' released writes visible to the whole block.
  return __syncthreads_and(ok) != 0;
}

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
      if (red.scaleDevice != nullptr) m = static_cast<int64_t>(*static_cast<const S*>(red.scaleDevice));
      imult = static_cast<WrapType<C>>(m);
    } else {
      double m = red.scaleFloat;
      if (red.scaleDevice != nullptr) m = static_cast<double>(Tr::load(*static_cast<const S*>(red.scaleDevice)));
      mult = static_cast<C>(m);
    }
  }

  // One peer's value, widened and pre-scaled (no rounding for narrow floats).
  __device__ __forceinline__ C in(S v, bool pre) const {
    const C c = Tr::load(v);
    if (!pre) return c;
    if constexpr (std::is_integral_v<C>) return static_cast<C>(WrapType<C>(c) * imult);
    else return c * mult;
  }
  __device__ __forceinline__ C combine(C acc, C v, bool first) const {
    return first ? v : combineValues<kKind>(acc, v);
  }
  __device__ __forceinline__ S out(C acc, bool doPost) const {
    const S r = Tr::store(acc);
    return doPost ? post.post(r) : r;
  }
};

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
      : a(args), ops(args.reduce),
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

  // kPeerReduce (bcast = false) and kPeerReduceBcast (bcast = true).
  __device__ void reduce(const DevStep& s, bool bcast) const {
    const int n = a.nranks;
    const uint64_t count = s.count;
    if (count == 0) return;
    const bool pre = (s.flags & kPreOpFlag) && ops.scale;
    const bool doPost = (s.flags & kPostOpFlag) && ops.post.divisor != 0;
    const int ndst = bcast ? n : 1;
    const auto dst = [&](int k) {
      return bcast ? peerPtr(s.dstBuf, k, s.dstOff) : localPtr(s.dstBuf, s.dstOff);
    };
    const uint32_t m = mis(dst(0));
    bool same = true;
    for (int q = 0; q < n; ++q) same &= mis(peerPtr(s.srcBuf, q, s.srcOff)) == m;
    for (int k = 1; k < ndst; ++k) same &= mis(dst(k)) == m;
    uint64_t head = headOf(m, same, count);

    const auto scalar = [&](uint64_t lo, uint64_t hi) {
      for (uint64_t i = lo + gtid; i < hi; i += gthreads) {
        C acc{};
        for (int q = 0; q < n; ++q) {
          const S v = *reinterpret_cast<const volatile S*>(peerPtr(s.srcBuf, q, s.srcOff) + i);
          acc = ops.combine(acc, ops.in(v, pre), q == 0);
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
    // groups of 8, carrying the accumulator), or 2 peers x 2 vectors. Both fit the 128 registers
    // of a 512-thread block without spilling (ptxas -v); a 2 x 4 shape for n <= 2 spilled 1 KiB
    // in this (all-sizes) kernel.
    if constexpr (kPeers != 0) {
      reduceFew(s, head, nvec, pre, doPost, dst, ndst);
      scalar(head + nvec * kPerVec, count);
      return;
    }
    if constexpr (sizeof(S) >= 4) {
      if (n <= 2) {
        reduceVec<2, 2>(s, head, nvec, pre, doPost, dst, ndst);
        scalar(head + nvec * kPerVec, count);
        return;
      }
    }
    reduceVec<8, 1>(s, head, nvec, pre, doPost, dst, ndst);
    scalar(head + nvec * kPerVec, count);
  }

  // At most kPeers ranks: 8 loads in flight where registers allow, as 8 peers x 1 vector gives
  // at 8 ranks. With 4 loads (4 peers x 1, or 2 x 2) the H200 ran all-reduce at 55-59 % of the
  // copy roofline at K = 2 and 4 and reduce-scatter at 40-55 %, against 87-93 % at K = 8. Shapes
  // keep loads (kG x kU x 4 registers) plus accumulators (kU x kPerVec registers, 2 per 8-byte
  // value) at <= 48, what 8 x 1 takes for 1-byte types; one shape per kernel, as two in one
  // spilled (ptxas -v).
  template <class Dst>
  __device__ __forceinline__ void reduceFew(const DevStep& s, uint64_t head, uint64_t nvec, bool pre,
                                            bool doPost, const Dst& dst, int ndst) const {
    constexpr int kAccRegs = kPerVec * static_cast<int>((sizeof(C) + 3) / 4);  // per vector
    if constexpr (kPeers == 2 && 2 * 4 * 4 + 4 * kAccRegs <= 48)
      reduceVec<2, 4>(s, head, nvec, pre, doPost, dst, ndst);
    else if constexpr (4 * 2 * 4 + 2 * kAccRegs <= 48)
      reduceVec<4, 2>(s, head, nvec, pre, doPost, dst, ndst);
    else
      reduceVec<8, 1>(s, head, nvec, pre, doPost, dst, ndst);
  }

  template <int kG, int kU, class Dst>
  __device__ __forceinline__ void reduceVec(const DevStep& s, uint64_t head, uint64_t nvec, bool pre,
                                            bool doPost, const Dst& dst, int ndst) const {
    const int n = a.nranks;
    for (uint64_t v0 = gtid; v0 < nvec; v0 += gthreads * kU) {
      C acc[kU][kPerVec] = {};
      for (int g = 0; g < n; g += kG) {
        Vec x[kG][kU];
#pragma unroll
        for (int j = 0; j < kG; ++j) {
          if (g + j < n) {
            const uint4* p = reinterpret_cast<const uint4*>(peerPtr(s.srcBuf, g + j, s.srcOff + head));
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

  // kPeerPush: this rank's src into every rank's dst.
  __device__ void push(const DevStep& s) const {
    const int n = a.nranks;
    const uint64_t count = s.count;
    if (count == 0) return;
    const S* src = localPtr(s.srcBuf, s.srcOff);
    const uint32_t m = mis(src);
    bool same = true;
    for (int q = 0; q < n; ++q) same &= mis(peerPtr(s.dstBuf, q, s.dstOff)) == m;
    const uint64_t head = headOf(m, same, count);
    const auto scalar = [&](uint64_t lo, uint64_t hi) {
      for (uint64_t i = lo + gtid; i < hi; i += gthreads) {
        const S v = *reinterpret_cast<const volatile S*>(src + i);
        for (int q = 0; q < n; ++q) peerPtr(s.dstBuf, q, s.dstOff)[i] = v;
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
    constexpr int kPushUnroll = 4;
    for (uint64_t v0 = gtid; v0 < nvec; v0 += gthreads * kPushUnroll) {
      uint4 x[kPushUnroll];
#pragma unroll
      for (int u = 0; u < kPushUnroll; ++u) {
        const uint64_t i = v0 + u * gthreads;
        if (i < nvec) x[u] = sscLoadCg(vsrc + i);
      }
      for (int q = 0; q < n; ++q) {
        uint4* d = reinterpret_cast<uint4*>(peerPtr(s.dstBuf, q, s.dstOff + head));
#pragma unroll
        for (int u = 0; u < kPushUnroll; ++u) {
          const uint64_t i = v0 + u * gthreads;
          if (i < nvec) d[i] = x[u];
        }
      }
    }
    scalar(head + nvec * kPerVec, count);
  }
};

template <class Tr, int kKind, int kPeers>
__global__ void __launch_bounds__(kSymThreads) symKernel(const SSC_GRID_CONSTANT SymArgs a) {
  const SymRunner<Tr, kKind, kPeers> r(a);
  uint64_t barriers = 0, gridSyncs = 0;
  for (int i = 0; i < a.nsteps; ++i) {
    const DevStep& s = a.steps[i];
    switch (s.op) {
      case kOpBarrier:
        if (i > 0 && i + 1 < a.nsteps &&
            !gridSync(a, a.gridSyncBase + (++gridSyncs) * gridDim.x))
          return;
        if (!peerBarrier(a, a.epochBase + barriers++)) return;
        break;
      case kOpPeerReduce: r.reduce(s, false); break;
      case kOpPeerReduceBcast: r.reduce(s, true); break;
      case kOpPeerPush: r.push(s); break;
      default: break;  // the host accepts only these ops
    }
  }
}

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
  const int parity = static_cast<int>(a.llRound & 1);
  const uint32_t flag = static_cast<uint32_t>(a.llRound);
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
    ok = boundedWait(err, a.timeoutTicks, kKernelTimeout,
                     [&] { v = sscLoadLL(h); return v.f0 == flag && v.f1 == flag; }, q, 0);
    if (ok && (v.d0 != a.callHash || v.d1 != static_cast<uint32_t>(count))) {
      recordError(err, kKernelCallMismatch, q, 0, v.d0);
      ok = 0;
    }
  }
  if (!__syncthreads_and(ok)) return;

  // Receive and reduce in rank order.
  for (uint64_t l = gtid; l < lines; l += gthreads) {
    C acc[kElems] = {};
    for (int q = 0; q < n; ++q) {
      Chunk c;
      if (q == me) {
        loadChunk(src, l, bytes, &c.w[0], &c.w[1]);
      } else {
        const SscLLLine* p = inbox(me, q) + 1 + l;
        SscLLLine v{};
        if (!boundedWait(err, a.timeoutTicks, kKernelTimeout,
                         [&] { v = sscLoadLL(p); return v.f0 == flag && v.f1 == flag; }, q, 0))
          return;
        c.w[0] = v.d0, c.w[1] = v.d1;
      }
#pragma unroll
      for (int e = 0; e < kElems; ++e) acc[e] = ops.combine(acc[e], ops.in(c.e[e], pre), q == 0);
    }
    const uint64_t first = l * kElems;
#pragma unroll
    for (int e = 0; e < kElems; ++e)
      if (first + e < count) dst[first + e] = ops.out(acc[e], doPost);
  }
}

template <template <class, int> class K, int kThreads, class Tr>
int launchFor(const SymArgs& args, int blocks, hipStream_t stream) {
  const dim3 grid(blocks), block(kThreads);
  switch (args.reduce.kind) {
    case 0: K<Tr, 0>::launch(grid, block, stream, args); break;
    case 1: K<Tr, 1>::launch(grid, block, stream, args); break;
    case 2: K<Tr, 2>::launch(grid, block, stream, args); break;
    default: K<Tr, 3>::launch(grid, block, stream, args); break;
  }
  return static_cast<int>(hipGetLastError());
}

template <class Tr, int kKind>
struct BulkLauncher {
  static void launch(dim3 g, dim3 b, hipStream_t st, const SymArgs& a) {
    // Separate instantiations for few ranks, so their wider loops do not raise the register
    // pressure (and spill) of the one that serves more.
    if (a.nranks <= 2) symKernel<Tr, kKind, 2><<<g, b, 0, st>>>(a);
    else if (a.nranks <= 4) symKernel<Tr, kKind, 4><<<g, b, 0, st>>>(a);
    else symKernel<Tr, kKind, 0><<<g, b, 0, st>>>(a);
  }
};
template <class Tr, int kKind>
struct LLLauncher {
  static void launch(dim3 g, dim3 b, hipStream_t st, const SymArgs& a) {
    llAllReduceKernel<Tr, kKind><<<g, b, 0, st>>>(a);
  }
};

template <template <class, int> class K, int kThreads>
int dispatch(const SymArgs& args, int blocks, void* streamPtr) {
  hipStream_t stream = static_cast<hipStream_t>(streamPtr);
  switch (args.reduce.dtype) {  // sscDataType_t values
    case 0: return launchFor<K, kThreads, NativeTraits<int8_t>>(args, blocks, stream);
    case 1: return launchFor<K, kThreads, NativeTraits<uint8_t>>(args, blocks, stream);
    case 2: return launchFor<K, kThreads, NativeTraits<int32_t>>(args, blocks, stream);
    case 3: return launchFor<K, kThreads, NativeTraits<uint32_t>>(args, blocks, stream);
    case 4: return launchFor<K, kThreads, NativeTraits<int64_t>>(args, blocks, stream);
    case 5: return launchFor<K, kThreads, NativeTraits<uint64_t>>(args, blocks, stream);
    case 6: return launchFor<K, kThreads, HalfTraits>(args, blocks, stream);
    case 7: return launchFor<K, kThreads, NativeTraits<float>>(args, blocks, stream);
    case 8: return launchFor<K, kThreads, NativeTraits<double>>(args, blocks, stream);
    case 9: return launchFor<K, kThreads, Bf16Traits>(args, blocks, stream);
    case 10: return launchFor<K, kThreads, Fp8Traits<conv::Fp8E4M3>>(args, blocks, stream);
    case 11: return launchFor<K, kThreads, Fp8Traits<conv::Fp8E5M2>>(args, blocks, stream);
    default: return -1;
  }
}

}  // namespace

int launchSymKernel(const SymArgs& args, int blocks, void* stream) {
  return dispatch<BulkLauncher, kSymThreads>(args, blocks, stream);
}

int launchLLAllReduce(const SymArgs& args, int blocks, void* stream) {
  return dispatch<LLLauncher, kLLThreads>(args, blocks, stream);
}

int symKernelBlocksPerSM() {
  int best = 1 << 30;
  const auto take = [&](auto kernel) {
    int n = 0;
    if (hipOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, kSymThreads, 0) == hipSuccess)
      best = n < best ? n : best;
  };
  // fp8 (16 floats per vector and peer) and int64 are the register-hungriest instantiations.
  take(symKernel<NativeTraits<float>, 0, 0>);
  take(symKernel<Fp8Traits<conv::Fp8E4M3>, 0, 0>);
  take(symKernel<HalfTraits, 0, 0>);
  take(symKernel<NativeTraits<int64_t>, 1, 0>);
  take(symKernel<NativeTraits<double>, 3, 0>);
  take(symKernel<NativeTraits<float>, 0, 2>);
  take(symKernel<NativeTraits<double>, 3, 2>);
  take(symKernel<NativeTraits<float>, 0, 4>);
  take(symKernel<HalfTraits, 0, 4>);
  return best == (1 << 30) || best < 1 ? 1 : best;
}

}  // namespace ssc::gpu
