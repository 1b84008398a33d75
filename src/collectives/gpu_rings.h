// SPDX-License-Identifier: MIT
// Ring orders of the GPUs of one node that share no link: the hierarchical algorithm's rings of
// same-index partitions (one ring per partition index, G GPUs each) run at the same time, and on
// a node whose GPUs are all linked pairwise (MI300X: 7 XGMI links per GPU) rings in one GPU order
// would all cross the same G links while the others idle.
#pragma once

#include <vector>

namespace ssc {

// max(1, (n - 1) / 2) orders of 0..n-1, each visiting every vertex once, no two using the same
// pair of consecutive vertices (the closing pair last -> first included): Walecki's decomposition
// of the complete graph on n vertices into Hamiltonian cycles (for even n, what is left over is
// one perfect matching). n = 1, 2, 3: the one order 0..n-1. The same on every rank (a pure
// function of n).
std::vector<std::vector<int>> disjointRingOrders(int n);

}  // namespace ssc
