// SPDX-License-Identifier: MIT
// A communicator's reduction ops (src/comm/red_ops.h): numbers from the first free one, lookups,
// destroyed numbers handed out again lowest first, the limit, many threads at once.
#include <gtest/gtest.h>

#include <set>
#include <thread>
#include <vector>

#include "src/comm/red_ops.h"

namespace ssc::test {
namespace {

PreMulSumOp hostOp(sscDataType_t dtype, double value) {
  PreMulSumOp op{dtype, false, {}, nullptr};
  op.hostValue.f = value;
  return op;
}

TEST(RedOpTable, NumbersStartAfterTheBuiltInOps) {
  RedOpTable t;
  int a = -1, b = -1;
  ASSERT_TRUE(t.create(hostOp(sscFloat32, 0.5), &a));
  ASSERT_TRUE(t.create(hostOp(sscFloat16, 2.0), &b));
  EXPECT_EQ(a, sscNumOps);
  EXPECT_EQ(b, sscNumOps + 1);
  PreMulSumOp found{};
  ASSERT_TRUE(t.find(b, &found));
  EXPECT_EQ(found.dtype, sscFloat16);
  EXPECT_DOUBLE_EQ(found.hostValue.f, 2.0);
  EXPECT_FALSE(t.find(sscSum, &found)) << "built-in ops are not in the table";
  EXPECT_FALSE(t.find(sscNumOps + 2, &found));
  EXPECT_EQ(t.size(), 2u);
}

TEST(RedOpTable, DestroyedNumbersAreReusedLowestFirst) {
  RedOpTable t;
  std::vector<int> ids(5);
  for (int& id : ids) ASSERT_TRUE(t.create(hostOp(sscFloat32, 1.0), &id));
  EXPECT_TRUE(t.destroy(ids[3]));
  EXPECT_TRUE(t.destroy(ids[1]));
  EXPECT_FALSE(t.destroy(ids[1])) << "destroyed twice";
  PreMulSumOp found{};
  EXPECT_FALSE(t.find(ids[1], &found));
  int id = -1;
  ASSERT_TRUE(t.create(hostOp(sscBfloat16, 3.0), &id));
  EXPECT_EQ(id, ids[1]);
  ASSERT_TRUE(t.find(id, &found));
  EXPECT_EQ(found.dtype, sscBfloat16) << "the new op, not the destroyed one";
  ASSERT_TRUE(t.create(hostOp(sscFloat32, 1.0), &id));
  EXPECT_EQ(id, ids[3]);
  ASSERT_TRUE(t.create(hostOp(sscFloat32, 1.0), &id));
  EXPECT_EQ(id, ids[4] + 1);
}

TEST(RedOpTable, MadeAndDestroyedOneAtATimeNeverRunsOut) {
  // PyTorch's pattern: one op per call, destroyed after it. Numbers never reused would reach the
  // limit (here 3 numbers) after three calls.
  RedOpTable t(sscNumOps, sscNumOps + 3);
  for (int call = 0; call < 1000; ++call) {
    int id = -1;
    ASSERT_TRUE(t.create(hostOp(sscFloat32, 0.25), &id)) << "call " << call;
    EXPECT_EQ(id, sscNumOps);
    ASSERT_TRUE(t.destroy(id));
  }
  EXPECT_EQ(t.size(), 0u);
}

TEST(RedOpTable, FullTableRefusesAndRecovers) {
  RedOpTable t(sscNumOps, sscNumOps + 3);
  int ids[3];
  for (int& id : ids) ASSERT_TRUE(t.create(hostOp(sscFloat32, 1.0), &id));
  int more = -1;
  EXPECT_FALSE(t.create(hostOp(sscFloat32, 1.0), &more));
  EXPECT_EQ(more, -1) << "nothing written on refusal";
  ASSERT_TRUE(t.destroy(ids[0]));
  ASSERT_TRUE(t.destroy(ids[2]));
  ASSERT_TRUE(t.create(hostOp(sscFloat32, 1.0), &more));
  EXPECT_EQ(more, ids[0]);
  ASSERT_TRUE(t.create(hostOp(sscFloat32, 1.0), &more));
  EXPECT_EQ(more, ids[2]);
  EXPECT_FALSE(t.create(hostOp(sscFloat32, 1.0), &more));
}

TEST(RedOpTable, ThreadsGetDistinctNumbers) {
  RedOpTable t;
  constexpr int kThreads = 8, kEach = 200;
  std::vector<std::vector<int>> kept(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&, i] {
      for (int k = 0; k < kEach; ++k) {
        int id = -1;
        if (!t.create(hostOp(sscFloat32, i), &id)) continue;
        // Every other op is destroyed at once: its number goes back to the others.
        if (k % 2 == 0)
          t.destroy(id);
        else
          kept[static_cast<size_t>(i)].push_back(id);
      }
    });
  for (auto& th : threads) th.join();
  std::set<int> all;
  for (int i = 0; i < kThreads; ++i)
    for (int id : kept[static_cast<size_t>(i)]) {
      EXPECT_TRUE(all.insert(id).second) << "number " << id << " handed out twice";
      PreMulSumOp found{};
      ASSERT_TRUE(t.find(id, &found));
      EXPECT_DOUBLE_EQ(found.hostValue.f, i) << "op " << id << " is another thread's";
    }
  EXPECT_EQ(all.size(), static_cast<size_t>(kThreads * kEach / 2));
  EXPECT_EQ(t.size(), all.size());
  // At most one op per thread is alive besides the kept ones, so reuse keeps the numbers low.
  EXPECT_LT(*all.rbegin(), sscNumOps + static_cast<int>(all.size()) + kThreads);
}

}  // namespace
}  // namespace ssc::test
