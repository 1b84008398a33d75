// SPDX-License-Identifier: MIT
// disjointRingOrders: for every node size up to 16 GPUs, each order visits every GPU once, no
// pair of GPUs is consecutive (closing pair included) in two orders, and there are as many
// orders as the complete graph has room for ((n - 1) / 2 Hamiltonian cycles).
#include "src/collectives/gpu_rings.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <utility>

namespace ssc {
namespace {

TEST(DisjointRingOrders, HamiltonianEdgeDisjointAndAsManyAsFit) {
  for (int n = 1; n <= 16; ++n) {
    const auto orders = disjointRingOrders(n);
    ASSERT_EQ(orders.size(), static_cast<size_t>(std::max(1, (n - 1) / 2))) << "n=" << n;
    std::set<std::pair<int, int>> used;
    for (const auto& o : orders) {
      ASSERT_EQ(o.size(), static_cast<size_t>(n)) << "n=" << n;
      std::vector<int> sorted = o;
      std::sort(sorted.begin(), sorted.end());
      for (int v = 0; v < n; ++v) ASSERT_EQ(sorted[v], v) << "n=" << n << ": not a permutation";
      if (n < 3) continue;  // one or two GPUs: no cycle to share
      for (int p = 0; p < n; ++p) {
        const int a = o[p], b = o[(p + 1) % n];
        const auto e = std::minmax(a, b);
        EXPECT_TRUE(used.insert({e.first, e.second}).second)
            << "n=" << n << ": GPUs " << a << " and " << b << " are neighbours in two orders";
      }
    }
  }
}

TEST(DisjointRingOrders, SmallNodesKeepTheGpuOrder) {
  EXPECT_EQ(disjointRingOrders(1), (std::vector<std::vector<int>>{{0}}));
  EXPECT_EQ(disjointRingOrders(2), (std::vector<std::vector<int>>{{0, 1}}));
  EXPECT_EQ(disjointRingOrders(3), (std::vector<std::vector<int>>{{0, 1, 2}}));
  EXPECT_EQ(disjointRingOrders(0), (std::vector<std::vector<int>>{{}}));
}

}  // namespace
}  // namespace ssc
