// SPDX-License-Identifier: MIT
// Placement math and page tables of the sharded KV cache, checked against brute force over
// every interleave, rank count, run length, page size and length in a small range.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "src/ops/attention/paging.h"

using namespace ssc::attn;

namespace {

Placement makePlacement(Interleave mode, int nranks, int pageSize, int blockPages) {
  Placement p;
  p.nranks = nranks;
  p.pageSize = pageSize;
  p.mode = mode;
  p.blockPages = blockPages;
  return p;
}

const Interleave kModes[] = {Interleave::kRoundRobin, Interleave::kContiguous,
                             Interleave::kSequenceOwner};

// Where each rank's appends put each token: where[rank][(seq, position)].
using TokenPlaces = std::vector<std::map<std::pair<int, int64_t>, TokenSlot>>;

// Every rank's spans of seq from `begin` together cover positions [begin, length) exactly once,
// each at the page and row its append reported, and nothing before begin.
void expectSpansCoverOnce(const std::vector<PageTable>& tables, const TokenPlaces& where, int seq,
                          int64_t begin, int64_t length) {
  std::vector<int> seen(length, 0);
  for (size_t r = 0; r < tables.size(); ++r) {
    std::vector<PageSpan> spans;
    tables[r].spans(seq, begin, &spans);
    for (const PageSpan& sp : spans)
      for (int32_t row = sp.rowBegin; row < sp.rowEnd; ++row) {
        const int64_t pos = sp.firstPosition + (row - sp.rowBegin);
        ASSERT_LT(pos, length);
        ++seen[pos];
        const TokenSlot t = where[r].at({seq, pos});
        EXPECT_EQ(t.page, sp.page);
        EXPECT_EQ(t.row, row);
      }
  }
  for (int64_t pos = 0; pos < length; ++pos)
    EXPECT_EQ(seen[pos], pos >= begin ? 1 : 0)
        << "seq " << seq << " pos " << pos << " from " << begin;
}

}  // namespace

TEST(AttnPlacement, OwnersFollowTheDocumentedRules) {
  const Placement rr = makePlacement(Interleave::kRoundRobin, 4, 16, 7);  // blockPages ignored
  EXPECT_EQ(rr.tokenOwner(0, 0), 0);
  EXPECT_EQ(rr.tokenOwner(0, 15), 0);
  EXPECT_EQ(rr.tokenOwner(0, 16), 1);
  EXPECT_EQ(rr.tokenOwner(3, 16 * 5), 1);
  const Placement ct = makePlacement(Interleave::kContiguous, 3, 2, 4);
  EXPECT_EQ(ct.pageOwner(0, 3), 0);
  EXPECT_EQ(ct.pageOwner(0, 4), 1);
  EXPECT_EQ(ct.pageOwner(0, 11), 2);
  EXPECT_EQ(ct.pageOwner(0, 12), 0);
  const Placement so = makePlacement(Interleave::kSequenceOwner, 3, 8, 1);
  EXPECT_EQ(so.tokenOwner(4, 0), 1);
  EXPECT_EQ(so.tokenOwner(4, 1000), 1);
  EXPECT_EQ(so.tokenOwner(5, 9), 2);
}

TEST(AttnPlacement, SlotsAreDenseAndInvertible) {
  for (Interleave mode : kModes)
    for (int n = 1; n <= 5; ++n)
      for (int block = 1; block <= 3; ++block)
        for (int seq = 0; seq < 3; ++seq) {
          const Placement p = makePlacement(mode, n, 4, block);
          std::map<int, int64_t> nextSlot;  // per rank: slots must come 0, 1, 2, ... in page order
          for (int64_t page = 0; page < 60; ++page) {
            const int owner = p.pageOwner(seq, page);
            ASSERT_GE(owner, 0);
            ASSERT_LT(owner, n);
            const int64_t slot = p.localSlot(seq, page);
            SCOPED_TRACE(testing::Message() << "mode " << int(mode) << " n " << n << " block "
                                            << block << " seq " << seq << " page " << page);
            EXPECT_EQ(slot, nextSlot[owner]++);
            EXPECT_EQ(p.pageOfSlot(seq, owner, slot), page);
          }
        }
}

