// SPDX-License-Identifier: MIT
// The graph of a sub-communicator (sscCommSplit): the chosen ranks keep their GPUs, partitions
// and links; GPUs left with no rank disappear.
#pragma once

#include <vector>

#include "src/topology/topology.h"

namespace ssc {

// members[i] is the parent rank that becomes rank i of the subset.
Topology subsetTopology(const Topology& parent, const std::vector<int>& members);

}  // namespace ssc
