// SPDX-License-Identifier: MIT
// What starscream-topo prints, checked on the shipped topologies: the DOT graph's clusters,
// partition boxes and edges per tier (not by eye), the text summary, and the JSON.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "src/core/errors.h"
#include "src/topology/topology.h"
#include "src/topology/topology_format.h"

namespace ssc {
namespace {

Topology load(const std::string& name) {
  Topology topo;
  const std::string path = std::string(SSC_SOURCE_DIR) + "/tools/topologies/" + name + ".json";
  EXPECT_EQ(loadTopologyFile(path, kAnyRankCount, &topo), sscSuccess) << lastError();
  return topo;
}

// The DOT text, parsed back into what a reader of the picture sees.
struct DotGraph {
  int nodeClusters = 0, gpuClusters = 0, partitionBoxes = 0;
  std::map<std::string, std::set<std::pair<int, int>>> edges;  // tier -> {ranks a < b}
  std::map<std::string, int> edgeCount;                        // tier -> edges, with repeats
  std::vector<std::pair<int, int>> hubEdges;                   // {rank, node} joined to the hub
};

DotGraph parseDot(const std::string& dot) {
  DotGraph g;
  static const std::regex box(R"(^\s+r(\d+) \[label=)");
  static const std::regex edge(R"re(^\s+r(\d+) -- r(\d+) \[.*class="(USR|XGMI|NET)")re");
  // A node's XGMI hub: one edge per GPU (r -- hub above it, hub -- r below it).
  static const std::regex hub(
      R"re(^\s+(?:r(\d+) -- xgmi(\d+)|xgmi(\d+) -- r(\d+)) \[.*class="XGMI")re");
  std::istringstream in(dot);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (line.find("subgraph cluster_node") != std::string::npos) ++g.nodeClusters;
    if (line.find("subgraph cluster_gpu") != std::string::npos) ++g.gpuClusters;
    if (std::regex_search(line, m, box)) ++g.partitionBoxes;
    if (std::regex_search(line, m, edge)) {
      const int a = std::stoi(m[1]), b = std::stoi(m[2]);
      g.edges[m[3]].insert({std::min(a, b), std::max(a, b)});
      ++g.edgeCount[m[3]];
    }
    if (std::regex_search(line, m, hub)) {
      const bool above = m[1].matched;
      g.hubEdges.push_back({std::stoi(above ? m[1] : m[4]), std::stoi(above ? m[2] : m[3])});
      ++g.edgeCount["XGMI"];
    }
  }
  return g;
}

// The USR ring of every GPU, in partition order, as undirected rank pairs.
std::set<std::pair<int, int>> expectedRing(const Topology& topo) {
  std::set<std::pair<int, int>> ring;
  for (const GpuInfo& gpu : topo.gpus) {
    const size_t p = gpu.ranks.size();
    for (size_t i = 0; p >= 2 && i < p; ++i) {
      const int a = gpu.ranks[i], b = gpu.ranks[(i + 1) % p];
      ring.insert({std::min(a, b), std::max(a, b)});
    }
  }
  return ring;
}

struct DotCase {
  const char* file;
  int nodes, gpus, ranks, usr, xgmi, net;
};

void PrintTo(const DotCase& c, std::ostream* os) { *os << c.file; }

class TopoDot : public ::testing::TestWithParam<DotCase> {};

TEST_P(TopoDot, DrawsClustersAndTierEdges) {
  const DotCase& c = GetParam();
  const Topology topo = load(c.file);
  const DotGraph g = parseDot(formatTopologyDot(topo));
  EXPECT_EQ(g.nodeClusters, c.nodes);
  EXPECT_EQ(g.gpuClusters, c.gpus);
  EXPECT_EQ(g.partitionBoxes, c.ranks);
  EXPECT_EQ(g.edgeCount.count("USR") ? g.edgeCount.at("USR") : 0, c.usr);
  EXPECT_EQ(g.edgeCount.count("XGMI") ? g.edgeCount.at("XGMI") : 0, c.xgmi);
  EXPECT_EQ(g.edgeCount.count("NET") ? g.edgeCount.at("NET") : 0, c.net);
  // USR edges join exactly the ring neighbours; XGMI edges join GPUs of one node, NET edges
  // GPUs of different nodes, each pair once.
  using Pairs = std::set<std::pair<int, int>>;
  auto edgesOf = [&](const char* tier) { return g.edges.count(tier) ? g.edges.at(tier) : Pairs{}; };
  EXPECT_EQ(edgesOf("USR"), expectedRing(topo));
  Pairs gpuPairs, nodePairs;
  for (const auto& [a, b] : edgesOf("XGMI")) {
    EXPECT_EQ(topo.tierBetween(a, b), LinkTier::kInterGpu) << a << "--" << b;
    gpuPairs.insert({topo.ranks[a].gpu, topo.ranks[b].gpu});
  }
  // Nodes of two or more GPUs draw their mesh as a hub: every GPU of the node joins it once.
  std::set<int> hubGpus;
  for (const auto& [r, node] : g.hubEdges) {
    EXPECT_EQ(topo.ranks[r].node, node) << "rank " << r;
    EXPECT_TRUE(hubGpus.insert(topo.ranks[r].gpu).second) << "GPU of rank " << r << " twice";
  }
  EXPECT_EQ(static_cast<int>(gpuPairs.size() + hubGpus.size()), c.xgmi);
  for (const auto& [a, b] : edgesOf("NET")) {
    EXPECT_EQ(topo.tierBetween(a, b), LinkTier::kNetwork) << a << "--" << b;
    nodePairs.insert({topo.ranks[a].node, topo.ranks[b].node});
  }
  EXPECT_EQ(static_cast<int>(nodePairs.size()), c.net);
}

// XGMI: one edge per GPU to its node's hub (none for a node of one GPU).
// USR: P edges per GPU for P >= 3, one for P = 2.
INSTANTIATE_TEST_SUITE_P(
    Shipped, TopoDot,
    ::testing::Values(DotCase{"mi300x-8x-cpx-nps4", 1, 8, 64, 64, 8, 0},
                      DotCase{"mi300x-2node-8x-cpx-nps4", 2, 16, 128, 128, 16, 1},
                      DotCase{"mi300x-8x-spx-nps1", 1, 8, 8, 0, 8, 0},
                      DotCase{"mi355x-8x-dpx-nps2", 1, 8, 16, 8, 8, 0},
                      DotCase{"h200-mps-8", 1, 1, 8, 8, 0, 0},
                      DotCase{"h200-mps-2", 1, 1, 2, 1, 0, 0}, DotCase{"1x4", 1, 1, 4, 4, 0, 0},
                      DotCase{"2x2", 1, 2, 4, 2, 2, 0}, DotCase{"4x2", 1, 4, 8, 4, 4, 0},
                      DotCase{"2x4", 1, 2, 8, 8, 2, 0}, DotCase{"uneven-3-2-1", 1, 3, 6, 4, 3, 0}),
    [](const auto& info) {
      std::string name = info.param.file;
      for (char& ch : name)
        if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return name;
    });

TEST(TopoDotSyntax, LegendCarriesBandwidths) {
  const std::string dot = formatTopologyDot(load("mi300x-8x-cpx-nps4"));
  const size_t legend = dot.find("legend [");
  ASSERT_NE(legend, std::string::npos);
  EXPECT_NE(dot.find("<B>USR</B>", legend), std::string::npos);
  EXPECT_NE(dot.find("450 GB/s per link", legend), std::string::npos);
  EXPECT_NE(dot.find("<B>XGMI</B>", legend), std::string::npos);
  EXPECT_NE(dot.find("48 GB/s per link", legend), std::string::npos);
  EXPECT_NE(dot.find("compound=true"), std::string::npos);
  EXPECT_EQ(dot.rfind("}\n"), dot.size() - 2);
}

// Graphviz itself accepts every graph (where it is installed: it is optional).
TEST(TopoDotSyntax, GraphvizParsesIt) {
  if (std::system("command -v dot >/dev/null 2>&1") != 0) GTEST_SKIP() << "graphviz not installed";
  for (const char* file :
       {"mi300x-2node-8x-cpx-nps4", "mi300x-8x-cpx-nps4", "uneven-3-2-1", "h200-mps-4", "2x2"}) {
    FILE* pipe = popen("dot -Tcanon >/dev/null", "w");
    ASSERT_NE(pipe, nullptr);
    const std::string dot = formatTopologyDot(load(file));
    fwrite(dot.data(), 1, dot.size(), pipe);
    EXPECT_EQ(pclose(pipe), 0) << file;
  }
}

TEST(TopoText, SummarisesShapeLinksAndGpus) {
  const std::string text = formatTopologyText(load("mi300x-8x-cpx-nps4"));
  EXPECT_NE(
      text.find("topology mi300x-8x-cpx-nps4: 64 ranks, 1 node, 8 GPUs, 8 partitions per GPU"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("USR"), std::string::npos);
  EXPECT_NE(text.find("450 GB/s"), std::string::npos) << text;
  EXPECT_NE(
      text.find("  gpu 0 MI300X CPX/NPS4: 8 partitions, ranks 0-7; memory domains 0,0,1,1,2,2,3,3"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("  gpu 7 MI300X CPX/NPS4: 8 partitions, ranks 56-63;"), std::string::npos)
      << text;
  int gpuLines = 0;
  for (size_t at = text.find("\n  gpu "); at != std::string::npos;
       at = text.find("\n  gpu ", at + 1))
    ++gpuLines;
  EXPECT_EQ(gpuLines, 8);
}

TEST(TopoText, UnevenAndMultiNode) {
  const std::string uneven = formatTopologyText(load("uneven-3-2-1"));
  EXPECT_NE(uneven.find("6 ranks, 1 node, 3 GPUs, uneven partitions per GPU"), std::string::npos)
      << uneven;
  EXPECT_NE(uneven.find("gpu 2 MI300X: 1 partition, rank 5"), std::string::npos) << uneven;
  const std::string two = formatTopologyText(load("mi300x-2node-8x-cpx-nps4"));
  EXPECT_NE(two.find("node 1\n  gpu 0 (global 8) MI300X CPX/NPS4: 8 partitions, ranks 64-71"),
            std::string::npos)
      << two;
}

TEST(TopoJson, IsAValidFileWithExplicitPlacement) {
  const Topology topo = load("mi300x-2node-8x-cpx-nps4");
  const nlohmann::json j = nlohmann::json::parse(topologyToJson(topo));
  EXPECT_EQ(j["format"], "starscream-topology/1");
  EXPECT_EQ(j["nodes"], 2);
  EXPECT_EQ(j["gpus_per_node"], 8);
  EXPECT_EQ(j["partitions_per_gpu"], 8);
  EXPECT_EQ(j["gpu_model"], "MI300X");
  ASSERT_EQ(j["placement"].size(), 128u);
  EXPECT_EQ(j["placement"][77], (nlohmann::json{1, 1, 5, 2}));  // rank 77: node 1, GPU 1, XCD 5
  EXPECT_EQ(j["links"]["xgmi"]["bandwidth_gbps"], 48.0);
  EXPECT_FALSE(j.contains("gpus"));  // nothing per-GPU to say about an emulated machine
}

TEST(TopoJson, OnePlacementPerLine) {
  const std::string json = topologyToJson(load("1x4"));
  EXPECT_NE(json.find("\n    [0, 0, 2, 0],\n"), std::string::npos) << json;
}

TEST(TopoRankList, FoldsRuns) {
  EXPECT_EQ(formatRankList({0, 1, 2, 3}), "0-3");
  EXPECT_EQ(formatRankList({0, 8, 16}), "0,8,16");
  EXPECT_EQ(formatRankList({0, 1, 2, 3, 8, 9, 10, 11}), "0-3,8-11");
  EXPECT_EQ(formatRankList({4, 5}), "4,5");
  EXPECT_EQ(formatRankList({3, 2, 1}), "3,2,1");
  EXPECT_EQ(formatRankList({}), "");
}

}  // namespace
}  // namespace ssc
