// SPDX-License-Identifier: MIT
// The prefill plan (prefill_plan.h): chunks cover every query token once, in order, with each
// token's sequence position; the GPU lists give every (token, head-in-group) row of every piece
// to exactly one tile, heaviest tiles first, and this rank's spans with their positions. And the
// GPU kernel's walk (attention_prefill_rows.h), replayed on the host for both splits of the
// rows over the ranks (prefill_plan.h): partials, where every (token, head) row sees exactly
// this rank's keys at positions [max(0, p + 1 - window), p], and KV side, where each rank's
// heads see every rank's keys there; and the rule that chooses the split.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "src/ops/attention/attention_prefill_rows.h"
#include "src/ops/attention/prefill_plan.h"

using namespace ssc::attn;

TEST(AttnPrefillPlan, ChunksCoverEveryTokenOnceWithItsPosition) {
  const std::vector<int32_t> cu = {0, 5, 5, 6, 20};     // 5, 0, 1, 14 new tokens
  const std::vector<int64_t> lengths = {5, 3, 40, 14};  // seq 2: 39 cached before its one
  for (int64_t chunk : {1, 2, 3, 7, 20, 100}) {
    std::vector<PrefillChunk> chunks;
    planPrefillChunks(cu.data(), lengths.data(), 4, chunk, &chunks);
    ASSERT_EQ(chunks.size(), static_cast<size_t>((20 + chunk - 1) / chunk)) << chunk;
    std::vector<std::pair<int, int64_t>> seen;  // (b, position) per global token
    int64_t next = 0;
    for (const PrefillChunk& c : chunks) {
      EXPECT_EQ(c.firstToken, next);
      EXPECT_LE(c.tokens, chunk);
      int64_t inChunk = 0;
      for (const PrefillPiece& p : c.pieces) {
        EXPECT_EQ(p.firstToken, inChunk) << "pieces tile the chunk in order";
        EXPECT_GT(p.tokens, 0);
        for (int64_t t = 0; t < p.tokens; ++t) seen.push_back({p.b, p.firstPos + t});
        inChunk += p.tokens;
      }
      EXPECT_EQ(inChunk, c.tokens);
      next += c.tokens;
    }
    std::vector<std::pair<int, int64_t>> want;
    for (int b = 0; b < 4; ++b)
      for (int t = 0; t < cu[b + 1] - cu[b]; ++t)
        want.push_back({b, lengths[b] - (cu[b + 1] - cu[b]) + t});
    EXPECT_EQ(seen, want) << chunk;
  }
  std::vector<PrefillChunk> none;
  const std::vector<int32_t> empty = {0, 0};
  planPrefillChunks(empty.data(), lengths.data(), 1, 4, &none);
  EXPECT_TRUE(none.empty());
}

