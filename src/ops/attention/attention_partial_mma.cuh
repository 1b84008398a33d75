// SPDX-License-Identifier: MIT
// The tensor-core attention step shared by the decode kernel (attention_decode_mma.cuh) and the
// prefill kernel (attention_prefill_kernel.cu), CUDA builds only (sm_80+, mma.sync m16n8k16 with
// fp32 accumulation); HIP builds keep the portable fp32 kernels. Why tensor cores: at GQA 8 a KV
// element feeds 8 multiply-adds for QK and 8 for PV, which at HBM speed is more than half of the
// fp32 units' issue rate once the per-token reductions are counted (measured: the fp32 kernel
// reached 0.4 TB/s of the H200's ~4.3). A warp takes 16 tokens at a time: S = Q K^T is two mma
// per 16 dims (the 16 mma rows are query heads or (token, head) rows, padded), the online
// softmax runs on the accumulator fragments, and P V is one mma per 8 output dims, so each KV
// byte is loaded once, in 16-byte pieces, into the registers the mma reads.
//
// Both operands can be permuted along the reduction dimension as long as both use the same
// permutation, and the output dims can be permuted if the write-back undoes it: that lets every
// lane load whole 16-byte pieces of K and V rows (no transposes but a byte permute for V),
// from global memory (prefill) or from a shared-memory ring the decode kernel fills ahead.
//
// Precision: K and V are exact in bf16/fp16. Q and P are rounded to the KV type; when the
// caller's queries are fp32 (kSplit) both are split into a high and a low part and each product
// is two mma, which keeps the result within fp32 accumulation error (the test's 1e-4).
#pragma once

#if defined(SSC_GPU_IS_CUDA)

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace ssc::gpu {
namespace {

constexpr int kMmaThreads = 128;
constexpr int kMmaWarps = kMmaThreads / 32;
constexpr int kMmaTokens = 16;  // tokens per warp step (the mma's k for P V)

template <bool kHalf>
__device__ __forceinline__ uint32_t packPair(float lo, float hi) {
  uint32_t r;
  if constexpr (kHalf) {
    const __half2 v = __floats2half2_rn(lo, hi);
    memcpy(&r, &v, 4);
  } else {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    memcpy(&r, &v, 4);
  }
  return r;
}

template <bool kHalf>
__device__ __forceinline__ float2 unpackPair(uint32_t u) {
  if constexpr (kHalf) {
    __half2 v;
    memcpy(&v, &u, 4);
    return __half22float2(v);
  } else {
    __nv_bfloat162 v;
    memcpy(&v, &u, 4);
    return __bfloat1622float2(v);
  }
}

// hi = (a, b) rounded; lo = what the rounding lost, rounded (zero unless kSplit).
template <bool kHalf, bool kSplit>
__device__ __forceinline__ void splitPair(float a, float b, uint32_t& hi, uint32_t& lo) {
  hi = packPair<kHalf>(a, b);
  if constexpr (kSplit) {
    const float2 h = unpackPair<kHalf>(hi);
    lo = packPair<kHalf>(a - h.x, b - h.y);
  } else {
    lo = 0;
  }
}

// c += a * b for one m16n8k16 tile (row-major A, column-major B, fp32 C).
template <bool kHalf>
__device__ __forceinline__ void mma16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1) {
  if constexpr (kHalf) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

__device__ __forceinline__ uint32_t word(const uint4& u, int i) {
  return i == 0 ? u.x : i == 1 ? u.y : i == 2 ? u.z : u.w;
}

__device__ __forceinline__ uint4 loadOrZero(const uint16_t* p, bool ok) {
  return ok ? *reinterpret_cast<const uint4*>(p) : make_uint4(0, 0, 0, 0);
}

// Q fragments of mma rows g and g + 8 (qAt(0, dim) and qAt(1, dim) give their values; zero for
// rows that hold no query), split into high and low parts where kSplit.
template <int kD, bool kHalf, bool kSplit, class QAt>
__device__ __forceinline__ void mmaQFragments(const QAt& qAt, int t, uint32_t (&qa)[kD / 16][4],
                                              uint32_t (&ql)[kD / 16][4]) {
  constexpr int kChunks = kD / 32;
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
    float x0[8], x1[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      x0[e] = qAt(0, 32 * c + 8 * t + e);
      x1[e] = qAt(1, 32 * c + 8 * t + e);
    }
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
      const int s = 2 * c + hf, o = 4 * hf;
      splitPair<kHalf, kSplit>(x0[o], x0[o + 1], qa[s][0], ql[s][0]);
      splitPair<kHalf, kSplit>(x1[o], x1[o + 1], qa[s][1], ql[s][1]);
      splitPair<kHalf, kSplit>(x0[o + 2], x0[o + 3], qa[s][2], ql[s][2]);
      splitPair<kHalf, kSplit>(x1[o + 2], x1[o + 3], qa[s][3], ql[s][3]);
    }
  }
}

