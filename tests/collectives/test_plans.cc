// SPDX-License-Identifier: MIT
// Plan-level tests, no MPI: every algorithm x collective over many shapes is compiled for all
// ranks, checked for connection pairing and bounds, and run in the symbolic simulator, which
// proves each element is reduced exactly once, lands where the collective's definition says, and
// that the plan cannot deadlock on finite FIFOs. Every case also runs in place, with input and
// output aliased in the simulator, so a plan that overwrites input it has not yet read fails.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "src/collectives/algorithms.h"
#include "tests/collectives/plan_sim.h"

namespace ssc::test {
namespace {

constexpr uint64_t kSlotElems = 4;
constexpr int kSlots = 4;
constexpr uint64_t kChunk = kSlots / 2 * kSlotElems;

// partitions[g] ranks on GPU g, ranks numbered GPU-major; two GPUs per node.
Topology makeTopo(const std::vector<int>& partitions) {
  Topology t;
  t.name = "test";
  int rank = 0;
  for (size_t g = 0; g < partitions.size(); ++g) {
    GpuInfo gpu;
    gpu.node = static_cast<int>(g / 2);
    for (int p = 0; p < partitions[g]; ++p) {
      gpu.ranks.push_back(rank);
      t.ranks.push_back(RankPlacement{gpu.node, static_cast<int>(g), p, -1});
      ++rank;
    }
    t.gpus.push_back(gpu);
  }
  t.nnodes = static_cast<int>((partitions.size() + 1) / 2);
  return t;
}

struct Shape {
  std::string name;
  std::vector<int> partitions;
};

std::vector<Shape> shapes() {
  return {{"1 rank", {1}},
          {"flat2", {1, 1}},
          {"flat3", {1, 1, 1}},
          {"flat5", {1, 1, 1, 1, 1}},
          {"1x4", {4}},
          {"2x2", {2, 2}},
          {"4x2", {2, 2, 2, 2}},
          {"2x4", {4, 4}},
          {"3x3", {3, 3, 3}},
          {"uneven 3-2-1", {3, 2, 1}},
          {"flat16", std::vector<int>(16, 1)},
          {"8x8", std::vector<int>(8, 8)}};
}

const CollKind kColls[] = {CollKind::kAllReduce, CollKind::kReduceScatter, CollKind::kAllGather,
                           CollKind::kBroadcast, CollKind::kReduce,        CollKind::kAllToAll};
const Algo kAlgos[] = {Algo::kRing, Algo::kBidirRing, Algo::kDirect, Algo::kHierarchical,
                       Algo::kSymmetric};

SymElem contribution(int64_t tag, int rank) { return SymElem{tag, 1ull << rank, 0, 0}; }

// Builds every rank's plan for one call; returns "" or what went wrong.
// `channels` is what the transport provides (STARSCREAM_HOST_CHANNELS on the host backend).
std::string buildPlans(const Topology& topo, CollKind coll, Algo algo, uint64_t count, int root,
                       size_t elemBytes, bool inPlace, std::vector<RankPlan>* plans,
                       int channels = 2) {
  const int n = topo.nranks();
  PlanParams params{kChunk, channels, elemBytes};
  plans->assign(n, RankPlan{});
  for (int r = 0; r < n; ++r) {
    CollArgs args{coll, count, root};
    args.symmetric = algo == Algo::kSymmetric;
    args.inPlace = inPlace;
    sscResult_t res = buildCollPlan(topo, r, args, algo, params, &(*plans)[r]);
    if (res != sscSuccess) return fmt::format("buildCollPlan failed for rank {}", r);
    // The executors refuse a plan with more channels than the transport has.
    if (static_cast<int>((*plans)[r].channels.size()) > channels)
      return fmt::format("rank {}'s plan uses {} channels, the transport has {}", r,
                         (*plans)[r].channels.size(), channels);
  }
  if (std::string v = validatePlans(*plans); !v.empty()) return "validatePlans: " + v;
  return "";
}

// Simulates the plans on symbolic inputs and checks every rank's output against the
// collective's definition (in place, the simulator aliases input and output as the plans say).
std::string simulateAndCheck(const std::vector<RankPlan>& plans, CollKind coll, uint64_t count,
                             int root) {
  const int n = static_cast<int>(plans.size());
  std::vector<std::vector<std::vector<SymElem>>> inputs(n);
  const uint64_t N = static_cast<uint64_t>(n);
  for (int r = 0; r < n; ++r) {
    for (uint64_t sz : plans[r].bufElems) inputs[r].emplace_back(sz);
    auto& in = inputs[r][kBufIn];
    for (uint64_t k = 0; k < in.size(); ++k) {
      int64_t tag = static_cast<int64_t>(k);
      if (coll == CollKind::kAllGather) tag = static_cast<int64_t>(r * count + k);
      if (coll == CollKind::kAllToAll) tag = static_cast<int64_t>(r * N * count + k);
      in[k] = contribution(tag, r);
    }
  }
  SimResult sim = simulatePlans(plans, inputs, kSlotElems, kSlots);
  if (!sim.error.empty()) return "simulation: " + sim.error;
  const uint64_t everyone = n == 64 ? ~0ull : (1ull << n) - 1;
  const SymElem reduced{0, everyone, everyone, 1};
  for (int r = 0; r < n; ++r) {
    const auto& out = sim.buffers[r][kBufOut];
    auto expect = [&](uint64_t i, SymElem want) -> std::string {
      if (out[i] == want) return "";
      return fmt::format(
          "rank {} out[{}] = tag {} ranks {:x} pre {:x} post {}; want tag {} ranks "
          "{:x} pre {:x} post {}",
          r, i, out[i].tag, out[i].ranks, out[i].pre, out[i].post, want.tag, want.ranks, want.pre,
          want.post);
    };
    std::string err;
    for (uint64_t i = 0; i < count && err.empty(); ++i) {
      SymElem w = reduced;
      switch (coll) {
        case CollKind::kAllReduce:
          w.tag = static_cast<int64_t>(i);
          err = expect(i, w);
          break;
        case CollKind::kReduceScatter:
          w.tag = static_cast<int64_t>(r * count + i);
          err = expect(i, w);
          break;
        case CollKind::kReduce:
          if (r == root) {
            w.tag = static_cast<int64_t>(i);
            err = expect(i, w);
          }
          break;
        case CollKind::kBroadcast:
          err = expect(i, contribution(static_cast<int64_t>(i), root));
          break;
        case CollKind::kAllGather:
          for (int j = 0; j < n && err.empty(); ++j)
            err = expect(j * count + i, contribution(static_cast<int64_t>(j * count + i), j));
          break;
        case CollKind::kAllToAll:
          for (int j = 0; j < n && err.empty(); ++j)
            err = expect(j * count + i,
                         contribution(static_cast<int64_t>(j * N * count + r * count + i), j));
          break;
        default: break;
      }
    }
    if (!err.empty()) return err;
  }
  return "";
}

// Runs one case; returns "" or what went wrong.
std::string runCase(const Topology& topo, CollKind coll, Algo algo, uint64_t count, int root,
                    size_t elemBytes, bool inPlace = false, int channels = 2) {
  std::vector<RankPlan> plans;
  if (std::string err =
          buildPlans(topo, coll, algo, count, root, elemBytes, inPlace, &plans, channels);
      !err.empty())
    return err;
  return simulateAndCheck(plans, coll, count, root);
}

TEST(Plans, EveryAlgorithmCollectiveAndShape) {
  const uint64_t counts[] = {0, 1, 7, 3 * kChunk + 5, 1000};
  int cases = 0;
  for (const Shape& shape : shapes()) {
    Topology topo = makeTopo(shape.partitions);
    const int n = topo.nranks();
    for (CollKind coll : kColls)
      for (Algo algo : kAlgos) {
        if (!algoSupports(topo, coll, algo)) continue;
        for (uint64_t count : counts) {
          if (n == 64 && count == 1000) continue;  // keeps the 64-rank cases quick
          for (int root : {0, n - 1}) {
            if (root != 0 && coll != CollKind::kBroadcast && coll != CollKind::kReduce) continue;
            for (size_t elemBytes :
                 {size_t{1}, size_t{8}, size_t{1} << 17})  // the last forces two-shot paths
              for (bool inPlace : {false, true}) {         // in place: input and output aliased
                std::string err = runCase(topo, coll, algo, count, root, elemBytes, inPlace);
                ++cases;
                EXPECT_EQ(err, "") << shape.name << " " << collName(coll) << " " << algoName(algo)
                                   << " count " << count << " root " << root << " elem "
                                   << elemBytes << (inPlace ? " in place" : "");
              }
          }
        }
      }
  }
  EXPECT_GT(cases, 1000);
}

// STARSCREAM_HOST_CHANNELS=1 is a documented setting: every algorithm must then build plans of
// one channel (the bidirectional ring runs as a plain ring) that still compute the collective.
TEST(Plans, EveryAlgorithmFitsOneChannel) {
  for (const Shape& shape : shapes()) {
    Topology topo = makeTopo(shape.partitions);
    if (topo.nranks() == 64) continue;  // the small shapes cover every code path
    for (CollKind coll : kColls)
      for (Algo algo : kAlgos) {
        if (!algoSupports(topo, coll, algo)) continue;
        for (uint64_t count : {uint64_t{1}, 3 * kChunk + 5, uint64_t{1000}}) {
          std::string err = runCase(topo, coll, algo, count, topo.nranks() - 1, 8, false, 1);
          EXPECT_EQ(err, "") << shape.name << " " << collName(coll) << " " << algoName(algo)
                             << " count " << count;
        }
      }
  }
}

// In place, the GPU executor splits every step over the channel's blocks by position within the
// step and only orders steps across blocks where placeBarriers finds a dependency. A plan needs
// no such barrier when any two steps of a channel that touch a common element (input and output
// aliased) and of which one writes it do so at the same offset with the same count: the same
// block then owns each element in both. Returns "" or the first pair that breaks this.
std::string crossBlockHazard(const RankPlan& plan) {
  struct Access {
    uint64_t lo, n;
    bool write;
    size_t step;
  };
  for (const ChannelPlan& ch : plan.channels) {
    std::vector<Access> seen;
    for (size_t i = 0; i < ch.steps.size(); ++i) {
      const Step& s = ch.steps[i];
      const bool reads = s.op != StepOp::kRecv && s.op != StepOp::kRecvCopySend;
      const bool writes = s.op != StepOp::kSend && s.op != StepOp::kRecvReduceSend;
      auto add = [&](uint16_t buf, uint64_t off, bool write) -> std::string {
        if (buf != kBufIn && buf != kBufOut) return "";
        if (buf == kBufIn)
          off = static_cast<uint64_t>(static_cast<int64_t>(off) + plan.inAliasShift);
        const Access a{off, s.count, write, i};
        for (const Access& b : seen)
          if ((a.write || b.write) && a.lo < b.lo + b.n && b.lo < a.lo + a.n &&
              (a.lo != b.lo || a.n != b.n))
            return fmt::format("rank {} steps {} and {} share elements at offsets {} and {}",
                               plan.rank, b.step, i, b.lo, a.lo);
        seen.push_back(a);
        return "";
      };
      if (reads)
        if (std::string e = add(s.srcBuf, s.srcOff, false); !e.empty()) return e;
      if (writes)
        if (std::string e = add(s.dstBuf, s.dstOff, true); !e.empty()) return e;
    }
  }
  return "";
}

TEST(Plans, AllToAllInPlace) {
  // sendbuff == recvbuff: each rank must send chunk c of block q to q before the receive from q
  // overwrites it. The simulator aliases kBufIn and kBufOut, so an early overwrite shows up as
  // a wrong element; counts cover one partial chunk, exact-ish and multi-chunk blocks.
  const uint64_t counts[] = {0, 1, 7, kChunk - 1, kChunk + 3, 3 * kChunk + 1};
  for (int n : {1, 2, 3, 4, 5, 8}) {
    Topology topo = makeTopo(std::vector<int>(n, 1));
    for (uint64_t count : counts) {
      const std::string what = fmt::format("{} ranks count {}", n, count);
      std::vector<RankPlan> plans;
      ASSERT_EQ(buildPlans(topo, CollKind::kAllToAll, Algo::kDirect, count, 0, 4, true, &plans), "")
          << what;
      EXPECT_EQ(simulateAndCheck(plans, CollKind::kAllToAll, count, 0), "") << what;
      for (const RankPlan& p : plans) {
        EXPECT_TRUE(p.inPlace) << what;
        EXPECT_EQ(p.inAliasShift, 0) << what;
        EXPECT_EQ(crossBlockHazard(p), "") << what;
        // The own block already sits in place: no local copy of it onto itself.
        for (const Step& s : p.channels[0].steps)
          EXPECT_NE(s.op, StepOp::kCopy) << what << " rank " << p.rank;
      }
    }
  }
}

TEST(Plans, SymmetricAllToAllInPlaceSwapsPairs) {
  // In place, the zero-copy all-to-all is one swap step between two barriers: the simulator
  // aliases input and output and checks that no element is touched by two ranks between the
  // barriers, for odd block sizes (halves of unequal length) and non-power-of-two rank counts.
  for (int n : {1, 2, 3, 5, 8}) {
    Topology topo = makeTopo({n});
    for (uint64_t count : {0, 1, 2, 7, 1000}) {
      const std::string what = fmt::format("{} ranks count {}", n, count);
      std::vector<RankPlan> plans;
      ASSERT_EQ(buildPlans(topo, CollKind::kAllToAll, Algo::kSymmetric, count, 0, 4, true, &plans),
                "")
          << what;
      EXPECT_EQ(simulateAndCheck(plans, CollKind::kAllToAll, count, 0), "") << what;
      for (const RankPlan& p : plans) {
        ASSERT_EQ(p.channels[0].steps.size(), 3u) << what;
        EXPECT_EQ(p.channels[0].steps[1].op, StepOp::kPeerSwap) << what;
      }
    }
  }
  // The halves of a pair meet exactly: together the two ranks cover the whole block once.
  for (uint64_t count : {0, 1, 2, 7, 8}) {
    uint64_t lo0, hi0, lo1, hi1;
    peerSwapHalf(0, 1, count, &lo0, &hi0);
    peerSwapHalf(1, 0, count, &lo1, &hi1);
    EXPECT_EQ(lo0, 0u);
    EXPECT_EQ(hi0, lo1);
    EXPECT_EQ(hi1, count);
  }
}

TEST(Plans, SimulatorCatchesInPlaceOverwriteBeforeSend) {
  // The checker must be able to fail: rank 1 receives into block 0 before sending block 0, so it
  // forwards rank 0's data back to rank 0 instead of its own.
  Topology topo = makeTopo({1, 1});
  const uint64_t count = kChunk;  // one round: rank 1's plan is send(0), recv(0)
  std::vector<RankPlan> plans;
  ASSERT_EQ(buildPlans(topo, CollKind::kAllToAll, Algo::kDirect, count, 0, 4, true, &plans), "");
  EXPECT_EQ(simulateAndCheck(plans, CollKind::kAllToAll, count, 0), "");
  auto& steps = plans[1].channels[0].steps;
  ASSERT_EQ(steps.size(), 2u);
  std::swap(steps[0], steps[1]);
  ASSERT_EQ(validatePlans(plans), "");  // still well paired; only the data is wrong
  const std::string err = simulateAndCheck(plans, CollKind::kAllToAll, count, 0);
  EXPECT_NE(err.find("rank 0 out[8]"), std::string::npos) << err;
}

// Zero-copy steps of all ranks run at once between two barriers; the simulator must see a race
// between them even though it runs them one rank at a time: the symmetric all-to-all's gather,
// run in place (in place gets pairwise swaps instead), has rank q read block r of rank r's buffer
// while rank r overwrites it with what it gathers.
TEST(Plans, SimulatorCatchesRacesBetweenPeerSteps) {
  Topology topo = makeTopo({4});
  std::vector<RankPlan> plans;
  ASSERT_EQ(buildPlans(topo, CollKind::kAllToAll, Algo::kSymmetric, 5, 0, 4, false, &plans), "");
  EXPECT_EQ(simulateAndCheck(plans, CollKind::kAllToAll, 5, 0), "");
  for (RankPlan& p : plans) p.inPlace = true;  // sendbuff == recvbuff
  const std::string err = simulateAndCheck(plans, CollKind::kAllToAll, 5, 0);
  EXPECT_NE(err.find("race"), std::string::npos) << err;
  // A broadcast whose ranks all copy the whole input (not their slice) into every output writes
  // each element from several threads at once: a race too, though every value is right.
  ASSERT_EQ(buildPlans(topo, CollKind::kBroadcast, Algo::kSymmetric, 8, 1, 4, false, &plans), "");
  EXPECT_EQ(simulateAndCheck(plans, CollKind::kBroadcast, 8, 1), "");
  for (RankPlan& p : plans)
    for (Step& s : p.channels[0].steps)
      if (s.op == StepOp::kPeerReduceBcast) s.srcOff = s.dstOff = 0, s.count = 8;
  const std::string err2 = simulateAndCheck(plans, CollKind::kBroadcast, 8, 1);
  EXPECT_NE(err2.find("race"), std::string::npos) << err2;
}

TEST(Plans, SupportMatrix) {
  Topology uneven = makeTopo({3, 2, 1});
  EXPECT_FALSE(algoSupports(uneven, CollKind::kAllReduce, Algo::kHierarchical));
  EXPECT_TRUE(algoSupports(uneven, CollKind::kAllReduce, Algo::kRing));
  Topology even = makeTopo({4, 4});
  EXPECT_TRUE(algoSupports(even, CollKind::kAllReduce, Algo::kHierarchical));
  EXPECT_FALSE(algoSupports(even, CollKind::kAllToAll, Algo::kRing));
  EXPECT_TRUE(algoSupports(even, CollKind::kAllToAll, Algo::kDirect));
  // Zero-copy: every collective within one node; point-to-point has its own path.
  for (CollKind k : kColls) EXPECT_TRUE(algoSupports(even, k, Algo::kSymmetric)) << collName(k);
  EXPECT_FALSE(algoSupports(even, CollKind::kSendRecv, Algo::kSymmetric));
  EXPECT_FALSE(algoSupports(makeTopo({2, 2, 2}), CollKind::kBroadcast, Algo::kSymmetric));
  RankPlan plan;
  EXPECT_EQ(buildCollPlan(uneven, 0, CollArgs{CollKind::kAllReduce, 10, 0}, Algo::kHierarchical,
                          PlanParams{kChunk, 2, 4}, &plan),
            sscInvalidUsage);
}

TEST(Plans, HierarchicalKeepsInterGpuTrafficToSameIndexPartitions) {
  // 2 GPUs x 4 partitions: every connection is either inside a GPU or between partitions with
  // the same index: the property the paper's phase 2 relies on.
  Topology topo = makeTopo({4, 4});
  for (CollKind coll : {CollKind::kAllReduce, CollKind::kReduceScatter, CollKind::kAllGather}) {
    for (int r = 0; r < topo.nranks(); ++r) {
      RankPlan plan;
      ASSERT_EQ(buildCollPlan(topo, r, CollArgs{coll, 100, 0}, Algo::kHierarchical,
                              PlanParams{kChunk, 2, 4}, &plan),
                sscSuccess);
      for (const auto& ch : plan.channels)
        for (const Step& s : ch.steps)
          for (int peer : {s.sendPeer, s.recvPeer}) {
            if (peer < 0) continue;
            bool sameGpu = topo.ranks[peer].gpu == topo.ranks[r].gpu;
            bool sameIndex = topo.ranks[peer].partition == topo.ranks[r].partition;
            EXPECT_TRUE(sameGpu || sameIndex)
                << collName(coll) << " rank " << r << " peer " << peer;
          }
    }
  }
}

TEST(Plans, P2pFusedPlansPairAndCompleteInAnyPostingOrder) {
  // Rank 0 posts recv-then-send, rank 1 send-then-recv, with messages larger than a FIFO.
  PlanParams params{kChunk, 1, 1};
  std::vector<RankPlan> plans(2);
  ASSERT_EQ(buildP2pPlan(0, 2, {{false, 1, 100}, {true, 1, 100}}, params, &plans[0]), sscSuccess);
  ASSERT_EQ(buildP2pPlan(1, 2, {{true, 0, 100}, {false, 0, 100}}, params, &plans[1]), sscSuccess);
  EXPECT_EQ(validatePlans(plans), "");
  std::vector<std::vector<std::vector<SymElem>>> in(2);
  for (int r = 0; r < 2; ++r)
    for (uint64_t sz : plans[r].bufElems) in[r].emplace_back(sz);
  SimResult sim = simulatePlans(plans, in, kSlotElems, kSlots);
  EXPECT_EQ(sim.error, "");
  RankPlan bad;
  EXPECT_EQ(buildP2pPlan(0, 2, {{true, 0, 10}}, params, &bad), sscInvalidUsage);
  EXPECT_EQ(buildP2pPlan(0, 2, {{true, 5, 10}}, params, &bad), sscInvalidArgument);
}

TEST(Plans, P2pOneCopyHandshakesComeFirstAndPairUp) {
  // With the one-copy handshake (every peer direct): per pair with traffic, the receiver offers,
  // the sender pushes and the receiver waits, on channel 0 before any FIFO step, all offers
  // before all pushes before all waits; the FIFO steps are those of the plan without them.
  const int n = 4;
  PlanParams params{kChunk, 2, 1};
  params.p2pSplitBytes = 64;
  std::vector<uint8_t> direct(n, 1);
  std::vector<RankPlan> plans(n), plain(n);
  for (int r = 0; r < n; ++r) {
    // An all-to-allv: rank r sends 10 * (r + q) + 1 bytes to q (self included), two messages to
    // the next rank.
    std::vector<P2pOp> ops;
    for (int q = 0; q < n; ++q) {
      ops.push_back({true, q, static_cast<uint64_t>(10 * (r + q) + 1)});
      ops.push_back({false, q, static_cast<uint64_t>(10 * (q + r) + 1)});
    }
    ops.push_back({true, (r + 1) % n, 300});
    ops.push_back({false, (r + n - 1) % n, 300});
    ASSERT_EQ(buildP2pPlan(r, n, ops, params, &plans[r], direct), sscSuccess);
    ASSERT_EQ(buildP2pPlan(r, n, ops, params, &plain[r]), sscSuccess);
    const std::vector<Step>& steps = plans[r].channels[0].steps;
    ASSERT_GE(steps.size(), static_cast<size_t>(3 * (n - 1)));
    for (int k = 0; k < 3 * (n - 1); ++k) {
      const StepOp want = k < n - 1         ? StepOp::kP2pOffer
                          : k < 2 * (n - 1) ? StepOp::kP2pPush
                                            : StepOp::kP2pWait;
      EXPECT_EQ(steps[k].op, want) << "rank " << r << " step " << k;
    }
    EXPECT_EQ(std::vector<Step>(steps.begin() + 3 * (n - 1), steps.end()).size(),
              plain[r].channels[0].steps.size());
  }
  EXPECT_EQ(validatePlans(plans), "");
  // A pair whose receiver offers but whose sender never takes the offer is caught.
  plans[1].channels[0].steps.erase(plans[1].channels[0].steps.begin() + (n - 1));
  EXPECT_NE(validatePlans(plans).find("one-copy pair"), std::string::npos);
}

// Several sends to one peer in one group (PyTorch's batch_isend_irecv of several tensors, a
// ring exchange posted five times): per round, each connection may carry half a FIFO in all,
// or both sides fill their FIFOs with sends and wait for receives that never start.
TEST(Plans, P2pSeveralOpsToOnePeerStayWithinTheFifo) {
  PlanParams params{kChunk, 1, 1};
  for (int n : {2, 3, 5}) {
    std::vector<RankPlan> plans(n);
    for (int r = 0; r < n; ++r) {
      std::vector<P2pOp> ops;
      for (int k = 0; k < 5; ++k) {
        ops.push_back({true, (r + 1) % n, 7 * kChunk / 2 + k});  // uneven, > a FIFO each
        ops.push_back({false, (r + n - 1) % n, 7 * kChunk / 2 + k});
      }
      ops.push_back({true, (r + 1) % n, 3});  // and a small one after them
      ops.push_back({false, (r + n - 1) % n, 3});
      ASSERT_EQ(buildP2pPlan(r, n, ops, params, &plans[r]), sscSuccess);
    }
    EXPECT_EQ(validatePlans(plans), "") << n << " ranks";
    std::vector<std::vector<std::vector<SymElem>>> in(n);
    for (int r = 0; r < n; ++r)
      for (uint64_t sz : plans[r].bufElems) in[r].emplace_back(sz);
    SimResult sim = simulatePlans(plans, in, kSlotElems, kSlots);
    EXPECT_EQ(sim.error, "") << n << " ranks";
  }
}

// Long streams are split over the channels (one part each, cut where both ends cut it), short
// ones stay on channel 0. Every byte must land in the matching receive, in posting order per
// peer, whatever the channel count, the split threshold and the interleaving of peers.
TEST(Plans, P2pStreamsSplitOverChannelsDeliverEveryByteToItsReceive) {
  for (int channels : {1, 2, 3}) {
    for (int n : {2, 3, 5}) {
      PlanParams params{kChunk, channels, 1};
      params.p2pSplitBytes = 20;
      // sizes[r][q]: messages r sends to q, in order (some below the split, some far above,
      // some not a multiple of 16, one zero-length).
      const auto sizes = [&](int r, int q) {
        std::vector<uint64_t> v{static_cast<uint64_t>(7 + 13 * r + 5 * q), 3, 0,
                                static_cast<uint64_t>(5 * kChunk + 17 * q + r)};
        if ((r + q) % 2 == 0) v.push_back(64);
        return v;
      };
      std::vector<RankPlan> plans(n);
      std::vector<std::vector<P2pOp>> ops(n);
      // (peer, index within that peer's list) of each op, to check placement below.
      std::vector<std::vector<std::pair<int, size_t>>> which(n);
      for (int r = 0; r < n; ++r) {
        // Sends peer by peer, receives interleaved across peers (round-robin by message).
        for (int q = 0; q < n; ++q) {
          if (q == r) continue;
          const auto s = sizes(r, q);
          for (size_t k = 0; k < s.size(); ++k) {
            ops[r].push_back({true, q, s[k]});
            which[r].push_back({q, k});
          }
        }
        for (size_t k = 0; k < 6; ++k)
          for (int q = n - 1; q >= 0; --q) {
            if (q == r) continue;
            const auto s = sizes(q, r);
            if (k >= s.size()) continue;
            ops[r].push_back({false, q, s[k]});
            which[r].push_back({q, k});
          }
        ASSERT_EQ(buildP2pPlan(r, n, ops[r], params, &plans[r]), sscSuccess);
        EXPECT_LE(plans[r].channels.size(), static_cast<size_t>(channels));
      }
      if (channels > 1) {
        EXPECT_EQ(plans[0].channels.size(), static_cast<size_t>(channels));
      }
      EXPECT_EQ(validatePlans(plans), "") << channels << " channels, " << n << " ranks";
      std::vector<std::vector<std::vector<SymElem>>> in(n);
      for (int r = 0; r < n; ++r)
        for (size_t b = 0; b < plans[r].bufElems.size(); ++b) {
          in[r].emplace_back(plans[r].bufElems[b]);
          for (size_t i = 0; i < in[r][b].size(); ++i)
            in[r][b][i].tag = static_cast<int64_t>((r * 100 + b) * 100000 + i);
        }
      SimResult sim = simulatePlans(plans, in, kSlotElems, kSlots);
      ASSERT_EQ(sim.error, "") << channels << " channels, " << n << " ranks";
      for (int r = 0; r < n; ++r)
        for (size_t i = 0; i < ops[r].size(); ++i) {
          if (ops[r][i].isSend) continue;
          const auto [q, k] = which[r][i];
          size_t sendIdx = 0;  // q's op sending message k to r
          for (size_t j = 0; j < ops[q].size(); ++j)
            if (ops[q][j].isSend && which[q][j] == std::make_pair(r, k)) sendIdx = j;
          const auto& got = sim.buffers[r][kBufUserBase + i];
          ASSERT_EQ(got.size(), ops[r][i].bytes);
          for (size_t e = 0; e < got.size(); ++e)
            ASSERT_EQ(got[e].tag, in[q][kBufUserBase + sendIdx][e].tag)
                << channels << " channels, " << n << " ranks: rank " << r << " message " << k
                << " from " << q << " byte " << e;
        }
    }
  }
}

// A receive shorter than its send by exactly the send's second part: every slot of channel 0
// has the same size on both ends, so only the tag (the message's length) tells them apart.
// Without it the receiver would take the first part as the whole message and the second would
// wait in the FIFO for the next one.
TEST(Plans, P2pMessagesOfDifferentLengthsDifferInTheirTag) {
  PlanParams params{kChunk, 2, 1};
  params.p2pSplitBytes = 40;
  const uint64_t sent = 64;      // split: 32 on channel 0, 32 on channel 1
  const uint64_t received = 32;  // below the split: 32 on channel 0
  std::vector<RankPlan> plans(2);
  ASSERT_EQ(buildP2pPlan(0, 2, {{true, 1, sent}}, params, &plans[0]), sscSuccess);
  ASSERT_EQ(buildP2pPlan(1, 2, {{false, 0, received}}, params, &plans[1]), sscSuccess);
  ASSERT_EQ(plans[0].channels.size(), 2u);
  ASSERT_EQ(plans[1].channels.size(), 1u);
  EXPECT_EQ(plans[0].channels[0].steps[0].count, plans[1].channels[0].steps[0].count);
  EXPECT_NE(plans[0].channels[0].steps[0].tag, plans[1].channels[0].steps[0].tag);
  EXPECT_NE(validatePlans(plans).find("do not match"), std::string::npos) << validatePlans(plans);
  std::vector<std::vector<std::vector<SymElem>>> in(2);
  for (int r = 0; r < 2; ++r)
    for (uint64_t sz : plans[r].bufElems) in[r].emplace_back(sz);
  EXPECT_NE(simulatePlans(plans, in, kSlotElems, kSlots).error.find("tag"), std::string::npos);
  // Matching lengths agree on every tag; collectives carry none.
  EXPECT_EQ(p2pTag(sent), p2pTag(sent));
  EXPECT_NE(p2pTag(sent), 0u);
  RankPlan ring;
  ASSERT_EQ(buildCollPlan(makeTopo({4}), 0, CollArgs{CollKind::kAllReduce, 64, 0}, Algo::kRing,
                          PlanParams{kChunk, 2, 4}, &ring),
            sscSuccess);
  for (const ChannelPlan& c : ring.channels)
    for (const Step& st : c.steps) EXPECT_EQ(st.tag, 0u);
}

TEST(Plans, DumpIsReadable) {
  Topology topo = makeTopo({2, 2});
  RankPlan plan;
  ASSERT_EQ(buildCollPlan(topo, 0, CollArgs{CollKind::kAllReduce, 16, 0}, Algo::kHierarchical,
                          PlanParams{kChunk, 2, 4}, &plan),
            sscSuccess);
  std::string text = formatPlan(plan);
  EXPECT_NE(text.find("allreduce hierarchical rank 0/4"), std::string::npos) << text;
  EXPECT_NE(text.find("recvReduceCopy"), std::string::npos) << text;
}

}  // namespace
}  // namespace ssc::test