TEST(AttnPrefillPlan, TilesCoverEveryRowOnceHeaviestFirst) {
  Placement pl;
  pl.nranks = 3;
  pl.pageSize = 4;
  for (int rank = 0; rank < 3; ++rank) {
    PageTable table(pl, rank, 4, 64);
    std::vector<int32_t> seqs;
    for (int s = 0; s < 3; ++s)
      for (int t = 0; t < 10 + 13 * s; ++t) seqs.push_back(s);
    std::vector<TokenSlot> slots;
    ASSERT_EQ(table.append("test", seqs.data(), static_cast<int>(seqs.size()), &slots), sscSuccess);
    const int32_t ids[] = {2, 0, 1};
    const std::vector<int32_t> cu = {0, 30, 31, 34};  // seq 2: 30 of 36 new, seq 0: 1, seq 1: 3
    const std::vector<int64_t> lengths = {36, 10, 23};
    std::vector<PrefillChunk> chunks;
    planPrefillChunks(cu.data(), lengths.data(), 3, 17, &chunks);
    for (int ratio : {1, 3, 8}) {
      for (int window : {0, 5}) {
        for (const PrefillChunk& c : chunks) {
          PrefillLists l;
          buildPrefillLists({&table}, ids, c, ratio, window, &l);
          ASSERT_EQ(l.numPieces, static_cast<int>(c.pieces.size()));
          ASSERT_EQ(l.flat.size(), l.tilesAt() + 2 * static_cast<size_t>(l.numTiles));
          EXPECT_LE(l.flat.size(), prefillListsBound(17, 3, ratio, 64));
          std::set<std::pair<int, int>> rows;
          int64_t lastPos = 1 << 30;
          for (int t = 0; t < l.numTiles; ++t) {
            const int piece = l.flat[l.tilesAt() + 2 * t], row = l.flat[l.tilesAt() + 2 * t + 1];
            const int32_t* p = &l.flat[5 * piece];
            const int rowsOfPiece = p[1] * ratio;
            const int last = std::min(rowsOfPiece, row + kPrefillTileRows) - 1;
            const int64_t pos = p[2] + last / ratio;
            EXPECT_LE(pos, lastPos) << "heaviest first";
            lastPos = pos;
            for (int r = row; r <= last; ++r) EXPECT_TRUE(rows.insert({piece, r}).second);
          }
          size_t want = 0;
          for (const PrefillPiece& p : c.pieces) want += p.tokens * ratio;
          EXPECT_EQ(rows.size(), want);
          for (int i = 0; i < l.numPieces; ++i) {  // spans: this rank's, from the window start
            const int32_t* p = &l.flat[5 * i];
            const int64_t from = prefillWindowStart(p[2], window);
            for (int s = p[3]; s < p[4]; ++s) {
              const int32_t* sp = &l.flat[l.spansAt() + PrefillLists::kSpanInts * s];
              EXPECT_GE(sp[3], from);
              EXPECT_EQ(pl.tokenOwner(ids[c.pieces[i].b], sp[3]), rank);
              EXPECT_EQ(sp[4], 0) << "the one table's pool";
              EXPECT_EQ(sp[3] % 4, sp[1]) << "first row <-> position within its page";
            }
          }
        }
      }
    }
  }
}

// The kernel's loop, step for step, over the lists of one rank's split: tile -> rows, spans
// clipped to the tile's range and walked 16 keys at a time, a key kept for a row when
// prefillSees says so. Returns (token, head) -> (owner rank, key position) pairs seen, the
// owner being the rank of the table (pool) the span names.
using Seen = std::map<std::pair<int, int>, std::set<std::pair<int, int>>>;
Seen walkKernel(const PrefillLists& l, const std::vector<const PageTable*>& tables,
                const PrefillSplit& split, int ratio, int window) {
  const int32_t* pieces = l.flat.data();
  const int32_t* spans = l.flat.data() + l.spansAt();
  const int32_t* tiles = l.flat.data() + l.tilesAt();
  Seen seen;
  for (int kvHead = split.kvFirst; kvHead < split.kvFirst + split.kvHeads; ++kvHead)
    for (int t = 0; t < l.numTiles; ++t) {
      const ssc::gpu::PrefillTile tile =
          ssc::gpu::prefillTile(tiles, pieces, t, split.width, window);
      ssc::gpu::PrefillRow rows[16];
      for (int i = 0; i < 16; ++i)
        rows[i] =
            ssc::gpu::prefillRow(pieces, tile, i, kvHead, ratio, split.width, split.offset, window);
      for (int i = 0; i < 16; ++i)
        if (rows[i].pos >= 0)
          seen[{rows[i].token, rows[i].head}];  // a row with no key is still a row
      const int32_t* pc = pieces + 5 * tile.piece;
      int lastPos = -1;
      for (int s = pc[3]; s < pc[4]; ++s) {
        const int32_t* sp = spans + ssc::gpu::kPrefillSpanInts * s;
        EXPECT_GT(sp[3], lastPos) << "spans in position order, whatever their owners";
        lastPos = sp[3];
        const ssc::gpu::PrefillSpanRows sr = ssc::gpu::prefillSpanRows(sp, tile);
        if (sr.stop) break;
        for (int r0 = sr.from; r0 < sr.to; r0 += 16)
          for (int j = 0; j < 16 && r0 + j < sr.to; ++j) {
            const int kp = sr.firstPos + (r0 - sr.from) + j;
            for (int i = 0; i < 16; ++i) {
              if (!ssc::gpu::prefillSees(rows[i], kp)) continue;
              EXPECT_TRUE(seen[std::make_pair(rows[i].token, rows[i].head)]
                              .insert({tables.at(sp[4])->rank(), kp})
                              .second)
                  << "key seen twice";
            }
          }
      }
    }
  return seen;
}

