// SPDX-License-Identifier: MIT
// The whole prefill (sscAttentionPrefill) through the public API on the host backend: 1-4 ranks
// as threads of one process, every interleave, GQA 1/8/16, head dims 64/128, bf16 and fp16
// storage, page sizes 1/4/16, against the fp32 reference of every query token at its position.
// The batch mixes a one-token sequence's first token, a whole prompt of odd length, a sequence
// without new tokens, chunks after a cached prefix (chunked prefill) and a one-token chunk;
// windows, sinks, full or sharded output heads; a small exchange scratch that cuts the call into
// several rounds (pieces of a sequence in two rounds). Plus the argument checks.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "starscream/starscream_ops.h"
#include "tests/support/attention_reference.h"
#include "tests/support/host_ranks.h"

namespace ref = ssc::test::attn;
using ssc::test::runRanks;

namespace {

// Sequence lengths and the new tokens of each (the chunk: its last tokens), in batch order.
const std::vector<int> kLengths = {1, 37, 0, 64, 129, 16};
const std::vector<int32_t> kBatch = {4, 0, 2, 1, 5, 3};
const std::vector<int> kNew = {30, 1, 0, 37, 1, 10};  // by batch entry: seq 4 has 99 cached, ...

void checkConfiguration(int rank, int nranks, sscComm_t comm, sscStream_t stream,
                        sscKvInterleave_t interleave, int headDim, int ratio, sscDataType_t dtype,
                        int pageSize, int maxBatch) {
  const int kvHeads = 2, H = kvHeads * ratio, D = headDim, B = static_cast<int>(kBatch.size());
  const ref::Workload w =
      ref::makeWorkload(2000 + D + ratio + pageSize, kvHeads, D, dtype, kLengths, 3);
  SCOPED_TRACE(fmt::format("rank {} of {} {} d{} gqa{} {} page {} maxBatch {}", rank, nranks,
                           ref::interleaveName(interleave), D, ratio, ref::typeName(dtype),
                           pageSize, maxBatch));
  sscKvCacheConfig_t cfg = SSC_KV_CACHE_CONFIG_INITIALIZER;
  cfg.numKvHeads = kvHeads;
  cfg.headDim = D;
  cfg.pageSize = pageSize;
  cfg.maxPages = 300;
  cfg.maxSeqs = 8;
  cfg.maxBatch = maxBatch;
  cfg.maxQHeads = 32;
  cfg.dtype = dtype;
  cfg.interleave = interleave;
  cfg.blockPages = 3;
  sscKvCache_t cache = nullptr;
  ASSERT_EQ(sscKvCacheCreate(comm, &cfg, &cache), sscSuccess) << sscGetLastError(nullptr);
  for (const auto& round : w.rounds)
    ASSERT_EQ(sscKvCacheAppend(cache, static_cast<int>(round.seqs.size()), round.seqs.data(),
                               round.k.data(), round.v.data(), stream),
              sscSuccess)
        << sscGetLastError(nullptr);
  std::vector<int32_t> cu = {0};
  for (int b = 0; b < B; ++b) cu.push_back(cu.back() + kNew[b]);
  const int T = cu.back();

  std::mt19937 rng(7 + D + ratio);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<float> qFull(static_cast<size_t>(T) * H * D);
  for (float& x : qFull) x = u(rng);
  std::vector<float> sinks(H);
  for (int h = 0; h < H; ++h) sinks[h] = -1.0f + 0.2f * h;
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  // Four of the eight (window, sinks, sharded output) combinations: each option on and off
  // twice, fp32 and bf16 queries alternating (the whole product costs twice the CI time).
  const bool shardable = H % nranks == 0 && nranks > 1;
  struct Combo {
    int window;
    bool withSinks;
    int flags;
    sscDataType_t io;
  };
  const int sharded = shardable ? SSC_ATTN_OUT_SHARDED_HEADS : 0;
  const Combo combos[] = {{0, false, 0, sscFloat32},
                          {7, true, sharded, sscBfloat16},
                          {0, true, sharded, sscFloat32},
                          {7, false, 0, sscBfloat16}};
  for (const Combo& cb : combos) {
    {  // the goto below leaves this scope for the next combination
      const int window = cb.window, flags = cb.flags;
      const bool withSinks = cb.withSinks;
      const sscDataType_t io = cb.io;
      const bool outSharded = flags & SSC_ATTN_OUT_SHARDED_HEADS;
      const int outHeads = outSharded ? H / nranks : H, outFirst = outSharded ? rank * outHeads : 0;
      std::vector<float> qRounded(qFull.size()), qF;
      std::vector<uint16_t> qHalf;
      for (size_t i = 0; i < qFull.size(); ++i) {
        qRounded[i] = ref::roundTo(qFull[i], io);
        if (io == sscFloat32)
          qF.push_back(qFull[i]);
        else
          qHalf.push_back(ref::toStorage(qFull[i], io));
      }
      const void* q = io == sscFloat32 ? static_cast<const void*>(qF.data()) : qHalf.data();
      std::vector<float> outF(static_cast<size_t>(T) * outHeads * D, NAN);
      std::vector<uint16_t> outHalf(outF.size(), 0xffff);
      std::vector<float> lse(static_cast<size_t>(T) * outHeads, NAN);
      void* out = io == sscFloat32 ? static_cast<void*>(outF.data()) : outHalf.data();
      const sscResult_t r = sscAttentionPrefill(cache, q, io, H, B, kBatch.data(), cu.data(), scale,
                                                withSinks ? sinks.data() : nullptr, window, flags,
                                                out, lse.data(), stream);
      EXPECT_EQ(r, sscSuccess) << sscGetLastError(nullptr);
      if (r != sscSuccess) continue;
      const float tol = io == sscFloat32 ? 3e-5f : 1e-2f;
      std::vector<float> expect(D);
      for (int b = 0; b < B; ++b)
        for (int t = 0; t < kNew[b]; ++t) {
          const int seq = kBatch[b], pos = kLengths[seq] - kNew[b] + t, token = cu[b] + t;
          for (int j = 0; j < outHeads; ++j) {
            const int h = outFirst + j;
            const float expectLse = ref::referenceAttention(
                w, seq, h / ratio, &qRounded[(static_cast<size_t>(token) * H + h) * D], scale,
                window, withSinks ? &sinks[h] : nullptr, expect.data(), pos + 1);
            for (int i = 0; i < D; ++i) {
              const size_t o = (static_cast<size_t>(token) * outHeads + j) * D + i;
              const float got = io == sscFloat32 ? outF[o] : ref::fromStorage(outHalf[o], io);
              if (!(std::fabs(got - expect[i]) <= tol)) {
                ADD_FAILURE() << "window " << window << " sinks " << withSinks << " flags " << flags
                              << " seq " << seq << " pos " << pos << " head " << h << " i " << i
                              << ": got " << got << " want " << expect[i];
                goto next;
              }
            }
            const float gotLse = lse[static_cast<size_t>(token) * outHeads + j];
            EXPECT_NEAR(gotLse, expectLse, 3e-5f * std::max(1.0f, std::fabs(expectLse)))
                << "window " << window << " seq " << seq << " pos " << pos << " head " << h;
          }
        }
    }
  next:;
  }
  EXPECT_EQ(sscKvCacheDestroy(cache), sscSuccess);
}

}  // namespace

