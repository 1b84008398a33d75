// SPDX-License-Identifier: MIT
// The GPU plan executor: one kernel launch runs one Work (every channel of a RankPlan) with the
// host executor's step semantics (src/device/host/host_executor.cc) and FIFO protocol
// (plan_kernel.h); what each step reads, writes and reduces, and how its range is cut into slots
// and pieces, both take from src/collectives/step_semantics.h. Grid = channels x
// blocksPerChannel; block b of a channel owns piece b of every slot and of every local
// slot-sized range, so FIFO traffic needs no inter-block sync.
// Steps whose local buffer ranges map onto blocks differently from an earlier step carry a
// `barrier` flag (computed on the host when the plan is uploaded) and wait for the channel's
// other blocks first.
//
// Spins are bounded: every wait polls the communicator's device error word, its host-mapped abort
// word and the timer, so a missing peer ends the kernel with kKernelTimeout (reported as
// sscTimeout) instead of a hang, or sooner with kKernelAborted when sscCommAbort is called.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "src/platform/gpu_runtime.h"
#include "src/collectives/p2p_wire.h"
#include "src/collectives/step_semantics.h"
#include "src/kernels/gpu/device_common.h"
#include "src/kernels/gpu/elementwise.h"
#include "src/kernels/gpu/plan_kernel.h"
#include "src/kernels/gpu/plan_signals.cuh"
#include "src/kernels/gpu/p2p_handshake.cuh"

namespace ssc::gpu {
namespace {

constexpr int kUnroll = 4;

// What thread 0 decides and the block needs: shared memory, because the global words it reads
// may sit stale in other threads' L1.
struct BlockShared {
  int ok;
  uint64_t recvSlot;
  uint64_t sendSlot;
};

template <class Tr, int kKind>
struct BlockRunner {
  using S = typename Tr::Storage;
  static constexpr int kPerVec = 16 / sizeof(S);

  const KernelArgs& a;
  int channel;
  int block;  // within the channel
  ScalarOps<Tr> sc;
  BlockShared* sh;

  // The step's elementwise work on this block's piece: r = post(in|dst (+) pre(src)).
  struct Piece {
    const S* in;   // received slot data (null: none)
    const S* src;  // this rank's contribution (null: none)
    S* dst;        // local result (null: none)
    S* out;        // outgoing slot (null: none)
    bool accDst;   // kReduce: dst is also the first operand
    bool pre, post;
  };

  __device__ S element(const Piece& p, S inV, S srcV, S dstV) const {
    const bool hasA = p.in != nullptr || p.accDst;
    const S av = p.in != nullptr ? inV : dstV;
    S r;
    if (p.src != nullptr) {
      const S s = p.pre ? sc.pre(srcV) : srcV;
      r = hasA ? Tr::store(combineValues<kKind>(Tr::load(av), Tr::load(s))) : s;
    } else {
      r = av;
    }
    return p.post ? sc.post(r) : r;
  }

  __device__ void run(const Piece& p, uint64_t n) const {
    const auto addr = [](const void* q) { return reinterpret_cast<uintptr_t>(q); };
    const bool aligned = ((addr(p.in) | addr(p.src) | addr(p.dst) | addr(p.out)) & 15u) == 0;
    uint64_t first = 0;  // elements done by the vector path
    if (aligned) {
      const uint64_t nvec = n / kPerVec;
      const uint64_t stride = static_cast<uint64_t>(blockDim.x) * kUnroll;
      for (uint64_t base = 0; base < nvec; base += stride) {
        union Vec {
          uint4 u;
          S e[kPerVec];
        };
        Vec vin[kUnroll] = {}, vsrc[kUnroll] = {}, vdst[kUnroll] = {};
#pragma unroll
        for (int k = 0; k < kUnroll; ++k) {
          const uint64_t i = base + k * blockDim.x + threadIdx.x;
          if (i >= nvec) break;
          if (p.in) vin[k].u = sscLoadCg(reinterpret_cast<const uint4*>(p.in) + i);
          if (p.src) vsrc[k].u = sscLoadCg(reinterpret_cast<const uint4*>(p.src) + i);
          if (p.accDst) vdst[k].u = sscLoadCg(reinterpret_cast<const uint4*>(p.dst) + i);
        }
#pragma unroll
        for (int k = 0; k < kUnroll; ++k) {
          const uint64_t i = base + k * blockDim.x + threadIdx.x;
          if (i >= nvec) break;
          Vec r;
#pragma unroll
          for (int j = 0; j < kPerVec; ++j)
            r.e[j] = element(p, vin[k].e[j], vsrc[k].e[j], vdst[k].e[j]);
          if (p.dst) reinterpret_cast<uint4*>(p.dst)[i] = r.u;
          if (p.out) reinterpret_cast<uint4*>(p.out)[i] = r.u;
        }
      }
      first = nvec * kPerVec;
    }
    // Tail, or everything when some pointer is not 16-byte aligned (odd counts and offsets).
    for (uint64_t i = first + threadIdx.x; i < n; i += blockDim.x) {
      const auto ld = [](const S* q) { return *reinterpret_cast<const volatile S*>(q); };
      const S inV = p.in ? ld(p.in + i) : S{};
      const S srcV = p.src ? ld(p.src + i) : S{};
      const S dstV = p.accDst ? ld(p.dst + i) : S{};
      const S r = element(p, inV, srcV, dstV);
      if (p.dst) p.dst[i] = r;
      if (p.out) p.out[i] = r;
    }
  }

