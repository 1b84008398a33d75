// SPDX-License-Identifier: MIT
// Online refinement's arithmetic (tuner/refine.h): which choices a size class tries, in which
// order its calls try them, one rank's time per candidate, and the winner from every rank's times.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "src/collectives/algorithms.h"
#include "tests/support/topology_files.h"
#include "tuner/anchors.h"
#include "tuner/model.h"
#include "tuner/refine.h"

namespace ssc {
namespace {

using test::topoFile;

const Choice kRing{Algo::kRing, Protocol::kFifo};
const Choice kDirect{Algo::kDirect, Protocol::kFifo};
const Choice kZeroCopy{Algo::kSymmetric, Protocol::kZeroCopy};

TEST(Refine, CandidatesStartWithTheTunersChoice) {
  for (const char* file : {"h200-mps-8", "2x2", "mi300x-8x-cpx-nps4"}) {
    const Topology topo = topoFile(file);
    const Tuner tuner(topo, defaultProfile(topo));
    for (CollKind coll : {CollKind::kAllReduce, CollKind::kReduceScatter, CollKind::kAllGather,
                          CollKind::kBroadcast, CollKind::kReduce})
      for (bool sym : {true, false})
        for (uint64_t bytes : {uint64_t{8}, uint64_t{65536}, uint64_t{1} << 26}) {
          SCOPED_TRACE(fmt::format("{} {} {} {}", file, collName(coll), sym, bytes));
          const std::vector<Choice> c = refineCandidates(tuner, coll, bytes, sym);
          ASSERT_FALSE(c.empty());
          ASSERT_LE(c.size(), kRefineMaxCandidates);
          EXPECT_EQ(c[0], tuner.choose(coll, bytes, sym));
          // Calls expected to take a few launches keep the tuner's choice: nothing to try.
          const double own = tuner.estimate(coll, bytes, c[0].algo, sym, &c[0].protocol).timeUs;
          if (own < kRefineMinLaunches * tuner.variant().launchUs) EXPECT_EQ(c.size(), 1u) << own;
          double first = 0;
          for (size_t i = 0; i < c.size(); ++i) {
            // Each one a way the executor runs this call, none twice, none far behind the first.
            const Estimate e = tuner.estimate(coll, bytes, c[i].algo, sym, &c[i].protocol);
            ASSERT_TRUE(e.valid) << candidateName(c[i].algo, c[i].protocol) << ": " << e.why;
            if (i == 0) first = e.timeUs;
            EXPECT_LE(e.timeUs, first * kRefineReach);
            for (size_t j = 0; j < i; ++j) EXPECT_NE(c[i], c[j]);
            // Plain buffers never try zero-copy.
            if (!sym) EXPECT_NE(c[i].algo, Algo::kSymmetric);
          }
          EXPECT_EQ(refineCandidates(tuner, coll, bytes, sym, 1).size(), 1u);
          // Each one's expected time beside it, ascending after the first.
          std::vector<double> expected;
          EXPECT_EQ(refineCandidates(tuner, coll, bytes, sym, kRefineMaxCandidates, &expected), c);
          ASSERT_EQ(expected.size(), c.size());
          for (size_t i = 0; i < c.size(); ++i) EXPECT_GT(expected[i], 0) << i;
          for (size_t i = 2; i < c.size(); ++i) EXPECT_LE(expected[i - 1], expected[i]) << i;
        }
  }
}

// Where several FIFO algorithms can serve a call (a large all-reduce on two GPUs of two
// partitions) the class has something to try; the fastest expected come first.
TEST(Refine, CandidatesFollowTheMeasuredTimesWhereTheyReach) {
  const Topology topo = topoFile("2x2");
  const Tuner model(topo, defaultProfile(topo));
  const uint64_t at = uint64_t{1} << 26;
  const std::vector<Choice> plain = refineCandidates(model, CollKind::kAllReduce, at, false);
  ASSERT_GE(plain.size(), 2u);
  // The calibration measured the model's last-ranked candidate fastest: it is the tuner's choice
  // now (the anchors rank it), and still tried first.
  const Choice last = plain.back();
  const double launch = model.variant().launchUs;
  const auto anchored = [&](double winnerUs, double othersUs) {
    Anchors anchors;
    for (const Estimate& e : model.estimateAll(CollKind::kAllReduce, at, false))
      if (e.valid)
        anchors.series.push_back({CollKind::kAllReduce,
                                  e.algo,
                                  e.protocol,
                                  {{at, e.algo == last.algo ? winnerUs : othersUs}}});
    return Tuner(topo, defaultProfile(topo), {}, anchors);
  };
  // The others measured within 2x: tried after it.
  const double big = 100 * kRefineMinLaunches * launch;
  std::vector<Choice> c =
      refineCandidates(anchored(big, 1.5 * big), CollKind::kAllReduce, at, false);
  ASSERT_GE(c.size(), 2u);
  EXPECT_EQ(c[0], last);
  // Everything else measured 10x slower: beyond kRefineReach, not worth a trial.
  c = refineCandidates(anchored(big, 10 * big), CollKind::kAllReduce, at, false);
  EXPECT_EQ(c, std::vector<Choice>{last});
  // The winner measured at a few launches: the calibration's batches (launches included) decide,
  // not trials timed by their kernels alone.
  c = refineCandidates(anchored(0.5 * kRefineMinLaunches * launch, kRefineMinLaunches * launch),
                       CollKind::kAllReduce, at, false);
  EXPECT_EQ(c, std::vector<Choice>{last});
}

TEST(Refine, TrialsTakeTheCandidatesInTurn) {
  std::vector<int> got;
  for (uint64_t call = 0; call < 10; ++call) got.push_back(trialCandidate(call, 3, 3));
  EXPECT_EQ(got, (std::vector<int>{0, 1, 2, 0, 1, 2, 0, 1, 2, -1}));
  EXPECT_EQ(trialCandidate(0, 0, 3), -1);
  EXPECT_EQ(trialCandidate(0, 2, 0), -1);
  EXPECT_EQ(trialCandidate(1, 2, 1), 1);
  EXPECT_EQ(trialCandidate(2, 2, 1), -1);
}

TEST(Refine, OneRanksTimeIsTheMedianOfWhatIsKnown) {
  const std::vector<double> t =
      trialTimes(3, {{0, 30}, {1, 8}, {0, 10}, {1, -1}, {0, 20}, {1, 12}, {2, -1}});
  ASSERT_EQ(t.size(), 3u);
  EXPECT_DOUBLE_EQ(t[0], 20);  // 10, 20, 30
  EXPECT_DOUBLE_EQ(t[1], 10);  // 8, 12 (the unknown one left out)
  EXPECT_DOUBLE_EQ(t[2], -1);  // nothing known
  EXPECT_EQ(trialTimes(2, {}), (std::vector<double>{-1, -1}));
}

TEST(Refine, TheSlowestRankDecidesAndTiesKeepTheTunersChoice) {
  const std::vector<Choice> c{kRing, kDirect, kZeroCopy};
  // Two ranks: zero-copy fastest on both.
  RefineOutcome o = refineWinner(c, {100, 80, 30, 110, 90, 35}, 2);
  EXPECT_TRUE(o.measured);
  EXPECT_EQ(o.winner, 2u);
  EXPECT_NE(o.why.find("symmetric/zero_copy 35.0 us"), std::string::npos) << o.why;
  EXPECT_NE(o.why.find("ring 110.0 us"), std::string::npos) << o.why;
  // Direct fastest on rank 0 but slowest on rank 1: the call ends with its slowest rank.
  o = refineWinner(c, {100, 20, 60, 100, 150, 60}, 2);
  EXPECT_EQ(o.winner, 2u);
  // Within kMeasuredTie of the tuner's choice: noise, the tuner's choice stays.
  o = refineWinner(c, {100, 97, 200, 100, 98, 200}, 2);
  EXPECT_TRUE(o.measured);
  EXPECT_EQ(o.winner, 0u);
  // Beyond it, the faster one.
  o = refineWinner(c, {100, 90, 200, 100, 90, 200}, 2);
  EXPECT_EQ(o.winner, 1u);
}

TEST(Refine, OnlyWhatEveryRankTimedCounts) {
  const std::vector<Choice> c{kRing, kZeroCopy};
  // Zero-copy not timed on rank 1 (its calls were captured into a graph): the ring wins.
  RefineOutcome o = refineWinner(c, {100, 10, 100, -1}, 2);
  EXPECT_TRUE(o.measured);
  EXPECT_EQ(o.winner, 0u);
  EXPECT_NE(o.why.find("not timed on every rank"), std::string::npos) << o.why;
  // The tuner's choice not timed anywhere, zero-copy on every rank: zero-copy.
  o = refineWinner(c, {-1, 10, -1, 12}, 2);
  EXPECT_EQ(o.winner, 1u);
  // Nothing timed everywhere: not measured, the tuner's choice.
  o = refineWinner(c, {-1, 10, 100, -1}, 2);
  EXPECT_FALSE(o.measured);
  EXPECT_EQ(o.winner, 0u);
  // Malformed input: nothing decided, nothing read out of bounds.
  o = refineWinner(c, {1, 2, 3}, 2);
  EXPECT_FALSE(o.measured);
  EXPECT_EQ(o.winner, 0u);
  o = refineWinner({}, {}, 2);
  EXPECT_FALSE(o.measured);
}

}  // namespace
}  // namespace ssc
