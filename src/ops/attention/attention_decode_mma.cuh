// SPDX-License-Identifier: MIT
// The decode partial-attention kernel on NVIDIA tensor cores (CUDA builds; included by
// attention_kernel.cu), on the step of attention_partial_mma.cuh.
//
// Each warp copies the 16-token steps ahead of the one it computes into its own ring of
// kDecodeStages slots with cp.async (no registers held, no wait until the data is needed), so
// the next step's loads are in flight while one step computes; warps never wait for each other
// until the epilogue. The first version loaded each step straight into registers and used it at
// once. What the H200 measurements said (70b, Nsight Compute on the whole GPU at 32K context,
// batch 8, and attention_perf at K = 8 and 1):
//  - the queries were the largest fixed cost: built behind a per-element type switch, a lane's
//    64 loads issued one after another: about 31 us a block, estimated from the 32K and 128K
//    timings (stageBlockQ);
//  - once loads run ahead, a step is bound by the warps' instruction issue, so warps per SM
//    matter more than depth: 2 slots at 3 blocks an SM beat 3 slots at 2 blocks by 10-23 %;
//  - the ring alone (3 slots, 2 blocks) halved the cycles between a warp's issues (15.3 -> 7.6)
//    but left the kernel's time unchanged until the two above were fixed.
//
// Bank conflicts: a fragment load reads 16-byte pieces of 2 rows (K) or 4 rows (V) at the same
// column in each quarter warp; rows are 128 or 256 bytes, so unswizzled they would share banks.
// The 16-byte piece c of row r is stored at c ^ attnDecodeSwizzle(r), which makes every quarter
// warp of both patterns, and of the copies, hit 8 distinct bank groups (attention_kernel.h).
#pragma once

#if defined(SSC_GPU_IS_CUDA)

#include "src/ops/attention/attention_finish.cuh"
#include "src/ops/attention/attention_partial_mma.cuh"

namespace ssc::gpu {
namespace {

constexpr int kDecodeStages = 2;
// Blocks an SM should hold: registers capped to fit them (168 at 128 threads), and the ring's
// 64 KiB (head dim 128) lets 3 fit. With fp32 queries, whose split products need more
// registers, 2 without spills.
constexpr int kDecodeBlocksPerSm = 3;

// Halves (2-byte elements) of one ring slot: K then V, 16 rows of kD.
template <int kD>
constexpr int decodeSlotElems() {
  return 2 * kMmaTokens * kD;
}

// Dynamic shared memory of the kernel: every warp's ring; the epilogue reuses it.
template <int kD>
constexpr size_t decodeSmemBytes() {
  return static_cast<size_t>(kMmaWarps) * kDecodeStages * decodeSlotElems<kD>() * 2;
}

__device__ __forceinline__ void cpAsync16(void* smem, const void* gmem, bool valid) {
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  // With a source size of 0 nothing is read and the 16 bytes are zero-filled (rows past a span).
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem),
               "r"(valid ? 16 : 0)
               : "memory");
}
__device__ __forceinline__ void cpAsyncCommit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int kPending>
__device__ __forceinline__ void cpAsyncWait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

// A warp's walk over its steps: span s (every `stride`-th from the first), 16 rows at a time.
// The next span's entry is loaded when the walk enters a span, a span's steps before it is
// needed, so that the step after a switch does not wait an L2 round trip for it (measured: 2 %
// of the kernel at 32K, batch 8).
struct DecodeCursor {
  int s, page, row, rowEnd;  // the current span and step
  int nPage, nRow, nRowEnd;  // span s + stride, when there is one