  // All blocks of this channel finish their earlier steps. Generation counting on a monotonic
  // counter: arrivals are numbered, and every block passes the same number of barriers.
  __device__ bool channelBarrier() const {
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence();
      uint64_t* ctr = a.barrierCounters + channel;
      const uint64_t b = static_cast<uint64_t>(a.blocksPerChannel);
      const uint64_t target =
          (atomicAdd(reinterpret_cast<unsigned long long*>(ctr), 1ull) / b + 1) * b;
      sh->ok = boundedWait(
          a, [&] { return sscLoadVolatile(ctr) >= target; }, -1, channel);
      __threadfence();
    }
    __syncthreads();
    return sh->ok != 0;
  }

  __device__ char* bufPtr(uint16_t buf, uint64_t off) const {
    return static_cast<char*>(a.buffers[buf]) + off * a.elemBytes;
  }

  __device__ bool runStep(const DevStep& s) const {
    const StepOp op = static_cast<StepOp>(s.op);
    const bool hasRecv = stepReceives(op);
    const bool hasSend = stepSends(op);
    const bool hasSrc = stepReadsSrc(op);
    const bool hasDst = stepWritesDst(op);
    const uint64_t esize = a.elemBytes;
    const uint64_t slotElems = slotElemsOf(a.slotBytes, esize);
    const Conn* recvConn = hasRecv ? a.conns + channel * a.nranks + s.recvPeer : nullptr;
    const Conn* sendConn = hasSend ? a.conns + channel * a.nranks + s.sendPeer : nullptr;
    Piece p{};
    p.accDst = stepAccumulatesDst(op);
    p.pre = stepAppliesPreOp(s.flags, sc.scale);
    p.post = stepAppliesPostOp(op, s.flags, sc.divisor);

    for (uint64_t done = 0; done < s.count; done += slotElems) {
      const uint64_t bytes = stepChunkElems(s.count, done, slotElems) * esize;
      // The slot's size word: the step's tag above the byte count (plan_kernel.h).
      const uint64_t word = fifoSlotWord(s.tag, bytes);
      const SlotPiece piece = slotPiece(bytes, static_cast<uint64_t>(block), a.pieceBytes);
      const uint64_t lo = piece.lo, nb = piece.bytes;
      const uint64_t firstElem = done + lo / esize;
      if (threadIdx.x == 0) {
        int ok = 1;
        if (hasRecv) {
          const RecvCtrl* c = recvConn->recvCtrl + block;
          // The local counters were last written by the previous launch, whose block of this
          // index may have run on another SM: read them from L2, never from a stale L1 line.
          const uint64_t head = sscLoadVolatile(&recvConn->counters[block].recvHead);
          ok = boundedWait(
              a, [&] { return acquireSignal(a, &c->tail) > head; }, s.recvPeer, channel);
          const uint64_t posted = ok ? sscLoadVolatile(&c->slotBytes[head % a.slots]) : word;
          if (posted != word) {
            recordError(a, kKernelSizeMismatch, s.recvPeer, channel, posted);
            ok = 0;
          }
          sh->recvSlot = head % a.slots;
        }
        if (ok && hasSend) {
          const SendCtrl* h = sendConn->sendHeadIn + block;
          const uint64_t tail = sscLoadVolatile(&sendConn->counters[block].sentTail);
          const uint64_t slots = static_cast<uint64_t>(a.slots);
          ok = boundedWait(
              a, [&] { return tail - acquireSignal(a, &h->head) < slots; }, s.sendPeer, channel);
          sh->sendSlot = tail % slots;
        }
        sh->ok = ok;
      }
      __syncthreads();
      if (!sh->ok) return false;
      const uint64_t rslot = sh->recvSlot, sslot = sh->sendSlot;

      p.in = hasRecv ? reinterpret_cast<const S*>(recvConn->recvData + rslot * a.slotBytes + lo)
                     : nullptr;
      p.out =
          hasSend ? reinterpret_cast<S*>(sendConn->sendData + sslot * a.slotBytes + lo) : nullptr;
      p.src = hasSrc ? reinterpret_cast<const S*>(bufPtr(s.srcBuf, s.srcOff + firstElem)) : nullptr;
      p.dst = hasDst ? reinterpret_cast<S*>(bufPtr(s.dstBuf, s.dstOff + firstElem)) : nullptr;
      if (nb != 0) run(p, nb / esize);
      __syncthreads();
      if (threadIdx.x == 0) {
        // Release after the block's barrier: bar.sync orders every thread's accesses before
        // thread 0's release (cumulativity), as NCCL's primitives rely on too.
        if (hasRecv) {
          LocalCounters* lc = recvConn->counters + block;
          const uint64_t head = sscLoadVolatile(&lc->recvHead) + 1;
          lc->recvHead = head;
          releaseSignal(a, &recvConn->recvHeadOut[block].head, head, false);
        }
        if (hasSend) {
          LocalCounters* lc = sendConn->counters + block;
          RecvCtrl* c = sendConn->sendCtrlOut + block;
          const uint64_t tail = sscLoadVolatile(&lc->sentTail);
          c->slotBytes[tail % a.slots] = word;
          lc->sentTail = tail + 1;
          releaseSignal(a, &c->tail, tail + 1, true);
        }
      }
    }
    return true;
  }
};

template <class Tr, int kKind>
__global__ void __launch_bounds__(kThreadsPerBlock)
    planKernel(const SSC_GRID_CONSTANT KernelArgs args) {
  const KernelClock<> clock(args.timing);  // a traced call's start and end stamps
  __shared__ BlockShared sh;
  using C = typename Tr::Compute;
  using S = typename Tr::Storage;
  const int channel = blockIdx.x / args.blocksPerChannel;
  BlockRunner<Tr, kKind> r{
      args, channel, static_cast<int>(blockIdx.x % args.blocksPerChannel), {}, &sh};
  const DevReduce& red = args.reduce;
  r.sc.divisor = red.postDivisor;
  if (red.hasPreScale) {
    r.sc.scale = true;
    if constexpr (std::is_integral_v<C>) {
      int64_t m = red.scaleInt;
      if (red.scaleDevice != nullptr)
        m = static_cast<int64_t>(*static_cast<const S*>(red.scaleDevice));
      r.sc.imult = static_cast<WrapType<C>>(m);
    } else {
      double m = red.scaleFloat;
      if (red.scaleDevice != nullptr)
        m = static_cast<double>(Tr::load(*static_cast<const S*>(red.scaleDevice)));
      r.sc.mult = static_cast<C>(m);
    }
  }
  const DevStep* steps = args.steps != nullptr ? args.steps : args.inlineSteps;
  uint32_t first = args.stepBegin[channel];
  const bool p2p = args.p2p.ops != nullptr;
  if (p2p) {
    // The one-copy handshake leads channel 0's steps; the whole grid runs it first.
    uint32_t end = args.stepBegin[0];
    while (end < args.stepBegin[1] && isP2pHandshakeStep(static_cast<StepOp>(steps[end].op))) ++end;
    if (!p2pHandshake(args, steps, args.stepBegin[0], end)) return;
    if (channel == 0) first = end;
  }
  for (uint32_t i = first; i < args.stepBegin[channel + 1]; ++i) {
    const DevStep& s = steps[i];
    if (s.barrier && args.blocksPerChannel > 1 && !r.channelBarrier()) return;
    if (p2p && p2pSkipped(args, s)) continue;
    if (!r.runStep(s)) return;
  }
}

template <class Tr>
int launchForType(const KernelArgs& args, int channels, hipStream_t stream) {
  const dim3 grid(channels * args.blocksPerChannel), block(kThreadsPerBlock);
  switch (args.reduce.kind) {
    case 0: planKernel<Tr, 0><<<grid, block, 0, stream>>>(args); break;
    case 1: planKernel<Tr, 1><<<grid, block, 0, stream>>>(args); break;
    case 2: planKernel<Tr, 2><<<grid, block, 0, stream>>>(args); break;
    default: planKernel<Tr, 3><<<grid, block, 0, stream>>>(args); break;
  }
  return static_cast<int>(hipGetLastError());
}

// Residency probe: block b records its SM and whether it saw every block of the grid arrive
// (i.e. all were resident at once) within `spinTicks`.
__global__ void smProbeKernel(uint32_t* out, uint32_t* arrived, uint32_t nblocks,
                              uint64_t spinTicks) {
  if (threadIdx.x != 0) return;
#if defined(SSC_GPU_IS_HIP)
  out[blockIdx.x] = __smid();
#else
  uint32_t smid;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  out[blockIdx.x] = smid;
#endif
  atomicAdd(arrived, 1u);
  const uint64_t t0 = sscGpuTimer();
  while (atomicAdd(arrived, 0u) < nblocks && sscGpuTimer() - t0 < spinTicks) {
  }
  out[nblocks + blockIdx.x] = atomicAdd(arrived, 0u) >= nblocks;
}

}  // namespace

