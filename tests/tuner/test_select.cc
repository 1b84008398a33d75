// Algorithm selection: STARSCREAM_ALGO parsing (global and per collective) and the rule table.
#include <gtest/gtest.h>

#include <cstdlib>

#include "src/core/errors.h"
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
  for (const char* ok : {"ring", "flat_ring", "Symmetric", "auto", "allreduce=hierarchical,allgather=ring",
                         "ring,broadcast=direct"})
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
  EXPECT_NE(selectAlgo(uneven, CollKind::kAllReduce, 1 << 20, false, Algo::kSymmetric), Algo::kSymmetric);
  EXPECT_EQ(selectAlgo(uneven, CollKind::kAllReduce, 1 << 20, true, Algo::kSymmetric), Algo::kSymmetric);
  // The environment is not read per call: only the communicator's choice counts.
  setenv("STARSCREAM_ALGO", "ring", 1);
  EXPECT_EQ(selectAlgo(uneven, CollKind::kAllReduce, 1 << 20, true), Algo::kSymmetric);
}

TEST_F(Select, RuleTable) {
  Topology cpx = makeUniformTopology(1, 8, 8);  // 8 GPUs x 8 partitions
  Topology flat = makeFlatTopology(8);
  // Small messages: direct. Large on partitioned GPUs: hierarchical; flat: bidirectional ring.
  EXPECT_EQ(selectAlgo(cpx, CollKind::kAllReduce, 1024, false), Algo::kDirect);
  EXPECT_EQ(selectAlgo(cpx, CollKind::kAllReduce, 64 << 20, false), Algo::kHierarchical);
  EXPECT_EQ(selectAlgo(flat, CollKind::kAllReduce, 64 << 20, false), Algo::kBidirRing);
  // Registered buffers on one node: zero-copy for the three it serves.
  EXPECT_EQ(selectAlgo(cpx, CollKind::kAllReduce, 64 << 20, true), Algo::kSymmetric);
  EXPECT_EQ(selectAlgo(cpx, CollKind::kBroadcast, 64 << 20, true), Algo::kHierarchical);
  EXPECT_EQ(selectAlgo(cpx, CollKind::kAllToAll, 64 << 20, true), Algo::kDirect);
  Topology twoNodes = makeUniformTopology(2, 2, 2);
  EXPECT_NE(selectAlgo(twoNodes, CollKind::kAllReduce, 64 << 20, true), Algo::kSymmetric);
}

}  // namespace
}  // namespace ssc