// STARSCREAM_ATTN_PREFILL as the cache reads it at create: auto takes the KV side wherever the
// heads split over the ranks (2 and 4 ranks here; 1 and 3 take partials), the second suite
// forces partials at 2 and 4 ranks, so both splits run at every rank count that has both.
class AttnHostPrefill : public testing::TestWithParam<ref::RanksCase> {
 protected:
  void SetUp() override {
    setenv("STARSCREAM_TIMEOUT", "60", 1);
    unsetenv("STARSCREAM_ATTN_PREFILL");
  }
};
class AttnHostPrefillPartials : public AttnHostPrefill {
 protected:
  void SetUp() override {
    AttnHostPrefill::SetUp();
    setenv("STARSCREAM_ATTN_PREFILL", "partials", 1);
  }
  void TearDown() override { unsetenv("STARSCREAM_ATTN_PREFILL"); }
};

void matchesReference(const ref::RanksCase& pc) {
  runRanks(pc.nranks, [&](int rank, sscComm_t comm, sscStream_t stream) {
    int i = 0;
    for (int headDim : {64, 128})
      for (int ratio : {1, 8, 16}) {
        const sscDataType_t dtype = i % 2 == 0 ? sscBfloat16 : sscFloat16;
        const int pageSizes[] = {1, 4, 16};
        // maxBatch 1: rounds of 32 / H tokens (2 with GQA 16, so sequences straddle rounds);
        // 8: a few rounds; 64: the whole call in one.
        const int maxBatches[] = {1, 8, 64};
        checkConfiguration(rank, pc.nranks, comm, stream, pc.interleave, headDim, ratio, dtype,
                           pageSizes[i % 3], maxBatches[(i / 3 + i) % 3]);
        ++i;
      }
  });
}

TEST_P(AttnHostPrefill, MatchesReference) { matchesReference(GetParam()); }
TEST_P(AttnHostPrefillPartials, MatchesReference) { matchesReference(GetParam()); }

INSTANTIATE_TEST_SUITE_P(
    RanksAndInterleaves, AttnHostPrefill,
    testing::Values(ref::RanksCase{1, sscKvPageRoundRobin}, ref::RanksCase{2, sscKvPageRoundRobin},
                    ref::RanksCase{3, sscKvPageRoundRobin}, ref::RanksCase{4, sscKvPageRoundRobin},
                    ref::RanksCase{3, sscKvContiguous}, ref::RanksCase{2, sscKvSequenceOwner}),
    [](const testing::TestParamInfo<ref::RanksCase>& i) {
      return ref::ranksCaseName(i.param.nranks, i.param.interleave);
    });
