// SPDX-License-Identifier: MIT
// subsetTopology: the graph of a split communicator.
#include <gtest/gtest.h>

#include "src/topology/subset.h"

namespace ssc {
namespace {

TEST(TopologySubset, KeepsGpusAndRenumbersPartitionsAndLocalIndices) {
  Topology parent = makeUniformTopology(2, 2, 4);  // 2 nodes x 2 GPUs x 4 partitions = 16 ranks
  ASSERT_EQ(checkTopology(parent), sscSuccess);
  // Odd ranks of the second node's GPUs, in reverse order.
  std::vector<int> members = {15, 13, 11, 9};
  Topology sub = subsetTopology(parent, members);
  EXPECT_EQ(checkTopology(sub), sscSuccess);
  EXPECT_EQ(sub.nranks(), 4);
  EXPECT_EQ(sub.nnodes, 1);
  ASSERT_EQ(sub.gpus.size(), 2u);
  EXPECT_EQ(sub.gpus[0].localIndex, 0);
  EXPECT_EQ(sub.gpus[1].localIndex, 1);
  // GPU 3 of the parent (ranks 12..15) comes first; its partitions keep XCD ring order.
  EXPECT_EQ(sub.gpus[0].ranks, (std::vector<int>{1, 0}));
  EXPECT_EQ(sub.ranks[1].partition, 0);
  EXPECT_EQ(sub.ranks[0].partition, 1);
  EXPECT_TRUE(sub.uniformPartitions());
}

TEST(TopologySubset, OneRankPerGpuAcrossNodes) {
  Topology parent = makeUniformTopology(2, 2, 2);
  Topology sub = subsetTopology(parent, {0, 2, 4, 6});
  EXPECT_EQ(checkTopology(sub), sscSuccess);
  EXPECT_EQ(sub.nnodes, 2);
  EXPECT_EQ(sub.gpus.size(), 4u);
  EXPECT_EQ(sub.maxPartitions(), 1);
}

}  // namespace
}  // namespace ssc
