// SPDX-License-Identifier: MIT
// Sequence-sharded paged attention on the GPU: K/V append, this rank's partial attention over
// its pages (online softmax in fp32), and the merge of all ranks' partials (the same arithmetic
// as the host's src/ops/attention/merge.cc).
#include "src/ops/attention/attention_kernel.h"

#include <cstdint>

#include "src/platform/gpu_check.h"
#include "src/platform/gpu_runtime.h"
#include "src/kernels/gpu/elementwise.h"
#include "src/ops/attention/attention_device.cuh"
#include "src/ops/attention/attention_finish.cuh"
#include "starscream/starscream.h"

namespace ssc::gpu {
namespace {

// A "lane group" is 32 threads whatever the hardware's warp (AMD wavefronts are 64 wide: two
// groups per wavefront); the shuffles below stay within one group.
// The portable fp32 partial kernel's helpers (HIP only: CUDA runs attention_decode_mma.cuh).
#if !defined(SSC_GPU_IS_CUDA)
constexpr int kGroup = 32;
constexpr int kPartialThreads = 128;
constexpr int kGroups = kPartialThreads / kGroup;

__device__ __forceinline__ float groupSum(float x) {
#pragma unroll
  for (int o = kGroup / 2; o > 0; o /= 2) {
    x += __shfl_xor(x, o, kGroup);
  }
  return x;
}

#endif

// Loads kE consecutive 2-byte elements (kE = 2 or 4: one 4- or 8-byte load) as floats.
template <int kE, class Traits>
__device__ __forceinline__ void loadRow(const uint16_t* p, float* x) {
  if constexpr (kE == 4) {
    const uint2 u = *reinterpret_cast<const uint2*>(p);
    x[0] = Traits::load(static_cast<uint16_t>(u.x & 0xffffu));
    x[1] = Traits::load(static_cast<uint16_t>(u.x >> 16));
    x[2] = Traits::load(static_cast<uint16_t>(u.y & 0xffffu));
    x[3] = Traits::load(static_cast<uint16_t>(u.y >> 16));
  } else {
    const uint32_t u = *reinterpret_cast<const uint32_t*>(p);
    x[0] = Traits::load(static_cast<uint16_t>(u & 0xffffu));
    x[1] = Traits::load(static_cast<uint16_t>(u >> 16));
  }
}

// One token row per 32-lane group per row of 16-byte vectors: dstRow[t] < 0 means another rank
// owns the token.
__global__ void kvAppendKernel(const KvAppendParams p) {
  const int t = blockIdx.x, h = blockIdx.y;
  const int64_t base = p.dstRow[t];
  if (base < 0) return;
  const int vecs = p.headDim * 2 / 16;  // 8 or 16 uint4 per row
  const size_t src = (static_cast<size_t>(t) * p.numKvHeads + h) * p.headDim;
  const size_t dst = static_cast<size_t>(base) + static_cast<size_t>(h) * p.pageSize * p.headDim;
  for (int i = threadIdx.x; i < 2 * vecs; i += blockDim.x) {
    const bool isV = i >= vecs;
    const int j = isV ? i - vecs : i;
    const uint4* s =
        reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(isV ? p.v : p.k) + src);
    uint4* d = reinterpret_cast<uint4*>(static_cast<uint16_t*>(isV ? p.vPool : p.kPool) + dst);
    d[j] = s[j];
  }
}

#if !defined(SSC_GPU_IS_CUDA)
// Block (b, kv head, head chunk): query heads kvHead * ratio + chunk * 16 + [0, G). Each 32-lane
// group takes every kGroups-th row of each of this rank's spans and keeps, per query head, an
// online softmax (max m, sum l, unnormalised output acc; lane i holds elements
// [i * kE, (i + 1) * kE)); the groups' states are merged in shared memory at the end.
template <int kD, class KvTraits>
__global__ void __launch_bounds__(kPartialThreads) attnPartialKernel(const AttnPartialParams p) {
  // Launched as a programmatic dependent (sscLaunchDependent): nothing before this wait.
  sscGridDependencyWait();
  constexpr int kE = kD / kGroup;
  constexpr int kH = kAttnMaxHeadsPerBlock;
  __shared__ float qs[kH][kD];
  __shared__ float ms[kGroups][kH];
  __shared__ float ls[kGroups][kH];
  __shared__ float accs[kGroups][kH][kD];

  const PartialBlock blk = partialBlock(p);
  const int b = blk.b, kvHead = blk.kvHead, split = blk.split, head0 = blk.head0, G = blk.G;
  const int group = threadIdx.x / kGroup, lane = threadIdx.x % kGroup;

  stageBlockQ<kD, kPartialThreads>(p, b, head0, G, qs);
  __syncthreads();

  float m[kH], l[kH], acc[kH][kE];
#pragma unroll
  for (int g = 0; g < kH; ++g) {
    m[g] = negInf();
    l[g] = 0.0f;
#pragma unroll
    for (int e = 0; e < kE; ++e) acc[g][e] = 0.0f;
  }

  const uint16_t* kPool = static_cast<const uint16_t*>(p.kPool);
  const uint16_t* vPool = static_cast<const uint16_t*>(p.vPool);
  for (int s = p.spanStart[b] + split; s < p.spanStart[b + 1]; s += p.splits) {
    const int page = p.spans[3 * s], rowEnd = p.spans[3 * s + 2];
    const size_t pageBase = (static_cast<size_t>(page) * p.numKvHeads + kvHead) * p.pageSize;
    for (int row = p.spans[3 * s + 1] + group; row < rowEnd; row += kGroups) {
      const size_t off = (pageBase + row) * kD + lane * kE;
      float k[kE], v[kE];
      loadRow<kE, KvTraits>(kPool + off, k);
      loadRow<kE, KvTraits>(vPool + off, v);
#pragma unroll
      for (int g = 0; g < kH; ++g) {
        if (g >= G) continue;  // not break: the loop must unroll to keep acc in registers
        float dot = 0.0f;
#pragma unroll
        for (int e = 0; e < kE; ++e) dot += qs[g][lane * kE + e] * k[e];
        const float score = groupSum(dot) * p.scale;
        if (score > m[g]) {
          const float c = expf(m[g] - score);  // 0 on the first row (m = -inf)
          l[g] = l[g] * c + 1.0f;
#pragma unroll
          for (int e = 0; e < kE; ++e) acc[g][e] = acc[g][e] * c + v[e];
          m[g] = score;
        } else {
          const float w = expf(score - m[g]);
          l[g] += w;
#pragma unroll
          for (int e = 0; e < kE; ++e) acc[g][e] += w * v[e];
        }
      }
    }
  }

#pragma unroll
  for (int g = 0; g < kH; ++g) {
    if (g >= G) continue;
    if (lane == 0) {
      ms[group][g] = m[g];
      ls[group][g] = l[g];
    }
#pragma unroll
    for (int e = 0; e < kE; ++e) accs[group][g][lane * kE + e] = acc[g][e];
  }
  __syncthreads();

  emitBlockRows<kD, kGroups, kH, false>(p, split, b, head0, G, ms, ls, accs);
  finishPartialRows<kD>(p, b, head0, G);
}

#endif

// Block (b, output head), one thread per element (blockDim = headDim, a power of two): the
// merge of mergePartials (merge.cc), over the ranks' partials or (packed) over one rank's
// split-K partials (mergeRows).
__global__ void attnMergeKernel(const AttnMergeParams p) {
  // Launched as a programmatic dependent (sscLaunchDependent): nothing before this wait.
  sscGridDependencyWait();
  extern __shared__ float weight[];  // [nranks]
  __shared__ float red[128];
  const int b = blockIdx.x, j = blockIdx.y, h = p.firstHead + j;
  const size_t at = (static_cast<size_t>(b) * p.numQHeads + h) * (p.headDim + 1);
  const size_t row = static_cast<size_t>(b) * p.outHeads + j;
  const size_t o = row * (p.packed ? p.headDim + 1 : p.headDim);
  float* lse = p.packed ? static_cast<float*>(p.out) + o + p.headDim
                        : (p.lse != nullptr ? p.lse + row : nullptr);
  const float l = mergeRows(p.partials + at, p.rankStride, p.nranks, p.headDim,
                            p.sinks != nullptr ? p.sinks[h] : negInf(), weight, red,
                            [&](int e, float v) { storeIo(p.out, o + e, p.outDtype, v); });
  if (threadIdx.x == 0 && lse != nullptr) *lse = l;
}

}  // namespace
}  // namespace ssc::gpu

