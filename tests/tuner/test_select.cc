// SPDX-License-Identifier: MIT
// Algorithm selection: STARSCREAM_ALGO parsing (global and per collective) and the model's seam.
#include <gtest/gtest.h>

#include <cstdlib>

#include "src/core/errors.h"
#include "tuner/model.h"
#include "tuner/select.h"

namespace ssc {
namespace {

class Select : public ::testing::Test {
 protected:
  void TearDown() override { unsetenv("STARSCREAM_ALGO"); }
};

TEST_F(Select, ParsesNamesAndAliases) {
  Algo a;
  EXPECT_TRUE(parseAlgoName("Ring", &a));
  EXPECT_EQ(a, Algo::kRing);
  EXPECT_TRUE(parseAlgoName("flat_ring", &a));
  EXPECT_EQ(a, Algo::kRing);
  EXPECT_TRUE(parseAlgoName("bidir_ring", &a));
  EXPECT_EQ(a, Algo::kBidirRing);
  EXPECT_TRUE(parseAlgoName("hier", &a));
  EXPECT_EQ(a, Algo::kHierarchical);
  EXPECT_TRUE(parseAlgoName("symmetric", &a));
  EXPECT_EQ(a, Algo::kSymmetric);
  EXPECT_FALSE(parseAlgoName("fastest", &a));
}

Algo forcedFor(const ForcedAlgos& f, CollKind k) { return f[static_cast<size_t>(k)]; }

TEST_F(Select, GlobalAndPerCollectiveForcing) {
  ForcedAlgos f;
  ASSERT_EQ(parseForcedAlgos("ring,allgather=direct,reducescatter=hierarchical", &f), sscSuccess);
  EXPECT_EQ(forcedFor(f, CollKind::kAllReduce), Algo::kRing);
  EXPECT_EQ(forcedFor(f, CollKind::kAllGather), Algo::kDirect);
  EXPECT_EQ(forcedFor(f, CollKind::kReduceScatter), Algo::kHierarchical);
  EXPECT_EQ(forcedFor(f, CollKind::kBroadcast), Algo::kRing);
  ASSERT_EQ(parseForcedAlgos("", &f), sscSuccess);
  for (Algo a : f) EXPECT_EQ(a, Algo::kAuto);
  // A bad entry refuses the whole value (at communicator init) and leaves nothing forced.
  EXPECT_EQ(parseForcedAlgos("allreduce=bogus,broadcast=ring", &f), sscInvalidArgument);
  EXPECT_NE(lastError().find("STARSCREAM_ALGO"), std::string::npos) << lastError();
  EXPECT_EQ(forcedFor(f, CollKind::kBroadcast), Algo::kAuto);
}

TEST_F(Select, CheckAlgoSpecNamesWhatIsWrong) {
  for (const char* ok : {"ring", "flat_ring", "Symmetric", "auto",
                         "allreduce=hierarchical,allgather=ring", "ring,broadcast=direct"})
    EXPECT_EQ(checkAlgoSpec(ok), "") << ok;
  std::string why = checkAlgoSpec("fastest");
  EXPECT_NE(why.find("'fastest' is not an algorithm"), std::string::npos) << why;
  EXPECT_NE(why.find("hierarchical"), std::string::npos) << why;
  why = checkAlgoSpec("all_reduce=ring");  // the collective is spelt allreduce
  EXPECT_NE(why.find("'all_reduce' is not a collective"), std::string::npos) << why;
  EXPECT_NE(why.find("allreduce"), std::string::npos) << why;
  EXPECT_NE(checkAlgoSpec("allreduce="), "");
  ForcedAlgos f;
  EXPECT_EQ(parseForcedAlgos("fastest", &f), sscInvalidArgument);
  EXPECT_EQ(parseForcedAlgos("hierarchical", &f), sscSuccess);
  EXPECT_EQ(forcedFor(f, CollKind::kAllReduce), Algo::kHierarchical);
}

TEST_F(Select, ForcedAlgorithmThatCannotRunFallsBack) {
  Topology uneven = makeFlatTopology(3);
  EXPECT_EQ(selectAlgo(uneven, CollKind::kAllToAll, 1 << 20, false, Algo::kRing), Algo::kDirect);
  EXPECT_NE(selectAlgo(uneven, CollKind::kAllReduce, 1 << 20, false, Algo::kSymmetric),
            Algo::kSymmetric);
  EXPECT_EQ(selectAlgo(uneven, CollKind::kAllReduce, 1 << 20, true, Algo::kSymmetric),
            Algo::kSymmetric);
  // The environment is not read per call: only the communicator's choice counts.
  setenv("STARSCREAM_ALGO", "ring", 1);
  EXPECT_EQ(selectAlgo(uneven, CollKind::kAllReduce, 1 << 20, true), Algo::kSymmetric);
}

// The rule table is gone: without a forced algorithm the communicator's cost model chooses
// (tests/tuner/test_model.cc checks its choices); here, what selectAlgo adds around it.
TEST_F(Select, ModelChoosesWhatNothingForces) {
  Topology cpx = makeUniformTopology(1, 8, 8);  // 8 GPUs x 8 partitions
  const Tuner tuner(cpx, defaultProfile(cpx));
  for (uint64_t bytes : {1024ull, 64ull << 20})
    for (bool sym : {false, true})
      EXPECT_EQ(selectAlgo(tuner, CollKind::kAllReduce, bytes, sym),
                tuner.choose(CollKind::kAllReduce, bytes, sym).algo);
  // All-to-all: zero-copy wherever the buffers are shared, else the direct FIFOs.
  EXPECT_EQ(selectAlgo(tuner, CollKind::kAllToAll, 64 << 20, true), Algo::kSymmetric);
  EXPECT_EQ(selectAlgo(tuner, CollKind::kAllToAll, 8, true), Algo::kSymmetric);
  EXPECT_EQ(selectAlgo(tuner, CollKind::kAllToAll, 64 << 20, false), Algo::kDirect);
  // Zero-copy serves every collective on one node only; point-to-point never.
  Topology twoNodes = makeUniformTopology(2, 2, 2);
  EXPECT_NE(selectAlgo(twoNodes, CollKind::kAllReduce, 64 << 20, true), Algo::kSymmetric);
  EXPECT_EQ(selectAlgo(twoNodes, CollKind::kAllToAll, 64 << 20, true), Algo::kDirect);
  EXPECT_EQ(selectAlgo(tuner, CollKind::kSendRecv, 64 << 20, true), Algo::kDirect);
  // A forced algorithm (the communicator's parsed STARSCREAM_ALGO) wins over the model wherever
  // it can run; collectives it does not name stay with the model.
  ForcedAlgos forced;
  ASSERT_EQ(parseForcedAlgos("allreduce=ring", &forced), sscSuccess);
  EXPECT_EQ(selectAlgo(tuner, CollKind::kAllReduce, 64 << 20, true,
                       forced[static_cast<size_t>(CollKind::kAllReduce)]),
            Algo::kRing);
  EXPECT_EQ(selectAlgo(tuner, CollKind::kAllGather, 64 << 20, true,
                       forced[static_cast<size_t>(CollKind::kAllGather)]),
            tuner.choose(CollKind::kAllGather, 64 << 20, true).algo);
}

// STARSCREAM_ZERO_COPY_GRID pins the grid of a zero-copy all-gather, whoever chose the algorithm,
// and nothing else: other collectives have one grid, the FIFO algorithms none.
TEST_F(Select, ZeroCopyGridPinsOnlyTheZeroCopyAllGather) {
  Topology one = makeUniformTopology(1, 1, 8);
  TunerProfile p = defaultProfile(one);
  p.variants[0].tiers[0][static_cast<int>(Protocol::kZeroCopyWide)] = {
      0.1, 1};  // wide: only for tiny calls
  p.variants[0].tiers[0][static_cast<int>(Protocol::kFifo)] = {100, 0.1};  // FIFO: never
  const Tuner tuner(one, p);
  const Choice small = selectCall(tuner, CollKind::kAllGather, 64, true);
  const Choice large = selectCall(tuner, CollKind::kAllGather, 1 << 30, true);
  EXPECT_EQ(small, (Choice{Algo::kSymmetric, Protocol::kZeroCopyWide}));
  EXPECT_EQ(large, (Choice{Algo::kSymmetric, Protocol::kZeroCopy}));
  for (uint64_t b : {uint64_t{64}, uint64_t{1} << 30}) {
    EXPECT_EQ(
        selectCall(tuner, CollKind::kAllGather, b, true, Algo::kAuto, ZeroCopyGrid::kWide).protocol,
        Protocol::kZeroCopyWide)
        << b;
    EXPECT_EQ(
        selectCall(tuner, CollKind::kAllGather, b, true, Algo::kAuto, ZeroCopyGrid::kBulk).protocol,
        Protocol::kZeroCopy)
        << b;
    EXPECT_EQ(
        selectCall(tuner, CollKind::kAllGather, b, true, Algo::kSymmetric, ZeroCopyGrid::kWide),
        (Choice{Algo::kSymmetric, Protocol::kZeroCopyWide}))
        << b;
    // A FIFO algorithm, forced or chosen for plain buffers, has no grid to pin.
    EXPECT_EQ(selectCall(tuner, CollKind::kAllGather, b, true, Algo::kRing, ZeroCopyGrid::kWide),
              (Choice{Algo::kRing, Protocol::kFifo}))
        << b;
    EXPECT_EQ(selectCall(tuner, CollKind::kAllGather, b, false, Algo::kAuto, ZeroCopyGrid::kWide)
                  .protocol,
              Protocol::kFifo)
        << b;
    // Other collectives keep their one grid.
    for (CollKind c : {CollKind::kAllReduce, CollKind::kReduceScatter, CollKind::kAllToAll})
      EXPECT_NE(selectCall(tuner, c, b, true, Algo::kSymmetric, ZeroCopyGrid::kWide).protocol,
                Protocol::kZeroCopyWide)
          << collName(c) << " " << b;
  }
}

}  // namespace
}  // namespace ssc