INSTANTIATE_TEST_SUITE_P(Ranks, AttnHostPrefillPartials,
                         testing::Values(ref::RanksCase{2, sscKvPageRoundRobin},
                                         ref::RanksCase{4, sscKvContiguous}),
                         [](const testing::TestParamInfo<ref::RanksCase>& i) {
                           return ref::ranksCaseName(i.param.nranks, i.param.interleave);
                         });

// Argument checks: each a clear code and message, nothing run.
TEST(AttnPrefillApi, RejectsBadArguments) {
  runRanks(1, [](int, sscComm_t comm, sscStream_t stream) {
    sscKvCacheConfig_t cfg = SSC_KV_CACHE_CONFIG_INITIALIZER;
    cfg.numKvHeads = 1;
    cfg.headDim = 64;
    cfg.pageSize = 4;
    cfg.maxPages = 16;
    cfg.maxSeqs = 4;
    cfg.maxBatch = 2;
    cfg.maxQHeads = 4;
    sscKvCache_t cache = nullptr;
    ASSERT_EQ(sscKvCacheCreate(comm, &cfg, &cache), sscSuccess);
    std::vector<uint16_t> kv(3 * 64, 0);
    const int32_t seqs3[] = {0, 0, 0};
    ASSERT_EQ(sscKvCacheAppend(cache, 3, seqs3, kv.data(), kv.data(), stream), sscSuccess);
    std::vector<float> q(4 * 4 * 64, 0.1f), out(q.size());
    const int32_t ids[] = {0, 1};
    const int32_t cuOk[] = {0, 3}, cuLong[] = {0, 4}, cuBad0[] = {1, 3}, cuDown[] = {0, 2, 1};
    auto call = [&](const int32_t* cu, int batch, const int32_t* seq, int flags, int heads) {
      return sscAttentionPrefill(cache, q.data(), sscFloat32, heads, batch, seq, cu, 0.125f,
                                 nullptr, 0, flags, out.data(), nullptr, stream);
    };
    EXPECT_EQ(call(cuOk, 1, ids, 0, 4), sscSuccess) << sscGetLastError(nullptr);
    EXPECT_EQ(call(cuLong, 1, ids, 0, 4), sscInvalidArgument);
    EXPECT_NE(std::string(sscGetLastError(nullptr)).find("append the chunk"), std::string::npos);
    EXPECT_EQ(call(cuBad0, 1, ids, 0, 4), sscInvalidArgument);
    EXPECT_EQ(call(cuDown, 2, ids, 0, 4), sscInvalidArgument);
    EXPECT_EQ(call(nullptr, 1, ids, 0, 4), sscInvalidArgument);
    EXPECT_EQ(call(cuOk, 1, ids, SSC_ATTN_Q_SHARDED_HEADS, 4), sscInvalidArgument);
    EXPECT_EQ(call(cuOk, 1, ids, 0x10, 4), sscInvalidArgument);
    EXPECT_EQ(call(cuOk, 1, ids, 0, 5), sscInvalidArgument);
    const int32_t twice[] = {0, 0}, cu2[] = {0, 1, 2};
    EXPECT_EQ(call(cu2, 2, twice, 0, 4), sscInvalidArgument);
    const int32_t badSeq[] = {9};
    EXPECT_EQ(call(cuOk, 1, badSeq, 0, 4), sscInvalidArgument);
    EXPECT_EQ(sscAttentionPrefill(cache, nullptr, sscFloat32, 4, 1, ids, cuOk, 0.125f, nullptr, 0,
                                  0, out.data(), nullptr, stream),
              sscInvalidArgument);
    EXPECT_EQ(sscAttentionPrefill(cache, q.data(), sscInt32, 4, 1, ids, cuOk, 0.125f, nullptr, 0, 0,
                                  out.data(), nullptr, stream),
              sscInvalidArgument);
    EXPECT_EQ(sscAttentionPrefill(cache, q.data(), sscFloat32, 4, 1, ids, cuOk, 0.125f, nullptr, -1,
                                  0, out.data(), nullptr, stream),
              sscInvalidArgument);
    // No new tokens: nothing to do, even with null buffers.
    const int32_t cuNone[] = {0, 0};
    EXPECT_EQ(sscAttentionPrefill(cache, nullptr, sscFloat32, 4, 1, ids, cuNone, 0.125f, nullptr, 0,
                                  0, nullptr, nullptr, stream),
              sscSuccess);
    EXPECT_EQ(sscKvCacheDestroy(cache), sscSuccess);
    EXPECT_EQ(sscAttentionPrefill(cache, q.data(), sscFloat32, 4, 1, ids, cuOk, 0.125f, nullptr, 0,
                                  0, out.data(), nullptr, stream),
              sscInvalidUsage);
  });
}
