// SPDX-License-Identifier: MIT
// Shared by the algorithm files; not part of the collectives layer's interface.
#pragma once

#include <algorithm>
#include <vector>

#include "src/collectives/algorithms.h"
#include "src/collectives/emitter.h"

namespace ssc {

struct CallShape {
  const Topology& topo;
  int rank;
  int nranks;
  CollArgs args;
  PlanParams params;
};

// The length of the per-rank range the algorithms loop over: the whole vector for all-reduce,
// broadcast and reduce; one rank's block for reduce-scatter, all-gather and all-to-all.
inline uint64_t perRankLength(const CollArgs& a) { return a.count; }

inline int indexOf(const std::vector<int>& v, int x) {
  return static_cast<int>(std::find(v.begin(), v.end(), x) - v.begin());
}

// Below this many bytes the direct all-reduce sends every rank's whole input to every peer
// (one-shot: one step of latency); above it, it reduce-scatters then all-gathers (two-shot:
// 2(n-1)/n of the bytes per rank instead of n-1 times them).
constexpr uint64_t kDirectOneShotMaxBytes = 64 * 1024;

void buildRing(const CallShape& c, bool bidirectional, RankPlan* plan);
void buildDirect(const CallShape& c, size_t elemBytes, RankPlan* plan);
void buildHierarchical(const CallShape& c, RankPlan* plan);
void buildSymmetric(const CallShape& c, const PlanParams& params, RankPlan* plan);

}  // namespace ssc