// One warp step over n <= 16 keys whose fragments are already in registers (kr: K rows g and
// g + 8 at dims [32c + 8t, +8); vr: V rows 2t, 2t + 1, 2t + 8, 2t + 9 at dims [64h + 8g, +8);
// rows past n zero): S = Q K^T in log2 units, keys past n or that visible(row, col) rejects
// (row 0: mma row g, 1: g + 8; col: the key's index in the step) masked to -inf, the online
// softmax of the lane's two rows (m, l: this lane's share of l), acc rescaled, then acc += P V.
// A row that has seen no key yet keeps m = -inf, its exponentials taken against 0 (all zero).
// The decode and prefill kernels differ only in `visible` and in where the fragments come from.
template <int kD, bool kHalf, bool kSplit, class Visible>
__device__ __forceinline__ void mmaAttendFragments(const uint4 (&kr)[2][kD / 32],
                                                   const uint4 (&vr)[4][kD / 64], int n, int t,
                                                   const uint32_t (&qa)[kD / 16][4],
                                                   const uint32_t (&ql)[kD / 16][4], float scale2,
                                                   const Visible& visible, float (&m)[2],
                                                   float (&l)[2], float (&acc)[kD / 8][4]) {
  constexpr int kSteps = kD / 16, kHalves = kD / 64, kTiles = kD / 8;
  float sc[2][4];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    sc[i][0] = sc[i][1] = sc[i][2] = sc[i][3] = 0.0f;
#pragma unroll
    for (int st = 0; st < kSteps; ++st) {
      const uint32_t b0 = word(kr[i][st / 2], 2 * (st % 2)),
                     b1 = word(kr[i][st / 2], 2 * (st % 2) + 1);
      mma16816<kHalf>(sc[i], qa[st], b0, b1);
      if constexpr (kSplit) mma16816<kHalf>(sc[i], ql[st], b0, b1);
    }
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int col = 8 * i + 2 * t + (e & 1);
      sc[i][e] = col < n && visible(e >> 1, col) ? sc[i][e] * scale2 : negInf();
    }
  }

  // Online softmax per row (r = 0: row g, 1: row g + 8); a row's 16 scores are spread over the
  // 4 lanes of the group.
  float corr[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float mx = fmaxf(fmaxf(sc[0][2 * r], sc[0][2 * r + 1]), fmaxf(sc[1][2 * r], sc[1][2 * r + 1]));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float mNew = fmaxf(m[r], mx);
    const float mUse = mNew == negInf() ? 0.0f : mNew;
    corr[r] = exp2f(m[r] - mUse);  // 0 on a row's first visible step (m = -inf)
    m[r] = mNew;
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        sc[i][2 * r + e] = exp2f(sc[i][2 * r + e] - mUse);
        sum += sc[i][2 * r + e];
      }
    l[r] = l[r] * corr[r] + sum;  // this lane's share; the group's lanes are summed at the end
  }
  // Once a row's maximum has settled (most steps of a long span) corr is exactly 1: the warp
  // skips the 2 x kD / 8 multiplies of the rescale when that holds for all its rows, a warp-
  // uniform branch (the instruction issue, not memory, bounds a step once its loads are in
  // flight ahead, as Nsight Compute showed on the H200).
  if (!__all_sync(0xffffffffu, corr[0] == 1.0f && corr[1] == 1.0f)) {
#pragma unroll
    for (int nt = 0; nt < kTiles; ++nt) {
      acc[nt][0] *= corr[0];
      acc[nt][1] *= corr[0];
      acc[nt][2] *= corr[1];
      acc[nt][3] *= corr[1];
    }
  }

  uint32_t pa[4], pl[4];
  splitPair<kHalf, kSplit>(sc[0][0], sc[0][1], pa[0], pl[0]);
  splitPair<kHalf, kSplit>(sc[0][2], sc[0][3], pa[1], pl[1]);
  splitPair<kHalf, kSplit>(sc[1][0], sc[1][1], pa[2], pl[2]);
  splitPair<kHalf, kSplit>(sc[1][2], sc[1][3], pa[3], pl[3]);
#pragma unroll
  for (int h = 0; h < kHalves; ++h)
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int w = j / 2;
      const uint32_t sel = (j & 1) ? 0x7632u : 0x5410u;
      const uint32_t b0 = __byte_perm(word(vr[0][h], w), word(vr[1][h], w), sel);
      const uint32_t b1 = __byte_perm(word(vr[2][h], w), word(vr[3][h], w), sel);
      mma16816<kHalf>(acc[8 * h + j], pa, b0, b1);
      if constexpr (kSplit) mma16816<kHalf>(acc[8 * h + j], pl, b0, b1);
    }
}

// The same step with the fragments loaded straight from global memory (K and V rows at kb and
// vb; rows past n never read): every load of the step first, 16 x 16 bytes per lane in flight.
template <int kD, bool kHalf, bool kSplit, class Visible>
__device__ __forceinline__ void mmaAttendStep(const uint16_t* kb, const uint16_t* vb, int n, int g,
                                              int t, const uint32_t (&qa)[kD / 16][4],
                                              const uint32_t (&ql)[kD / 16][4], float scale2,
                                              const Visible& visible, float (&m)[2], float (&l)[2],
                                              float (&acc)[kD / 8][4]) {
  constexpr int kChunks = kD / 32, kHalves = kD / 64;
  uint4 kr[2][kChunks], vr[4][kHalves];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int c = 0; c < kChunks; ++c)
      kr[i][c] = loadOrZero(kb + (g + 8 * i) * kD + 32 * c + 8 * t, g + 8 * i < n);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int row = 2 * t + (i & 1) + 8 * (i >> 1);
#pragma unroll
    for (int h = 0; h < kHalves; ++h)
      vr[i][h] = loadOrZero(vb + row * kD + 64 * h + 8 * g, row < n);
  }
  mmaAttendFragments<kD, kHalf, kSplit>(kr, vr, n, t, qa, ql, scale2, visible, m, l, acc);
}

}  // namespace
}  // namespace ssc::gpu

#endif  // SSC_GPU_IS_CUDA