// Every rank, every placement, both splits: partials (each rank's own table; every row sees
// exactly this rank's keys of its causal window [max(0, p + 1 - window), p]) and KV side (every
// rank's table; the rows of this rank's heads, and only those, see every key of the window,
// each from the rank that owns it; the ranks' heads cover every head once).
TEST(AttnPrefillPlan, KernelWalkSeesExactlyTheCausalWindow) {
  const int kvHeads = 2;
  for (int nranks : {2, 3, 4})
    for (Interleave mode :
         {Interleave::kRoundRobin, Interleave::kContiguous, Interleave::kSequenceOwner}) {
      Placement pl;
      pl.nranks = nranks;
      pl.pageSize = 5;
      pl.mode = mode;
      pl.blockPages = 2;
      const std::vector<int64_t> lengths = {61, 1, 40, 17};  // by batch entry (seq ids 3, 0, 1, 2)
      const int32_t ids[] = {3, 0, 1, 2};
      const std::vector<int32_t> cu = {0, 25, 26, 66,
                                       67};  // 25 new after 36; 1; 40 (all); 1 after 16
      std::vector<std::unique_ptr<PageTable>> owned;
      std::vector<const PageTable*> all;
      for (int rank = 0; rank < nranks; ++rank) {
        owned.push_back(std::make_unique<PageTable>(pl, rank, 4, 64));
        all.push_back(owned.back().get());
        std::vector<int32_t> seqs;
        for (int b = 0; b < 4; ++b)
          for (int64_t t = 0; t < lengths[b]; ++t) seqs.push_back(ids[b]);
        std::vector<TokenSlot> slots;
        ASSERT_EQ(owned.back()->append("test", seqs.data(), static_cast<int>(seqs.size()), &slots),
                  sscSuccess);
      }
      for (int64_t chunk : {7, 67})
        for (int ratio : {1, 2, 3, 8})
          for (int window : {0, 1, 9}) {
            const int H = kvHeads * ratio;
            std::vector<PrefillChunk> chunks;
            planPrefillChunks(cu.data(), lengths.data(), 4, chunk, &chunks);
            for (const PrefillChunk& c : chunks)
              for (bool kv : {false, true}) {
                std::map<std::pair<int, int>, int> headOwner;  // KV side: (token, head) -> rank
                for (int rank = 0; rank < nranks; ++rank) {
                  const PrefillSplit split =
                      choosePrefillSplit(kv ? PrefillMode::kKvSide : PrefillMode::kPartials, true,
                                         nranks, rank, H, kvHeads, c.tokens, 0);
                  if (kv && !split.kvSide)
                    continue;  // this head count cannot split (ChoosesTheSplit)
                  PrefillLists l;
                  const std::vector<const PageTable*> tables =
                      split.kvSide ? all : std::vector<const PageTable*>{all[rank]};
                  buildPrefillLists(tables, ids, c, split.width, window, &l);
                  const Seen seen = walkKernel(l, tables, split, ratio, window);
                  size_t rowsWant = 0;
                  for (const PrefillPiece& p : c.pieces) {
                    const int seq = ids[p.b];
                    for (int64_t t = 0; t < p.tokens; ++t) {
                      const int64_t pos = p.firstPos + t;
                      std::set<std::pair<int, int>> want;
                      for (int64_t k = prefillWindowStart(pos, window); k <= pos; ++k)
                        if (split.kvSide || pl.tokenOwner(seq, k) == rank)
                          want.insert({pl.tokenOwner(seq, k), static_cast<int>(k)});
                      for (int h = split.firstHead; h < split.firstHead + split.heads; ++h) {
                        ++rowsWant;
                        const auto key = std::make_pair(static_cast<int>(p.firstToken + t), h);
                        if (split.kvSide) {
                          EXPECT_TRUE(headOwner.insert({key, rank}).second)
                              << "head computed twice";
                        }
                        const auto it = seen.find(key);
                        ASSERT_NE(it, seen.end()) << "row not walked: head " << h;
                        EXPECT_EQ(it->second, want)
                            << "ranks " << nranks << " rank " << rank << " seq " << seq << " pos "
                            << pos << " head " << h << " ratio " << ratio << " window " << window
                            << " chunk " << chunk << " kv " << kv;
                      }
                    }
                  }
                  EXPECT_EQ(seen.size(), rowsWant) << "rows of other heads walked";
                }
                if (!headOwner.empty()) {
                  EXPECT_EQ(headOwner.size(), static_cast<size_t>(c.tokens) * H);
                }
              }
          }
    }
}

