// SPDX-License-Identifier: MIT
// Device code shared by the attention kernels (attention_kernel.cu: the rank merge and the
// partial kernels' epilogue; attention_exchange.cu: the push and the merge on arrival): the fp32
// merge of one (sequence, head) row over n partials (merge.cc's arithmetic), the stores of a row
// into the fused exchange's receivers with their flags, a partial kernel block's place in the
// grid, and where such a block puts its rows (AttnPartialFinish). Device compilers only; each
// including file gets its own copy (unnamed namespace).
#pragma once

#include <cstddef>
#include <cstdint>

#include "src/ops/attention/attention_device.cuh"
#include "src/ops/attention/attention_exchange_layout.h"
#include "src/ops/attention/attention_kernel.h"

namespace ssc::gpu {
namespace {

// A load of data another block or process wrote: never served from a stale L1 line (L1 is not
// coherent; on AMD a volatile load, after the acquire that invalidates vL1D, is enough).
__device__ __forceinline__ float loadL2(const float* p) {
#if defined(SSC_GPU_IS_CUDA)
  return __ldcg(p);
#else
  return *reinterpret_cast<const volatile float*>(p);
#endif
}

// The merge of n partial rows (row r at rows + r * stride: D outputs, then the LSE, -inf for an
// empty one) and an optional sink logit (-inf: none; one term of the denominator without a
// value): out(e, value) for e = threadIdx.x, += blockDim.x. Returns the merged LSE (-inf and all
// zeros when every partial is empty and there is no sink). The block's threads share out the
// partials for the max and the weights, so the element loop has no dependent loads: a merge of
// hundreds of split-K partials stays short. w: n floats, red: blockDim.x floats (<= 128, a power
// of two), both shared and free again on return.
template <class Out>
__device__ float mergeRows(const float* rows, size_t stride, int n, int D, float sink, float* w,
                           float* red, const Out& out) {
  float mMax = sink;
  for (int r = threadIdx.x; r < n; r += blockDim.x)
    mMax = fmaxf(mMax, loadL2(rows + r * stride + D));
  mMax = blockReduce(mMax, red, true);
  if (mMax == negInf()) {
    for (int e = threadIdx.x; e < D; e += blockDim.x) out(e, 0.0f);
    return negInf();
  }
  float part = 0.0f;
  for (int r = threadIdx.x; r < n; r += blockDim.x) {
    const float l = loadL2(rows + r * stride + D);
    w[r] = l != negInf() ? expf(l - mMax) : 0.0f;  // an empty partial weighs nothing
    part += w[r];
  }
  const float total = blockReduce(part, red, false) + (sink != negInf() ? expf(sink - mMax) : 0.0f);
  for (int e = threadIdx.x; e < D; e += blockDim.x) {
    float acc = 0.0f;
    for (int r = 0; r < n; ++r) acc += w[r] * loadL2(rows + r * stride + e);
    out(e, acc / total);
  }
  __syncthreads();  // w is read above by every thread: free only after this
  return mMax + logf(total);
}

__device__ __forceinline__ void releaseFlag(uint64_t* f, uint64_t v, int deviceScope) {
  if (deviceScope)
    sscStoreReleaseGpu(f, v);
  else
    sscStoreReleaseSys(f, v);
}

// The fused exchange's epoch of this call (AttnEpochWord, attention_kernel.h): a volatile load,
// since the word changes between kernels (the last call's merge advanced it).
__device__ __forceinline__ uint64_t callEpoch(const AttnEpochWord* w) {
  return sscLoadVolatile(&w->done) + 1;
}

// Row (b, h)'s receivers [first, last] and its offset in a receiver's rows area (this rank's rows
// of the call's parity).
struct PushSlot {
  int first, last;
  size_t mine;
};

__device__ __forceinline__ PushSlot pushSlot(const AttnPushTarget& t, int numQHeads, int b, int h,
                                             uint64_t epoch) {
  const bool sharded = t.outSharded != 0;
  const attn::RowTarget target = attn::rowTarget(h, numQHeads, t.nranks, sharded);
  PushSlot s;
  s.first = target.firstRank;
  s.last = target.lastRank;
  const size_t slot = attn::rowSlot(b, attn::outHeadsOf(numQHeads, t.nranks, sharded), target.j);
  s.mine = attn::parityOf(epoch) * t.parityFloats + static_cast<size_t>(t.rank) * t.senderStride +
           slot * t.rowFloats;
  return s;
}

// Element e of a row (e = D: its LSE) into every receiver of its slot.
__device__ __forceinline__ void pushElement(const AttnPushTarget& t, const PushSlot& s, int e,
                                            float v) {
  for (int r = s.first; r <= s.last; ++r) t.peerRows[r][s.mine + e] = v;
}

// After the stores of rows (b, head0 .. head0 + G - 1), every thread its own: one flag per
// (row, receiver), holding the call's epoch. Every thread of the block calls it.
__device__ __forceinline__ void pushFlags(const AttnPushTarget& t, int numQHeads, int b, int head0,
                                          int G, int D, uint64_t epoch) {
  // Each thread fences its own row stores before the barrier (as NCCL's LL128/simple protocols
  // do), so the flag store after it does not rely on cumulativity through bar.sync alone.
  if (t.deviceScope)
    __threadfence();
  else
    __threadfence_system();
  __syncthreads();
  const int receivers = t.outSharded ? 1 : t.nranks;
  for (int i = threadIdx.x; i < G * receivers; i += blockDim.x) {
    const PushSlot s = pushSlot(t, numQHeads, b, head0 + i / receivers, epoch);
    releaseFlag(reinterpret_cast<uint64_t*>(t.peerRows[s.first + i % receivers] + s.mine +
                                            attn::flagFloatOf(D)),
                epoch, t.deviceScope);
  }
}

// The merge of the row's n partials stored into every receiver of the row, then its flags,
// for the call `epoch`.
__device__ __forceinline__ void pushMergedRowAt(const AttnPushTarget& t, int numQHeads, int b,
                                                int h, const float* rows, size_t stride, int n,
                                                int D, float* w, float* red, uint64_t epoch) {
  const PushSlot s = pushSlot(t, numQHeads, b, h, epoch);
  const float lse = mergeRows(rows, stride, n, D, negInf(), w, red,
                              [&](int e, float v) { pushElement(t, s, e, v); });
  if (threadIdx.x == 0) pushElement(t, s, D, lse);
  pushFlags(t, numQHeads, b, h, 1, D, epoch);
}

// A partial kernel block's place in the grid: sequence b, KV head, head chunk and split
// (blockIdx.z = split * chunks + chunk), and its query heads head0 .. head0 + G - 1.
struct PartialBlock {
  int b, kvHead, chunk, split, head0, G;
};

__device__ __forceinline__ PartialBlock partialBlock(const AttnPartialParams& p) {
  constexpr int kH = kAttnMaxHeadsPerBlock;
  PartialBlock k;
  k.b = blockIdx.x;
  k.kvHead = blockIdx.y;
  const int ratio = p.numQHeads / p.numKvHeads;
  const int chunks = (ratio + kH - 1) / kH;
  k.chunk = static_cast<int>(blockIdx.z) % chunks;
  k.split = static_cast<int>(blockIdx.z) / chunks;
  k.head0 = k.kvHead * ratio + k.chunk * kH;
  k.G = min(kH, ratio - k.chunk * kH);
  return k;
}

// The block's queries (G heads of kD; zero past G) into shared memory as floats, one coalesced
// pass through withIoLoader, so every thread's loads are in flight together. Built element by
// element behind a per-element type switch (the first decode kernel), a lane's 64 loads issued
// one after another: about 31 us a block, the time of ten 16-token steps (Nsight Compute and the
// 32K / 128K timings on the H200). kThreads: the block's threads.
template <int kD, int kThreads>
__device__ __forceinline__ void stageBlockQ(const AttnPartialParams& p, int b, int head0, int G,
                                            float (*qs)[kD]) {
  constexpr int kElems = kAttnMaxHeadsPerBlock * kD;
  static_assert(kElems % kThreads == 0, "every thread stages the same count");
  // The fused exchange's query area: the call's parity picks the half.
  const void* q = p.qEpoch == nullptr
                      ? p.q
                      : static_cast<const char*>(p.q) + (callEpoch(p.qEpoch) & 1) * p.qParityBytes;
  withIoLoader(q, p.qDtype, [&](const auto& load) {
    float x[kElems / kThreads];
#pragma unroll
    for (int k = 0; k < kElems / kThreads; ++k) {
      const int i = k * kThreads + static_cast<int>(threadIdx.x), gi = i / kD, e = i % kD,
                h = head0 + gi;
      x[k] =
          gi < G
              ? load(((static_cast<size_t>(h / p.qHeadsPerRank) * p.batch + b) * p.qHeadsPerRank +
                      h % p.qHeadsPerRank) *
                         kD +
                     e)
              : 0.0f;
    }
#pragma unroll
    for (int k = 0; k < kElems / kThreads; ++k) {
      const int i = k * kThreads + static_cast<int>(threadIdx.x);
      qs[i / kD][i % kD] = x[k];
    }
  });
}

// Where a partial kernel block puts element e of its row (b, h): o is the normalised output of
// its tokens and lse their LSE (-inf and o = 0: none). When the block is its row group's only
// split (p.splits == 1) the element is final for this rank and goes where p.finish says, with
// no launch after the kernel for it; else into its split's partial, for a merge launch. epoch:
// the exchange's call (callEpoch) where p.finish pushes.
template <int kD>
__device__ __forceinline__ void emitPartialRow(const AttnPartialParams& p, int split, int b, int h,
                                               int e, float o, float lse, uint64_t epoch) {
  const AttnPartialFinish& f = p.finish;
  const size_t row = static_cast<size_t>(b) * p.numQHeads + h;
  if (p.splits != 1 || f.mode == kAttnFinishNone) {
    float* out = p.partials + split * p.splitStride + row * (kD + 1);
    out[e] = o;
    if (e == 0) out[kD] = lse;
  } else if (f.mode == kAttnFinishOutput) {
    // mergeRows over this one partial and the sink (a term of the denominator without a value).
    const float sink = f.sinks != nullptr ? f.sinks[h] : negInf();
    const float mMax = fmaxf(lse, sink);
    float v = 0.0f, l = negInf();
    if (mMax != negInf()) {
      const float w = lse != negInf() ? expf(lse - mMax) : 0.0f;
      const float total = w + (sink != negInf() ? expf(sink - mMax) : 0.0f);
      v = w * o / total;
      l = mMax + logf(total);
    }
    storeIo(f.out, row * kD + e, f.outDtype, v);
    if (e == 0 && f.lse != nullptr) f.lse[row] = l;
  } else {
    const PushSlot s = pushSlot(f.push, p.numQHeads, b, h, epoch);
    pushElement(f.push, s, e, o);
    if (e == 0) pushElement(f.push, s, kD, lse);
  }
}

// The end of a partial kernel block whose kWarps warps (or lane groups) each kept an online
// softmax over their share of the block's keys: per head, the warps' states (m: max, in log2
// units when kLog2; l: sum; accs: unnormalised outputs) merged into the block's row, each
// element emitted (emitPartialRow; finishPartialRows follows). Every thread of the block calls
// it, after a barrier behind the states' stores.
template <int kD, int kWarps, int kH, bool kLog2>
__device__ __forceinline__ void emitBlockRows(const AttnPartialParams& p, int split, int b,
                                              int head0, int G, const float (&ms)[kWarps][kH],
                                              const float (&ls)[kWarps][kH],
                                              const float (*accs)[kH][kD]) {
  constexpr float kLn2 = 0.6931471805599453f;
  const uint64_t epoch =
      p.splits == 1 && p.finish.mode == kAttnFinishPush ? callEpoch(p.finish.push.epoch) : 0;
  for (int i = threadIdx.x; i < G * kD; i += blockDim.x) {
    const int gi = i / kD, e = i % kD;
    float mMax = negInf();
    for (int w = 0; w < kWarps; ++w) mMax = fmaxf(mMax, ms[w][gi]);
    if (mMax == negInf()) {  // no token of the sequence in this block: an empty partial
      emitPartialRow<kD>(p, split, b, head0 + gi, e, 0.0f, negInf(), epoch);
      continue;
    }
    float sum = 0.0f, o = 0.0f;
    for (int w = 0; w < kWarps; ++w) {
      if (ms[w][gi] == negInf()) continue;
      const float c = kLog2 ? exp2f(ms[w][gi] - mMax) : expf(ms[w][gi] - mMax);
      sum += ls[w][gi] * c;
      o += accs[w][gi][e] * c;
    }
    emitPartialRow<kD>(p, split, b, head0 + gi, e, o / sum,
                       (kLog2 ? mMax * kLn2 : mMax) + logf(sum), epoch);
  }
}

// After every element of heads head0 .. head0 + G - 1 was emitted: a push's flags, one per
// (head, receiver). Every thread of the block calls it.
template <int kD>
__device__ __forceinline__ void finishPartialRows(const AttnPartialParams& p, int b, int head0,
                                                  int G) {
  if (p.splits == 1 && p.finish.mode == kAttnFinishPush)
    pushFlags(p.finish.push, p.numQHeads, b, head0, G, kD, callEpoch(p.finish.push.epoch));
}

}  // namespace
}  // namespace ssc::gpu
