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
  int b;               // index into the call's seq_ids
  int64_t firstToken;  // first of its tokens, counted from the chunk's first token
  int64_t tokens;
  int64_t firstPos;    // sequence position of that token
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

// The GPU kernel's lists for one chunk, flattened for one upload (int32):
//   pieces [n][5]: first token (chunk-relative), tokens, first position, first span, end span
//   spans  [s][4]: pool page, first row, end row, position of the first row (this rank's spans
//                  of the piece's sequence from the window start of its first token on)
//   tiles  [t][2]: piece, first row, where row r of a piece is its token r / ratio and query head
//                  (kv head) * ratio + r % ratio; 16 rows a tile, tiles ordered by their last
//                  token's position, largest first (causal: the longest KV ranges start first)
// Offsets of the three parts in `flat`: 0, 5n, 5n + 4s.
struct PrefillLists {
  std::vector<int32_t> flat;
  int numPieces = 0, numSpans = 0, numTiles = 0;
  size_t spansAt() const { return 5 * static_cast<size_t>(numPieces); }
  size_t tilesAt() const { return spansAt() + 4 * static_cast<size_t>(numSpans); }
};
constexpr int kPrefillTileRows = 16;
void buildPrefillLists(const PageTable& table, const int32_t* seqIds, const PrefillChunk& chunk,
                       int ratio, int window, PrefillLists* out);

// An upper bound of buildPrefillLists' ints for any chunk of at most chunkTokens tokens over
// maxPieces sequences, with ratio query heads per KV head, on a rank of maxPages pool pages.
size_t prefillListsBound(int64_t chunkTokens, int maxPieces, int ratio, int maxPages);

}  // namespace ssc::attn
