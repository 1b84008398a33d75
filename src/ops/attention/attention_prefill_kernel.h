// SPDX-License-Identifier: MIT
// The partial-attention kernel of a prefill (src/ops/attention/gpu_ops.cc drives it): this
// rank's causal partial attention of a chunk of query tokens over its KV pages, per (token,
// query head) row an output and its LSE, merged afterwards like a decode's partials. Plain
// declarations: g++ includes this header.
#pragma once

#include <cstddef>
#include <cstdint>

#include "starscream/starscream.h"

namespace ssc::gpu {

// Pools one prefill launch can read (the kernel keeps their table in shared memory).
constexpr int kAttnPrefillMaxPools = 64;

struct AttnPrefillParams {
  // The pools the spans name ([page][kv head][row][headDim], 2-byte elements), a table in
  // device memory: pools[i] the K pool of a span whose pool field is i, pools[numPools + i] its
  // V pool. This rank's alone (partials), or every rank's as mapped here, by rank (KV side).
  const void* const* pools;
  int numPools;   // 1 .. kAttnPrefillMaxPools
  int kvDtype;    // sscFloat16 or sscBfloat16
  const void* q;  // [token][numQHeads][headDim] from the chunk's first token
  int qDtype;     // sscFloat32, sscFloat16 or sscBfloat16
  // The lists of src/ops/attention/prefill_plan.h (buildPrefillLists), on the device.
  const int32_t* pieces;  // [piece][5]: first token, tokens, first position, first span, end span
  const int32_t*
      spans;  // [span][5]: pool page, first row, end row, position of the first row, pool
  const int32_t* tiles;  // [tile][2]: piece, first row (row = token * rowHeads + head - headOffset)
  int numTiles;
  int numQHeads;
  int numKvHeads;
  // The KV heads this launch runs (the grid's y) and, per KV head, the query heads it computes:
  // rowHeads of them from kvHead * ratio + headOffset (all: first 0, numKvHeads, ratio, 0).
  int kvHeadFirst;
  int kvHeads;
  int rowHeads;
  int headOffset;
  int headDim;  // 64 or 128
  int pageSize;
  float scale;
  int window;       // 0: causal over everything; else the last `window` positions
  float* partials;  // [token][numQHeads][headDim + 1]: output then LSE (-inf: empty)
};

// Rows of (token, query head) one warp (CUDA) or block (HIP) takes: prefill_plan.h's tiles.
constexpr int kAttnPrefillTileRows = 16;

// Launches on `stream`; fails with sscUnhandledDeviceError (SSC_GPU_FAIL) where the launch does,
// as launchAttnHeadPermute below.
sscResult_t launchAttnPrefill(const AttnPrefillParams& p, void* stream);

// The head slices of every rank, all-gathered as [rank][token][headsPerRank] rows of rowBytes,
// into [token][rank * headsPerRank + j] rows: a prefill's merged output (rows of headDim
// elements) or its LSE (rows of one float) in the caller's layout. rowBytes a multiple of 2.
struct AttnHeadPermuteParams {
  const void* src;
  void* dst;
  int nranks;
  int tokens;
  int headsPerRank;
  int rowBytes;
};
sscResult_t launchAttnHeadPermute(const AttnHeadPermuteParams& p, void* stream);

}  // namespace ssc::gpu
