// SPDX-License-Identifier: MIT
#include "src/topology/subset.h"

#include <map>

namespace ssc {

Topology subsetTopology(const Topology& parent, const std::vector<int>& members) {
  Topology t;
  t.name = parent.name + " (subset)";
  t.intraGpu = parent.intraGpu;
  t.interGpu = parent.interGpu;
  t.network = parent.network;
  std::map<int, int> gpuMap, nodeMap;  // parent index -> subset index, in order of appearance
  for (int parentRank : members) {
    const RankPlacement& p = parent.ranks[parentRank];
    if (!nodeMap.count(p.node)) nodeMap.emplace(p.node, static_cast<int>(nodeMap.size()));
    if (!gpuMap.count(p.gpu)) {
      gpuMap.emplace(p.gpu, static_cast<int>(t.gpus.size()));
      GpuInfo g = parent.gpus[p.gpu];
      g.node = nodeMap[p.node];
      g.ranks.clear();
      t.gpus.push_back(g);
    }
  }
  t.nnodes = static_cast<int>(nodeMap.size());
  // GPU indices on each node are renumbered densely, in order of appearance.
  std::vector<int> perNode(t.nnodes, 0);
  for (GpuInfo& g : t.gpus) g.localIndex = perNode[g.node]++;
  if (!parent.nodeNames.empty()) {
    t.nodeNames.assign(t.nnodes, "");
    for (const auto& [parentNode, node] : nodeMap)
      if (parentNode < static_cast<int>(parent.nodeNames.size()))
        t.nodeNames[node] = parent.nodeNames[parentNode];
  }
  t.ranks.resize(members.size());
  for (size_t i = 0; i < members.size(); ++i) {
    const RankPlacement& p = parent.ranks[members[i]];
    t.ranks[i] = RankPlacement{nodeMap[p.node], gpuMap[p.gpu], 0, p.numa};
  }
  // Partition indices are renumbered along each GPU's ring order, which the parent's order keeps.
  for (size_t g = 0; g < parent.gpus.size(); ++g) {
    if (!gpuMap.count(static_cast<int>(g))) continue;
    GpuInfo& sub = t.gpus[gpuMap[static_cast<int>(g)]];
    for (int parentRank : parent.gpus[g].ranks)
      for (size_t i = 0; i < members.size(); ++i)
        if (members[i] == parentRank) {
          t.ranks[i].partition = static_cast<int>(sub.ranks.size());
          sub.ranks.push_back(static_cast<int>(i));
        }
  }
  return t;
}

}  // namespace ssc
