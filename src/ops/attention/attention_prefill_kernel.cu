// SPDX-License-Identifier: MIT
// The partial attention of a prefill over this rank's paged KV: causal by absolute position,
// rows = (query token, query head) pairs of one KV head, 16 rows a tile (prefill_plan.h). The
// spans may be any rank's pages, read in place through the peers' mapped pools (KV side).
//
// CUDA: one warp per tile on the tensor cores, the decode kernel's fragments and loads
// (attention_partial_mma.cuh) with the 16 mma rows holding tokens x heads of the GQA group
// instead of one token's heads, and a mask per row: key position <= the row's query position
// (and inside its window). Each warp walks only the spans its rows can see, so the causal
// triangle costs half the square. The 4 warps of a block take neighbouring tiles of one
// sequence, which read the same K/V (the second and later reads hit L1/L2). Tiles come
// heaviest first, so the longest rows do not start last.
// HIP: a portable fp32 kernel, one block per tile (the decode's fp32 kernel with the mask).
#include "src/ops/attention/attention_prefill_kernel.h"
#include "src/ops/attention/attention_prefill_rows.h"

#include <cstdint>

#include "src/platform/gpu_check.h"
#include "src/platform/gpu_runtime.h"
#include "src/kernels/gpu/elementwise.h"
#include "src/ops/attention/attention_device.cuh"
#include "src/ops/attention/attention_kernel.h"  // AttnPartialParams, which the mma helpers' file also holds
#include "src/ops/attention/attention_partial_mma.cuh"
#include "starscream/starscream.h"

namespace ssc::gpu {
namespace {

static_assert(kAttnPrefillTileRows == 16, "a tile is the mma's 16 rows");

#if defined(SSC_GPU_IS_CUDA)

// Warp w of block (x, kv head) takes tile 4x + w. Fragment layout as attnDecodeMmaKernel.
// Registers capped for 3 blocks an SM (168; about 50 bytes spill, in the query prologue) except
// with fp32 queries (twice the Q and P fragments: 2 blocks, no spill). Lanes: lane (g, t) holds
// rows g and g + 8 of the tile.
template <int kD, bool kHalf, bool kSplit>
__global__ void __launch_bounds__(kMmaThreads, kSplit ? 2 : 3)
    attnPrefillMmaKernel(const AttnPrefillParams p) {
  constexpr int kSteps = kD / 16, kHalves = kD / 64, kTiles = kD / 8;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int tile = blockIdx.x * kMmaWarps + warp;
  // The pool table in shared memory: a span's pool is then a shared load, not one more global
  // load that its K/V addresses wait for.
  __shared__ const void* pools[2 * kAttnPrefillMaxPools];
  for (int i = threadIdx.x; i < 2 * p.numPools; i += blockDim.x) pools[i] = p.pools[i];
  __syncthreads();
  if (tile >= p.numTiles) return;  // warp-uniform: no block-wide synchronisation below
  const int kvHead = p.kvHeadFirst + blockIdx.y, ratio = p.numQHeads / p.numKvHeads;
  const PrefillTile tr = prefillTile(p.tiles, p.pieces, tile, p.rowHeads, p.window);
  const PrefillRow ri[2] = {
      prefillRow(p.pieces, tr, g, kvHead, ratio, p.rowHeads, p.headOffset, p.window),
      prefillRow(p.pieces, tr, g + 8, kvHead, ratio, p.rowHeads, p.headOffset, p.window)};

  // Through withIoLoader, so a lane's 64 loads are in flight together.
  uint32_t qa[kSteps][4], ql[kSteps][4];
  withIoLoader(p.q, p.qDtype, [&](const auto& load) {
    mmaQFragments<kD, kHalf, kSplit>(
        [&](int r, int e) -> float {
          return ri[r].pos < 0
                     ? 0.0f
                     : load((static_cast<size_t>(ri[r].token) * p.numQHeads + ri[r].head) * kD + e);
        },
        t, qa, ql);
  });

  float acc[kTiles][4];
#pragma unroll
  for (int n = 0; n < kTiles; ++n) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.0f;
  float m[2] = {negInf(), negInf()}, l[2] = {0.0f, 0.0f};  // m in log2 units
  const float scale2 = p.scale * 1.4426950408889634f;

  const int32_t* pc = p.pieces + 5 * tr.piece;
  for (int s = pc[3]; s < pc[4]; ++s) {
    const int32_t* sp = p.spans + kPrefillSpanInts * s;
    const PrefillSpanRows sr = prefillSpanRows(sp, tr);
    if (sr.stop) break;  // spans come in position order
    const uint16_t* kPool = static_cast<const uint16_t*>(pools[sp[4]]);
    const uint16_t* vPool = static_cast<const uint16_t*>(pools[p.numPools + sp[4]]);
    const size_t pageBase = (static_cast<size_t>(sp[0]) * p.numKvHeads + kvHead) * p.pageSize;
    for (int r0 = sr.from; r0 < sr.to; r0 += kMmaTokens) {
      const int n = min(kMmaTokens, sr.to - r0), kp0 = sr.firstPos + (r0 - sr.from);
      // Key col of the step is at position kp0 + col: the row sees it when causal and in window.
      mmaAttendStep<kD, kHalf, kSplit>(
          kPool + (pageBase + r0) * kD, vPool + (pageBase + r0) * kD, n, g, t, qa, ql, scale2,
          [&](int r, int col) { return prefillSees(ri[r], kp0 + col); }, m, l, acc);
    }
  }

  // Each row straight from the fragments (the quad's 4 lanes hold its 128 or 64 dims).
  constexpr float kLn2 = 0.6931471805599453f;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
    if (ri[r].pos < 0) continue;
    float* out =
        p.partials + (static_cast<size_t>(ri[r].token) * p.numQHeads + ri[r].head) * (kD + 1);
    const bool empty = m[r] == negInf();  // no key of this rank in the row's range
    const float inv = empty ? 0.0f : 1.0f / l[r];
#pragma unroll
    for (int h = 0; h < kHalves; ++h)
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const int d = 64 * h + 16 * t + j;
        out[d] = acc[8 * h + j][2 * r] * inv;
        out[d + 8] = acc[8 * h + j][2 * r + 1] * inv;
      }
    if (t == 0) out[kD] = empty ? negInf() : m[r] * kLn2 + logf(l[r]);
  }
}

