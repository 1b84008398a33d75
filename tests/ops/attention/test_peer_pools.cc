// SPDX-License-Identifier: MIT
// PeerPools (src/ops/attention/peer_pools.h) on the host backend, ranks as threads: after every
// append, trim and release (releases and trims free pages that later appends take again), each
// rank's mirror of every other rank's page table equals that rank's own table, and every token
// reads back, through the mapped pool of the rank that owns it, as the row that was appended.
// That is what a prefill reading the KV side relies on. A partials-only cache maps nothing.
#include <gtest/gtest.h>

#include <barrier>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "src/ops/attention/kv_cache.h"
#include "src/ops/attention/peer_pools.h"
#include "starscream/starscream_ops.h"
#include "tests/support/attention_reference.h"
#include "tests/support/host_ranks.h"

namespace ref = ssc::test::attn;
using ssc::attn::PageSpan;
using ssc::attn::PageTable;
using ssc::test::runRanks;

namespace {

constexpr int kKvHeads = 2, kDim = 64, kPage = 2, kSeqs = 3;

class AttnPeerPools : public testing::TestWithParam<ref::RanksCase> {
 protected:
  void SetUp() override {
    setenv("STARSCREAM_TIMEOUT", "60", 1);
    unsetenv("STARSCREAM_ATTN_PREFILL");
  }
  void TearDown() override { unsetenv("STARSCREAM_ATTN_PREFILL"); }
};

// Element i of the K row of token `pos` of sequence `seq` (V: its negation): distinct per token.
uint16_t kElem(int seq, int pos, int i) {
  return static_cast<uint16_t>(1 + seq * 4096 + pos * 8 + i % 8);
}

sscKvCacheConfig_t config(sscKvInterleave_t interleave) {
  sscKvCacheConfig_t cfg = SSC_KV_CACHE_CONFIG_INITIALIZER;
  cfg.numKvHeads = kKvHeads;
  cfg.headDim = kDim;
  cfg.pageSize = kPage;
  cfg.maxPages = 24;
  cfg.maxSeqs = kSeqs;
  cfg.maxBatch = 4;
  cfg.maxQHeads = 8;
  cfg.interleave = interleave;
  cfg.blockPages = 2;
  return cfg;
}

// Appends n tokens to seq (every rank the same), rows built from kElem.
void append(sscKvCache_t cache, sscStream_t stream, int seq, int from, int n) {
  std::vector<int32_t> ids(n, seq);
  std::vector<uint16_t> k, v;
  for (int t = 0; t < n; ++t)
    for (int i = 0; i < kKvHeads * kDim; ++i) {
      k.push_back(kElem(seq, from + t, i));
      v.push_back(static_cast<uint16_t>(~kElem(seq, from + t, i)));
    }
  EXPECT_EQ(sscKvCacheAppend(cache, n, ids.data(), k.data(), v.data(), stream), sscSuccess)
      << sscGetLastError(nullptr);
}

TEST_P(AttnPeerPools, MirrorsMatchTheOwnersAndTheirPoolsReadBack) {
  const ref::RanksCase rc = GetParam();
  std::vector<const PageTable*> own(rc.nranks, nullptr);
  std::barrier sync(rc.nranks);
  runRanks(rc.nranks, [&](int rank, sscComm_t comm, sscStream_t stream) {
    const sscKvCacheConfig_t cfg = config(rc.interleave);
    sscKvCache_t cache = nullptr;
    // A failure here is every rank's (the same configuration), so no rank waits alone below.
    ASSERT_EQ(sscKvCacheCreate(comm, &cfg, &cache), sscSuccess) << sscGetLastError(nullptr);
    ASSERT_NE(cache->peers, nullptr) << "one node, several ranks: the pools map";
    own[rank] = cache->table.get();
    std::vector<int> length(kSeqs, 0);
    // Compares this rank's mirrors with the owners' tables and reads every live token back
    // through its owner's mapped pool; the barriers keep the other ranks' tables still meanwhile.
    // No ASSERT inside: a rank that left early would leave the others at the barrier.
    auto check = [&](const char* after) {
      int wrong = 0;
      sync.arrive_and_wait();
      for (int q = 0; q < rc.nranks; ++q) {
        const PageTable& m = cache->peers->table(q);
        for (int s = 0; s < kSeqs; ++s) {
          EXPECT_EQ(m.pages(s), own[q]->pages(s))
              << after << ": rank " << rank << "'s mirror of " << q << ", seq " << s;
          EXPECT_EQ(m.trimmedFrom(s), own[q]->trimmedFrom(s)) << after;
          std::vector<PageSpan> spans;
          m.spans(s, m.trimmedFrom(s), &spans);
          for (const PageSpan& sp : spans)
            for (int row = sp.rowBegin; row < sp.rowEnd; ++row) {
              const int pos = static_cast<int>(sp.firstPosition + (row - sp.rowBegin));
              for (int h = 0; h < kKvHeads; ++h) {
                const size_t at =
                    ((static_cast<size_t>(sp.page) * kKvHeads + h) * kPage + row) * kDim;
                const auto* k = static_cast<const uint16_t*>(cache->peers->k(q)) + at;
                const auto* v = static_cast<const uint16_t*>(cache->peers->v(q)) + at;
                for (int i = 0; i < kDim; i += 17)
                  if (k[i] != kElem(s, pos, h * kDim + i) ||
                      v[i] != static_cast<uint16_t>(~kElem(s, pos, h * kDim + i)))
                    ++wrong;
              }
            }
        }
        EXPECT_EQ(m.freePages(), own[q]->freePages()) << after;
      }
      EXPECT_EQ(wrong, 0) << after << ": elements read back through the owners' pools that differ";
      sync.arrive_and_wait();
    };
    auto grow = [&](int seq, int n) {
      append(cache, stream, seq, length[seq], n);
      length[seq] += n;
    };
    grow(0, 13);
    grow(1, 7);
    check("appends");
    EXPECT_EQ(sscKvCacheTrimSequence(cache, 0, 9), sscSuccess);
    check("trim");
    grow(2, 11);  // takes the pages the trim freed
    check("append after a trim");
    EXPECT_EQ(sscKvCacheReleaseSequence(cache, 1), sscSuccess);
    length[1] = 0;
    grow(1, 5);
    grow(0, 3);
    check("release, then appends");
    EXPECT_EQ(sscKvCacheDestroy(cache), sscSuccess);
  });
}

INSTANTIATE_TEST_SUITE_P(RanksAndInterleaves, AttnPeerPools,
                         testing::Values(ref::RanksCase{2, sscKvPageRoundRobin},
                                         ref::RanksCase{3, sscKvContiguous},
                                         ref::RanksCase{4, sscKvSequenceOwner},
                                         ref::RanksCase{4, sscKvPageRoundRobin}),
                         [](const testing::TestParamInfo<ref::RanksCase>& i) {
                           return ref::ranksCaseName(i.param.nranks, i.param.interleave);
                         });

// Partials asked for (or one rank): no registration, no mirrors.
TEST(AttnPeerPoolsOff, PartialsOrOneRankMapNothing) {
  auto mapsNothing = [](int, sscComm_t comm, sscStream_t) {
    const sscKvCacheConfig_t cfg = config(sscKvPageRoundRobin);
    sscKvCache_t cache = nullptr;
    ASSERT_EQ(sscKvCacheCreate(comm, &cfg, &cache), sscSuccess) << sscGetLastError(nullptr);
    EXPECT_EQ(cache->peers, nullptr);
    EXPECT_EQ(sscKvCacheDestroy(cache), sscSuccess);
  };
  setenv("STARSCREAM_ATTN_PREFILL", "partials", 1);
  runRanks(2, mapsNothing);
  unsetenv("STARSCREAM_ATTN_PREFILL");
  runRanks(1, mapsNothing);
}

}  // namespace