int probeResidency(int blocks, int threads, int* distinctSms, int* allResident) {
  uint32_t* d = nullptr;
  const size_t bytes = (2 * static_cast<size_t>(blocks) + 1) * sizeof(uint32_t);
  hipError_t e = hipMalloc(reinterpret_cast<void**>(&d), bytes);
  if (e != hipSuccess) return static_cast<int>(e);
  // The kernel counts arrivals from zero: without the fill (or the device's timer rate, or the
  // launch) the answer would be made up, so each failure is the probe's.
  int dev = 0;
  e = hipMemset(d, 0, bytes);
  if (e == hipSuccess) e = hipGetDevice(&dev);
  if (e == hipSuccess) {
    smProbeKernel<<<blocks, threads>>>(d + 1, d, static_cast<uint32_t>(blocks),
                                       static_cast<uint64_t>(0.2 * sscGpuTimerTicksPerSecond(dev)));
    e = hipGetLastError();
  }
  std::vector<uint32_t> h(2 * static_cast<size_t>(blocks) + 1);
  if (e == hipSuccess) e = hipMemcpy(h.data(), d, bytes, hipMemcpyDeviceToHost);
  (void)hipFree(d);  // the probe's own buffer; its result (e) is the error to report
  if (e != hipSuccess) return static_cast<int>(e);
  std::vector<uint32_t> sms(h.begin() + 1, h.begin() + 1 + blocks);
  std::sort(sms.begin(), sms.end());
  *distinctSms = static_cast<int>(std::unique(sms.begin(), sms.end()) - sms.begin());
  *allResident = 1;
  for (int b = 0; b < blocks; ++b) *allResident &= h[1 + blocks + b] != 0;
  return 0;
}