// The split's rule: KV side gives each rank a disjoint share of the heads, all heads in all,
// mapped to the kernel's (KV head, width, offset) rows; and falls back to partials, saying why,
// wherever it cannot run or (auto) would leave the SMs idle.
TEST(AttnPrefillPlan, ChoosesTheSplit) {
  for (int nranks : {2, 4, 8})
    for (int kvHeads : {1, 2, 8})
      for (int ratio : {1, 2, 4, 8, 16}) {
        const int H = kvHeads * ratio;
        std::vector<int> owner(H, -1);
        for (int rank = 0; rank < nranks; ++rank) {
          const char* why = nullptr;
          const PrefillSplit s = choosePrefillSplit(PrefillMode::kKvSide, true, nranks, rank, H,
                                                    kvHeads, 4096, 0, &why);
          const int hk = H / nranks;
          const bool can = H % nranks == 0 && (hk % ratio == 0 || ratio % hk == 0);
          ASSERT_EQ(s.kvSide, can) << H << " heads, " << nranks << " ranks";
          ASSERT_EQ(why == nullptr, can);
          if (!can) {
            EXPECT_EQ(s.heads, H);
            EXPECT_EQ(s.kvHeads, kvHeads);
            EXPECT_EQ(s.width, ratio);
            continue;
          }
          EXPECT_EQ(s.heads, hk);
          EXPECT_EQ(s.kvHeads * s.width, hk);
          for (int kv = s.kvFirst; kv < s.kvFirst + s.kvHeads; ++kv)
            for (int w = 0; w < s.width; ++w) {
              const int h = kv * ratio + s.offset + w;
              ASSERT_GE(h, s.firstHead);
              ASSERT_LT(h, s.firstHead + s.heads);
              EXPECT_EQ(owner[h], -1) << "head " << h << " twice";
              owner[h] = rank;
            }
        }
        if (H % nranks == 0 && ((H / nranks) % ratio == 0 || ratio % (H / nranks) == 0)) {
          for (int h = 0; h < H; ++h) EXPECT_GE(owner[h], 0) << "head " << h << " nowhere";
        }
      }
  const char* why = nullptr;
  // Partials asked for, one rank, pools not mapped, heads that do not divide: partials.
  EXPECT_FALSE(
      choosePrefillSplit(PrefillMode::kPartials, true, 8, 0, 8, 1, 1 << 14, 0, &why).kvSide);
  EXPECT_STREQ(why, "partials asked for");
  EXPECT_FALSE(choosePrefillSplit(PrefillMode::kKvSide, true, 1, 0, 8, 1, 1 << 14, 0, &why).kvSide);
  EXPECT_FALSE(
      choosePrefillSplit(PrefillMode::kKvSide, false, 8, 0, 8, 1, 1 << 14, 0, &why).kvSide);
  EXPECT_FALSE(
      choosePrefillSplit(PrefillMode::kKvSide, true, 8, 0, 12, 1, 1 << 14, 0, &why).kvSide);
  // H 24 over 4 ranks with groups of 8: 6 heads a rank straddle a group unevenly.
  EXPECT_FALSE(
      choosePrefillSplit(PrefillMode::kKvSide, true, 4, 1, 24, 3, 1 << 14, 0, &why).kvSide);
  EXPECT_STREQ(why, "a rank's heads straddle KV groups unevenly");
  // Auto: KV side once a rank's rows (tokens x H / K) fill half its tiles of 16 at once.
  const int64_t slots = 168;  // 14 SMs x 12 warps
  EXPECT_TRUE(
      choosePrefillSplit(PrefillMode::kAuto, true, 8, 3, 8, 1, 16 * slots / 2, slots).kvSide);
  EXPECT_FALSE(
      choosePrefillSplit(PrefillMode::kAuto, true, 8, 3, 8, 1, 16 * slots / 2 - 1, slots, &why)
          .kvSide);
  EXPECT_STREQ(why, "too few rows a rank to fill its SMs");
  EXPECT_TRUE(choosePrefillSplit(PrefillMode::kKvSide, true, 8, 3, 8, 1, 1, slots).kvSide)
      << "forced";
  EXPECT_TRUE(choosePrefillSplit(PrefillMode::kAuto, true, 8, 3, 8, 1, 1, 0).kvSide)
      << "no SM bound";
}
