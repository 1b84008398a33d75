// SPDX-License-Identifier: MIT
// The KV cache and attention entry points refuse bad arguments with an error code and a message
// naming the problem, never a crash; a one-rank communicator is enough for that.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "src/device/host/host_stream.h"
#include "starscream/starscream_ops.h"

namespace {

class AttnApi : public testing::Test {
 protected:
  void SetUp() override {
    setenv("STARSCREAM_TIMEOUT", "20", 1);
    ASSERT_EQ(sscCommInitAll(&comm_, 1, nullptr), sscSuccess) << sscGetLastError(nullptr);
    cfg_.numKvHeads = 2;
    cfg_.headDim = 64;
    cfg_.pageSize = 4;
    cfg_.maxPages = 4;
    cfg_.maxSeqs = 3;
    cfg_.maxBatch = 2;
    cfg_.maxQHeads = 4;
  }
  void TearDown() override {
    if (comm_) sscCommDestroy(comm_);
  }
  static void expectError(sscResult_t r, sscResult_t want, const char* needle) {
    EXPECT_EQ(r, want) << sscGetErrorString(r);
    std::string msg = sscGetLastError(nullptr);
    EXPECT_NE(msg.find(needle), std::string::npos) << "message: " << msg;
  }
  sscComm_t comm_ = nullptr;
  sscKvCacheConfig_t cfg_ = SSC_KV_CACHE_CONFIG_INITIALIZER;
};

TEST_F(AttnApi, BadConfigurationsNameTheField) {
  sscKvCache_t c = nullptr;
  expectError(sscKvCacheCreate(comm_, nullptr, &c), sscInvalidArgument, "config is NULL");
  expectError(sscKvCacheCreate(comm_, &cfg_, nullptr), sscInvalidArgument, "cache is NULL");
  expectError(sscKvCacheCreate(nullptr, &cfg_, &c), sscInvalidArgument, "comm is NULL");
  sscKvCacheConfig_t raw{};
  expectError(sscKvCacheCreate(comm_, &raw, &c), sscInvalidArgument,
              "SSC_KV_CACHE_CONFIG_INITIALIZER");
  auto bad = [&](auto mutate, const char* needle) {
    sscKvCacheConfig_t x = cfg_;
    mutate(x);
    sscKvCache_t cache = nullptr;
    expectError(sscKvCacheCreate(comm_, &x, &cache), sscInvalidArgument, needle);
    EXPECT_EQ(cache, nullptr);
  };
  bad([](auto& x) { x.headDim = 96; }, "headDim");
  bad([](auto& x) { x.numKvHeads = 0; }, "numKvHeads");
  bad([](auto& x) { x.pageSize = 0; }, "pageSize");
  bad([](auto& x) { x.maxPages = -1; }, "maxPages");
  bad([](auto& x) { x.maxQHeads = 3; }, "maxQHeads");
  bad([](auto& x) { x.dtype = sscFloat32; }, "dtype");
  bad([](auto& x) { x.interleave = static_cast<sscKvInterleave_t>(7); }, "interleave");
  bad(
      [](auto& x) {
        x.interleave = sscKvContiguous;
        x.blockPages = 0;
      },
      "blockPages");
  bad([](auto& x) { x.exchange = static_cast<sscKvExchange_t>(3); }, "exchange");
  bad([](auto& x) { x.exchange = static_cast<sscKvExchange_t>(-1); }, "exchange");
}

// The fused exchange needs peers' mapped memory: the host backend refuses it on several ranks
// (before any communication, so one rank alone can ask) and accepts it on one (nothing to
// exchange); AUTO and ALLGATHER work everywhere.
TEST_F(AttnApi, FusedExchangeNeedsAGpuBackend) {
  sscComm_t two[2] = {nullptr, nullptr};
  ASSERT_EQ(sscCommInitAll(two, 2, nullptr), sscSuccess) << sscGetLastError(nullptr);
  sscKvCacheConfig_t x = cfg_;
  x.exchange = sscKvExchangeFused;
  sscKvCache_t cache = nullptr;
  expectError(sscKvCacheCreate(two[0], &x, &cache), sscInvalidUsage, "sscKvExchangeFused");
  EXPECT_EQ(cache, nullptr);
  for (sscComm_t c : two) sscCommDestroy(c);
  for (sscKvExchange_t e : {sscKvExchangeFused, sscKvExchangeAllGather, sscKvExchangeAuto}) {
    x.exchange = e;
    ASSERT_EQ(sscKvCacheCreate(comm_, &x, &cache), sscSuccess) << sscGetLastError(nullptr);
    EXPECT_EQ(sscKvCacheDestroy(cache), sscSuccess);
  }
}

TEST_F(AttnApi, BadCallsAndStaleHandles) {
  sscKvCache_t c = nullptr;
  ASSERT_EQ(sscKvCacheCreate(comm_, &cfg_, &c), sscSuccess) << sscGetLastError(nullptr);
  std::vector<uint16_t> kv(2 * 64 * 20, 0x3f80);
  const int32_t seqs[] = {0, 3};
  expectError(sscKvCacheAppend(c, 1, &seqs[1], kv.data(), kv.data(), nullptr), sscInvalidArgument,
              "seqIds[0] = 3");
  expectError(sscKvCacheAppend(c, 1, seqs, nullptr, kv.data(), nullptr), sscInvalidArgument,
              "k is NULL");
  expectError(sscKvCacheAppend(c, -1, seqs, kv.data(), kv.data(), nullptr), sscInvalidArgument,
              "negative");
  // 4 pages of 4 tokens: the 17th token of one sequence does not fit, and nothing changes.
  std::vector<int32_t> seventeen(17, 1);
  expectError(sscKvCacheAppend(c, 17, seventeen.data(), kv.data(), kv.data(), nullptr),
              sscInvalidUsage, "maxPages");
  int len = -1;
  ASSERT_EQ(sscKvCacheSequenceLength(c, 1, &len), sscSuccess);
  EXPECT_EQ(len, 0);
  ASSERT_EQ(sscKvCacheAppend(c, 16, seventeen.data(), kv.data(), kv.data(), nullptr), sscSuccess);
  int owner = -1;
  ASSERT_EQ(sscKvCacheTokenOwner(c, 1, 1000, &owner), sscSuccess);
  EXPECT_EQ(owner, 0);

  std::vector<float> q(2 * 4 * 64, 0.5f), out(2 * 4 * 64), lse(8);
  const int32_t two[] = {1, 1};
  expectError(sscAttentionDecode(c, q.data(), sscFloat32, 4, 2, two, 1.0f, nullptr, 0, 0,
                                 out.data(), lse.data(), nullptr),
              sscInvalidArgument, "twice");
  const int32_t pair[] = {1, 0};
  expectError(sscAttentionDecode(c, q.data(), sscFloat32, 3, 2, pair, 1.0f, nullptr, 0, 0,
                                 out.data(), lse.data(), nullptr),
              sscInvalidArgument, "numQHeads");
  expectError(sscAttentionDecode(c, q.data(), sscFloat32, 8, 2, pair, 1.0f, nullptr, 0, 0,
                                 out.data(), lse.data(), nullptr),
              sscInvalidArgument, "maxQHeads");
  expectError(sscAttentionDecode(c, q.data(), sscFloat32, 4, 3, pair, 1.0f, nullptr, 0, 0,
                                 out.data(), lse.data(), nullptr),
              sscInvalidArgument, "maxBatch");
  expectError(sscAttentionDecode(c, q.data(), sscInt32, 4, 2, pair, 1.0f, nullptr, 0, 0, out.data(),
                                 lse.data(), nullptr),
              sscInvalidArgument, "ioDtype");
  expectError(sscAttentionDecode(c, q.data(), sscFloat32, 4, 2, pair, 1.0f, nullptr, -1, 0,
                                 out.data(), lse.data(), nullptr),
              sscInvalidArgument, "window");
  expectError(sscAttentionDecode(c, q.data(), sscFloat32, 4, 2, pair, 1.0f, nullptr, 0, 0x10,
                                 out.data(), lse.data(), nullptr),
              sscInvalidArgument, "flags");
  expectError(sscAttentionDecode(c, q.data(), sscFloat32, 4, 2, pair, 1.0f, nullptr, 0, 0, nullptr,
                                 lse.data(), nullptr),
              sscInvalidArgument, "out is NULL");
  // A good call: all keys and values are 1.0 (bf16 0x3f80), so every output is 1 and the LSE of
  // 16 equal scores s is s + log 16; sequence 0 is empty (zeros, -inf).
  ASSERT_EQ(sscAttentionDecode(c, q.data(), sscFloat32, 4, 2, pair, 0.125f, nullptr, 0, 0,
                               out.data(), lse.data(), nullptr),
            sscSuccess)
      << sscGetLastError(nullptr);
  EXPECT_FLOAT_EQ(out[0], 1.0f);
  EXPECT_NEAR(lse[0], 0.125f * 0.5f * 64 + std::log(16.0f), 1e-5);
  EXPECT_EQ(out[4 * 64], 0.0f);
  EXPECT_EQ(lse[4], -INFINITY);
  // A released sequence is empty again.
  ASSERT_EQ(sscKvCacheReleaseSequence(c, 1), sscSuccess);
  ASSERT_EQ(sscKvCacheSequenceLength(c, 1, &len), sscSuccess);
  EXPECT_EQ(len, 0);
  expectError(sscKvCacheReleaseSequence(c, 9), sscInvalidArgument, "seqId");

  ASSERT_EQ(sscKvCacheDestroy(c), sscSuccess);
  expectError(sscKvCacheDestroy(c), sscInvalidUsage, "not a live KV cache");
  expectError(sscKvCacheAppend(c, 1, seqs, kv.data(), kv.data(), nullptr), sscInvalidUsage,
              "not a live KV cache");
  EXPECT_EQ(sscKvCacheDestroy(nullptr), sscSuccess);
}

// sscKvCacheTrimSequence: its own arguments, then the windows it rules out (a refused call
// changes nothing), and a release that clears it.
TEST_F(AttnApi, TrimRefusesBadPositionsAndWindowsThatReachBelowIt) {
  sscKvCache_t c = nullptr;
  ASSERT_EQ(sscKvCacheCreate(comm_, &cfg_, &c), sscSuccess) << sscGetLastError(nullptr);
  std::vector<uint16_t> kv(2 * 64 * 16, 0x3f80);
  std::vector<int32_t> ten(10, 1);
  ASSERT_EQ(sscKvCacheAppend(c, 10, ten.data(), kv.data(), kv.data(), nullptr), sscSuccess);
  expectError(sscKvCacheTrimSequence(c, 3, 0), sscInvalidArgument, "seqId");
  expectError(sscKvCacheTrimSequence(c, 1, -1), sscInvalidArgument, "position = -1");
  expectError(sscKvCacheTrimSequence(c, 1, 11), sscInvalidArgument, "length 10");
  expectError(sscKvCacheTrimSequence(nullptr, 1, 0), sscInvalidArgument, "cache");
  ASSERT_EQ(sscKvCacheTrimSequence(c, 1, 6), sscSuccess) << sscGetLastError(nullptr);
  ASSERT_EQ(sscKvCacheTrimSequence(c, 1, 2), sscSuccess);  // below the trim: nothing changes
  int len = -1;
  ASSERT_EQ(sscKvCacheSequenceLength(c, 1, &len), sscSuccess);
  EXPECT_EQ(len, 10);

  // All keys and values are 1: every output is 1 and the LSE of n equal scores s is s + log n.
  std::vector<float> q(4 * 64, 0.5f), out(4 * 64), lse(4);
  const int32_t one[] = {1};
  const float s = 0.125f * 0.5f * 64;
  expectError(sscAttentionDecode(c, q.data(), sscFloat32, 4, 1, one, 0.125f, nullptr, 0, 0,
                                 out.data(), lse.data(), nullptr),
              sscInvalidUsage, "trimmed before position 6");
  expectError(sscAttentionDecode(c, q.data(), sscFloat32, 4, 1, one, 0.125f, nullptr, 5, 0,
                                 out.data(), lse.data(), nullptr),
              sscInvalidUsage, "window = 5 attends from position 5");
  ASSERT_EQ(sscAttentionDecode(c, q.data(), sscFloat32, 4, 1, one, 0.125f, nullptr, 4, 0,
                               out.data(), lse.data(), nullptr),
            sscSuccess)
      << sscGetLastError(nullptr);
  EXPECT_FLOAT_EQ(out[0], 1.0f);
  EXPECT_NEAR(lse[0], s + std::log(4.0f), 1e-5);
  // A prefill of the last 2 tokens under window 4 reaches back to position 5.
  const int32_t cu[] = {0, 2};
  std::vector<float> pq(2 * 4 * 64, 0.5f), pout(2 * 4 * 64), plse(8);
  expectError(sscAttentionPrefill(c, pq.data(), sscFloat32, 4, 1, one, cu, 0.125f, nullptr, 4, 0,
                                  pout.data(), plse.data(), nullptr),
              sscInvalidUsage, "attends from position 5");
  ASSERT_EQ(sscAttentionPrefill(c, pq.data(), sscFloat32, 4, 1, one, cu, 0.125f, nullptr, 3, 0,
                                pout.data(), plse.data(), nullptr),
            sscSuccess)
      << sscGetLastError(nullptr);
  EXPECT_NEAR(plse[0], s + std::log(3.0f), 1e-5);
  // Trimming to the length is allowed (nothing left to attend to but what comes next).
  ASSERT_EQ(sscKvCacheTrimSequence(c, 1, 10), sscSuccess);
  // A release clears the trim: the whole sequence is attended to again.
  ASSERT_EQ(sscKvCacheReleaseSequence(c, 1), sscSuccess);
  ASSERT_EQ(sscKvCacheAppend(c, 10, ten.data(), kv.data(), kv.data(), nullptr), sscSuccess);
  ASSERT_EQ(sscAttentionDecode(c, q.data(), sscFloat32, 4, 1, one, 0.125f, nullptr, 0, 0,
                               out.data(), lse.data(), nullptr),
            sscSuccess)
      << sscGetLastError(nullptr);
  EXPECT_NEAR(lse[0], s + std::log(10.0f), 1e-5);
  ASSERT_EQ(sscKvCacheDestroy(c), sscSuccess);
  expectError(sscKvCacheTrimSequence(c, 1, 0), sscInvalidUsage, "not a live KV cache");
}

// Append and prefill build their page lists on the host at each call: a graph's replays would
// reuse the captured ones (tokens appended since missing, an append's rows rewritten). On a
// stream being captured they are refused, name the reason and change nothing; off capture the
// same calls run. A decode is capturable on the GPU backends only (its own page lists, refreshed
// by every append; gpu_attention_test --graph replays them): the host backend, which has no
// graphs, refuses it. The host backend's test hook stands in for a CUDA/HIP capture.
TEST_F(AttnApi, CallsOnAStreamBeingCapturedAreRefusedAndChangeNothing) {
  sscKvCache_t c = nullptr;
  ASSERT_EQ(sscKvCacheCreate(comm_, &cfg_, &c), sscSuccess) << sscGetLastError(nullptr);
  sscStream_t s = nullptr;
  ASSERT_EQ(sscStreamCreate(&s), sscSuccess);
  ssc::HostStream* host = ssc::HostStream::fromHandle(s);
  if (host == nullptr) {  // a GPU backend's stream: the hook is the host backend's
    sscStreamDestroy(s);
    sscKvCacheDestroy(c);
    GTEST_SKIP() << "needs the host backend's streams (STARSCREAM_BACKEND=host)";
  }
  std::vector<uint16_t> kv(2 * 64 * 4, 0x3f80);
  std::vector<int32_t> seqs(4, 1);
  std::vector<float> q(4 * 4 * 64, 0.5f), out(4 * 4 * 64, -7.0f), lse(16, -7.0f);
  const int32_t one[] = {1};
  const int32_t cu[] = {0, 4};

  host->pretendCapture(true);
  expectError(sscKvCacheAppend(c, 4, seqs.data(), kv.data(), kv.data(), s), sscInvalidUsage,
              "captured into a graph");
  int len = -1;
  ASSERT_EQ(sscKvCacheSequenceLength(c, 1, &len), sscSuccess);
  EXPECT_EQ(len, 0) << "a refused append changed the page table";
  expectError(sscAttentionDecode(c, q.data(), sscFloat32, 4, 1, one, 0.125f, nullptr, 0, 0,
                                 out.data(), lse.data(), s),
              sscInvalidUsage, "only the GPU backends can replay");
  expectError(sscAttentionPrefill(c, q.data(), sscFloat32, 4, 1, one, cu, 0.125f, nullptr, 0, 0,
                                  out.data(), lse.data(), s),
              sscInvalidUsage, "captured into a graph");
  ASSERT_EQ(sscStreamSynchronize(s), sscSuccess);
  EXPECT_EQ(out[0], -7.0f) << "a refused call wrote its output";

  host->pretendCapture(false);
  ASSERT_EQ(sscKvCacheAppend(c, 4, seqs.data(), kv.data(), kv.data(), s), sscSuccess)
      << sscGetLastError(nullptr);
  ASSERT_EQ(sscAttentionDecode(c, q.data(), sscFloat32, 4, 1, one, 0.125f, nullptr, 0, 0,
                               out.data(), lse.data(), s),
            sscSuccess)
      << sscGetLastError(nullptr);
  ASSERT_EQ(sscStreamSynchronize(s), sscSuccess);
  EXPECT_FLOAT_EQ(out[0], 1.0f);
  EXPECT_NEAR(lse[0], 0.125f * 0.5f * 64 + std::log(4.0f), 1e-5);
  ASSERT_EQ(sscStreamDestroy(s), sscSuccess);
  ASSERT_EQ(sscKvCacheDestroy(c), sscSuccess);
}

}  // namespace