int launchPlanKernel(const KernelArgs& args, int channels, void* streamPtr) {
  hipStream_t stream = static_cast<hipStream_t>(streamPtr);
  switch (args.reduce.dtype) {  // sscDataType_t values
    case 0: return launchForType<NativeTraits<int8_t>>(args, channels, stream);
    case 1: return launchForType<NativeTraits<uint8_t>>(args, channels, stream);
    case 2: return launchForType<NativeTraits<int32_t>>(args, channels, stream);
    case 3: return launchForType<NativeTraits<uint32_t>>(args, channels, stream);
    case 4: return launchForType<NativeTraits<int64_t>>(args, channels, stream);
    case 5: return launchForType<NativeTraits<uint64_t>>(args, channels, stream);
    case 6: return launchForType<HalfTraits>(args, channels, stream);
    case 7: return launchForType<NativeTraits<float>>(args, channels, stream);
    case 8: return launchForType<NativeTraits<double>>(args, channels, stream);
    case 9: return launchForType<Bf16Traits>(args, channels, stream);
    case 10: return launchForType<Fp8Traits<conv::Fp8E4M3>>(args, channels, stream);
    case 11: return launchForType<Fp8Traits<conv::Fp8E5M2>>(args, channels, stream);
    default: return -1;
  }
}

int planKernelBlocksPerSM() {
  // Every instantiation is the same code shape; the widest element path (fp8 widening to float)
  // uses the most registers. Take the minimum over all so any launch fits.
  int best = 1 << 30;
  const auto take = [&](auto kernel) {
    int n = 0;
    if (hipOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, kThreadsPerBlock, 0) == hipSuccess)
      best = n < best ? n : best;
  };
  take(planKernel<NativeTraits<float>, 0>);
  take(planKernel<NativeTraits<double>, 1>);
  take(planKernel<HalfTraits, 0>);
  take(planKernel<Bf16Traits, 2>);
  take(planKernel<Fp8Traits<conv::Fp8E4M3>, 0>);
  take(planKernel<NativeTraits<int64_t>, 1>);
  return best == (1 << 30) || best < 1 ? 1 : best;
}

}  // namespace ssc::gpu