TEST(AttnPlacement, PagesOwnedMatchesCounting) {
  for (Interleave mode : kModes)
    for (int n = 1; n <= 5; ++n)
      for (int block = 1; block <= 3; ++block)
        for (int ps : {1, 3, 16}) {
          const Placement p = makePlacement(mode, n, ps, block);
          for (int seq = 0; seq < 2; ++seq)
            for (int64_t len = 0; len <= 70; ++len) {
              std::vector<int64_t> count(n, 0);
              for (int64_t page = 0; page * ps < len; ++page) ++count[p.pageOwner(seq, page)];
              for (int r = 0; r < n; ++r)
                ASSERT_EQ(p.pagesOwned(seq, len, r), count[r])
                    << "mode " << int(mode) << " n " << n << " block " << block << " ps " << ps
                    << " len " << len << " rank " << r;
            }
        }
}

TEST(AttnPlacement, RoundRobinBalancesWithinOnePage) {
  const Placement p = makePlacement(Interleave::kRoundRobin, 4, 16, 1);
  for (int64_t len = 0; len < 1000; len += 7) {
    int64_t lo = INT64_MAX, hi = 0;
    for (int r = 0; r < 4; ++r) {
      lo = std::min(lo, p.pagesOwned(0, len, r));
      hi = std::max(hi, p.pagesOwned(0, len, r));
    }
    EXPECT_LE(hi - lo, 1);
  }
}

// Every rank keeps its own table over the same appends: together their spans cover each
// sequence's window exactly once, each at its own position, and pool pages are never shared.
TEST(AttnPageTable, RanksTogetherCoverEveryTokenOnce) {
  for (Interleave mode : kModes)
    for (int n : {1, 2, 3, 4})
      for (int ps : {1, 4, 5})
        for (int block : {1, 2}) {
          const Placement p = makePlacement(mode, n, ps, block);
          std::vector<PageTable> tables;
          for (int r = 0; r < n; ++r) tables.emplace_back(p, r, 5, 64);
          // Odd lengths, an empty sequence (2), one token (3), appended over rounds.
          const std::vector<std::vector<int32_t>> rounds = {
              {0, 1, 0, 1, 4, 0, 1, 4, 3}, {1, 1, 1, 1, 1, 0, 4, 4, 4, 4, 4, 4, 4}, {0, 1, 4}};
          // positions[rank] = (seq, position) -> (page, row) as the append reported
          TokenPlaces where(n);
          std::vector<int64_t> len(5, 0);
          for (const auto& round : rounds) {
            std::vector<int64_t> pos;
            for (int32_t s : round) pos.push_back(len[s]++);
            for (int r = 0; r < n; ++r) {
              std::vector<TokenSlot> slots;
              ASSERT_EQ(tables[r].append("t", round.data(), static_cast<int>(round.size()), &slots),
                        sscSuccess);
              for (size_t i = 0; i < round.size(); ++i) {
                const bool mine = p.tokenOwner(round[i], pos[i]) == r;
                EXPECT_EQ(slots[i].page >= 0, mine);
                if (mine) where[r][{round[i], pos[i]}] = slots[i];
              }
            }
          }
          for (int r = 0; r < n; ++r) {
            std::set<int32_t> pool;
            for (int s = 0; s < 5; ++s) {
              for (int32_t page : tables[r].pages(s)) EXPECT_TRUE(pool.insert(page).second);
              EXPECT_EQ(tables[r].length(s), len[s]);
            }
            for (int q = 0; q < n; ++q)
              EXPECT_EQ(tables[r].pagesUsed(q),
                        static_cast<int64_t>(tables[q].maxPages() - tables[q].freePages()));
          }
          for (int s = 0; s < 5; ++s)
            for (int64_t begin : {int64_t{0}, int64_t{3}, len[s]})
              expectSpansCoverOnce(tables, where, s, begin, len[s]);
        }
}

TEST(AttnPageTable, OverflowIsRefusedOnEveryRankAlikeAndChangesNothing) {
  const Placement p = makePlacement(Interleave::kSequenceOwner, 2, 4, 1);
  // Sequence 1 lives on rank 1: 3 pages fit, the 13th token needs a 4th.
  PageTable t0(p, 0, 4, 3), t1(p, 1, 4, 3);
  std::vector<int32_t> twelve(12, 1), one{1};
  std::vector<TokenSlot> slots;
  ASSERT_EQ(t0.append("t", twelve.data(), 12, &slots), sscSuccess);
  ASSERT_EQ(t1.append("t", twelve.data(), 12, &slots), sscSuccess);
  // Rank 0 has every page free but refuses too: it sees rank 1's pool is full.
  EXPECT_EQ(t0.append("t", one.data(), 1, &slots), sscInvalidUsage);
  EXPECT_EQ(t1.append("t", one.data(), 1, &slots), sscInvalidUsage);
  EXPECT_EQ(t0.length(1), 12);
  EXPECT_EQ(t1.length(1), 12);
  EXPECT_EQ(t1.freePages(), 0);
  const int32_t bad = 4;
  EXPECT_EQ(t0.append("t", &bad, 1, &slots), sscInvalidArgument);
  // Releasing returns the pages; the append then fits.
  t0.release(1);
  t1.release(1);
  EXPECT_EQ(t1.freePages(), 3);
  EXPECT_EQ(t0.pagesUsed(1), 0);
  EXPECT_EQ(t1.append("t", one.data(), 1, &slots), sscSuccess);
  EXPECT_EQ(slots[0].row, 0);
}