  __device__ __forceinline__ void fetchNext(const int32_t* spans, int stride, int end) {
    const int n = s + stride;
    if (n < end) {
      nPage = spans[3 * n];
      nRow = spans[3 * n + 1];
      nRowEnd = spans[3 * n + 2];
    }
  }
  // Positions the walk on span first (or past end).
  __device__ __forceinline__ void start(const int32_t* spans, int first, int stride, int end) {
    s = first;
    if (s < end) {
      page = spans[3 * s];
      row = spans[3 * s + 1];
      rowEnd = spans[3 * s + 2];
      fetchNext(spans, stride, end);
      if (row >= rowEnd) next(spans, stride, end);  // an empty span (the page lists hold none)
    }
  }
  __device__ __forceinline__ void next(const int32_t* spans, int stride, int end) {
    row += kMmaTokens;
    while (row >= rowEnd) {
      s += stride;
      if (s >= end) return;
      page = nPage;
      row = nRow;
      rowEnd = nRowEnd;
      fetchNext(spans, stride, end);
    }
  }
};

// Block (b, kv head, head chunk x split); the block's spans are dealt to its warps (span j to
// warp j % 4). Lane (g, t) = (lane / 4, lane % 4), the mma's groupID and thread-in-group; the
// fragment map is mmaAttendFragments'.
template <int kD, bool kHalf, bool kSplit>
__global__ void __launch_bounds__(kMmaThreads, kSplit ? 2 : kDecodeBlocksPerSm)
    attnDecodeMmaKernel(const AttnPartialParams p) {
  // Launched as a programmatic dependent (sscLaunchDependent): nothing before this wait.
  sscGridDependencyWait();
  constexpr int kSteps = kD / 16, kChunks = kD / 32, kHalves = kD / 64, kTiles = kD / 8;
  constexpr int kPieces = kD / 8;  // 16-byte pieces per row
  constexpr int kH = kAttnMaxHeadsPerBlock;
  static_assert(kH == 16, "the mma's 16 rows are the block's query heads");
  static_assert(static_cast<size_t>(kMmaWarps) * kH * kD * sizeof(float) <= decodeSmemBytes<kD>(),
                "the epilogue's accumulators fit in the ring");
  extern __shared__ __align__(16) unsigned char decodeSmem[];
  __shared__ float ms[kMmaWarps][kH];
  __shared__ float ls[kMmaWarps][kH];
  __shared__ float qs[kH][kD];  // the block's queries (zero past G)

  const PartialBlock blk = partialBlock(p);
  const int b = blk.b, kvHead = blk.kvHead, split = blk.split, head0 = blk.head0, G = blk.G;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  uint16_t* ring =
      reinterpret_cast<uint16_t*>(decodeSmem) + warp * kDecodeStages * decodeSlotElems<kD>();

  const uint16_t* kPool = static_cast<const uint16_t*>(p.kPool);
  const uint16_t* vPool = static_cast<const uint16_t*>(p.vPool);
  const int end = p.spanStart[b + 1], stride = kMmaWarps * p.splits;
  const int firstSpan = p.spanStart[b] + split + warp * p.splits;

  // The producer: copies the cursor's step into a slot (zero rows past its end), then moves on.
  DecodeCursor load;
  load.start(p.spans, firstSpan, stride, end);
  auto issue = [&](int slot) {
    if (load.s >= end) return;
    const int n = min(kMmaTokens, load.rowEnd - load.row);
    const size_t rowBase =
        (static_cast<size_t>(load.page) * p.numKvHeads + kvHead) * p.pageSize + load.row;
    const uint16_t* kSrc = kPool + rowBase * kD;
    const uint16_t* vSrc = vPool + rowBase * kD;
    uint16_t* kDst = ring + slot * decodeSlotElems<kD>();
    uint16_t* vDst = kDst + kMmaTokens * kD;
#pragma unroll
    for (int it = 0; it < kMmaTokens * kPieces / 32; ++it) {
      const int piece = it * 32 + lane, row = piece / kPieces, col = piece % kPieces;
      const int at = row * kD + (col ^ attnDecodeSwizzle(row)) * 8;
      const bool ok = row < n;
      cpAsync16(kDst + at, ok ? kSrc + row * kD + col * 8 : kSrc, ok);
      cpAsync16(vDst + at, ok ? vSrc + row * kD + col * 8 : vSrc, ok);
    }
    load.next(p.spans, stride, end);
  };

  // The ring's first copies, in flight while the queries load. Q fragments of heads g and g + 8
  // (zero past G), scaled later on the scores.
#pragma unroll
  for (int st = 0; st < kDecodeStages - 1; ++st) {
    issue(st);
    cpAsyncCommit();
  }
  stageBlockQ<kD, kMmaThreads>(p, b, head0, G, qs);
  __syncthreads();
  uint32_t qa[kSteps][4], ql[kSteps][4];
  mmaQFragments<kD, kHalf, kSplit>([&](int r, int e) { return qs[g + 8 * r][e]; }, t, qa, ql);

  float acc[kTiles][4];
#pragma unroll
  for (int n = 0; n < kTiles; ++n) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.0f;
  float m[2] = {negInf(), negInf()}, l[2] = {0.0f, 0.0f};  // m in log2 units
  const float scale2 = p.scale * 1.4426950408889634f;

  DecodeCursor use;
  use.start(p.spans, firstSpan, stride, end);
  int slot = 0;
  while (use.s < end) {
    // The slot computed last step is free (the __syncwarp below): refill it kDecodeStages - 1
    // steps ahead. Empty groups are committed too, so "all but the newest kDecodeStages - 1
    // groups done" always means "this step's copies done".
    issue(slot == 0 ? kDecodeStages - 1 : slot - 1);
    cpAsyncCommit();
    cpAsyncWait<kDecodeStages - 1>();
    __syncwarp();  // the other lanes' copies into this slot are visible

    const uint16_t* kS = ring + slot * decodeSlotElems<kD>();
    const uint16_t* vS = kS + kMmaTokens * kD;
    uint4 kr[2][kChunks], vr[4][kHalves];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int row = g + 8 * i;
#pragma unroll
      for (int c = 0; c < kChunks; ++c)
        kr[i][c] = *reinterpret_cast<const uint4*>(kS + row * kD +
                                                   ((4 * c + t) ^ attnDecodeSwizzle(row)) * 8);
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int row = 2 * t + (i & 1) + 8 * (i >> 1);
#pragma unroll
      for (int h = 0; h < kHalves; ++h)
        vr[i][h] = *reinterpret_cast<const uint4*>(vS + row * kD +
                                                   ((8 * h + g) ^ attnDecodeSwizzle(row)) * 8);
    }
    mmaAttendFragments<kD, kHalf, kSplit>(
        kr, vr, min(kMmaTokens, use.rowEnd - use.row), t, qa, ql, scale2,
        [](int, int) { return true; }, m, l, acc);
    __syncwarp();  // every lane has read the slot before any refills it
    use.next(p.spans, stride, end);
    slot = slot + 1 == kDecodeStages ? 0 : slot + 1;
  }
  cpAsyncWait<0>();  // only empty groups can be left; the ring is reused below
  __syncthreads();

  // The warps' states into shared memory (undoing the output-dim permutation), then merged.
  float(*accs)[kH][kD] = reinterpret_cast<float(*)[kH][kD]>(decodeSmem);
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
  }
  if (t == 0) {
    ms[warp][g] = m[0];
    ms[warp][g + 8] = m[1];
    ls[warp][g] = l[0];
    ls[warp][g + 8] = l[1];
  }
#pragma unroll
  for (int h = 0; h < kHalves; ++h)
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int d = 64 * h + 16 * t + j;
      accs[warp][g][d] = acc[8 * h + j][0];
      accs[warp][g][d + 8] = acc[8 * h + j][1];
      accs[warp][g + 8][d] = acc[8 * h + j][2];
      accs[warp][g + 8][d + 8] = acc[8 * h + j][3];
    }
  __syncthreads();

  emitBlockRows<kD, kMmaWarps, kH, true>(p, split, b, head0, G, ms, ls, accs);
  finishPartialRows<kD>(p, b, head0, G);
}

}  // namespace
}  // namespace ssc::gpu

#endif  // SSC_GPU_IS_CUDA