// The tensor-core decode kernel (CUDA only; uses the helpers above).
#include "src/ops/attention/attention_decode_mma.cuh"

namespace ssc::gpu {

sscResult_t launchKvAppend(const KvAppendParams& p, void* stream) {
  if (p.numTokens == 0) return sscSuccess;
  kvAppendKernel<<<dim3(p.numTokens, p.numKvHeads), dim3(32), 0,
                   static_cast<hipStream_t>(stream)>>>(p);
  const hipError_t e = hipGetLastError();
  if (e != hipSuccess)
    return SSC_GPU_FAIL(e, "launching the KV append kernel ({} tokens, {} KV heads)", p.numTokens,
                        p.numKvHeads);
  return sscSuccess;
}

namespace {

// The partial kernel for p's types and head dim, with its block size and dynamic shared memory.
struct PartialKernel {
  const void* fn;
  int threads;
  size_t smem;
};

#if defined(SSC_GPU_IS_CUDA)
template <int kD, bool kHalf, bool kSplit>
PartialKernel decodeKernel() {
  const void* fn = reinterpret_cast<const void*>(&attnDecodeMmaKernel<kD, kHalf, kSplit>);
  // The ring is above the 48 KiB a kernel gets without asking; asked once per instantiation.
  static const hipError_t optIn = hipFuncSetAttribute(
      fn, hipFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(decodeSmemBytes<kD>()));
  (void)optIn;  // a failure shows at the launch
  return {fn, kMmaThreads, decodeSmemBytes<kD>()};
}
#endif

PartialKernel partialKernel(const AttnPartialParams& p) {
  const bool half = p.kvDtype == sscFloat16;
#if defined(SSC_GPU_IS_CUDA)
  // fp32 queries need the split (hi + lo) products to stay within fp32 accuracy.
  const bool split = p.qDtype == sscFloat32;
  if (p.headDim == 64) {
    if (half) return split ? decodeKernel<64, true, true>() : decodeKernel<64, true, false>();
    return split ? decodeKernel<64, false, true>() : decodeKernel<64, false, false>();
  }
  if (half) return split ? decodeKernel<128, true, true>() : decodeKernel<128, true, false>();
  return split ? decodeKernel<128, false, true>() : decodeKernel<128, false, false>();
#else
  const void* fn;
  if (p.headDim == 64)
    fn = half ? reinterpret_cast<const void*>(&attnPartialKernel<64, HalfTraits>)
              : reinterpret_cast<const void*>(&attnPartialKernel<64, Bf16Traits>);
  else
    fn = half ? reinterpret_cast<const void*>(&attnPartialKernel<128, HalfTraits>)
              : reinterpret_cast<const void*>(&attnPartialKernel<128, Bf16Traits>);
  return {fn, kPartialThreads, 0};
#endif
}

}  // namespace

int attnPartialBlocksPerSm(const AttnPartialParams& p) {
  const PartialKernel k = partialKernel(p);
  int n = 0;
  if (hipOccupancyMaxActiveBlocksPerMultiprocessor(&n, k.fn, k.threads, k.smem) != hipSuccess) {
    (void)hipGetLastError();  // the fallback below; the next launch's check must not report it
    return 1;
  }
  return n > 0 ? n : 1;
}

sscResult_t launchAttnPartial(const AttnPartialParams& p, void* stream) {
  const int ratio = p.numQHeads / p.numKvHeads;
  const int chunks = (ratio + kAttnMaxHeadsPerBlock - 1) / kAttnMaxHeadsPerBlock;
  const PartialKernel k = partialKernel(p);
  const dim3 grid(p.batch, p.numKvHeads, chunks * p.splits);
  void* args[] = {const_cast<AttnPartialParams*>(&p)};
  SSC_GPU_CHECK(sscLaunchDependent(k.fn, grid, dim3(k.threads), args, k.smem,
                                   static_cast<hipStream_t>(stream)),
                "launching the partial attention kernel (batch {}, {} KV heads, head dim {}, {} "
                "splits, {} bytes of shared memory)",
                p.batch, p.numKvHeads, p.headDim, p.splits, k.smem);
  return sscSuccess;
}

sscResult_t launchAttnMerge(const AttnMergeParams& p, void* stream) {
  void* args[] = {const_cast<AttnMergeParams*>(&p)};
  SSC_GPU_CHECK(sscLaunchDependent(reinterpret_cast<const void*>(&attnMergeKernel),
                                   dim3(p.batch, p.outHeads), dim3(p.headDim), args,
                                   p.nranks * sizeof(float), static_cast<hipStream_t>(stream)),
                "launching the attention merge kernel (batch {}, {} heads, {} partials)", p.batch,
                p.outHeads, p.nranks);
  return sscSuccess;
}

}  // namespace ssc::gpu
