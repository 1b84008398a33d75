// SPDX-License-Identifier: MIT
// Measured anchors (tuner/anchors.h): interpolation in log-size and its reach, the ranking that
// lets measured times decide between measured algorithms and the model elsewhere, and the choice
// a Tuner makes with a calibration's anchors: where they say B beats A, B, even when the model says
// A; outside their range, the model.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/collectives/algorithms.h"
#include "src/core/errors.h"
#include "tests/support/topology_files.h"
#include "tuner/anchors.h"
#include "tuner/model.h"
#include "tuner/select.h"

namespace ssc {
namespace {

using test::topoFile;

AnchorSeries series(CollKind coll, Algo algo, Protocol protocol, std::vector<AnchorPoint> pts) {
  return {coll, algo, protocol, std::move(pts)};
}

TEST(Anchors, InterpolatesInLogSizeWithinTheirReach) {
  Anchors a;
  a.series.push_back(series(CollKind::kAllReduce, Algo::kRing, Protocol::kFifo,
                            {{1024, 10}, {16384, 40}, {65536, 40}}));
  double us = 0;
  std::string where;
  // On a point, and between two: a power law through them (4 KiB is halfway in log-size).
  ASSERT_TRUE(a.timeAt(CollKind::kAllReduce, Algo::kRing, Protocol::kFifo, 1024, &us, &where));
  EXPECT_DOUBLE_EQ(us, 10);
  EXPECT_EQ(where, "1 KiB");
  ASSERT_TRUE(a.timeAt(CollKind::kAllReduce, Algo::kRing, Protocol::kFifo, 4096, &us, &where));
  EXPECT_NEAR(us, 20, 1e-9);
  EXPECT_EQ(where, "1 KiB - 16 KiB");
  ASSERT_TRUE(a.timeAt(CollKind::kAllReduce, Algo::kRing, Protocol::kFifo, 32768, &us));
  EXPECT_NEAR(us, 40, 1e-9);
  // A factor of two beyond each end, along the nearest segment; no further.
  ASSERT_TRUE(a.timeAt(CollKind::kAllReduce, Algo::kRing, Protocol::kFifo, 512, &us, &where));
  EXPECT_NEAR(us, 10 / std::sqrt(2.0), 1e-9);
  EXPECT_EQ(where, "512 B beyond 1 KiB");
  ASSERT_TRUE(a.timeAt(CollKind::kAllReduce, Algo::kRing, Protocol::kFifo, 131072, &us));
  EXPECT_NEAR(us, 40, 1e-9);
  EXPECT_FALSE(a.timeAt(CollKind::kAllReduce, Algo::kRing, Protocol::kFifo, 511, &us));
  EXPECT_FALSE(a.timeAt(CollKind::kAllReduce, Algo::kRing, Protocol::kFifo, 131073, &us));
  // Another collective, algorithm or protocol: not measured.
  EXPECT_FALSE(a.timeAt(CollKind::kAllGather, Algo::kRing, Protocol::kFifo, 1024, &us));
  EXPECT_FALSE(a.timeAt(CollKind::kAllReduce, Algo::kDirect, Protocol::kFifo, 1024, &us));
  EXPECT_FALSE(a.timeAt(CollKind::kAllReduce, Algo::kRing, Protocol::kLL, 1024, &us));
  EXPECT_FALSE(a.timeAt(CollKind::kAllReduce, Algo::kRing, Protocol::kFifo, 0, &us));
  // Beyond an end the slope is held to [0, 1]: a falling last segment extends flat.
  Anchors falling;
  falling.series.push_back(
      series(CollKind::kAllReduce, Algo::kRing, Protocol::kFifo, {{8, 12}, {1024, 9}}));
  ASSERT_TRUE(falling.timeAt(CollKind::kAllReduce, Algo::kRing, Protocol::kFifo, 2048, &us));
  EXPECT_NEAR(us, 9, 1e-9);
}

TEST(Anchors, MeasuredRankTheMeasuredAndTheModelTheRest) {
  Anchors a;
  a.series.push_back(series(CollKind::kAllReduce, Algo::kDirect, Protocol::kFifo, {{1024, 14}}));
  a.series.push_back(
      series(CollKind::kAllReduce, Algo::kSymmetric, Protocol::kLL, {{8, 7}, {1024, 7.3}}));
  const RankedCandidate direct{Algo::kDirect, Protocol::kFifo, 9.0};
  const RankedCandidate ll{Algo::kSymmetric, Protocol::kLL, 10.0};
  RankedCandidate ring{Algo::kRing, Protocol::kFifo, 12.0};
  // The model says direct; the measurements say LL, which two candidates are measured decides.
  AnchoredRanking r = rankWithAnchors(a, CollKind::kAllReduce, 1024, {ring, direct, ll});
  EXPECT_EQ(r.best, 2u);
  EXPECT_TRUE(r.measured);
  EXPECT_NE(r.why.find("measured 7.3 us"), std::string::npos) << r.why;
  EXPECT_NE(r.why.find("next direct 14.0 us"), std::string::npos) << r.why;
  EXPECT_NE(r.why.find("the model alone: direct"), std::string::npos) << r.why;
  // An unmeasured candidate meets the measured winner on the model's scale.
  ring.modelUs = 9.5;
  r = rankWithAnchors(a, CollKind::kAllReduce, 1024, {ring, direct, ll});
  EXPECT_EQ(r.best, 0u);
  EXPECT_FALSE(r.measured);
  EXPECT_NE(r.why.find("ring was not measured"), std::string::npos) << r.why;
  // Past LL's reach (2 KiB) only direct is measured: one measured candidate ranks nothing, the
  // model decides and nothing is said to be measured.
  ring.modelUs = 12;
  a.series[0].points.push_back({8192, 16});
  r = rankWithAnchors(a, CollKind::kAllReduce, 2048, {ring, direct, ll});
  EXPECT_EQ(r.best, 2u);
  EXPECT_TRUE(r.measured);
  r = rankWithAnchors(a, CollKind::kAllReduce, 4096, {ring, direct, ll});
  EXPECT_EQ(r.best, 1u);
  EXPECT_FALSE(r.measured);
  EXPECT_TRUE(r.why.empty()) << r.why;
  // Nothing measured reaches the size: the model alone, and nothing to explain.
  r = rankWithAnchors(a, CollKind::kAllReduce, 1 << 20, {ring, direct, ll});
  EXPECT_EQ(r.best, 1u);
  EXPECT_FALSE(r.measured);
  EXPECT_TRUE(r.why.empty()) << r.why;
  r = rankWithAnchors(Anchors{}, CollKind::kAllReduce, 1024, {ring, direct, ll});
  EXPECT_EQ(r.best, 1u);
  EXPECT_FALSE(r.measured);
  // Measured ties go to the model's better candidate; ties of both to the earlier one.
  Anchors tie;
  tie.series.push_back(series(CollKind::kAllReduce, Algo::kRing, Protocol::kFifo, {{1024, 5}}));
  tie.series.push_back(series(CollKind::kAllReduce, Algo::kDirect, Protocol::kFifo, {{1024, 5}}));
  EXPECT_EQ(rankWithAnchors(tie, CollKind::kAllReduce, 1024, {ring, direct}).best, 1u);
  const RankedCandidate ringLikeDirect{Algo::kRing, Protocol::kFifo, direct.modelUs};
  EXPECT_EQ(rankWithAnchors(tie, CollKind::kAllReduce, 1024, {ringLikeDirect, direct}).best, 0u);
}

// Where every candidate is bound by the same launch (a K = 2 sweep on an H100: FIFO algorithms
// 11.1 - 11.3 us, symmetric 11.4), a measured lead of a few percent is noise: within kMeasuredTie
// the model, which knows the FIFO kernel is the heavier, decides. A larger lead still decides.
TEST(Anchors, MeasuredNearTiesGoToTheModel) {
  Anchors a;
  a.series.push_back(
      series(CollKind::kReduceScatter, Algo::kRing, Protocol::kFifo, {{1024, 11.1}}));
  a.series.push_back(
      series(CollKind::kReduceScatter, Algo::kHierarchical, Protocol::kFifo, {{1024, 11.3}}));
  a.series.push_back(
      series(CollKind::kReduceScatter, Algo::kSymmetric, Protocol::kZeroCopy, {{1024, 11.4}}));
  const RankedCandidate ring{Algo::kRing, Protocol::kFifo, 11.4};
  const RankedCandidate hier{Algo::kHierarchical, Protocol::kFifo, 11.4};
  const RankedCandidate sym{Algo::kSymmetric, Protocol::kZeroCopy, 9.9};
  AnchoredRanking r = rankWithAnchors(a, CollKind::kReduceScatter, 1024, {ring, hier, sym});
  EXPECT_EQ(r.best, 2u);
  EXPECT_TRUE(r.measured);
  EXPECT_NE(r.why.find("measured 11.4 us"), std::string::npos) << r.why;
  EXPECT_NE(r.why.find("a tie the model breaks"), std::string::npos) << r.why;
  EXPECT_NE(r.why.find("within 5 % of ring's 11.1 us"), std::string::npos) << r.why;
  EXPECT_NE(r.why.find("next hierarchical 11.3 us"), std::string::npos) << r.why;
  EXPECT_EQ(r.why.find("the model alone"), std::string::npos) << r.why;
  // Just past the tie: 11.1 * 1.05 = 11.655 us.
  a.series[2].points[0].timeUs = 11.7;
  r = rankWithAnchors(a, CollKind::kReduceScatter, 1024, {ring, hier, sym});
  EXPECT_EQ(r.best, 0u);
  EXPECT_NE(r.why.find("the model alone: symmetric"), std::string::npos) << r.why;
  // The tie's pick, not the fastest measured, meets the unmeasured candidates on the model's
  // scale.
  a.series[2].points[0].timeUs = 11.4;
  const RankedCandidate direct{Algo::kDirect, Protocol::kFifo, 10.5};
  r = rankWithAnchors(a, CollKind::kReduceScatter, 1024, {ring, hier, sym, direct});
  EXPECT_EQ(r.best, 2u);
}

TEST(Anchors, JsonRoundTripAndRefusals) {
  Anchors a;
  a.series.push_back(series(CollKind::kAllGather, Algo::kSymmetric, Protocol::kZeroCopyWide,
                            {{16, 6.812}, {1024, 7.25}, {uint64_t{256} << 20, 1234}}));
  a.series.push_back(series(CollKind::kReduceScatter, Algo::kHierarchical, Protocol::kFifo,
                            {{uint64_t{1} << 40, 1e8}}));
  Anchors back;
  ASSERT_EQ(parseAnchors(anchorsToJson(a), "test", &back), sscSuccess) << lastError();
  EXPECT_EQ(back, a);
  ASSERT_EQ(parseAnchors("[]", "test", &back), sscSuccess);
  EXPECT_TRUE(back.empty());
  const std::pair<const char*, const char*> refused[] = {
      {R"([{"collective": "gather", "algorithm": "ring", "protocol": "fifo", "points": [[8, 1]]}])",
       "anchors[0].collective"},
      {R"([{"collective": "allreduce", "algorithm": "ring", "protocol": "simple",
            "points": [[8, 1]]}])",
       "anchors[0].protocol"},
      {R"([{"collective": "allreduce", "algorithm": "ring", "protocol": "fifo", "points": []}])",
       "anchors[0].points"},
      {R"([{"collective": "allreduce", "algorithm": "ring", "protocol": "fifo",
            "points": [[8, 1]], "extra": 1}])",
       "anchors[0].extra"},
      {R"([{"collective": "allreduce", "algorithm": "ring", "protocol": "fifo",
            "points": [[-8, 1]]}])",
       "anchors[0].points[0]"},
      {R"([{"collective": "allreduce", "algorithm": "ring", "protocol": "fifo",
            "points": [[8, 1], [8, 2]]}])",
       "ascend"},
      {R"([{"collective": "allreduce", "algorithm": "ring", "protocol": "fifo", "points": [[8, 1]]},
           {"collective": "allreduce", "algorithm": "ring", "protocol": "fifo", "points": [[8, 1]]}])",
       "a second series"},
      {"[1, ", "invalid JSON"}};
  for (const auto& [text, expect] : refused) {
    EXPECT_EQ(parseAnchors(text, "test", &back), sscInvalidArgument) << text;
    EXPECT_NE(lastError().find(expect), std::string::npos) << lastError();
  }
}