#else  // HIP: the portable fp32 kernel

constexpr int kGroup = 32;
constexpr int kPrefillThreads = 128;
constexpr int kGroups = kPrefillThreads / kGroup;

__device__ __forceinline__ float groupSum(float x) {
#pragma unroll
  for (int o = kGroup / 2; o > 0; o /= 2) x += __shfl_xor(x, o, kGroup);
  return x;
}

template <int kE, class Traits>
__device__ __forceinline__ void loadRowN(const uint16_t* p, float* x) {
#pragma unroll
  for (int e = 0; e < kE; ++e) x[e] = Traits::load(p[e]);
}

// Block (tile, kv head): each 32-lane group takes every kGroups-th key of the tile's range and
// keeps an online softmax per row (lane i holds dims [i * kE, (i + 1) * kE)); the groups'
// states are merged in shared memory at the end.
template <int kD, class KvTraits>
__global__ void __launch_bounds__(kPrefillThreads) attnPrefillKernel(const AttnPrefillParams p) {
  constexpr int kE = kD / kGroup, kR = kAttnPrefillTileRows;
  __shared__ float qs[kR][kD];
  __shared__ int rowPos[kR], rowStart[kR];
  __shared__ const void* pools[2 * kAttnPrefillMaxPools];
  __shared__ float ms[kGroups][kR];
  __shared__ float ls[kGroups][kR];
  __shared__ float accs[kGroups][kR][kD];
  for (int i = threadIdx.x; i < 2 * p.numPools; i += blockDim.x)
    pools[i] = p.pools[i];  // read after the sync below
  const int tile = blockIdx.x, kvHead = p.kvHeadFirst + blockIdx.y,
            ratio = p.numQHeads / p.numKvHeads;
  const int group = threadIdx.x / kGroup, lane = threadIdx.x % kGroup;
  const PrefillTile tr = prefillTile(p.tiles, p.pieces, tile, p.rowHeads, p.window);
  for (int i = threadIdx.x; i < kR * kD; i += blockDim.x) {
    const int r = i / kD, e = i % kD;
    const PrefillRow ri =
        prefillRow(p.pieces, tr, r, kvHead, ratio, p.rowHeads, p.headOffset, p.window);
    qs[r][e] = ri.pos < 0
                   ? 0.0f
                   : loadIo(p.q, (static_cast<size_t>(ri.token) * p.numQHeads + ri.head) * kD + e,
                            p.qDtype);
    if (e == 0) {
      rowPos[r] = ri.pos;
      rowStart[r] = ri.start;
    }
  }
  __syncthreads();

  float m[kR], l[kR], acc[kR][kE];
#pragma unroll
  for (int r = 0; r < kR; ++r) {
    m[r] = negInf();
    l[r] = 0.0f;
#pragma unroll
    for (int e = 0; e < kE; ++e) acc[r][e] = 0.0f;
  }
  const int32_t* pc = p.pieces + 5 * tr.piece;
  for (int s = pc[3]; s < pc[4]; ++s) {
    const int32_t* sp = p.spans + kPrefillSpanInts * s;
    const PrefillSpanRows sr = prefillSpanRows(sp, tr);
    if (sr.stop) break;
    const uint16_t* kPool = static_cast<const uint16_t*>(pools[sp[4]]);
    const uint16_t* vPool = static_cast<const uint16_t*>(pools[p.numPools + sp[4]]);
    const size_t pageBase = (static_cast<size_t>(sp[0]) * p.numKvHeads + kvHead) * p.pageSize;
    for (int row = sr.from + group; row < sr.to; row += kGroups) {
      const int kp = sr.firstPos + (row - sr.from);
      const size_t off = (pageBase + row) * kD + lane * kE;
      float k[kE], v[kE];
      loadRowN<kE, KvTraits>(kPool + off, k);
      loadRowN<kE, KvTraits>(vPool + off, v);
#pragma unroll
      for (int r = 0; r < kR; ++r) {
        if (kp > rowPos[r] || kp < rowStart[r]) continue;  // group-uniform
        float dot = 0.0f;
#pragma unroll
        for (int e = 0; e < kE; ++e) dot += qs[r][lane * kE + e] * k[e];
        const float score = groupSum(dot) * p.scale;
        const float mNew = fmaxf(m[r], score), c = expf(m[r] - mNew), w = expf(score - mNew);
        l[r] = l[r] * c + w;
#pragma unroll
        for (int e = 0; e < kE; ++e) acc[r][e] = acc[r][e] * c + w * v[e];
        m[r] = mNew;
      }
    }
  }
#pragma unroll
  for (int r = 0; r < kR; ++r) {
    if (lane == 0) {
      ms[group][r] = m[r];
      ls[group][r] = l[r];
    }
#pragma unroll
    for (int e = 0; e < kE; ++e) accs[group][r][lane * kE + e] = acc[r][e];
  }
  __syncthreads();
  for (int i = threadIdx.x; i < kR * kD; i += blockDim.x) {
    const int r = i / kD, e = i % kD;
    const PrefillRow ri =
        prefillRow(p.pieces, tr, r, kvHead, ratio, p.rowHeads, p.headOffset, p.window);
    if (ri.pos < 0) continue;
    float* out = p.partials + (static_cast<size_t>(ri.token) * p.numQHeads + ri.head) * (kD + 1);
    float mMax = negInf();
    for (int w = 0; w < kGroups; ++w) mMax = fmaxf(mMax, ms[w][r]);
    if (mMax == negInf()) {
      out[e] = 0.0f;
      if (e == 0) out[kD] = negInf();
      continue;
    }
    float sum = 0.0f, o = 0.0f;
    for (int w = 0; w < kGroups; ++w) {
      if (ms[w][r] == negInf()) continue;
      const float c = expf(ms[w][r] - mMax);
      sum += ls[w][r] * c;
      o += accs[w][r][e] * c;
    }
    out[e] = o / sum;
    if (e == 0) out[kD] = mMax + logf(sum);
  }
}

