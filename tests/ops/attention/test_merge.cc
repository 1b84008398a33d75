// SPDX-License-Identifier: MIT
// The fp32 partial attention and the merge of partials: split a sequence's tokens over shards
// in every way the interleaves do (and some they do not), merge, compare with the reference
// attention over all tokens. Covers empty shards, one token, sinks, windows, GQA head groups
// and head dims 64/128.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "src/ops/attention/merge.h"
#include "tests/support/attention_reference.h"

using namespace ssc::attn;
namespace ref = ssc::test::attn;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

float maxAbsDiff(const float* a, const float* b, int n) {
  float m = 0;
  for (int i = 0; i < n; ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

// Partial of one shard: the tokens t in [start, L) with owner(t) == shard.
template <class Owner>
float shardPartial(const ref::Workload& w, int seq, int head, const float* q, float scale,
                   int start, int shard, Owner owner, float* out) {
  PartialAccumulator acc(w.headDim);
  for (int t = start; t < w.length(seq); ++t) {
    if (owner(t) != shard) continue;
    double dot = 0;
    for (int i = 0; i < w.headDim; ++i) dot += q[i] * w.k(seq, t, head)[i];
    acc.add(static_cast<float>(dot) * scale, w.v(seq, t, head));
  }
  return acc.finish(out);
}

struct MergeCase {
  int headDim;
  int ratio;  // query heads per KV head
};

class AttnMerge : public testing::TestWithParam<MergeCase> {};

}  // namespace

TEST(AttnMergeBasics, EmptyShardsAndSinks) {
  const int D = 4;
  float outs[2 * D] = {0, 0, 0, 0, 1, 2, 3, 4};
  float lses[2] = {-kInf, 0.5f};
  float out[D];
  // An empty shard changes nothing.
  EXPECT_FLOAT_EQ(mergePartials(outs, D, lses, 2, D, nullptr, out), 0.5f);
  EXPECT_FLOAT_EQ(out[3], 4.0f);
  // All empty: zeros and -inf; with a sink: zeros and the sink.
  float none[2] = {-kInf, -kInf};
  EXPECT_EQ(mergePartials(outs, D, none, 2, D, nullptr, out), -kInf);
  EXPECT_EQ(out[0], 0.0f);
  const float sink = -1.25f;
  EXPECT_FLOAT_EQ(mergePartials(outs, D, none, 2, D, &sink, out), sink);
  EXPECT_EQ(out[3], 0.0f);
  // A sink equal to the only shard's LSE halves the output and adds log 2.
  const float s2 = 0.5f;
  EXPECT_NEAR(mergePartials(outs, D, lses, 2, D, &s2, out), 0.5f + std::log(2.0f), 1e-6);
  EXPECT_NEAR(out[1], 1.0f, 1e-6);
  // No NaN from huge LSEs.
  float big[2] = {80.0f, 1e30f};
  EXPECT_FALSE(std::isnan(mergePartials(outs, D, big, 2, D, nullptr, out)));
  EXPECT_FALSE(std::isnan(out[0]));
}

TEST_P(AttnMerge, ShardedEqualsReference) {
  const MergeCase mc = GetParam();
  const int kvHeads = 2, D = mc.headDim;
  // Odd lengths, one token, empty.
  const std::vector<int> lengths = {1, 37, 0, 64, 129};
  const ref::Workload w = ref::makeWorkload(11 + D + mc.ratio, kvHeads, D, sscBfloat16, lengths, 2);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  std::vector<float> q(D), expect(D), got(D);
  for (int seq = 0; seq < static_cast<int>(lengths.size()); ++seq)
    for (int qh = 0; qh < kvHeads * mc.ratio; ++qh) {
      const int head = qh / mc.ratio;
      for (float& x : q) x = 2.0f * u(rng);
      for (int window : {0, 1, 5, 1000})
        for (bool withSink : {false, true})
          for (int shards : {1, 2, 3, 4, 8}) {
            const float sink = -0.5f + 0.25f * qh;
            const float* sp = withSink ? &sink : nullptr;
            const int L = w.length(seq);
            const int start = window > 0 && L > window ? L - window : 0;
            const float expectLse =
                ref::referenceAttention(w, seq, head, q.data(), scale, window, sp, expect.data());
            // Round-robin pages of 4, blocks of 3 pages of 2, and "all on the last shard".
            auto rr = [&](int t) { return (t / 4) % shards; };
            auto blocks = [&](int t) { return (t / 2 / 3) % shards; };
            auto last = [&](int) { return shards - 1; };
            for (int which = 0; which < 3; ++which) {
              std::vector<float> outs(static_cast<size_t>(shards) * D);
              std::vector<float> lses(shards);
              for (int s = 0; s < shards; ++s) {
                float* o = &outs[static_cast<size_t>(s) * D];
                lses[s] = which == 0 ? shardPartial(w, seq, head, q.data(), scale, start, s, rr, o)
                          : which == 1
                              ? shardPartial(w, seq, head, q.data(), scale, start, s, blocks, o)
                              : shardPartial(w, seq, head, q.data(), scale, start, s, last, o);
              }
              const float lse =
                  mergePartials(outs.data(), D, lses.data(), shards, D, sp, got.data());
              SCOPED_TRACE(testing::Message()
                           << "seq " << seq << " qh " << qh << " window " << window << " sink "
                           << withSink << " shards " << shards << " placement " << which);
              EXPECT_LE(maxAbsDiff(got.data(), expect.data(), D), 2e-5f);
              if (std::isinf(expectLse))
                EXPECT_EQ(lse, expectLse);
              else
                EXPECT_NEAR(lse, expectLse, 2e-5f * std::max(1.0f, std::fabs(expectLse)));
              // The pairwise form, folded in reverse order, gives the same (associativity).
              if (!withSink) {
                std::vector<float> acc(D, 0.0f);
                float accLse = -kInf;
                for (int s = shards - 1; s >= 0; --s)
                  mergeInto(acc.data(), &accLse, &outs[static_cast<size_t>(s) * D], lses[s], D);
                EXPECT_LE(maxAbsDiff(acc.data(), expect.data(), D), 2e-5f);
                if (std::isinf(expectLse))
                  EXPECT_EQ(accLse, expectLse);
                else
                  EXPECT_NEAR(accLse, lse, 1e-5f * std::max(1.0f, std::fabs(lse)));
              }
            }
          }
    }
}

INSTANTIATE_TEST_SUITE_P(HeadDimsAndRatios, AttnMerge,
                         testing::Values(MergeCase{64, 1}, MergeCase{64, 8}, MergeCase{64, 16},
                                         MergeCase{128, 1}, MergeCase{128, 8}, MergeCase{128, 16}),
                         [](const testing::TestParamInfo<MergeCase>& i) {
                           return "d" + std::to_string(i.param.headDim) + "_gqa" +
                                  std::to_string(i.param.ratio);
                         });
