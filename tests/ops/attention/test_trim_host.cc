// SPDX-License-Identifier: MIT
// A sliding-window layer that frees what fell out of its window (sscKvCacheTrimSequence), through
// the public API on the host backend: 1-4 ranks as threads, every interleave, page sizes 1 and
// 4. Sequences grow one token a step (a decode loop) in a pool sized for their windows only, so
// the pages a trim frees are handed to the other sequences at once; every step's decode must
// still match the reference over the window, and a window that reaches below a trim must be
// refused. A prefill chunk at the end trims to its first token's window.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "starscream/starscream_ops.h"
#include "tests/support/attention_reference.h"
#include "tests/support/host_ranks.h"

namespace ref = ssc::test::attn;
using ssc::test::runRanks;

namespace {

constexpr int kKvHeads = 1, kRatio = 8, kHeads = kKvHeads * kRatio, kDim = 64, kWindow = 10;
constexpr int kChunk = 5;  // the prefill chunk appended to sequence 0 at the end
const std::vector<int> kFinal = {61 + kChunk, 40, 23};  // lengths at the end
const std::vector<int> kGrown = {61, 40, 23};           // lengths after the decode loop

class AttnHostTrim : public testing::TestWithParam<ref::RanksCase> {
 protected:
  void SetUp() override { setenv("STARSCREAM_TIMEOUT", "60", 1); }
};

// Token `pos` of sequence `seq`'s K and V rows, as the cache stores them.
void appendRow(const ref::Workload& w, int seq, int pos, std::vector<uint16_t>* k,
               std::vector<uint16_t>* v) {
  for (int i = 0; i < kKvHeads * kDim; ++i) {
    k->push_back(ref::toStorage(w.k(seq, pos, 0)[i], w.dtype));
    v->push_back(ref::toStorage(w.v(seq, pos, 0)[i], w.dtype));
  }
}

// The largest error of `out` / `lse` (queries q, [rows][heads][dim]) against the reference of
// row r at sequence seqOf[r] seeing the positions before endOf[r] under the window.
float worstError(const ref::Workload& w, const std::vector<float>& q, const std::vector<int>& seqOf,
                 const std::vector<int>& endOf, const std::vector<float>& sinks,
                 const std::vector<float>& out, const std::vector<float>& lse) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(kDim));
  float worst = 0.0f;
  std::vector<float> expect(kDim);
  for (size_t r = 0; r < seqOf.size(); ++r)
    for (int h = 0; h < kHeads; ++h) {
      const size_t row = r * kHeads + h;
      const float el = ref::referenceAttention(w, seqOf[r], h / kRatio, &q[row * kDim], scale,
                                               kWindow, &sinks[h], expect.data(), endOf[r]);
      for (int i = 0; i < kDim; ++i)
        worst = std::max(worst, std::fabs(out[row * kDim + i] - expect[i]));
      worst = std::max(worst, std::fabs(lse[row] - el) / std::max(1.0f, std::fabs(el)));
    }
  return std::isnan(worst) ? INFINITY : worst;
}

