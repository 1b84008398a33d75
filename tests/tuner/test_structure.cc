// SPDX-License-Identifier: MIT
// The cost model's structure, with no measured figure: what it must choose on any machine because
// of how the algorithms move bytes, not because a profile was fitted somewhere. The machines are
// the emulation files (tools/topologies) with their GPU renamed, so no shipped profile applies,
// and the projected MI300X and MI355X nodes with their shipped projections.
#include <gtest/gtest.h>

#include <string>

#include "src/core/errors.h"
#include "tests/support/topology_files.h"
#include "tuner/model.h"
#include "tuner/select.h"

namespace ssc {
namespace {

using test::topoFile;

// K partitions of one GPU of a model nobody measured, each with `units` compute units, and the
// GPU backend's limits (2 channels of `blocks` FIFO blocks).
struct Unmeasured {
  Topology topo;
  ModelLimits limits;
};
Unmeasured unmeasured(int k, int units, int blocks) {
  Unmeasured u;
  u.topo = topoFile("h200-mps-" + std::to_string(k));
  for (auto& g : u.topo.gpus) {
    g.model = "Unmeasured GPU";
    g.computeUnits = units;
  }
  u.limits.blocksPerChannel = blocks;
  return u;
}

constexpr CollKind kColls[] = {CollKind::kAllReduce, CollKind::kReduceScatter,
                               CollKind::kAllGather};

// Within one GPU a zero-copy step loads each byte straight from its owner where a FIFO hop stores
// it into a slot and loads it out again: at bandwidth-bound sizes the symmetric algorithm wins
// at every partition count, whatever the link figure.
TEST(ModelStructure, ZeroCopyWinsLargeCallsWithinAGpu) {
  for (int k = 2; k <= 8; ++k)
    for (int units : {0, 16, 132}) {
      const Unmeasured u = unmeasured(k, units, 4);
      TunerProfile profile;
      ASSERT_EQ(resolveProfile(u.topo, &profile), sscSuccess) << lastError();
      EXPECT_EQ(profile.origin, "built-in") << "no shipped profile may apply here";
      const Tuner t(u.topo, profile, u.limits);
      for (CollKind coll : kColls)
        for (uint64_t bytes : {uint64_t{64} << 20, uint64_t{256} << 20, uint64_t{1} << 30}) {
          const Choice c = t.choose(coll, bytes, true);
          EXPECT_EQ(c.algo, Algo::kSymmetric)
              << "K=" << k << " units=" << units << " " << collName(coll) << " " << bytes
              << " B chose " << algoName(c.algo);
        }
    }
}

// The FIFO kernel's few blocks keep only part of a partition's compute units busy: the fewer of
// them it has, the larger the zero-copy algorithm's lead, and never the reverse.
TEST(ModelStructure, FifoRateFollowsItsShareOfTheComputeUnits) {
  const Unmeasured narrow = unmeasured(8, 16, 4), wide = unmeasured(8, 16, 8);
  TunerProfile p1, p2;
  ASSERT_EQ(resolveProfile(narrow.topo, &p1), sscSuccess);
  ASSERT_EQ(resolveProfile(wide.topo, &p2), sscSuccess);
  const Tuner a(narrow.topo, p1, narrow.limits), b(wide.topo, p2, wide.limits);
  const uint64_t bytes = uint64_t{256} << 20;
  const double ringA = a.estimate(CollKind::kAllReduce, bytes, Algo::kRing, true).timeUs;
  const double ringB = b.estimate(CollKind::kAllReduce, bytes, Algo::kRing, true).timeUs;
  const double symA = a.estimate(CollKind::kAllReduce, bytes, Algo::kSymmetric, true).timeUs;
  const double symB = b.estimate(CollKind::kAllReduce, bytes, Algo::kSymmetric, true).timeUs;
  // 8 of 16 units busy against 16 of 16: the link pass takes twice as long, the copy pass not.
  EXPECT_GT(ringA, 1.3 * ringB);
  EXPECT_NEAR(symA, symB, 1e-6 * symA);
  // And with every unit busy the FIFO hop still moves each byte twice.
  EXPECT_GT(ringB, symB * 1.4);
}

// LL packets carry their own flags, so they win where latency dominates (a few bytes) and are
// never chosen beyond the executor's limit.
TEST(ModelStructure, PacketsOnlyWhereLatencyDominates) {
  for (int k : {2, 3, 4, 8}) {
    const Unmeasured u = unmeasured(k, 16, 4);
    TunerProfile profile;
    ASSERT_EQ(resolveProfile(u.topo, &profile), sscSuccess);
    const Tuner t(u.topo, profile, u.limits);
    const Choice tiny = t.choose(CollKind::kAllReduce, 8, true);
    EXPECT_EQ(tiny.algo, Algo::kSymmetric) << "K=" << k;
    EXPECT_EQ(tiny.protocol, Protocol::kLL) << "K=" << k;
    for (uint64_t bytes = 8; bytes <= (uint64_t{1} << 30); bytes *= 2)
      for (CollKind coll : kColls) {
        const Choice c = t.choose(coll, bytes, true);
        if (c.protocol == Protocol::kLL) {
          EXPECT_EQ(coll, CollKind::kAllReduce);
          EXPECT_LE(bytes, u.limits.llMaxBytes) << "K=" << k;
        }
      }
  }
}

// On a node of partitioned GPUs the links between GPUs are the bottleneck: among the FIFO
// algorithms (plain buffers that cannot be mapped), the hierarchical one crosses them in 2(G-1)
// hops of a ring of GPUs where the flat ring crosses them in 2(n-1) hops of a ring of all ranks,
// so it is chosen wherever hops dominate and beats the flat ring by a wide margin there. At
// bandwidth-bound sizes it moves 1/P of the bytes between GPUs, and its P rings of same-index
// partitions take GPU orders that share no link (disjointRingOrders), so with 8 partitions a GPU
// (CPX) it still wins there against the bidirectional ring, whose one ring crosses each link
// between GPUs once, by at least 1.1x from 64 MiB. With 2 (DPX) it saves only half of those
// bytes and pays its two phases inside the GPU: the bidirectional ring may win there. The choice
// is never slower than the flat ring.
TEST(ModelStructure, HierarchicalWhereLinksBetweenGpusAreTheBottleneck) {
  for (const char* name : {"mi300x-8x-cpx-nps4", "mi355x-8x-dpx-nps2"}) {
    const Topology topo = topoFile(name);
    TunerProfile profile;
    ASSERT_EQ(resolveProfile(topo, &profile), sscSuccess) << lastError();
    ModelLimits limits;
    limits.blocksPerChannel = 4;
    const Tuner t(topo, profile, limits);
    for (uint64_t bytes : {uint64_t{64} << 10, uint64_t{1} << 20}) {
      const Choice c = t.choose(CollKind::kAllReduce, bytes, false);
      EXPECT_EQ(c.algo, Algo::kHierarchical)
          << name << " " << bytes << " chose " << algoName(c.algo);
      const double hier =
          t.estimate(CollKind::kAllReduce, bytes, Algo::kHierarchical, false).timeUs;
      const double flat = t.estimate(CollKind::kAllReduce, bytes, Algo::kRing, false).timeUs;
      EXPECT_GT(flat, 1.9 * hier) << name << " " << bytes;
    }
    for (uint64_t bytes : {uint64_t{64} << 20, uint64_t{1} << 30}) {
      if (topo.maxPartitions() < 8) break;
      const Choice c = t.choose(CollKind::kAllReduce, bytes, false);
      EXPECT_EQ(c.algo, Algo::kHierarchical)
          << name << " " << bytes << " chose " << algoName(c.algo);
      const double hier =
          t.estimate(CollKind::kAllReduce, bytes, Algo::kHierarchical, false).timeUs;
      const double bidir = t.estimate(CollKind::kAllReduce, bytes, Algo::kBidirRing, false).timeUs;
      EXPECT_GT(bidir, 1.1 * hier) << name << " " << bytes;
    }
    for (uint64_t bytes = 8; bytes <= (uint64_t{1} << 30); bytes *= 8) {
      const Choice c = t.choose(CollKind::kAllReduce, bytes, false);
      EXPECT_LE(t.estimate(CollKind::kAllReduce, bytes, c.algo, false).timeUs,
                t.estimate(CollKind::kAllReduce, bytes, Algo::kRing, false).timeUs)
          << name << " " << bytes;
    }
  }
}

// Nothing in a choice depends on how the GPU is named: a machine described by figures alone
// chooses the same whatever its model string says, when no profile is shipped for either name.
TEST(ModelStructure, ChoicesDoNotDependOnTheModelName) {
  Unmeasured a = unmeasured(4, 32, 8), b = unmeasured(4, 32, 8);
  for (auto& g : b.topo.gpus) g.model = "Some Other GPU";
  TunerProfile pa, pb;
  ASSERT_EQ(resolveProfile(a.topo, &pa), sscSuccess);
  ASSERT_EQ(resolveProfile(b.topo, &pb), sscSuccess);
  const Tuner ta(a.topo, pa, a.limits), tb(b.topo, pb, b.limits);
  for (CollKind coll : kColls)
    for (uint64_t bytes = 8; bytes <= (uint64_t{1} << 30); bytes *= 8)
      for (bool sym : {true, false})
        EXPECT_EQ(ta.choose(coll, bytes, sym), tb.choose(coll, bytes, sym));
}

}  // namespace
}  // namespace ssc
