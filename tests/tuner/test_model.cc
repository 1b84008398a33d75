// SPDX-License-Identifier: MIT
// The cost model: its arithmetic against the classic alpha-beta formulas, the linearity the
// calibration relies on, the fit, and its choices on the emulated machines (tools/topologies)
// where gpu_coll_perf sweeps of an H200 in MPS partitions (the ones the shipped profile was fitted
// to) are the oracle.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "src/core/errors.h"
#include "tests/support/topology_files.h"
#include "tuner/fit.h"
#include "tuner/model.h"
#include "tuner/select.h"
#include "tuner/setup.h"

namespace ssc {
namespace {

using test::topoFile;

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

// A FIFO slot is split among the channel's blocks in pieces; a step's time is its busiest
// block's (what makes FIFO times flat for steps between a piece and a slot).
TEST(TunerModel, FifoStepsCostTheirBusiestBlock) {
  const uint64_t slot = 512 << 10;
  EXPECT_DOUBLE_EQ(fifoCostBytes(64 << 10, slot, 4), 4.0 * (64 << 10));  // one block busy
  EXPECT_DOUBLE_EQ(fifoCostBytes(128 << 10, slot, 4), slot);             // one whole piece
  EXPECT_DOUBLE_EQ(fifoCostBytes(300 << 10, slot, 4), slot);             // every block busy
  EXPECT_DOUBLE_EQ(fifoCostBytes(slot, slot, 4), slot);
  EXPECT_DOUBLE_EQ(fifoCostBytes(3 * slot / 2, slot, 4), 2.0 * slot);  // a slot and a half
  EXPECT_DOUBLE_EQ(fifoCostBytes(8 * slot, slot, 4), 8.0 * slot);      // large: its bytes
  EXPECT_DOUBLE_EQ(fifoCostBytes(64 << 10, slot, 1), 64 << 10);        // one block: bytes
  EXPECT_DOUBLE_EQ(fifoCostBytes(0, slot, 4), 0);
  // In a plan: K = 4 ring all-reduces whose steps are 128 - 512 KiB (S = 512 KiB - 2 MiB) take
  // one time with 8 blocks (64 KiB pieces), as the H200 measured (55 - 56 us), and grow with
  // one block.
  const Topology t = topoFile("h200-mps-4");
  ModelLimits eight;
  eight.blocksPerChannel = 8;
  const Tuner flat(t, uniformProfile(0, 10), eight), grows(t, uniformProfile(0, 10));
  const auto at = [](const Tuner& m, uint64_t b) {
    return m.estimate(CollKind::kAllReduce, b, Algo::kRing, false).timeUs;
  };
  EXPECT_NEAR(at(flat, 512 << 10) / at(flat, 2 << 20), 1.0, 0.01);
  EXPECT_LT(at(grows, 512 << 10) * 2, at(grows, 2 << 20));
  EXPECT_GT(at(flat, 8 << 20), 2 * at(flat, 2 << 20));  // past a slot per step: bytes again
}

// Within a GPU every FIFO slot is a handshake and pays the latency; links between GPUs keep
// one latency per step (NCCL's form; not measured here).
TEST(TunerModel, FifoSlotsWithinAGpuPayTheLatencyEach) {
  const auto extra = [](const Topology& t) {
    const Tuner m(t, uniformProfile(1, 1e9));                            // latency only
    const uint64_t oneSlot = 2 * (512 << 10), threeSlots = 3 * oneSlot;  // K = 2: steps of S / 2
    return m.estimate(CollKind::kAllReduce, threeSlots, Algo::kRing, false).timeUs -
           m.estimate(CollKind::kAllReduce, oneSlot, Algo::kRing, false).timeUs;
  };
  EXPECT_GE(extra(topoFile("h200-mps-2")), 2 - 1e-9);  // two more slots on the critical path
  EXPECT_NEAR(extra(makeFlatTopology(2)), 0, 1e-3);    // two GPUs: per step
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
    for (auto& v : slower.variants) v.tiers[1][static_cast<int>(e.protocol)].latencyUs += 1;
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
  EXPECT_EQ(one.estimate(CollKind::kAllReduce, 1024, Algo::kSymmetric, true).protocol,
            Protocol::kLL);
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
  v.tiers[0][0] = {9, 50};          // FIFO
  v.tiers[0][1] = {0.5, 200};       // LL
  v.launchExtraUs[0] = 3;           // the FIFO kernel's own fixed cost
  v.tiers[0][2] = {1.5, 400, 300};  // zero-copy, bulk grid: stores slower than loads
  v.tiers[0][3] = {0.8, 250};       // zero-copy, wide grid (stores only)
  const Tuner oracle(t, truth);
  std::vector<Measurement> data;
  for (CollKind c : {CollKind::kAllReduce, CollKind::kReduceScatter, CollKind::kAllGather})
    for (Algo a : {Algo::kRing, Algo::kBidirRing, Algo::kDirect, Algo::kSymmetric})
      for (uint64_t b = 64; b <= (256u << 20); b *= 8) {
        if (a != Algo::kSymmetric || c != CollKind::kAllGather) {
          data.push_back({c, a, b, oracle.estimate(c, b, a, true).timeUs, true});
          continue;
        }
        // The all-gather's two grids, pinned as gpu_coll_perf's symmetric_bulk/_wide rows are.
        for (Protocol p : {Protocol::kZeroCopy, Protocol::kZeroCopyWide})
          data.push_back({c, a, b, oracle.estimate(c, b, a, true, &p).timeUs, true, true, p});
      }
  ProfileVariant fitted;
  ASSERT_EQ(fitVariant(t, {}, uniformProfile(1, 1), data, 500, &fitted), sscSuccess) << lastError();
  // What the data determines: the rates, and the FIFO latency (paid per slot, so it grows with
  // the call). A zero-copy call always pays 3 latencies and one launch, so its launch, extra and
  // latency are known only as their sum; the error check below covers that.
  EXPECT_NEAR(fitted.tiers[0][0].bandwidthGBps, 50, 0.5);
  EXPECT_NEAR(fitted.tiers[0][0].latencyUs, 9, 0.1);
  EXPECT_NEAR(fitted.launchUs + fitted.launchExtraUs[0], 9, 0.1);
  EXPECT_NEAR(fitted.tiers[0][2].bandwidthGBps, 400, 4);
  EXPECT_NEAR(fitted.tiers[0][2].storeBandwidthGBps, 300, 3);
  EXPECT_NEAR(fitted.tiers[0][3].bandwidthGBps, 250, 2.5);
  EXPECT_NEAR(fitted.tiers[0][3].storeBandwidthGBps, 250, 2.5);
  // The wide grid is kept up to the largest size where it was not slower than the bulk grid.
  uint64_t lastWideWin = 0;
  for (uint64_t b = 64; b <= (256u << 20); b *= 8) {
    const Protocol bulk = Protocol::kZeroCopy, wide = Protocol::kZeroCopyWide;
    if (oracle.estimate(CollKind::kAllGather, b, Algo::kSymmetric, true, &wide).timeUs <=
        oracle.estimate(CollKind::kAllGather, b, Algo::kSymmetric, true, &bulk).timeUs)
      lastWideWin = b;
  }
  ASSERT_GT(lastWideWin, 0u);
  ASSERT_LT(lastWideWin, uint64_t{256} << 20) << "the truth's grids must cross for this check";
  EXPECT_DOUBLE_EQ(fitted.wideGridMaxBytes, static_cast<double>(lastWideWin));
  // The lightest kernel's extra is 0: the launch is its.
  double least = 1e9;
  for (int p = 0; p < kNumProtocols; ++p) least = std::min(least, fitted.launchExtraUs[p]);
  EXPECT_DOUBLE_EQ(least, 0);
  EXPECT_DOUBLE_EQ(fitted.tiers[1][0].bandwidthGBps, 0);  // no XGMI data: no figure claimed
  TunerProfile back = truth;
  back.variants = {fitted};
  const ErrorStats err = modelError(Tuner(t, back), data);
  EXPECT_LT(err.worst, 0.01) << err.worstWhat;
}

// The shipped H200 profile against what its sweep measured (K = 8, 4 FIFO blocks per channel):
// registered buffers, symmetric was fastest at every size (13.0 us at 8 B against >= 48 us for the
// FIFO algorithms; 4.5 ms at 1 GiB against >= 22.9); without zero-copy, direct was fastest from
// 32 B to 8 KiB (57 us, ring 76-80) and the bidirectional ring or hierarchical (equal within 4 %)
// from 8 MiB.
TEST(TunerModel, ChoicesOnTheH200MatchTheSweep) {
  const Topology h200 = topoFile("h200-mps-8");
  TunerProfile p;
  ASSERT_EQ(resolveProfile(h200, &p), sscSuccess);
  EXPECT_EQ(p.name, "h200-mps");
  ModelLimits limits;
  limits.blocksPerChannel = 4;
  const Tuner t(h200, p, limits);
  for (uint64_t b = 8; b <= (1u << 30); b *= 4) {
    EXPECT_EQ(t.choose(CollKind::kAllReduce, b, true).algo, Algo::kSymmetric) << b;
    const Algo plain = t.choose(CollKind::kAllReduce, b, false).algo;
    if (b >= 32 && b <= (8u << 10)) {
      EXPECT_EQ(plain, Algo::kDirect) << b;
    }
    if (b >= (8u << 20)) {
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
      const Algo a = t.choose(CollKind::kAllReduce, b, registered).algo;
      EXPECT_NE(a, Algo::kRing) << b;
      const double ring = t.estimate(CollKind::kAllReduce, b, Algo::kRing, registered).timeUs;
      EXPECT_LE(t.estimate(CollKind::kAllReduce, b, a, registered).timeUs, ring) << b;
    }
  // Across two nodes the zero-copy algorithm is never chosen (peers are not mappable).
  const Topology two = topoFile("mi300x-2node-8x-cpx-nps4");
  const Tuner t2(two, p);
  for (uint64_t b = 8; b <= (1u << 30); b *= 64)
    EXPECT_NE(t2.choose(CollKind::kAllReduce, b, true).algo, Algo::kSymmetric) << b;
}

TEST(TunerModel, ChoiceIsCachedAndMatchesTheEstimates) {
  const Tuner t(topoFile("4x2"), uniformProfile(2, 50));
  for (uint64_t b : {8ull, 4096ull, 1ull << 20, 1ull << 28}) {
    const Algo a = t.choose(CollKind::kAllReduce, b, true).algo;
    double best = 1e300;
    for (const Estimate& e : t.estimateAll(CollKind::kAllReduce, b, true))
      if (e.valid) best = std::min(best, e.timeUs);
    EXPECT_DOUBLE_EQ(t.estimate(CollKind::kAllReduce, b, a, true).timeUs, best) << b;
    EXPECT_EQ(t.choose(CollKind::kAllReduce, b, true).algo, a);
  }
}

// All-gather's zero-copy push has two grids (RankPlan::wideGrid): the model costs both and picks
// the faster per size; it is the only call with that choice.
TEST(TunerModel, AllGatherTakesTheFasterZeroCopyGrid) {
  const Topology t = topoFile("h200-mps-8");
  TunerProfile p = uniformProfile(1, 100);
  p.variants[0].tiers[0][static_cast<int>(Protocol::kZeroCopy)] = {10, 400};  // bulk: slow to start
  p.variants[0].tiers[0][static_cast<int>(Protocol::kZeroCopyWide)] = {2,
                                                                       200};  // wide: slower stream
  const Tuner tuner(t, p);
  const Protocol bulk = Protocol::kZeroCopy, wide = Protocol::kZeroCopyWide;
  for (uint64_t b : {uint64_t{4096}, uint64_t{1} << 30}) {
    const Estimate eb = tuner.estimate(CollKind::kAllGather, b, Algo::kSymmetric, true, &bulk);
    const Estimate ew = tuner.estimate(CollKind::kAllGather, b, Algo::kSymmetric, true, &wide);
    ASSERT_TRUE(eb.valid && ew.valid) << eb.why << ew.why;
    EXPECT_EQ(eb.protocol, bulk);
    EXPECT_EQ(ew.protocol, wide);
    const Estimate e = tuner.estimate(CollKind::kAllGather, b, Algo::kSymmetric, true);
    EXPECT_EQ(e.protocol, ew.timeUs < eb.timeUs ? wide : bulk) << b;
    EXPECT_DOUBLE_EQ(e.timeUs, std::min(eb.timeUs, ew.timeUs)) << b;
    const Choice c = tuner.choose(CollKind::kAllGather, b, true);
    EXPECT_EQ(c.algo, Algo::kSymmetric) << b;
    EXPECT_EQ(c.protocol, e.protocol) << b;
  }
  // The two figures cross: wide for the small call, bulk for the large one.
  EXPECT_EQ(tuner.choose(CollKind::kAllGather, 4096, true).protocol, wide);
  EXPECT_EQ(tuner.choose(CollKind::kAllGather, uint64_t{1} << 30, true).protocol, bulk);
  // A wide_grid_max_bytes below a size takes the wide grid out there, whatever its figures.
  {
    TunerProfile capped = p;
    capped.variants[0].wideGridMaxBytes = 1 << 20;
    const Tuner t2(t, capped);
    EXPECT_EQ(t2.choose(CollKind::kAllGather, 4096, true, Algo::kSymmetric).protocol, wide);
    EXPECT_EQ(t2.choose(CollKind::kAllGather, 1 << 20, true, Algo::kSymmetric).protocol, wide);
    const Estimate over = t2.estimate(CollKind::kAllGather, 2 << 20, Algo::kSymmetric, true, &wide);
    EXPECT_FALSE(over.valid);
    EXPECT_NE(over.why.find("wide_grid_max_bytes"), std::string::npos) << over.why;
    EXPECT_EQ(t2.choose(CollKind::kAllGather, 2 << 20, true, Algo::kSymmetric).protocol, bulk);
  }
  // Forced to the symmetric algorithm, the grid is still the model's.
  EXPECT_EQ(tuner.choose(CollKind::kAllGather, 4096, true, Algo::kSymmetric),
            (Choice{Algo::kSymmetric, wide}));
  // The wide grid has no kernel for other collectives; LL serves only small all-reduces; the
  // symmetric algorithm has no FIFO steps.
  EXPECT_FALSE(tuner.estimate(CollKind::kAllReduce, 1 << 20, Algo::kSymmetric, true, &wide).valid);
  EXPECT_FALSE(
      tuner.estimate(CollKind::kReduceScatter, 1 << 20, Algo::kSymmetric, true, &wide).valid);
  const Protocol ll = Protocol::kLL, fifo = Protocol::kFifo;
  EXPECT_FALSE(tuner.estimate(CollKind::kAllReduce, 1 << 20, Algo::kSymmetric, true, &ll).valid);
  EXPECT_FALSE(tuner.estimate(CollKind::kAllGather, 4096, Algo::kSymmetric, true, &ll).valid);
  EXPECT_TRUE(tuner.estimate(CollKind::kAllReduce, 4096, Algo::kSymmetric, true, &ll).valid);
  EXPECT_FALSE(tuner.estimate(CollKind::kAllReduce, 4096, Algo::kSymmetric, true, &fifo).valid);
  // Pinned to the bulk path, a small all-reduce is costed without LL (gpu_coll_perf's
  // symmetric_bulk).
  const Estimate plainBulk =
      tuner.estimate(CollKind::kAllReduce, 4096, Algo::kSymmetric, true, &bulk);
  ASSERT_TRUE(plainBulk.valid) << plainBulk.why;
  EXPECT_EQ(plainBulk.protocol, bulk);
  EXPECT_GT(plainBulk.features.latency[0][static_cast<int>(Protocol::kZeroCopy)], 0);
  EXPECT_EQ(tuner.estimate(CollKind::kAllReduce, 4096, Algo::kSymmetric, true).protocol, ll);
}

// Reduce-scatter only loads from peers, all-gather only stores into them, all-reduce does both:
// each moves its peer bytes at its own rate (AlphaBeta::storeBandwidthGBps).
TEST(TunerModel, ZeroCopyLoadsAndStoresMoveAtTheirOwnRates) {
  const Topology t = topoFile("h200-mps-4");
  const uint64_t bytes = uint64_t{1} << 28;
  auto timeWith = [&](CollKind c, double loads, double stores) {
    TunerProfile p = uniformProfile(0, 1e6);
    p.variants[0].tiers[0][static_cast<int>(Protocol::kZeroCopy)] = {0, loads, stores};
    const Protocol bulk = Protocol::kZeroCopy;
    const Estimate e = Tuner(t, p).estimate(c, bytes, Algo::kSymmetric, true, &bulk);
    EXPECT_TRUE(e.valid) << e.why;
    return e.timeUs;
  };
  // Halving a rate doubles the time of the bytes that move at it, and only theirs.
  EXPECT_NEAR(timeWith(CollKind::kReduceScatter, 100, 1e5),
              timeWith(CollKind::kReduceScatter, 100, 50), 0.01);
  EXPECT_GT(timeWith(CollKind::kReduceScatter, 50, 1e5),
            1.9 * timeWith(CollKind::kReduceScatter, 100, 1e5));
  EXPECT_NEAR(timeWith(CollKind::kAllGather, 1e5, 100), timeWith(CollKind::kAllGather, 50, 100),
              0.01);
  EXPECT_GT(timeWith(CollKind::kAllGather, 1e5, 50),
            1.9 * timeWith(CollKind::kAllGather, 1e5, 100));
  const double ar = timeWith(CollKind::kAllReduce, 100, 100);
  EXPECT_GT(timeWith(CollKind::kAllReduce, 50, 100), 1.4 * ar);
  EXPECT_GT(timeWith(CollKind::kAllReduce, 100, 50), 1.4 * ar);
  // A store rate left out is the load rate.
  EXPECT_NEAR(timeWith(CollKind::kAllGather, 100, 0), timeWith(CollKind::kAllGather, 1e5, 100),
              0.01);
}

// The executor cuts a wide-grid push into launches of at most ModelLimits::pushLaunchBytes of
// output (kSymPushMaxBytes); each launch pays the launch, the kernel's extra and three latencies.
TEST(TunerModel, LongWidePushesPayOneLaunchPerPiece) {
  const Topology t = topoFile("h200-mps-8");
  TunerProfile p = uniformProfile(0, 1e9);
  ProfileVariant& v = p.variants[0];
  v.launchUs = 10;
  v.launchExtraUs[static_cast<int>(Protocol::kZeroCopyWide)] = 2;
  v.tiers[0][static_cast<int>(Protocol::kZeroCopyWide)] = {1, 1e9};  // bytes: free
  const Tuner tuner(t, p);
  const Protocol wide = Protocol::kZeroCopyWide;
  const uint64_t piece = tuner.limits().pushLaunchBytes;
  ASSERT_EQ(piece, uint64_t{256} << 20);
  for (uint64_t launches : {1, 2, 4}) {
    const Estimate e =
        tuner.estimate(CollKind::kAllGather, launches * piece, Algo::kSymmetric, true, &wide);
    ASSERT_TRUE(e.valid) << e.why;
    EXPECT_DOUBLE_EQ(e.features.launches, launches);
    EXPECT_NEAR(e.timeUs, launches * (10 + 2 + 3 * 1), 0.5) << launches;
  }
  // One byte more is one launch more; the bulk grid runs any size in one.
  const Estimate over =
      tuner.estimate(CollKind::kAllGather, piece + 8, Algo::kSymmetric, true, &wide);
  EXPECT_DOUBLE_EQ(over.features.launches, 2);
  const Protocol bulk = Protocol::kZeroCopy;
  EXPECT_DOUBLE_EQ(tuner.estimate(CollKind::kAllGather, 4 * piece, Algo::kSymmetric, true, &bulk)
                       .features.launches,
                   1);
}

// A profile without wide-grid figures (every profile before the grid was a choice, and the
// projections) gives it the bulk grid's, so the tie keeps the bulk grid at every size.
TEST(TunerModel, WithoutWideFiguresTheBulkGridStays) {
  for (const char* topo : {"h200-mps-4", "mi300x-8x-cpx-nps4"}) {
    const Topology t = topoFile(topo);
    TunerProfile p = uniformProfile(3, 300);
    for (auto& tier : p.variants[0].tiers) tier[static_cast<int>(Protocol::kZeroCopyWide)] = {};
    const Tuner tuner(t, p);
    for (uint64_t b = 64; b <= (1u << 30); b *= 16)
      EXPECT_EQ(tuner.choose(CollKind::kAllGather, b, true, Algo::kSymmetric).protocol,
                Protocol::kZeroCopy)
          << topo << " " << b;
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
  EXPECT_NE(Tuner(t, uniformProfile(1, 2)).fingerprint(),
            Tuner(t, uniformProfile(1, 3)).fingerprint());
}

}  // namespace
}  // namespace ssc
