// SPDX-License-Identifier: MIT
// The index arithmetic of the prefill kernel (attention_prefill_kernel.cu), shared with the
// host so CI can walk it without a GPU (tests/ops/attention/test_prefill_plan.cc): which
// (token, head) rows a tile holds, which key positions they may see, and which rows of a span a
// tile walks. Inputs are the lists of src/ops/attention/prefill_plan.h.
#pragma once

#include <cstdint>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define SSC_PREFILL_HD \
  __host__ __device__ inline  // not __forceinline__: HIP defines it in gpu_runtime.h
#else
#define SSC_PREFILL_HD inline
#endif

namespace ssc::gpu {

// Ints per span of the lists: pool page, first row, end row, position of the first row, and
// which pool of the kernel's table holds the page (prefill_plan.h).
constexpr int kPrefillSpanInts = 5;

// A tile's rows and the key positions any of them sees: [lo, hi]. A piece has `width` rows a
// token for each KV head the kernel runs: the query heads of that KV head this call computes
// (every one of the group, or one rank's share of it when the ranks split the heads).
struct PrefillTile {
  int piece, firstRow, rows;  // rows of the piece: tokens x width
  int pos0;                   // position of the piece's first token
  int lo, hi;
};

SSC_PREFILL_HD int prefillWindowFirst(int pos, int window) {
  return window > 0 && pos + 1 > window ? pos + 1 - window : 0;
}

// tiles [t][2], pieces [n][5] as AttnPrefillParams; rows of 16.
SSC_PREFILL_HD PrefillTile prefillTile(const int32_t* tiles, const int32_t* pieces, int tile,
                                       int width, int window) {
  PrefillTile r;
  r.piece = tiles[2 * tile];
  r.firstRow = tiles[2 * tile + 1];
  const int32_t* pc = pieces + 5 * r.piece;
  r.rows = pc[1] * width;
  r.pos0 = pc[2];
  const int end = r.firstRow + 16 < r.rows ? r.firstRow + 16 : r.rows;
  r.hi = r.pos0 + (end - 1) / width;
  r.lo = prefillWindowFirst(r.pos0 + r.firstRow / width, window);
  return r;
}

// Row i (0..15) of the tile: its token (round-relative), query head, position and first
// visible position; a row past the piece has position -1 (sees nothing, written nowhere).
// Row r of a KV head's rows is token r / width, query head kvHead * ratio + offset + r % width
// (offset: the first computed head's place in its group).
struct PrefillRow {
  int token, head, pos, start;
};
SSC_PREFILL_HD PrefillRow prefillRow(const int32_t* pieces, const PrefillTile& t, int i, int kvHead,
                                     int ratio, int width, int offset, int window) {
  const int row = t.firstRow + i;
  if (row >= t.rows) return {0, 0, -1, 0};
  const int tok = row / width;
  PrefillRow r;
  r.token = pieces[5 * t.piece] + tok;
  r.head = kvHead * ratio + offset + row % width;
  r.pos = t.pos0 + tok;
  r.start = prefillWindowFirst(r.pos, window);
  return r;
}

SSC_PREFILL_HD bool prefillSees(const PrefillRow& r, int keyPos) {
  return keyPos <= r.pos && keyPos >= r.start;
}

// The rows [from, to) of span s ([page, first row, end row, first position, pool]) the tile walks;
// stop: this and every later span (they come in position order) lie past the tile.
struct PrefillSpanRows {
  bool stop;
  int from, to;  // from >= to: nothing here
  int firstPos;  // position of row `from`
};
SSC_PREFILL_HD PrefillSpanRows prefillSpanRows(const int32_t* span, const PrefillTile& t) {
  const int rb = span[1], re = span[2], fp = span[3];
  PrefillSpanRows r{fp > t.hi, 0, 0, 0};
  if (r.stop || fp + (re - rb) - 1 < t.lo) return r;
  r.from = rb + (t.lo > fp ? t.lo - fp : 0);
  r.to = rb + (re - rb < t.hi - fp + 1 ? re - rb : t.hi - fp + 1);
  r.firstPos = fp + (r.from - rb);
  return r;
}

}  // namespace ssc::gpu