#endif

// One thread per unit (16, 4 or 2 bytes) of a row: row (r, t, j) of src to row (t, r * hk + j).
template <class U>
__global__ void attnHeadPermuteKernel(const AttnHeadPermuteParams p, int units, int64_t total) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int64_t row = i / units, perRank = static_cast<int64_t>(p.tokens) * p.headsPerRank;
  const int r = static_cast<int>(row / perRank);
  const int64_t rem = row % perRank, t = rem / p.headsPerRank;
  const int j = static_cast<int>(rem % p.headsPerRank);
  const int64_t to = t * (static_cast<int64_t>(p.nranks) * p.headsPerRank) +
                     static_cast<int64_t>(r) * p.headsPerRank + j;
  static_cast<U*>(p.dst)[to * units + i % units] = static_cast<const U*>(p.src)[i];
}

}  // namespace

sscResult_t launchAttnHeadPermute(const AttnHeadPermuteParams& p, void* stream) {
  const int64_t rows = static_cast<int64_t>(p.nranks) * p.tokens * p.headsPerRank;
  if (rows == 0) return sscSuccess;
  const uintptr_t align = reinterpret_cast<uintptr_t>(p.src) | reinterpret_cast<uintptr_t>(p.dst) |
                          static_cast<uintptr_t>(p.rowBytes);
  const int unit = align % 16 == 0 ? 16 : align % 4 == 0 ? 4 : 2;
  const int units = p.rowBytes / unit;
  const int64_t total = rows * units;
  const dim3 grid(static_cast<unsigned>((total + 255) / 256));
  auto s = static_cast<hipStream_t>(stream);
  if (unit == 16)
    attnHeadPermuteKernel<uint4><<<grid, 256, 0, s>>>(p, units, total);
  else if (unit == 4)
    attnHeadPermuteKernel<uint32_t><<<grid, 256, 0, s>>>(p, units, total);
  else
    attnHeadPermuteKernel<uint16_t><<<grid, 256, 0, s>>>(p, units, total);
  const hipError_t e = hipGetLastError();
  if (e != hipSuccess)
    return SSC_GPU_FAIL(e, "launching the head permute kernel ({} rows of {} bytes)", rows,
                        p.rowBytes);
  return sscSuccess;
}