// The choice of a Tuner with a calibration's anchors: at 1 KiB the anchors say B beats A (the
// model's choice), so B; beyond their reach the model's choice stands; STARSCREAM_ALGO-forced
// calls keep their algorithm.
TEST(Anchors, HandMadeAnchorsOverruleTheModelWhereTheyReach) {
  const Topology topo = topoFile("h200-mps-2");
  const TunerProfile profile = defaultProfile(topo);
  const Tuner model(topo, profile);
  constexpr uint64_t kAt = 1024;
  for (CollKind coll : {CollKind::kAllReduce, CollKind::kReduceScatter, CollKind::kAllGather})
    for (bool sym : {true, false}) {
      SCOPED_TRACE(std::string(collName(coll)) + (sym ? " registered" : " plain"));
      const Choice a = model.choose(coll, kAt, sym);
      // B: the model's worst valid algorithm at that size, anchored as the fastest.
      Choice b = a;
      double worst = 0;
      for (const Estimate& e : model.estimateAll(coll, kAt, sym))
        if (e.valid && e.algo != a.algo && e.timeUs > worst) {
          worst = e.timeUs;
          b = {e.algo, e.protocol};
        }
      ASSERT_NE(a, b);
      // Every valid algorithm measured at 1 KiB (the symmetric all-gather on both its grids, as
      // the sweep measures it): B at 5 us, the others at 20.
      Anchors anchors;
      for (const Estimate& e : model.estimateAll(coll, kAt, sym)) {
        if (!e.valid) continue;
        const double us = e.algo == b.algo ? 5.0 : 20.0;
        anchors.series.push_back(series(coll, e.algo, e.protocol, {{kAt, us}}));
        if (e.algo == Algo::kSymmetric && coll == CollKind::kAllGather &&
            e.protocol != Protocol::kZeroCopyWide)
          anchors.series.push_back(series(coll, e.algo, Protocol::kZeroCopyWide, {{kAt, 30}}));
      }
      const Tuner tuner(topo, profile, {}, anchors);
      EXPECT_EQ(tuner.choose(coll, kAt, sym), b);
      const Decision d = tuner.explain(coll, kAt, sym);
      EXPECT_EQ(d.choice, b);
      EXPECT_TRUE(d.measured);
      EXPECT_NE(d.why.find("measured 5.0 us"), std::string::npos) << d.why;
      // Within the anchors' reach (a factor of two), still B; the choice cache keeps it.
      EXPECT_EQ(tuner.choose(coll, kAt * 2, sym), b);
      EXPECT_EQ(tuner.choose(coll, kAt * 2, sym), b);
      // Outside it the model decides, as without anchors.
      for (uint64_t bytes : {kAt * 4, uint64_t{1} << 20, uint64_t{1} << 30}) {
        EXPECT_EQ(tuner.choose(coll, bytes, sym), model.choose(coll, bytes, sym)) << bytes;
        EXPECT_FALSE(tuner.explain(coll, bytes, sym).measured) << bytes;
      }
      // A forced algorithm stays forced.
      EXPECT_EQ(tuner.choose(coll, kAt, sym, a.algo).algo, a.algo);
      EXPECT_EQ(selectAlgo(tuner, coll, kAt, sym, a.algo), a.algo);
    }
}

