// SPDX-License-Identifier: MIT
// The cases of test_mpi_collectives outside its collective x algorithm x type x op matrix:
// bit-exactness across algorithms, a send/receive ring with sends to self, communicator split,
// topology queries and a device-resident PreMulSum scalar. Same process, communicator and stream
// as test_mpi_collectives.cc (mpi_collectives.h); linked after it, so these run after its cases.
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>
#include <vector>

#include "src/core/dtype.h"
#include "src/kernels/host/reduce.h"
#include "starscream/starscream.h"
#include "tests/integration/mpi_collectives.h"
#include "tests/support/reference.h"

namespace ssc::test {
namespace {

TEST(MpiCollectives, HierarchicalEqualsFlatRingBitForBit) {
  // Integer-valued data is exact in every type, so any correct algorithm gives identical bits.
  for (int t = 0; t < sscNumTypes; ++t)
    for (sscRedOp_t op : kOps) {
      const uint64_t count = 4099;
      const size_t es = dtypeSize(static_cast<sscDataType_t>(t));
      std::vector<std::vector<char>> results;
      for (const char* algo : {"ring", "hierarchical"}) {
        forceAlgo(algo);
        std::vector<char> in(count * es), out(count * es);
        for (uint64_t i = 0; i < count; ++i)
          setElementFromDouble(
              static_cast<sscDataType_t>(t), in.data(), i,
              static_cast<double>(inputValue(g_rank, i, static_cast<sscDataType_t>(t),
                                             op == sscNumOps ? sscSum : op)));
        sscRedOp_t useOp = op == sscNumOps ? sscSum : op;
        ASSERT_EQ(sscAllReduce(in.data(), out.data(), count, static_cast<sscDataType_t>(t), useOp,
                               g_comm, g_stream),
                  sscSuccess);
        ASSERT_EQ(sscStreamSynchronize(g_stream), sscSuccess);
        results.push_back(out);
      }
      // Float sums of small integers stay exact except in the fp8 types' coarse ranges and avg.
      bool exact = !(t == sscFloat8e5m2 || op == sscAvg);
      if (exact) {
        EXPECT_EQ(allSum(results[0] != results[1]), 0)
            << dtypeName(static_cast<sscDataType_t>(t)) << " " << opName(op);
      }
    }
  forceAlgo("");
}

TEST(MpiCollectives, SendRecvRingWithSelfAndLargeMessages) {
  // 200001: odd and long enough to be split over the channels (kP2pSplitBytes).
  for (uint64_t bytes : {uint64_t{1}, uint64_t{1000}, uint64_t{200001}, uint64_t{3u << 20}}) {
    std::vector<char> a(bytes), b(bytes), self(bytes), selfOut(bytes);
    for (uint64_t i = 0; i < bytes; ++i)
      a[i] = static_cast<char>(g_rank * 31 + i), self[i] = static_cast<char>(i * 7);
    int next = (g_rank + 1) % g_n, prev = (g_rank + g_n - 1) % g_n;
    ASSERT_EQ(sscGroupStart(), sscSuccess);
    // Receive posted first on purpose: the fused plan must not care about posting order.
    ASSERT_EQ(sscRecv(b.data(), bytes, sscUint8, prev, g_comm, g_stream), sscSuccess);
    ASSERT_EQ(sscSend(a.data(), bytes, sscUint8, next, g_comm, g_stream), sscSuccess);
    ASSERT_EQ(sscSend(self.data(), bytes, sscUint8, g_rank, g_comm, g_stream), sscSuccess);
    ASSERT_EQ(sscRecv(selfOut.data(), bytes, sscUint8, g_rank, g_comm, g_stream), sscSuccess);
    ASSERT_EQ(sscGroupEnd(), sscSuccess);
    ASSERT_EQ(sscStreamSynchronize(g_stream), sscSuccess);
    long long bad = 0;
    for (uint64_t i = 0; i < bytes; ++i)
      bad += b[i] != static_cast<char>(prev * 31 + i) || selfOut[i] != self[i];
    EXPECT_EQ(allSum(bad), 0) << bytes << " bytes";
  }
}

TEST(MpiCollectives, SplitByParityAndNoColor) {
  int color = g_rank == g_n - 1 && g_n > 2 ? SSC_SPLIT_NOCOLOR : g_rank % 2;
  sscComm_t sub = nullptr;
  ASSERT_EQ(sscCommSplit(g_comm, color, -g_rank, &sub, nullptr), sscSuccess)
      << sscGetLastError(g_comm);
  if (color == SSC_SPLIT_NOCOLOR) {
    EXPECT_EQ(sub, nullptr);
    return;
  }
  ASSERT_NE(sub, nullptr);
  int subN = 0, subRank = 0;
  ASSERT_EQ(sscCommCount(sub, &subN), sscSuccess);
  ASSERT_EQ(sscCommUserRank(sub, &subRank), sscSuccess);
  // key = -rank orders the members in reverse.
  int expectN = 0, expectRank = 0;
  for (int r = 0; r < g_n; ++r) {
    bool member = (r % 2 == g_rank % 2) && !(r == g_n - 1 && g_n > 2);
    if (!member) continue;
    ++expectN;
    if (r > g_rank) ++expectRank;
  }
  EXPECT_EQ(subN, expectN);
  EXPECT_EQ(subRank, expectRank);
  int64_t mine = g_rank, sum = 0;
  for (const char* algo : kAlgos) {
    forceAlgo(algo);
    ASSERT_EQ(sscAllReduce(&mine, &sum, 1, sscInt64, sscSum, sub, nullptr), sscSuccess);
    ASSERT_EQ(sscStreamSynchronize(nullptr), sscSuccess);
    int64_t expect = 0;
    for (int r = g_rank % 2; r < g_n; r += 2)
      if (!(r == g_n - 1 && g_n > 2)) expect += r;
    EXPECT_EQ(sum, expect) << algo;
  }
  forceAlgo("");
  EXPECT_EQ(sscCommDestroy(sub), sscSuccess);
}

TEST(MpiCollectives, TopologyIsIdenticalOnEveryRankAndQueryable) {
  size_t size = 0;
  ASSERT_EQ(sscCommGetTopologyJson(g_comm, nullptr, &size), sscSuccess);
  std::string json(size, '\0');
  ASSERT_EQ(sscCommGetTopologyJson(g_comm, json.data(), &size), sscSuccess);
  // Every rank's graph is byte-for-byte rank 0's.
  int len = static_cast<int>(size);
  int len0 = len;
  MPI_Bcast(&len0, 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::string json0 = json;
  json0.resize(len0);
  MPI_Bcast(json0.data(), len0, MPI_CHAR, 0, MPI_COMM_WORLD);
  EXPECT_EQ(allSum(json != json0), 0);
  sscRankTopology_t info;
  ASSERT_EQ(sscCommGetRankTopology(g_comm, g_rank, &info), sscSuccess);
  EXPECT_GE(info.partition, 0);
  EXPECT_LT(info.partition, info.partitionsOnGpu);
  EXPECT_LT(info.gpu, info.gpus);
  // Partition counts add up to the rank count.
  long long mine = info.partition == 0 ? info.partitionsOnGpu : 0;
  EXPECT_EQ(allSum(mine), g_n);
  size_t tiny = 4;
  char buf[4];
  EXPECT_EQ(sscCommGetTopologyJson(g_comm, buf, &tiny), sscInvalidArgument);
  EXPECT_EQ(tiny, size);
}

TEST(MpiCollectives, DeviceScalarPreMulSumIsReadWhenTheOperationRuns) {
  float scalar = 1.0f;
  sscRedOp_t op;
  ASSERT_EQ(sscRedOpCreatePreMulSum(&op, &scalar, sscFloat32, sscScalarDevice, g_comm), sscSuccess);
  scalar = 3.0f;  // a device-resident scalar is read when the work runs, not at creation
  float in = 1.0f, out = 0.0f;
  ASSERT_EQ(sscAllReduce(&in, &out, 1, sscFloat32, op, g_comm, g_stream), sscSuccess);
  ASSERT_EQ(sscStreamSynchronize(g_stream), sscSuccess);
  EXPECT_EQ(out, 3.0f * g_n);
  EXPECT_EQ(sscRedOpDestroy(op, g_comm), sscSuccess);
}

}  // namespace
}  // namespace ssc::test
