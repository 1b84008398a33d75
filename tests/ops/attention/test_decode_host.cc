// SPDX-License-Identifier: MIT
// The whole decode through the public API on the host backend: 1-4 ranks as threads of one
// process (sscCommInitAll), each with its own stream, over every interleave, GQA ratios 1/8/16,
// head dims 64/128, bf16 and fp16 storage, page sizes 1/4/16, odd lengths, an empty sequence, a
// one-token sequence (empty shards on most ranks), sinks, sliding windows, and full or sharded
// query/output heads, against the fp32 reference.
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

class AttnHostDecode : public testing::TestWithParam<ref::RanksCase> {
 protected:
  void SetUp() override { setenv("STARSCREAM_TIMEOUT", "60", 1); }
};

// Stores x (fp32) as io type t at index i of buf.
void storeIo(std::vector<uint16_t>* half, std::vector<float>* full, sscDataType_t t, float x) {
  if (t == sscFloat32)
    full->push_back(x);
  else
    half->push_back(ref::toStorage(x, t));
}

// One rank's share of one configuration: create, append the workload, decode in every mode,
// compare, destroy. Failures are EXPECTs (an early return would leave the other ranks waiting).
void checkConfiguration(int rank, int nranks, sscComm_t comm, sscStream_t stream,
                        sscKvInterleave_t interleave, int headDim, int ratio, sscDataType_t dtype,
                        int pageSize) {
  const int kvHeads = 2, H = kvHeads * ratio, D = headDim;
  // Odd lengths, one token (seq 0), an empty sequence (2), exactly one page (5 with page 16).
  const std::vector<int> lengths = {1, 37, 0, 64, 129, 16};
  const std::vector<int32_t> batch = {4, 0, 2, 1, 5, 3};
  const int B = static_cast<int>(batch.size());
  const ref::Workload w =
      ref::makeWorkload(1000 + D + ratio + pageSize, kvHeads, D, dtype, lengths, 3);
  const std::string where =
      fmt::format("rank {} of {} {} d{} gqa{} {} page {}", rank, nranks,
                  ref::interleaveName(interleave), D, ratio, ref::typeName(dtype), pageSize);
  SCOPED_TRACE(where);

  sscKvCacheConfig_t cfg = SSC_KV_CACHE_CONFIG_INITIALIZER;
  cfg.numKvHeads = kvHeads;
  cfg.headDim = D;
  cfg.pageSize = pageSize;
  cfg.maxPages = 300;
  cfg.maxSeqs = 8;
  cfg.maxBatch = 8;
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
  for (int s = 0; s < static_cast<int>(lengths.size()); ++s) {
    int len = -1;
    EXPECT_EQ(sscKvCacheSequenceLength(cache, s, &len), sscSuccess);
    EXPECT_EQ(len, lengths[s]);
  }

  std::mt19937 rng(42 + D + ratio);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<float> qFull(static_cast<size_t>(B) * H * D);
  for (float& x : qFull) x = u(rng);
  std::vector<float> sinks(H);
  for (int h = 0; h < H; ++h) sinks[h] = -1.0f + 0.2f * h;
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const bool shardable = H % nranks == 0;
  std::vector<int> flagSets = {0};
  if (shardable && nranks > 1)
    flagSets = {0, SSC_ATTN_Q_SHARDED_HEADS, SSC_ATTN_OUT_SHARDED_HEADS,
                SSC_ATTN_Q_SHARDED_HEADS | SSC_ATTN_OUT_SHARDED_HEADS};
  int combo = 0;
  for (int window : {0, 7})
    for (bool withSinks : {false, true})
      for (int flags : flagSets) {
        const sscDataType_t io = combo++ % 2 == 0 ? sscFloat32 : sscBfloat16;
        const bool qSharded = flags & SSC_ATTN_Q_SHARDED_HEADS;
        const bool outSharded = flags & SSC_ATTN_OUT_SHARDED_HEADS;
        const int qHeads = qSharded ? H / nranks : H, outHeads = outSharded ? H / nranks : H;
        const int qFirst = qSharded ? rank * qHeads : 0,
                  outFirst = outSharded ? rank * outHeads : 0;
        std::vector<uint16_t> qHalf;
        std::vector<float> qF;
        std::vector<float> qRounded(qFull.size());  // what the decode sees, for the reference
        for (size_t i = 0; i < qFull.size(); ++i) qRounded[i] = ref::roundTo(qFull[i], io);
        for (int b = 0; b < B; ++b)
          for (int h = qFirst; h < qFirst + qHeads; ++h)
            for (int i = 0; i < D; ++i)
              storeIo(&qHalf, &qF, io, qFull[(static_cast<size_t>(b) * H + h) * D + i]);
        const void* q = io == sscFloat32 ? static_cast<const void*>(qF.data()) : qHalf.data();
        std::vector<float> outF(static_cast<size_t>(B) * outHeads * D, NAN);
        std::vector<uint16_t> outHalf(outF.size(), 0xffff);
        std::vector<float> lse(static_cast<size_t>(B) * outHeads, NAN);
        void* out = io == sscFloat32 ? static_cast<void*>(outF.data()) : outHalf.data();
        const sscResult_t r = sscAttentionDecode(cache, q, io, H, B, batch.data(), scale,
                                                 withSinks ? sinks.data() : nullptr, window, flags,
                                                 out, lse.data(), stream);
        EXPECT_EQ(r, sscSuccess) << sscGetLastError(nullptr);
        if (r != sscSuccess) continue;
        EXPECT_EQ(sscStreamSynchronize(stream), sscSuccess);
        const float tol = io == sscFloat32 ? 3e-5f : 1e-2f;
        float worst = 0.0f;
        std::vector<float> expect(D);
        for (int b = 0; b < B; ++b)
          for (int j = 0; j < outHeads; ++j) {
            const int h = outFirst + j;
            const float expectLse = ref::referenceAttention(
                w, batch[b], h / ratio, &qRounded[(static_cast<size_t>(b) * H + h) * D], scale,
                window, withSinks ? &sinks[h] : nullptr, expect.data());
            for (int i = 0; i < D; ++i) {
              const size_t o = (static_cast<size_t>(b) * outHeads + j) * D + i;
              const float got = io == sscFloat32 ? outF[o] : ref::fromStorage(outHalf[o], io);
              worst = std::max(worst, std::fabs(got - expect[i]));
              if (!(std::fabs(got - expect[i]) <= tol)) {
                ADD_FAILURE() << "window " << window << " sinks " << withSinks << " flags " << flags
                              << " seq " << batch[b] << " head " << h << " i " << i << ": got "
                              << got << " want " << expect[i];
                goto next;
              }
            }
            const float gotLse = lse[static_cast<size_t>(b) * outHeads + j];
            if (std::isinf(expectLse))
              EXPECT_EQ(gotLse, expectLse) << "seq " << batch[b] << " head " << h;
            else
              EXPECT_NEAR(gotLse, expectLse, 3e-5f * std::max(1.0f, std::fabs(expectLse)))
                  << "window " << window << " seq " << batch[b] << " head " << h;
          }
      next:;
      }
  EXPECT_EQ(sscKvCacheDestroy(cache), sscSuccess);
}

}  // namespace