// The GPU backend reuses its last page-list upload while version() is unchanged: every append
// of tokens and every release must change it, a refused or empty append must not.
TEST(AttnPageTable, VersionChangesWithEveryChange) {
  const Placement p = makePlacement(Interleave::kRoundRobin, 2, 4, 1);
  PageTable t(p, 0, 4, 8);
  std::vector<TokenSlot> slots;
  const int32_t seq[] = {1, 1, 2};
  uint64_t v = t.version();
  ASSERT_EQ(t.append("t", seq, 3, &slots), sscSuccess);
  EXPECT_NE(t.version(), v);
  v = t.version();
  ASSERT_EQ(t.append("t", seq, 0, &slots), sscSuccess);
  EXPECT_EQ(t.version(), v);
  const int32_t bad = 9;
  EXPECT_EQ(t.append("t", &bad, 1, &slots), sscInvalidArgument);
  EXPECT_EQ(t.version(), v);
  ASSERT_EQ(t.append("t", seq + 2, 1, &slots), sscSuccess);  // rank 1's page: still a change
  EXPECT_NE(t.version(), v);
  v = t.version();
  t.release(2);
  EXPECT_NE(t.version(), v);
}

// The flattened page lists the GPU kernel walks (gpu_ops.cc uploads them as they are): offsets
// then (page, first row, end row) triples, the same spans as PageTable::spans, and never more
// ints than the cache reserves (batch + 1 + 3 x pool pages).
TEST(AttnPageTable, FlattenedSpansMatchAndFitTheReservation) {
  for (Interleave mode : kModes)
    for (int n : {1, 3}) {
      const Placement p = makePlacement(mode, n, 4, 2);
      for (int r = 0; r < n; ++r) {
        const int maxPages = 40;
        PageTable t(p, r, 6, maxPages);
        std::vector<int32_t> seqs;
        const int lengths[] = {1, 0, 33, 8, 50, 3};
        for (int s = 0; s < 6; ++s)
          for (int i = 0; i < lengths[s]; ++i) seqs.push_back(s);
        std::vector<TokenSlot> slots;
        ASSERT_EQ(t.append("t", seqs.data(), static_cast<int>(seqs.size()), &slots), sscSuccess);
        const int32_t batch[] = {4, 1, 0, 2, 5, 3};
        const int64_t starts[] = {45, 0, 0, 10, 0, 8};  // windows, and one past the end
        std::vector<int32_t> flat;
        flattenSpans(t, batch, starts, 6, &flat);
        EXPECT_LE(flat.size(), static_cast<size_t>(6 + 1 + 3 * maxPages));
        for (int b = 0; b < 6; ++b) {
          std::vector<PageSpan> want;
          t.spans(batch[b], starts[b], &want);
          ASSERT_EQ(flat[b + 1] - flat[b], static_cast<int32_t>(want.size())) << "b " << b;
          for (size_t i = 0; i < want.size(); ++i) {
            const int32_t* f = &flat[7 + 3 * (flat[b] + i)];
            EXPECT_EQ(f[0], want[i].page);
            EXPECT_EQ(f[1], want[i].rowBegin);
            EXPECT_EQ(f[2], want[i].rowEnd);
          }
        }
        EXPECT_EQ(flat.size(), static_cast<size_t>(7 + 3 * flat[6]));
      }
    }
}

