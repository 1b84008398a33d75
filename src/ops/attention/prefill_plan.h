// SPDX-License-Identifier: MIT
// How a prefill call is cut into work (pure host logic, unit-tested in CI): the call's query
// tokens in chunks that fit the cache's exchange scratch, each chunk's pieces (the part of one
// sequence's new tokens inside it, with the position of its first token), and for the GPU
// kernel the flattened lists it walks: pieces, this rank's spans with their positions, and
// 16-row tiles of (token, query head) rows, heaviest first.
#pragma once

#include <cstdint>
#include <vector>

#include "src/ops/attention/paging.h"

namespace ssc::attn {

struct PrefillPiece {
  int b;               // index into the call's seqIds
  int64_t firstToken;  // first of its tokens, counted from the chunk's first token
  int64_t tokens;
  int64_t firstPos;  // sequence position of that token
};

struct PrefillChunk {
  int64_t firstToken;  // counted from the call's first token (a row of q / out)
  int64_t tokens;
  std::vector<PrefillPiece> pieces;
};

// Cuts tokens [0, cu[batch]) into chunks of at most chunkTokens (>= 1). lengths[b] is sequence
// b's current length (its chunk already appended): token i of sequence b sits at position
// lengths[b] - (cu[b + 1] - cu[b]) + i. Sequences without new tokens give no piece.
void planPrefillChunks(const int32_t* cu, const int64_t* lengths, int batch, int64_t chunkTokens,
                       std::vector<PrefillChunk>* out);

// First position a query at position pos attends to under window (0: all).
inline int64_t prefillWindowStart(int64_t pos, int window) {
  return window > 0 && pos + 1 > window ? pos + 1 - window : 0;
}

// How a prefill round splits its rows over the ranks (docs/attention.md, "How a prefill runs"):
// - partials: every rank computes every (token, query head) row over the KV pages it owns;
//   the ranks' partials are then exchanged and merged (the decode's exchange);
// - KV side: each rank computes the rows of its H / K query heads over every rank's pages,
//   read in place through the peers' mapped pools; its rows are final (no merge), and only
//   the finished rows move (or none, with sharded output heads).
// Both read every visible KV row once per 16-row tile; KV side trades the exchange of
// partials (K x (d + 1) x 4 bytes a row) for fewer, longer tiles per rank, which is the better
// trade once each rank still has enough tiles to fill its SMs.
enum class PrefillMode { kAuto = 0, kPartials = 1, kKvSide = 2 };

struct PrefillSplit {
  bool kvSide = false;
  int firstHead = 0, heads = 0;  // the query heads this rank computes: [firstHead, + heads)
  // The kernel's view of them: KV heads [kvFirst, + kvHeads), and of each, `width` query heads
  // from its group's offset `offset` (row r of a token: head kv * ratio + offset + r % width).
  int kvFirst = 0, kvHeads = 0, width = 0, offset = 0;
};

// The split of one round of `tokens` query tokens with numQHeads heads. KV side needs mapped
// pools, several ranks, heads that divide over them, and each rank's share of a KV group
// either whole groups or a divisor of one (so every KV head the rank runs has the same width).
// kAuto takes it when this rank's rows (tokens x H / K) fill at least half of `warpSlots` tiles
// of 16 rows (warpSlots: tiles the rank runs at once; 0: always, where nothing else bounds it).
// kKvSide where it cannot run falls back to partials (*why says why; may be null).
PrefillSplit choosePrefillSplit(PrefillMode mode, bool poolsMapped, int nranks, int rank,
                                int numQHeads, int numKvHeads, int64_t tokens, int64_t warpSlots,
                                const char** why = nullptr);

// The GPU kernel's lists for one chunk, flattened for one upload (int32):
//   pieces [n][5]: first token (chunk-relative), tokens, first position, first span, end span
//   spans  [s][5]: pool page, first row, end row, position of the first row, and the index in
//                  `tables` of the table (the pool) holding it: the spans of the piece's
//                  sequence in the given tables, from the window start of its first token on,
//                  in position order whatever their pools
//   tiles  [t][2]: piece, first row, where row r of a piece is its token r / width and query
//                  head (kv head) * ratio + offset + r % width (PrefillSplit); 16 rows a tile,
//                  tiles ordered by their last token's position, largest first (causal: the
//                  longest KV ranges start first)
// Offsets of the three parts in `flat`: 0, 5n, 5n + 5s.
struct PrefillLists {
  std::vector<int32_t> flat;
  int numPieces = 0, numSpans = 0, numTiles = 0;
  size_t spansAt() const { return 5 * static_cast<size_t>(numPieces); }
  size_t tilesAt() const { return spansAt() + kSpanInts * static_cast<size_t>(numSpans); }
  static constexpr size_t kSpanInts = 5;
};
constexpr int kPrefillTileRows = 16;
// tables: this rank's own table (partials), or every rank's in rank order (KV side,
// PeerPools::table), the order of the kernel's pool table.
void buildPrefillLists(const std::vector<const PageTable*>& tables, const int32_t* seqIds,
                       const PrefillChunk& chunk, int width, int window, PrefillLists* out);

// An upper bound of buildPrefillLists' ints for any chunk of at most chunkTokens tokens over
// maxPieces sequences, with `width` rows a token, over spanPages pool pages in all (one rank's
// maxPages, or every rank's).
size_t prefillListsBound(int64_t chunkTokens, int maxPieces, int width, int64_t spanPages);

}  // namespace ssc::attn
