// SPDX-License-Identifier: MIT
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

PrefillSplit choosePrefillSplit(PrefillMode mode, bool poolsMapped, int nranks, int rank,
                                int numQHeads, int numKvHeads, int64_t tokens, int64_t warpSlots,
                                const char** why) {
  const int ratio = numQHeads / numKvHeads;
  PrefillSplit all;
  all.heads = numQHeads;
  all.kvHeads = numKvHeads;
  all.width = ratio;
  const char* no = nullptr;
  const int hk = nranks > 0 ? numQHeads / nranks : 0;
  if (mode == PrefillMode::kPartials)
    no = "partials asked for";
  else if (nranks < 2)
    no = "one rank";
  else if (!poolsMapped)
    no = "the peers' pools are not mapped";
  else if (numQHeads % nranks != 0)
    no = "the query heads do not divide over the ranks";
  else if (hk % ratio != 0 && ratio % hk != 0)
    no = "a rank's heads straddle KV groups unevenly";
  else if (mode == PrefillMode::kAuto && warpSlots > 0 &&
           tokens * hk < int64_t{kPrefillTileRows} * warpSlots / 2)
    no = "too few rows a rank to fill its SMs";
  if (why != nullptr) *why = no;
  if (no != nullptr) return all;
  PrefillSplit s;
  s.kvSide = true;
  s.firstHead = rank * hk;
  s.heads = hk;
  s.kvFirst = s.firstHead / ratio;
  if (hk >= ratio) {
    s.kvHeads = hk / ratio;
    s.width = ratio;
    s.offset = 0;
  } else {
    s.kvHeads = 1;
    s.width = hk;
    s.offset = s.firstHead % ratio;
  }
  return s;
}

void buildPrefillLists(const std::vector<const PageTable*>& tables, const int32_t* seqIds,
                       const PrefillChunk& chunk, int width, int window, PrefillLists* out) {
  out->flat.clear();
  out->numPieces = static_cast<int>(chunk.pieces.size());
  std::vector<int32_t> spanInts;
  struct OwnedSpan {
    PageSpan s;
    int32_t owner;
  };
  std::vector<OwnedSpan> owned;
  std::vector<PageSpan> spans;
  struct Tile {
    int32_t piece, row;
    int64_t lastPos;
  };
  std::vector<Tile> tiles;
  for (int i = 0; i < out->numPieces; ++i) {
    const PrefillPiece& p = chunk.pieces[i];
    owned.clear();
    for (const PageTable* const& t : tables) {
      spans.clear();
      t->spans(seqIds[p.b], prefillWindowStart(p.firstPos, window), &spans);
      for (const PageSpan& s : spans)
        owned.push_back({s, static_cast<int32_t>(&t - tables.data())});
    }
    // The kernel stops at the first span past a tile: position order across owners (the
    // owners' positions never overlap, each table's spans are in order already).
    if (tables.size() > 1)
      std::sort(owned.begin(), owned.end(), [](const OwnedSpan& a, const OwnedSpan& b) {
        return a.s.firstPosition < b.s.firstPosition;
      });
    const int32_t firstSpan = static_cast<int32_t>(spanInts.size() / PrefillLists::kSpanInts);
    for (const OwnedSpan& o : owned)
      for (int32_t v :
           {o.s.page, o.s.rowBegin, o.s.rowEnd, static_cast<int32_t>(o.s.firstPosition), o.owner})
        spanInts.push_back(v);
    for (int32_t v : {static_cast<int32_t>(p.firstToken), static_cast<int32_t>(p.tokens),
                      static_cast<int32_t>(p.firstPos), firstSpan,
                      static_cast<int32_t>(spanInts.size() / PrefillLists::kSpanInts)})
      out->flat.push_back(v);
    const int64_t rows = p.tokens * width;
    for (int64_t r = 0; r < rows; r += kPrefillTileRows) {
      const int64_t last = std::min(rows, r + kPrefillTileRows) - 1;
      tiles.push_back({i, static_cast<int32_t>(r), p.firstPos + last / width});
    }
  }
  // Heaviest first; ties keep the tiles of a piece together (neighbouring warps share K/V).
  std::stable_sort(tiles.begin(), tiles.end(),
                   [](const Tile& a, const Tile& b) { return a.lastPos > b.lastPos; });
  out->numSpans = static_cast<int>(spanInts.size() / PrefillLists::kSpanInts);
  out->numTiles = static_cast<int>(tiles.size());
  out->flat.insert(out->flat.end(), spanInts.begin(), spanInts.end());
  for (const Tile& t : tiles) {
    out->flat.push_back(t.piece);
    out->flat.push_back(t.row);
  }
}

size_t prefillListsBound(int64_t chunkTokens, int maxPieces, int width, int64_t spanPages) {
  const size_t pieces = static_cast<size_t>(std::min<int64_t>(chunkTokens, maxPieces));
  const size_t tiles = static_cast<size_t>(chunkTokens) * width / kPrefillTileRows + pieces;
  return 5 * pieces + PrefillLists::kSpanInts * static_cast<size_t>(spanPages) + 2 * tiles;
}

}  // namespace ssc::attn