// Trims (sscKvCacheTrimSequence) interleaved with appends, on every rank's table: the pages that
// hold only trimmed tokens go back to their owners' pools, every rank's counts agree with the
// pools, the spans from the trim on still cover each token once at the place its append
// reported (also after the freed pages went to other sequences), the version changes only when
// a page was freed, and a release after a trim returns the rest.
TEST(AttnPageTable, TrimFreesOnlyWholePagesBeforeThePositionOnEveryRank) {
  for (Interleave mode : kModes)
    for (int n : {1, 2, 3})
      for (int ps : {1, 3}) {
        SCOPED_TRACE(testing::Message() << "mode " << int(mode) << " n " << n << " ps " << ps);
        const Placement p = makePlacement(mode, n, ps, 2);
        std::vector<PageTable> tables;
        for (int r = 0; r < n; ++r) tables.emplace_back(p, r, 3, 40);
        TokenPlaces where(n);
        std::vector<int64_t> len(3, 0), trimmed(3, 0);
        for (int step = 0; step < 30; ++step) {
          // Sequences 0 and 1 grow a token a step (1 every other step), 2 three a step; 0 and 2
          // keep a window of 5 and 7 tokens, 1 is trimmed by a page and a half every 6 steps.
          std::vector<int32_t> round = {0, 2, 2, 2};
          if (step % 2 == 0) round.push_back(1);
          std::vector<int64_t> pos;
          for (int32_t s : round) pos.push_back(len[s]++);
          for (int r = 0; r < n; ++r) {
            std::vector<TokenSlot> slots;
            ASSERT_EQ(tables[r].append("t", round.data(), static_cast<int>(round.size()), &slots),
                      sscSuccess)
                << "step " << step;
            for (size_t i = 0; i < round.size(); ++i)
              if (slots[i].page >= 0) where[r][{round[i], pos[i]}] = slots[i];
          }
          std::vector<int64_t> to = {std::max<int64_t>(0, len[0] - 5), trimmed[1],
                                     std::max<int64_t>(0, len[2] - 7)};
          if (step % 6 == 5) to[1] = std::min(len[1], trimmed[1] + ps + ps / 2 + 1);
          for (int s = 0; s < 3; ++s) {
            const bool freesAPage = to[s] / ps > trimmed[s] / ps;
            for (int r = 0; r < n; ++r) {
              const uint64_t v = tables[r].version();
              tables[r].trim(s, to[s]);
              EXPECT_EQ(tables[r].version() != v, freesAPage) << "seq " << s << " step " << step;
              EXPECT_EQ(tables[r].trimmedFrom(s), std::max(trimmed[s], to[s]));
            }
            trimmed[s] = std::max(trimmed[s], to[s]);
          }
          // Trimming back to an earlier position changes nothing.
          for (int r = 0; r < n; ++r) {
            const uint64_t v = tables[r].version();
            tables[r].trim(0, 0);
            EXPECT_EQ(tables[r].version(), v);
            EXPECT_EQ(tables[r].trimmedFrom(0), trimmed[0]);
          }
          for (int r = 0; r < n; ++r) {
            std::set<int32_t> pool;
            int64_t held = 0;
            for (int s = 0; s < 3; ++s)
              for (size_t slot = 0; slot < tables[r].pages(s).size(); ++slot) {
                const int32_t page = tables[r].pages(s)[slot];
                const int64_t seqPage = p.pageOfSlot(s, r, static_cast<int64_t>(slot));
                EXPECT_EQ(page < 0, seqPage < trimmed[s] / ps)
                    << "seq " << s << " page " << seqPage;
                if (page < 0) continue;
                EXPECT_TRUE(pool.insert(page).second);
                ++held;
              }
            EXPECT_EQ(held, tables[r].maxPages() - tables[r].freePages());
            for (int q = 0; q < n; ++q)
              EXPECT_EQ(tables[r].pagesUsed(q), tables[q].maxPages() - tables[q].freePages())
                  << "rank " << r;
          }
          for (int s = 0; s < 3; ++s)
            for (int64_t begin : {trimmed[s], trimmed[s] + 1, len[s]}) {
              SCOPED_TRACE(testing::Message() << "step " << step);
              expectSpansCoverOnce(tables, where, s, begin, len[s]);
            }
        }
        // Without the trims sequence 2 alone (90 tokens) would not have fit some configurations'
        // pools; a release after a trim returns exactly what was left.
        for (int r = 0; r < n; ++r) {
          for (int s = 0; s < 3; ++s) tables[r].release(s);
          EXPECT_EQ(tables[r].freePages(), tables[r].maxPages());
          for (int q = 0; q < n; ++q) EXPECT_EQ(tables[r].pagesUsed(q), 0);
          EXPECT_EQ(tables[r].trimmedFrom(0), 0);
        }
      }
}