TEST_P(AttnHostDecode, MatchesReference) {
  const ref::RanksCase dc = GetParam();
  runRanks(dc.nranks, [&](int rank, sscComm_t comm, sscStream_t stream) {
    int i = 0;
    for (int headDim : {64, 128})
      for (int ratio : {1, 8, 16}) {
        const sscDataType_t dtype = i % 2 == 0 ? sscBfloat16 : sscFloat16;
        const int pageSizes[] = {1, 4, 16};
        const int pageSize = pageSizes[i % 3];
        ++i;
        checkConfiguration(rank, dc.nranks, comm, stream, dc.interleave, headDim, ratio, dtype,
                           pageSize);
      }
  });
}

INSTANTIATE_TEST_SUITE_P(
    RanksAndInterleaves, AttnHostDecode,
    testing::Values(ref::RanksCase{1, sscKvPageRoundRobin}, ref::RanksCase{2, sscKvPageRoundRobin},
                    ref::RanksCase{3, sscKvPageRoundRobin}, ref::RanksCase{4, sscKvPageRoundRobin},
                    ref::RanksCase{2, sscKvContiguous}, ref::RanksCase{3, sscKvContiguous},
                    ref::RanksCase{4, sscKvContiguous}, ref::RanksCase{1, sscKvSequenceOwner},
                    ref::RanksCase{2, sscKvSequenceOwner}, ref::RanksCase{4, sscKvSequenceOwner}),
    [](const testing::TestParamInfo<ref::RanksCase>& i) {
      return ref::ranksCaseName(i.param.nranks, i.param.interleave);
    });
