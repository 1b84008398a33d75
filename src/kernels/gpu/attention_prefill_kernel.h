// The partial-attention kernel of a prefill (src/ops/attention/gpu_ops.cc drives it): this
// rank's causal partial attention of a chunk of query tokens over its KV pages, per (token,
// query head) row an output and its LSE, merged afterwards like a decode's partials. Plain
// declarations: g++ includes this header.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ssc::gpu {

struct AttnPrefillParams {
  const void* kPool;        // [page][kv head][row][head_dim], 2-byte elements
  const void* vPool;
  int kvDtype;              // sscFloat16 or sscBfloat16
  const void* q;            // [token][numQHeads][head_dim] from the chunk's first token
  int qDtype;               // sscFloat32, sscFloat16 or sscBfloat16
  // The lists of src/ops/attention/prefill_plan.h (buildPrefillLists), on the device.
  const int32_t* pieces;    // [piece][5]: first token, tokens, first position, first span, end span
  const int32_t* spans;     // [span][4]: pool page, first row, end row, position of the first row
  const int32_t* tiles;     // [tile][2]: piece, first row (row = token * ratio + head in group)
  int numTiles;
  int numQHeads;
  int numKvHeads;
  int headDim;              // 64 or 128
  int pageSize;
  float scale;
  int window;               // 0: causal over everything; else the last `window` positions
  float* partials;          // [token][numQHeads][head_dim + 1]: output then LSE (-inf: empty)
};

// Rows of (token, query head) one warp (CUDA) or block (HIP) takes: prefill_plan.h's tiles.
constexpr int kAttnPrefillTileRows = 16;

// Each returns 0 or the runtime's launch error.
int launchAttnPrefill(const AttnPrefillParams& p, void* stream);

// The head slices of every rank, all-gathered as [rank][token][headsPerRank] rows of rowBytes,
// into [token][rank * headsPerRank + j] rows: a prefill's merged output (rows of head_dim
// elements) or its LSE (rows of one float) in the caller's layout. rowBytes a multiple of 2.
struct AttnHeadPermuteParams {
  const void* src;
  void* dst;
  int nranks;
  int tokens;
  int headsPerRank;
  int rowBytes;
};
int launchAttnHeadPermute(const AttnHeadPermuteParams& p, void* stream);

}  // namespace ssc::gpu