void checkConfiguration(int rank, int nranks, sscComm_t comm, sscStream_t stream,
                        sscKvInterleave_t interleave, int pageSize) {
  SCOPED_TRACE(fmt::format("rank {} of {} {} page {}", rank, nranks,
                           ref::interleaveName(interleave), pageSize));
  const int nseqs = static_cast<int>(kFinal.size());
  const ref::Workload w = ref::makeWorkload(77 + pageSize, kKvHeads, kDim, sscBfloat16, kFinal, 2);
  sscKvCacheConfig_t cfg = SSC_KV_CACHE_CONFIG_INITIALIZER;
  cfg.numKvHeads = kKvHeads;
  cfg.headDim = kDim;
  cfg.pageSize = pageSize;
  // Room for the windows only (a window's tokens, and the prefill chunk's, over
  // ceil(tokens / page) + 1 pages): the sequences untrimmed need more than twice that in all
  // (and more than all of it on one rank with the sequence-owner placement).
  const int windowPages = (kWindow + kChunk + pageSize - 1) / pageSize + 1;
  cfg.maxPages = nseqs * windowPages;
  cfg.maxSeqs = nseqs;
  cfg.maxBatch = nseqs;
  cfg.maxQHeads = kHeads;
  cfg.interleave = interleave;
  cfg.blockPages = 2;
  int untrimmed = 0;
  for (int n : kGrown) untrimmed += (n + pageSize - 1) / pageSize;
  ASSERT_GT(untrimmed, 2 * cfg.maxPages);
  ASSERT_GT((kGrown[0] + pageSize - 1) / pageSize, cfg.maxPages);
  sscKvCache_t cache = nullptr;
  ASSERT_EQ(sscKvCacheCreate(comm, &cfg, &cache), sscSuccess) << sscGetLastError(nullptr);

  std::vector<float> sinks(kHeads);
  for (int h = 0; h < kHeads; ++h) sinks[h] = -0.5f + 0.25f * h;
  std::vector<float> q(static_cast<size_t>(nseqs) * kHeads * kDim);
  for (size_t i = 0; i < q.size(); ++i) q[i] = std::sin(0.37f * static_cast<float>(i));
  std::vector<float> out(q.size()), lse(static_cast<size_t>(nseqs) * kHeads);
  const float scale = 1.0f / std::sqrt(static_cast<float>(kDim));
  const std::vector<int32_t> all = {0, 1, 2};
  std::vector<int> len(nseqs, 0);
  bool reported = false;
  const int steps = *std::max_element(kGrown.begin(), kGrown.end());
  for (int step = 0; step < steps; ++step) {
    // Every sequence still growing gets its next token, then drops what left the window.
    std::vector<int32_t> ids;
    std::vector<uint16_t> k, v;
    for (int s = 0; s < nseqs; ++s)
      if (len[s] < kGrown[s]) {
        ids.push_back(s);
        appendRow(w, s, len[s]++, &k, &v);
      }
    ASSERT_EQ(sscKvCacheAppend(cache, static_cast<int>(ids.size()), ids.data(), k.data(), v.data(),
                               stream),
              sscSuccess)
        << "step " << step << ": " << sscGetLastError(nullptr);
    for (int s = 0; s < nseqs; ++s)
      ASSERT_EQ(sscKvCacheTrimSequence(cache, s, std::max(0, len[s] - kWindow)), sscSuccess)
          << sscGetLastError(nullptr);
    ASSERT_EQ(sscAttentionDecode(cache, q.data(), sscFloat32, kHeads, nseqs, all.data(), scale,
                                 sinks.data(), kWindow, 0, out.data(), lse.data(), stream),
              sscSuccess)
        << "step " << step << ": " << sscGetLastError(nullptr);
    ASSERT_EQ(sscStreamSynchronize(stream), sscSuccess);
    // Not an ASSERT: a rank that left the loop early would leave the others waiting.
    const float err = worstError(w, q, {0, 1, 2}, len, sinks, out, lse);
    if (!(err <= 3e-5f) && !reported) {
      ADD_FAILURE() << "step " << step << ": error " << err;
      reported = true;
    }
    if (len[0] > kWindow) {
      // The whole sequence, or one token more than the window: both reach below the trim.
      for (int window : {0, kWindow + 1}) {
        EXPECT_EQ(sscAttentionDecode(cache, q.data(), sscFloat32, kHeads, 1, all.data(), scale,
                                     nullptr, window, 0, out.data(), lse.data(), stream),
                  sscInvalidUsage)
            << "window " << window;
        EXPECT_NE(std::string(sscGetLastError(nullptr)).find("trimmed before position"),
                  std::string::npos);
      }
    }
  }
  for (int s = 0; s < nseqs; ++s) {
    int n = -1;
    EXPECT_EQ(sscKvCacheSequenceLength(cache, s, &n), sscSuccess);
    EXPECT_EQ(n, kGrown[s]) << "a trim keeps the length";
  }

  // A prefill chunk: its first token's window starts kWindow - 1 before it, further back than a
  // decode's trim. Trimmed too far, the call is refused; trimmed to that start, it matches.
  std::vector<int32_t> chunkIds(kChunk, 0);
  std::vector<uint16_t> k, v;
  for (int t = 0; t < kChunk; ++t) appendRow(w, 0, len[0] + t, &k, &v);
  ASSERT_EQ(sscKvCacheAppend(cache, kChunk, chunkIds.data(), k.data(), v.data(), stream),
            sscSuccess)
      << sscGetLastError(nullptr);
  const int first = len[0];
  len[0] += kChunk;
  const int32_t cu[] = {0, kChunk};
  std::vector<float> pq(static_cast<size_t>(kChunk) * kHeads * kDim);
  for (size_t i = 0; i < pq.size(); ++i) pq[i] = std::cos(0.21f * static_cast<float>(i));
  std::vector<float> pout(pq.size()), plse(static_cast<size_t>(kChunk) * kHeads);
  ASSERT_EQ(sscKvCacheTrimSequence(cache, 0, first + 1 - kWindow), sscSuccess);
  ASSERT_EQ(sscAttentionPrefill(cache, pq.data(), sscFloat32, kHeads, 1, all.data(), cu, scale,
                                sinks.data(), kWindow, 0, pout.data(), plse.data(), stream),
            sscSuccess)
      << sscGetLastError(nullptr);
  ASSERT_EQ(sscStreamSynchronize(stream), sscSuccess);
  std::vector<int> seqOf(kChunk, 0), endOf;
  for (int t = 0; t < kChunk; ++t) endOf.push_back(first + t + 1);
  EXPECT_LE(worstError(w, pq, seqOf, endOf, sinks, pout, plse), 3e-5f);
  ASSERT_EQ(sscKvCacheTrimSequence(cache, 0, first + 2 - kWindow), sscSuccess);
  EXPECT_EQ(sscAttentionPrefill(cache, pq.data(), sscFloat32, kHeads, 1, all.data(), cu, scale,
                                sinks.data(), kWindow, 0, pout.data(), plse.data(), stream),
            sscInvalidUsage);
  EXPECT_NE(std::string(sscGetLastError(nullptr)).find("trimmed before position"),
            std::string::npos);

  // A release clears the trim: the sequence starts again from position 0 with its whole window.
  ASSERT_EQ(sscKvCacheReleaseSequence(cache, 0), sscSuccess);
  k.clear();
  v.clear();
  for (int t = 0; t < 3; ++t) appendRow(w, 0, t, &k, &v);
  ASSERT_EQ(sscKvCacheAppend(cache, 3, chunkIds.data(), k.data(), v.data(), stream), sscSuccess)
      << sscGetLastError(nullptr);
  ASSERT_EQ(sscAttentionDecode(cache, q.data(), sscFloat32, kHeads, 1, all.data(), scale,
                               sinks.data(), 0, 0, out.data(), lse.data(), stream),
            sscSuccess)
      << sscGetLastError(nullptr);
  ASSERT_EQ(sscStreamSynchronize(stream), sscSuccess);
  EXPECT_LE(worstError(w, q, {0}, {3}, sinks, out, lse), 3e-5f);
  EXPECT_EQ(sscKvCacheDestroy(cache), sscSuccess);
}

}  // namespace

TEST_P(AttnHostTrim, SlidingWindowDecodeInAPoolOnlyTheWindowsFit) {
  const ref::RanksCase rc = GetParam();
  runRanks(rc.nranks, [&](int rank, sscComm_t comm, sscStream_t stream) {
    for (int pageSize : {1, 4})
      checkConfiguration(rank, rc.nranks, comm, stream, rc.interleave, pageSize);
  });
}

INSTANTIATE_TEST_SUITE_P(
    RanksAndInterleaves, AttnHostTrim,
    testing::Values(ref::RanksCase{1, sscKvSequenceOwner}, ref::RanksCase{2, sscKvSequenceOwner},
                    ref::RanksCase{3, sscKvSequenceOwner}, ref::RanksCase{1, sscKvPageRoundRobin},
                    ref::RanksCase{3, sscKvPageRoundRobin}, ref::RanksCase{4, sscKvPageRoundRobin},
                    ref::RanksCase{2, sscKvContiguous}, ref::RanksCase{4, sscKvContiguous}),
    [](const testing::TestParamInfo<ref::RanksCase>& i) {
      return ref::ranksCaseName(i.param.nranks, i.param.interleave);
    });
