// SPDX-License-Identifier: MIT
// Human-readable renderings of a topology: the text and Graphviz DOT that starscream-topo
// prints (its JSON is topologyToJson). They live in the library, not the tool, so tests check
// exactly what the tool draws.
#pragma once

#include <string>
#include <vector>

#include "src/topology/topology.h"

namespace ssc {

// One screen: a summary line, the link tiers (bandwidth, latency, what they join, where the
// figure comes from in a word), then one line per GPU grouped by node: model, partition modes,
// its ranks in partition (XCD ring) order and their memory domains. `sources`: add each
// figure's full provenance at the end.
std::string formatTopologyText(const Topology& topo, bool sources = false);

// An undirected Graphviz graph, legible at 64 ranks: a cluster per node and per GPU, a box per
// partition (rank) in one row per GPU, a legend with each tier's bandwidth and latency;
// USR edges between neighbouring partitions on the XCD ring (none for 1 partition, one for 2,
// P for P >= 3), one XGMI edge per pair of GPUs on a node and one NET edge per pair of nodes
// (both drawn between clusters). Each edge is labelled "<tier> <bandwidth> GB/s".
std::string formatTopologyDot(const Topology& topo);

// "0-7", "0,8,16", "0-3,8-11": a rank list, in the order given, with ascending runs folded.
std::string formatRankList(const std::vector<int>& ranks);

}  // namespace ssc