sscResult_t launchAttnPrefill(const AttnPrefillParams& p, void* stream) {
  if (p.numTiles == 0) return sscSuccess;
  auto s = static_cast<hipStream_t>(stream);
  const bool half = p.kvDtype == sscFloat16;
#if defined(SSC_GPU_IS_CUDA)
  const dim3 grid((p.numTiles + kMmaWarps - 1) / kMmaWarps, p.kvHeads);
  const bool split = p.qDtype == sscFloat32;  // fp32 queries: hi + lo products, as the decode
#define SSC_PREFILL_MMA(D, H, S) attnPrefillMmaKernel<D, H, S><<<grid, kMmaThreads, 0, s>>>(p)
  if (p.headDim == 64) {
    if (half)
      split ? SSC_PREFILL_MMA(64, true, true) : SSC_PREFILL_MMA(64, true, false);
    else
      split ? SSC_PREFILL_MMA(64, false, true) : SSC_PREFILL_MMA(64, false, false);
  } else {
    if (half)
      split ? SSC_PREFILL_MMA(128, true, true) : SSC_PREFILL_MMA(128, true, false);
    else
      split ? SSC_PREFILL_MMA(128, false, true) : SSC_PREFILL_MMA(128, false, false);
  }
#undef SSC_PREFILL_MMA
#else
  const dim3 grid(p.numTiles, p.kvHeads);
  if (p.headDim == 64) {
    if (half)
      attnPrefillKernel<64, HalfTraits><<<grid, kPrefillThreads, 0, s>>>(p);
    else
      attnPrefillKernel<64, Bf16Traits><<<grid, kPrefillThreads, 0, s>>>(p);
  } else {
    if (half)
      attnPrefillKernel<128, HalfTraits><<<grid, kPrefillThreads, 0, s>>>(p);
    else
      attnPrefillKernel<128, Bf16Traits><<<grid, kPrefillThreads, 0, s>>>(p);
  }
#endif
  const hipError_t e = hipGetLastError();
  if (e != hipSuccess)
    return SSC_GPU_FAIL(e, "launching the prefill kernel ({} tiles, {} KV heads, head dim {})",
                        p.numTiles, p.kvHeads, p.headDim);
  return sscSuccess;
}

}  // namespace ssc::gpu