// The symmetric all-gather's grids are two candidates: the anchors pick the grid as well.
TEST(Anchors, PickTheAllGathersGrid) {
  const Topology topo = topoFile("h200-mps-2");
  const Tuner model(topo, defaultProfile(topo));
  const uint64_t at = 4096;
  // The topology's figures tie the two grids: the bulk one wins the tie.
  ASSERT_EQ(model.choose(CollKind::kAllGather, at, true, Algo::kSymmetric).protocol,
            Protocol::kZeroCopy);
  Anchors anchors;
  anchors.series.push_back(
      series(CollKind::kAllGather, Algo::kSymmetric, Protocol::kZeroCopy, {{at, 9}}));
  anchors.series.push_back(
      series(CollKind::kAllGather, Algo::kSymmetric, Protocol::kZeroCopyWide, {{at, 6}}));
  const Tuner tuner(topo, defaultProfile(topo), {}, anchors);
  EXPECT_EQ(tuner.choose(CollKind::kAllGather, at, true, Algo::kSymmetric).protocol,
            Protocol::kZeroCopyWide);
}

// Staging (zero-copy over staging buffers, two copies added, each a launch) is weighed on the
// scale the choice between the algorithms uses: where the sweep timed both the zero-copy kernel
// and the FIFO algorithm, their measured times decide; elsewhere the model's.
TEST(Anchors, StagingFollowsTheMeasuredTimes) {
  const Topology topo = topoFile("h200-mps-2");
  const Tuner model(topo, defaultProfile(topo));
  const uint64_t at = 1024;
  for (CollKind coll : {CollKind::kReduceScatter, CollKind::kAllGather}) {
    SCOPED_TRACE(collName(coll));
    // Every algorithm for plain buffers measured at `fifoUs`, the zero-copy kernel at `zcUs`.
    const auto anchored = [&](double zcUs, double fifoUs) {
      Anchors anchors;
      for (const Estimate& e : model.estimateAll(coll, at, true))
        if (e.valid)
          anchors.series.push_back(
              series(coll, e.algo, e.protocol, {{at, e.algo == Algo::kSymmetric ? zcUs : fifoUs}}));
      return Tuner(topo, defaultProfile(topo), {}, anchors);
    };
    // The zero-copy kernel measured slower than the FIFO algorithm: staging adds two copies to
    // it, so it cannot pay, whatever the model says.
    EXPECT_FALSE(stagingPaysOff(anchored(14, 11), coll, at));
    // Each copy is a launch: a zero-copy kernel faster by less than two launches loses staged,
    // one faster by more wins.
    const double launch = model.variant().launchUs;
    EXPECT_FALSE(stagingPaysOff(anchored(10, 10 + 1.5 * launch), coll, at));
    EXPECT_TRUE(stagingPaysOff(anchored(10, 10 + 2.5 * launch), coll, at));
    // Beyond the anchors' reach the model decides, as without anchors.
    const uint64_t far = at * 64;
    EXPECT_EQ(stagingPaysOff(anchored(14, 11), coll, far), stagingPaysOff(model, coll, far));
    EXPECT_EQ(stagingPaysOff(anchored(10, 10 + 2.5 * launch), coll, far),
              stagingPaysOff(model, coll, far));
  }
}

// Ranks must agree on the anchors as on the profile.
TEST(Anchors, AreInTheFingerprint) {
  const Topology topo = topoFile("h200-mps-2");
  Anchors a;
  a.series.push_back(series(CollKind::kAllReduce, Algo::kRing, Protocol::kFifo, {{8, 10}}));
  Anchors b = a;
  b.series[0].points[0].timeUs = 11;
  const TunerProfile p = defaultProfile(topo);
  EXPECT_NE(Tuner(topo, p, {}, a).fingerprint(), Tuner(topo, p, {}, b).fingerprint());
  EXPECT_NE(Tuner(topo, p, {}, a).fingerprint(), Tuner(topo, p).fingerprint());
  EXPECT_EQ(Tuner(topo, p, {}, a).fingerprint(), Tuner(topo, p, {}, a).fingerprint());
}

}  // namespace
}  // namespace ssc
