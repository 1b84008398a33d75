// The cost model: its arithmetic against the classic alpha-beta formulas, the linearity the
// calibration relies on, the fit, and its choices on the emulated machines (tools/topologies)
// where the H200 sweeps of perf/RESULTS.md are the oracle.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "src/core/errors.h"
#include "tuner/fit.h"
#include "tuner/model.h"
#include "tuner/select.h"
#include "tuner/setup.h"

namespace ssc {
namespace {

Topology topoFile(const std::string& name) {
  Topology t;
  const std::string path = std::string(SSC_SOURCE_DIR) + "/tools/topologies/" + name + ".json";
  EXPECT_EQ(loadTopologyFile(path, kAnyRankCount, &t), sscSuccess) << lastError();
  return t;
}

// One figure for every tier and protocol, no launch, free local copies.
TunerProfile uniformProfile(double latencyUs, double bandwidthGBps) {
  TunerProfile p;
  p.name = "uniform";
  ProfileVariant v;
  v.launchUs = 0;
  v.copyGBps = 1e9;
  for (auto& tier : v.tiers)
    for (auto& ab : tier) ab = {latencyUs, bandwidthGBps};
  p.variants.push_back(v);
  return p;
}

TEST(TunerModel, RingMatchesAlphaBetaFormulas) {
  const int n = 8;
  const Topology flat = makeFlatTopology(n);
  // Latency only: one element per rank crosses 2(n-1) hops, one after the other.
  const Tuner lat(flat, uniformProfile(1.0, 1e9));
  const Estimate small = lat.estimate(CollKind::kAllReduce, n * 4, Algo::kRing, false);
  ASSERT_TRUE(small.valid) << small.why;
  EXPECT_NEAR(small.timeUs, 2 * (n - 1), 0.01);
  // Bandwidth only, a large call: each rank moves 2(n-1)/n of the buffer over one link, and its
  // last step copies the final 1/n out of the FIFO, which the plan kernel does at the same rate.
  const Tuner bw(flat, uniformProfile(0, 100));
  const uint64_t bytes = 1ull << 30;
  const Estimate big = bw.estimate(CollKind::kAllReduce, bytes, Algo::kRing, false);
  const double formula = (2.0 * (n - 1) + 1) / n * bytes / 100e3;  // us
  EXPECT_NEAR(big.timeUs / formula, 1.0, 0.05) << big.timeUs << " vs " << formula;
  // The bidirectional ring halves the bytes per channel; busbw is the link's.
  const Estimate bidir = bw.estimate(CollKind::kAllReduce, bytes, Algo::kBidirRing, false);
  EXPECT_NEAR(big.timeUs / bidir.timeUs, 2.0, 0.1);
  EXPECT_NEAR(busBandwidthGBps(CollKind::kAllReduce, bytes, n, big.timeUs),
              100.0 * 2 * (n - 1) / (2 * (n - 1) + 1), 5);
}

// One rank: every collective is one copy of the buffer at the copy rate, whatever the algorithm
// (the API short-cuts it; the H200 measured 129-132 us for 256 MiB with every algorithm).
TEST(TunerModel, OneRankIsOneCopy) {
  TunerProfile p = uniformProfile(3, 50);
  p.variants[0].launchUs = 5;
  p.variants[0].copyGBps = 2000;
  const Tuner t(makeFlatTopology(1), p);
  const uint64_t bytes = 256ull << 20;
  for (Algo a : {Algo::kRing, Algo::kBidirRing, Algo::kDirect, Algo::kSymmetric}) {
    const Estimate e = t.estimate(CollKind::kAllReduce, bytes, a, true);
    ASSERT_TRUE(e.valid) << algoName(a) << ": " << e.why;
    EXPECT_NEAR(e.timeUs, 5 + bytes / 2000e3, 1e-6 * e.timeUs) << algoName(a);
  }
  // With a 50 MB cache: 8 MiB in + out fit (launch only, as measured), 32 MiB do not.
  p.variants[0].cacheMB = 50;
  const Tuner cached(makeFlatTopology(1), p);
  EXPECT_NEAR(cached.estimate(CollKind::kAllGather, 8 << 20, Algo::kRing, true).timeUs, 5, 1e-9);
  EXPECT_NEAR(cached.estimate(CollKind::kAllGather, 32 << 20, Algo::kRing, true).timeUs,
              5 + (32 << 20) / 2000e3, 1e-6);
}

TEST(TunerModel, PredictionIsLinearInTheProfile) {
  const Topology cpx = topoFile("mi300x-8x-cpx-nps4");
  TunerProfile base;
  ASSERT_EQ(resolveProfile(cpx, &base), sscSuccess);
  const Tuner t0(cpx, base);
  for (Algo a : {Algo::kRing, Algo::kHierarchical, Algo::kSymmetric}) {
    const Estimate e = t0.estimate(CollKind::kAllReduce, 4 << 20, a, true);
    ASSERT_TRUE(e.valid) << algoName(a) << ": " << e.why;
    EXPECT_NEAR(t0.timeOf(e.features), e.timeUs, 1e-6 * e.timeUs);
    // One more microsecond of XGMI latency costs one microsecond per XGMI step on the path.
    TunerProfile slower = base;
    for (auto& v : slower.variants)
      v.tiers[1][static_cast<int>(e.protocol)].latencyUs += 1;
    const Estimate e1 = Tuner(cpx, slower).estimate(CollKind::kAllReduce, 4 << 20, a, true);
    EXPECT_NEAR(e1.timeUs - e.timeUs, e.features.latency[1][static_cast<int>(e.protocol)],
                1e-6 * e.timeUs + 1e-9)
        << algoName(a);
  }
}

TEST(TunerModel, ValidityFollowsTheAlgorithms) {
  const Tuner twoNodes(topoFile("2node-2x2"), uniformProfile(1, 10));
  EXPECT_FALSE(twoNodes.estimate(CollKind::kAllReduce, 1 << 20, Algo::kSymmetric, true).valid);
  const Tuner one(makeFlatTopology(4), uniformProfile(1, 10));
  EXPECT_FALSE(one.estimate(CollKind::kAllReduce, 1 << 20, Algo::kSymmetric, false).valid);
  EXPECT_TRUE(one.estimate(CollKind::kBroadcast, 1 << 20, Algo::kSymmetric, true).valid);
  EXPECT_FALSE(one.estimate(CollKind::kBroadcast, 1 << 20, Algo::kSymmetric, false).valid);
  EXPECT_TRUE(one.estimate(CollKind::kBroadcast, 1 << 20, Algo::kRing, true).valid);
  EXPECT_EQ(one.estimate(CollKind::kAllReduce, 1024, Algo::kSymmetric, true).protocol, Protocol::kLL);
  EXPECT_EQ(one.estimate(CollKind::kAllReduce, 1 << 20, Algo::kSymmetric, true).protocol,
            Protocol::kZeroCopy);
}

TEST(TunerModel, InterGpuLinksAreShared) {
  // Hierarchical on 2 GPUs x 4 partitions: the 4 inter-GPU rings share one link, so making the
  // inter-GPU tier 4x faster must speed the inter-GPU part up, while a flat ring (one crossing
  // per direction) sees the link alone.
  const Topology t = makeUniformTopology(1, 2, 4);
  TunerProfile p = uniformProfile(0, 1e6);
  p.variants[0].tiers[1][0].bandwidthGBps = 10;
  const Estimate ring = Tuner(t, p).estimate(CollKind::kAllReduce, 64 << 20, Algo::kRing, false);
  const Estimate hier =
      Tuner(t, p).estimate(CollKind::kAllReduce, 64 << 20, Algo::kHierarchical, false);
  // Ring: 2(n-1)/n of the buffer over the one link; hierarchical: the 4 rings' share of the
  // buffer (a quarter each) through one link, 4 at a time.
  const double ringFormula = 2.0 * 7 / 8 * (64 << 20) / 10e3;
  EXPECT_NEAR(ring.timeUs / ringFormula, 1.0, 0.05);
  EXPECT_GT(hier.features.bytes[1][0], 0);
}

TEST(TunerModel, FitRecoversAKnownProfile) {
  const Topology t = topoFile("h200-mps-4");
  TunerProfile truth = uniformProfile(0, 1);
  ProfileVariant& v = truth.variants[0];
  v.partitionsPerGpu = 4;
  v.launchUs = 6;
  v.copyGBps = 500;
  v.tiers[0][0] = {9, 50};    // FIFO
  v.tiers[0][1] = {0.5, 200};  // LL
  v.tiers[0][2] = {1.5, 400};  // zero-copy
  const Tuner oracle(t, truth);
  std::vector<Measurement> data;
  for (CollKind c : {CollKind::kAllReduce, CollKind::kReduceScatter, CollKind::kAllGather})
    for (Algo a : {Algo::kRing, Algo::kBidirRing, Algo::kDirect, Algo::kSymmetric})
      for (uint64_t b = 64; b <= (256u << 20); b *= 8)
        data.push_back({c, a, b, oracle.estimate(c, b, a, true).timeUs, true});
  ProfileVariant fitted;
  ASSERT_EQ(fitVariant(t, {}, uniformProfile(1, 1), data, 500, &fitted), sscSuccess) << lastError();
  EXPECT_NEAR(fitted.launchUs, 6, 0.1);
  EXPECT_NEAR(fitted.tiers[0][0].bandwidthGBps, 50, 0.5);
  EXPECT_NEAR(fitted.tiers[0][0].latencyUs, 9, 0.1);
  EXPECT_NEAR(fitted.tiers[0][2].bandwidthGBps, 400, 4);
  EXPECT_DOUBLE_EQ(fitted.tiers[1][0].bandwidthGBps, 0);  // no XGMI data: no figure claimed
  TunerProfile back = truth;
  back.variants = {fitted};
  const ErrorStats err = modelError(Tuner(t, back), data);
  EXPECT_LT(err.worst, 0.01) << err.worstWhat;
}

// The shipped H200 profile against what the H200 measured (perf/RESULTS.md, 2026-11-29 session
// 2, K = 8): registered buffers, symmetric was fastest at every size (12.9 us at 8 B against
// >= 86 us for the FIFO algorithms; 416 busbw at 1 GiB against <= 64); plain buffers, direct was
// fastest below 64 KiB (86 us at 8 B, ring 95, hierarchical 130) and the bidirectional ring or
// hierarchical (equal within 3 %) above 1 MiB.
TEST(TunerModel, ChoicesOnTheH200MatchTheSweep) {
  const Topology h200 = topoFile("h200-mps-8");
  TunerProfile p;
  ASSERT_EQ(resolveProfile(h200, &p), sscSuccess);
  EXPECT_EQ(p.name, "h200-mps");
  const Tuner t(h200, p);
  for (uint64_t b = 8; b <= (1u << 30); b *= 4) {
    EXPECT_EQ(t.choose(CollKind::kAllReduce, b, true), Algo::kSymmetric) << b;
    const Algo plain = t.choose(CollKind::kAllReduce, b, false);
    if (b < (64u << 10)) {
      EXPECT_EQ(plain, Algo::kDirect) << b;
    }
    if (b >= (4u << 20)) {
      EXPECT_TRUE(plain == Algo::kBidirRing || plain == Algo::kHierarchical) << b;
    }
  }
}

// The projection's point: on 8 x MI300X CPX (64 ranks) the tier-aware choice never loses to the
// flat ring and uses the partitions (zero-copy or hierarchical) rather than the flat ring.
TEST(TunerModel, ChoicesOnMi300xCpxAreTierAware) {
  const Topology cpx = topoFile("mi300x-8x-cpx-nps4");
  TunerProfile p;
  ASSERT_EQ(resolveProfile(cpx, &p), sscSuccess);
  EXPECT_EQ(p.name, "mi300x-cpx");
  const Tuner t(cpx, p);
  for (bool registered : {true, false})
    for (uint64_t b = 8; b <= (1u << 30); b *= 16) {
      const Algo a = t.choose(CollKind::kAllReduce, b, registered);
      EXPECT_NE(a, Algo::kRing) << b;
      const double ring = t.estimate(CollKind::kAllReduce, b, Algo::kRing, registered).timeUs;
      EXPECT_LE(t.estimate(CollKind::kAllReduce, b, a, registered).timeUs, ring) << b;
    }
  // Across two nodes the zero-copy algorithm is never chosen (peers are not mappable).
  const Topology two = topoFile("mi300x-2node-8x-cpx-nps4");
  const Tuner t2(two, p);
  for (uint64_t b = 8; b <= (1u << 30); b *= 64)
    EXPECT_NE(t2.choose(CollKind::kAllReduce, b, true), Algo::kSymmetric) << b;
}

TEST(TunerModel, ChoiceIsCachedAndMatchesTheEstimates) {
  const Tuner t(topoFile("4x2"), uniformProfile(2, 50));
  for (uint64_t b : {8ull, 4096ull, 1ull << 20, 1ull << 28}) {
    const Algo a = t.choose(CollKind::kAllReduce, b, true);
    double best = 1e300;
    for (const Estimate& e : t.estimateAll(CollKind::kAllReduce, b, true))
      if (e.valid) best = std::min(best, e.timeUs);
    EXPECT_DOUBLE_EQ(t.estimate(CollKind::kAllReduce, b, a, true).timeUs, best) << b;
    EXPECT_EQ(t.choose(CollKind::kAllReduce, b, true), a);
  }
}

TEST(TunerModel, RanksWithDifferentProfilesRefuseInit) {
  const Topology t = makeFlatTopology(2);
  std::shared_ptr<const Tuner> out;
  auto agree = [](void*, size_t) { return sscSuccess; };  // peers' slots stay 0
  // Rank 0 sees rank 1's fingerprint as 0: a different profile.
  EXPECT_EQ(createTuner(t, {}, 0, 2, agree, &out), sscInvalidUsage);
  EXPECT_NE(lastError().find("rank 1"), std::string::npos) << lastError();
  EXPECT_EQ(createTuner(t, {}, 0, 1, agree, &out), sscSuccess);
  ASSERT_NE(out, nullptr);
  EXPECT_NE(Tuner(t, uniformProfile(1, 2)).fingerprint(), Tuner(t, uniformProfile(1, 3)).fingerprint());
}

}  // namespace
}  // namespace ssc
