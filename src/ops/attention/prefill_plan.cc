#include "src/ops/attention/prefill_plan.h"

#include <algorithm>

namespace ssc::attn {

void planPrefillChunks(const int32_t* cu, const int64_t* lengths, int batch, int64_t chunkTokens,
                       std::vector<PrefillChunk>* out) {
  out->clear();
  const int64_t total = batch > 0 ? cu[batch] : 0;
  int b = 0;
  for (int64_t first = 0; first < total; first += chunkTokens) {
    PrefillChunk c;
    c.firstToken = first;
    c.tokens = std::min(chunkTokens, total - first);
    const int64_t end = first + c.tokens;
    while (b < batch && cu[b + 1] <= first) ++b;  // sequences wholly before the chunk
    for (int s = b; s < batch && cu[s] < end; ++s) {
      const int64_t lo = std::max<int64_t>(cu[s], first), hi = std::min<int64_t>(cu[s + 1], end);
      if (lo >= hi) continue;  // no new token (or none in this chunk)
      const int64_t n = cu[s + 1] - cu[s];
      c.pieces.push_back({s, lo - first, hi - lo, lengths[s] - n + (lo - cu[s])});
    }
    out->push_back(std::move(c));
  }
}

void buildPrefillLists(const PageTable& table, const int32_t* seqIds, const PrefillChunk& chunk,
                       int ratio, int window, PrefillLists* out) {
  out->flat.clear();
  out->numPieces = static_cast<int>(chunk.pieces.size());
  std::vector<int32_t> spanInts;
  std::vector<PageSpan> spans;
  struct Tile {
    int32_t piece, row;
    int64_t lastPos;
  };
  std::vector<Tile> tiles;
  for (int i = 0; i < out->numPieces; ++i) {
    const PrefillPiece& p = chunk.pieces[i];
    spans.clear();
    table.spans(seqIds[p.b], prefillWindowStart(p.firstPos, window), &spans);
    const int32_t firstSpan = static_cast<int32_t>(spanInts.size() / 4);
    for (const PageSpan& s : spans) {
      spanInts.push_back(s.page);
      spanInts.push_back(s.rowBegin);
      spanInts.push_back(s.rowEnd);
      spanInts.push_back(static_cast<int32_t>(s.firstPosition));
    }
    for (int32_t v : {static_cast<int32_t>(p.firstToken), static_cast<int32_t>(p.tokens),
                      static_cast<int32_t>(p.firstPos), firstSpan,
                      static_cast<int32_t>(spanInts.size() / 4)})
      out->flat.push_back(v);
    const int64_t rows = p.tokens * ratio;
    for (int64_t r = 0; r < rows; r += kPrefillTileRows) {
      const int64_t last = std::min(rows, r + kPrefillTileRows) - 1;
      tiles.push_back({i, static_cast<int32_t>(r), p.firstPos + last / ratio});
    }
  }
  // Heaviest first; ties keep the tiles of a piece together (neighbouring warps share K/V).
  std::stable_sort(tiles.begin(), tiles.end(),
                   [](const Tile& a, const Tile& b) { return a.lastPos > b.lastPos; });
  out->numSpans = static_cast<int>(spanInts.size() / 4);
  out->numTiles = static_cast<int>(tiles.size());
  out->flat.insert(out->flat.end(), spanInts.begin(), spanInts.end());
  for (const Tile& t : tiles) {
    out->flat.push_back(t.piece);
    out->flat.push_back(t.row);
  }
}

size_t prefillListsBound(int64_t chunkTokens, int maxPieces, int ratio, int maxPages) {
  const size_t pieces = static_cast<size_t>(std::min<int64_t>(chunkTokens, maxPieces));
  const size_t tiles = static_cast<size_t>(chunkTokens) * ratio / kPrefillTileRows + pieces;
  return 5 * pieces + 4 * static_cast<size_t>(maxPages) + 2 * tiles;
}

}  // namespace ssc::attn
