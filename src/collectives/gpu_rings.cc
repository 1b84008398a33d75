// SPDX-License-Identifier: MIT
#include "src/collectives/gpu_rings.h"

#include <algorithm>
#include <cstddef>
#include <numeric>

namespace ssc {

namespace {

// Odd n = 2k + 1 (k >= 1): vertex 2k (the hub) and a circle of 2k vertices. Cycle i is the hub,
// then the circle's zigzag from i: i, i+1, i-1, i+2, i-2, ..., i+k (mod 2k). The zigzag's steps
// have lengths 1, 2, ..., 2k-1, one of each, so the k rotations use every chord of the circle
// once; the hub's edges go to i and to i+k, different for every i < k.
std::vector<std::vector<int>> oddOrders(int n) {
  const int k = (n - 1) / 2, m = 2 * k;
  std::vector<std::vector<int>> out;
  for (int i = 0; i < k; ++i) {
    std::vector<int> c{m};
    c.push_back(i);
    for (int j = 1; j < k; ++j) {
      c.push_back((i + j) % m);
      c.push_back(((i - j) % m + m) % m);
    }
    c.push_back((i + k) % m);
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

std::vector<std::vector<int>> disjointRingOrders(int n) {
  if (n <= 3) {
    std::vector<int> one(static_cast<size_t>(std::max(n, 0)));
    std::iota(one.begin(), one.end(), 0);
    return {one};
  }
  if (n % 2 == 1) return oddOrders(n);
  // Even n = 2k + 2: the k cycles of the odd n - 1, each with vertex n - 1 put between the two
  // ends of its one diameter of the circle (a step of length k mod 2k). The k diameters are
  // disjoint and cover the circle, so the edges no cycle keeps (the diameters and hub -- new)
  // are a perfect matching, and no edge is used twice.
  std::vector<std::vector<int>> out = oddOrders(n - 1);
  const int k = (n - 2) / 2, m = 2 * k, extra = n - 1;
  for (auto& c : out) {
    for (size_t p = 1; p + 1 < c.size(); ++p) {  // circle steps: c[1..] (c[0] is the hub)
      if (((c[p + 1] - c[p]) % m + m) % m == k) {
        c.insert(c.begin() + static_cast<long>(p) + 1, extra);
        break;
      }
    }
  }
  return out;
}

}  // namespace ssc
