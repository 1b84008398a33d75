// Human-readable renderings of a topology: the text and Graphviz DOT that starscream-topo
// prints (its JSON is topologyToJson). They live in the library, not the tool, so tests check
// exactly what the tool draws.
#pragma once

#include <string>
#include <vector>

#include "src/topology/topology.h"

namespace ssc {

// A summary line, the link tiers with their sources, then one line per GPU grouped by node:
// model, partition modes, its ranks in partition (XCD ring) order and their memory domains.
std::string formatTopologyText(const Topology& topo);

// An undirected Graphviz graph: a cluster per node and per GPU, a box per partition (rank);
// USR edges between neighbouring partitions on the XCD ring (none for 1 partition, one for 2,
// P for P >= 3), one XGMI edge per pair of GPUs on a node and one NET edge per pair of nodes
// (both drawn between clusters). Each edge is labelled "<tier> <bandwidth> GB/s".
std::string formatTopologyDot(const Topology& topo);

// "0-7", "0,8,16", "0-3,8-11": a rank list, in the order given, with ascending runs folded.
std::string formatRankList(const std::vector<int>& ranks);

}  // namespace ssc
