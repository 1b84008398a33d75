// SPDX-License-Identifier: MIT
#include "perf/common/coll_math.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

namespace ssc::perf {
namespace {

TEST(PerfCollMath, CountsOfWholeBufferCollectives) {
  // 1 MiB of float over 3 ranks: 262144 elements, 87381 per rank, rounded down to a multiple of
  // 16 bytes (4 floats) = 87380, as nccl-tests' "(count/nranks) & -(16/eltSize)".
  const CollCounts rs = collCounts(CollKind::kReduceScatter, 262144, 4, 3);
  EXPECT_EQ(rs.paramCount, 87380u);
  EXPECT_EQ(rs.recvCount, 87380u);
  EXPECT_EQ(rs.sendCount, 3u * 87380);
  EXPECT_EQ(rs.sendInplaceOffset, 0u);
  EXPECT_EQ(rs.recvInplaceOffset, 87380u);

  const CollCounts ag = collCounts(CollKind::kAllGather, 262144, 4, 3);
  EXPECT_EQ(ag.paramCount, 87380u);
  EXPECT_EQ(ag.sendCount, 87380u);
  EXPECT_EQ(ag.recvCount, 3u * 87380);
  EXPECT_EQ(ag.sendInplaceOffset, 87380u);
  EXPECT_EQ(ag.recvInplaceOffset, 0u);

  const CollCounts a2a = collCounts(CollKind::kAllToAll, 262144, 4, 3);
  EXPECT_EQ(a2a.paramCount, 87380u);
  EXPECT_EQ(a2a.sendCount, 3u * 87380);
  EXPECT_EQ(a2a.recvCount, 3u * 87380);

  // 16-byte rounding in elements: 16 int8, 2 doubles.
  EXPECT_EQ(collCounts(CollKind::kAllGather, 1000, 1, 8).paramCount, 112u);  // 125 -> 112
  EXPECT_EQ(collCounts(CollKind::kAllGather, 1000, 8, 8).paramCount, 124u);  // 125 -> 124
  // Below nranks * 16 bytes there is nothing to move.
  EXPECT_EQ(collCounts(CollKind::kReduceScatter, 15, 1, 1).paramCount, 0u);
  EXPECT_EQ(collCounts(CollKind::kAllToAll, 2, 4, 64).sendCount, 0u);
}

TEST(PerfCollMath, CountsOfPerRankCollectives) {
  for (CollKind kind :
       {CollKind::kAllReduce, CollKind::kBroadcast, CollKind::kReduce, CollKind::kSendRecv}) {
    const CollCounts c = collCounts(kind, 1001, 2, 7);
    EXPECT_EQ(c.sendCount, 1001u);
    EXPECT_EQ(c.recvCount, 1001u);
    EXPECT_EQ(c.paramCount, 1001u);
    EXPECT_EQ(c.sendInplaceOffset, 0u);
    EXPECT_EQ(c.recvInplaceOffset, 0u);
  }
}

TEST(PerfCollMath, RowBytesIsTheLargerBuffer) {
  EXPECT_EQ(rowBytes(collCounts(CollKind::kAllGather, 262144, 4, 3), 4), 3u * 87380 * 4);
  EXPECT_EQ(rowBytes(collCounts(CollKind::kReduceScatter, 262144, 4, 3), 4), 3u * 87380 * 4);
  EXPECT_EQ(rowBytes(collCounts(CollKind::kAllReduce, 262144, 4, 3), 4), 1u << 20);
}

TEST(PerfCollMath, BusBandwidthFactors) {
  EXPECT_DOUBLE_EQ(busBwFactor(CollKind::kAllReduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(busBwFactor(CollKind::kReduceScatter, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(busBwFactor(CollKind::kAllGather, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(busBwFactor(CollKind::kAllToAll, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(busBwFactor(CollKind::kBroadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(busBwFactor(CollKind::kReduce, 8), 1.0);
  EXPECT_DOUBLE_EQ(busBwFactor(CollKind::kSendRecv, 8), 1.0);
  EXPECT_DOUBLE_EQ(busBwFactor(CollKind::kAllReduce, 1), 0.0);
  EXPECT_DOUBLE_EQ(busBwFactor(CollKind::kAllReduce, 64), 2.0 * 63 / 64);
}

TEST(PerfCollMath, Bandwidths) {
  // 1e9 bytes in one second is 1 GB/s of algbw (decimal GB, as nccl-tests).
  const Bandwidth ar = bandwidth(CollKind::kAllReduce, 250000000, 4, 1.0, 4);
  EXPECT_DOUBLE_EQ(ar.algBw, 1.0);
  EXPECT_DOUBLE_EQ(ar.busBw, 1.5);
  // reduce_scatter / all_gather / alltoall count the whole buffer: paramCount * nranks.
  const Bandwidth rs = bandwidth(CollKind::kReduceScatter, 125000000, 4, 2.0, 4);
  EXPECT_DOUBLE_EQ(rs.algBw, 1.0);
  EXPECT_DOUBLE_EQ(rs.busBw, 0.75);
  const Bandwidth a2a = bandwidth(CollKind::kAllToAll, 125000000, 8, 1.0, 2);
  EXPECT_DOUBLE_EQ(a2a.algBw, 2.0);
  EXPECT_DOUBLE_EQ(a2a.busBw, 1.0);
  const Bandwidth bc = bandwidth(CollKind::kBroadcast, 1000, 1, 1e-6, 16);
  EXPECT_DOUBLE_EQ(bc.algBw, 1.0);
  EXPECT_DOUBLE_EQ(bc.busBw, 1.0);
  EXPECT_DOUBLE_EQ(bandwidth(CollKind::kSendRecv, 10, 4, 0.0, 2).algBw, 0.0);  // no time yet
}

TEST(PerfCollMath, CombineOverRanksAsDashA) {
  const std::vector<double> t = {4.0, 1.0, 7.0};
  EXPECT_DOUBLE_EQ(combineOverRanks(t, 0), 4.0);  // rank 0's
  EXPECT_DOUBLE_EQ(combineOverRanks(t, 1), 4.0);  // mean
  EXPECT_DOUBLE_EQ(combineOverRanks(t, 2), 1.0);  // min
  EXPECT_DOUBLE_EQ(combineOverRanks(t, 3), 7.0);  // max
  EXPECT_DOUBLE_EQ(combineOverRanks({}, 1), 0.0);
}

TEST(PerfCollMath, SizeSeries) {
  EXPECT_EQ(sizeSeries(8, 128, 2, 0), (std::vector<size_t>{8, 16, 32, 64, 128}));
  EXPECT_EQ(sizeSeries(8, 100, 4, 0), (std::vector<size_t>{8, 32}));
  EXPECT_EQ(sizeSeries(10, 40, 1, 10), (std::vector<size_t>{10, 20, 30, 40}));
  EXPECT_EQ(sizeSeries(10, 45, 0, 10), (std::vector<size_t>{10, 20, 30, 40}));
  EXPECT_EQ(sizeSeries(0, 4, 2, 0), (std::vector<size_t>{0, 1, 2, 4}));
  EXPECT_EQ(sizeSeries(5, 50, 1, 0), (std::vector<size_t>{5}));  // no step: one size
  EXPECT_EQ(sizeSeries(7, 7, 2, 0), (std::vector<size_t>{7}));
  const size_t huge = std::numeric_limits<size_t>::max();
  EXPECT_EQ(sizeSeries(huge / 2 + 1, huge, 2, 0).size(), 1u);  // no overflow, no hang
  EXPECT_EQ(warmupSeries(8, 100), (std::vector<size_t>{8, 16, 32, 64}));
  EXPECT_EQ(warmupSeries(0, 2), (std::vector<size_t>{0, 1, 2}));
}

TEST(PerfCollMath, Traits) {
  EXPECT_STREQ(collName(CollKind::kAllReduce), "all_reduce");
  EXPECT_STREQ(collName(CollKind::kAllToAll), "alltoall");
  EXPECT_TRUE(collReduces(CollKind::kReduceScatter));
  EXPECT_FALSE(collReduces(CollKind::kAllGather));
  EXPECT_TRUE(collHasRoot(CollKind::kBroadcast));
  EXPECT_FALSE(collHasRoot(CollKind::kAllReduce));
  EXPECT_FALSE(collRunsInPlace(CollKind::kAllToAll));
  EXPECT_TRUE(collRunsInPlace(CollKind::kSendRecv));
  EXPECT_FALSE(collChecksInPlace(CollKind::kSendRecv));
  EXPECT_TRUE(collChecksInPlace(CollKind::kAllGather));
}

}  // namespace
}  // namespace ssc::perf
