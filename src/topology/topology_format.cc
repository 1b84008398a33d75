#include "src/topology/topology_format.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace ssc {
namespace {

std::string plural(size_t n, const char* one, const char* many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

// "450 GB/s", "57.6 GB/s", "0.25 GB/s": as many digits as the figure has, up to 3 significant.
std::string gbps(double v) { return fmt::format("{:.3g} GB/s", v); }

std::string modes(const GpuInfo& gpu) {
  if (gpu.computePartition.empty() && gpu.memoryPartition.empty()) return "";
  if (gpu.memoryPartition.empty()) return gpu.computePartition;
  if (gpu.computePartition.empty()) return gpu.memoryPartition;
  return gpu.computePartition + "/" + gpu.memoryPartition;
}

// Escapes a string for a double-quoted DOT id or label.
std::string dotQuote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

struct TierStyle {
  const char* color;
  const char* style;
  int penwidth;
};

TierStyle styleOf(LinkTier tier) {
  switch (tier) {
    case LinkTier::kIntraGpu:
      return {"#1f77b4", "solid", 2};
    case LinkTier::kInterGpu:
      return {"#d62728", "solid", 1};
    case LinkTier::kNetwork:
      break;
  }
  return {"#2ca02c", "dashed", 1};
}

std::string edgeAttrs(const Topology& topo, LinkTier tier) {
  const TierStyle st = styleOf(tier);
  return fmt::format("label=\"{} {}\", color=\"{}\", fontcolor=\"{}\", style={}, penwidth={}",
                     linkTierName(tier), gbps(topo.link(tier).bandwidthGBps), st.color, st.color,
                     st.style, st.penwidth);
}

}  // namespace

std::string formatRankList(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += j == i ? fmt::format("{}", ranks[i])
                  : fmt::format("{}{}{}", ranks[i], j == i + 1 ? "," : "-", ranks[j]);
    i = j + 1;
  }
  return out;
}

std::string formatTopologyText(const Topology& topo) {
  std::string out;
  const std::string parts =
      topo.uniformPartitions() && !topo.gpus.empty()
          ? plural(topo.gpus.front().ranks.size(), "partition per GPU", "partitions per GPU")
          : "uneven partitions per GPU";
  out += fmt::format("topology {}: {}, {}, {}, {}\n", topo.name,
                     plural(topo.ranks.size(), "rank", "ranks"),
                     plural(static_cast<size_t>(topo.nnodes), "node", "nodes"),
                     plural(topo.gpus.size(), "GPU", "GPUs"), parts);
  out += "links (usable bandwidth per link per direction, latency per hop):\n";
  for (LinkTier tier : {LinkTier::kIntraGpu, LinkTier::kInterGpu, LinkTier::kNetwork}) {
    const LinkSpec& spec = topo.link(tier);
    out += fmt::format("  {:<4} {:>11} {:>8}  {}\n", linkTierName(tier), gbps(spec.bandwidthGBps),
                       fmt::format("{:.3g} us", spec.latencyUs), spec.source);
  }
  for (int node = 0; node < topo.nnodes; ++node) {
    const bool named =
        node < static_cast<int>(topo.nodeNames.size()) && !topo.nodeNames[node].empty();
    out +=
        fmt::format("node {}{}\n", node, named ? fmt::format(" ({})", topo.nodeNames[node]) : "");
    for (size_t g = 0; g < topo.gpus.size(); ++g) {
      const GpuInfo& gpu = topo.gpus[g];
      if (gpu.node != node) continue;
      std::string line = fmt::format("  gpu {}", gpu.localIndex);
      if (topo.nnodes > 1) line += fmt::format(" (global {})", g);
      if (!gpu.model.empty()) line += " " + gpu.model;
      if (!modes(gpu).empty()) line += " " + modes(gpu);
      line +=
          fmt::format(": {} {}", plural(gpu.ranks.size(), "partition, rank", "partitions, ranks"),
                      formatRankList(gpu.ranks));
      bool anyNuma = false;
      std::vector<std::string> numa;
      for (int r : gpu.ranks) {
        anyNuma |= topo.ranks[r].numa >= 0;
        numa.push_back(topo.ranks[r].numa >= 0 ? fmt::format("{}", topo.ranks[r].numa) : "?");
      }
      if (anyNuma) line += fmt::format("; memory domains {}", fmt::join(numa, ","));
      std::vector<std::string> details;
      if (!gpu.pciBusId.empty()) details.push_back("pci " + gpu.pciBusId);
      if (!gpu.uuid.empty()) details.push_back("uuid " + gpu.uuid);
      if (gpu.hostNuma >= 0) details.push_back(fmt::format("host numa {}", gpu.hostNuma));
      if (gpu.computeUnits > 0)
        details.push_back(fmt::format("{} CUs per partition", gpu.computeUnits));
      if (!details.empty()) line += fmt::format(" [{}]", fmt::join(details, ", "));
      out += line + "\n";
    }
  }
  return out;
}

std::string formatTopologyDot(const Topology& topo) {
  std::string out = fmt::format("graph {} {{\n", dotQuote(topo.name));
  // compound=true lets XGMI and NET edges end at cluster borders (lhead/ltail): they join GPUs
  // and nodes, not particular partitions.
  out += "  compound=true;\n  newrank=true;\n  fontname=\"Helvetica\";\n";
  out +=
      "  node [shape=box, style=\"rounded,filled\", fillcolor=\"#f2f2f2\", fontname=\"Helvetica\", "
      "fontsize=10];\n";
  out += "  edge [fontname=\"Helvetica\", fontsize=9];\n";
  out += fmt::format(
      "  label={};\n  labelloc=t;\n",
      dotQuote(fmt::format("{}: {}, {}, {}", topo.name, plural(topo.ranks.size(), "rank", "ranks"),
                           plural(topo.gpus.size(), "GPU", "GPUs"),
                           plural(static_cast<size_t>(topo.nnodes), "node", "nodes"))));
  for (int node = 0; node < topo.nnodes; ++node) {
    const bool named =
        node < static_cast<int>(topo.nodeNames.size()) && !topo.nodeNames[node].empty();
    out += fmt::format(
        "  subgraph cluster_node{} {{\n    label={};\n    style=rounded;\n", node,
        dotQuote(fmt::format("node {}{}", node, named ? " (" + topo.nodeNames[node] + ")" : "")));
    for (size_t g = 0; g < topo.gpus.size(); ++g) {
      const GpuInfo& gpu = topo.gpus[g];
      if (gpu.node != node) continue;
      std::string label = fmt::format("GPU {}", gpu.localIndex);
      if (!gpu.model.empty()) label += " " + gpu.model;
      if (!modes(gpu).empty()) label += " " + modes(gpu);
      out += fmt::format(
          "    subgraph cluster_gpu{} {{\n      label={};\n      style=filled;\n"
          "      fillcolor=\"#dbe9f6\";\n",
          g, dotQuote(label));
      for (int r : gpu.ranks) {
        const RankPlacement& place = topo.ranks[r];
        std::string text = fmt::format("rank {}\\npartition {}", r, place.partition);
        if (place.numa >= 0) text += fmt::format("\\nnuma {}", place.numa);
        out += fmt::format("      r{} [label=\"{}\"];\n", r, text);
      }
      out += "    }\n";
    }
    out += "  }\n";
  }
  // USR: the ring of partitions in XCD order. Two partitions share one link; one has none.
  for (const GpuInfo& gpu : topo.gpus) {
    const size_t p = gpu.ranks.size();
    const size_t edges = p < 2 ? 0 : p == 2 ? 1 : p;
    for (size_t i = 0; i < edges; ++i)
      out += fmt::format("  r{} -- r{} [{}];\n", gpu.ranks[i], gpu.ranks[(i + 1) % p],
                         edgeAttrs(topo, LinkTier::kIntraGpu));
  }
  // XGMI / NVLink: every pair of GPUs on a node (MI300X and MI355X platforms are fully
  // connected meshes; an NVSwitch node is all-to-all as well).
  for (size_t a = 0; a < topo.gpus.size(); ++a)
    for (size_t b = a + 1; b < topo.gpus.size(); ++b)
      if (topo.gpus[a].node == topo.gpus[b].node)
        out += fmt::format("  r{} -- r{} [ltail=cluster_gpu{}, lhead=cluster_gpu{}, {}];\n",
                           topo.gpus[a].ranks[0], topo.gpus[b].ranks[0], a, b,
                           edgeAttrs(topo, LinkTier::kInterGpu));
  // NET: every pair of nodes, drawn between the nodes' first GPUs.
  std::vector<int> firstRankOfNode(topo.nnodes, -1);
  for (const GpuInfo& gpu : topo.gpus)
    if (firstRankOfNode[gpu.node] < 0) firstRankOfNode[gpu.node] = gpu.ranks[0];
  for (int a = 0; a < topo.nnodes; ++a)
    for (int b = a + 1; b < topo.nnodes; ++b)
      out += fmt::format("  r{} -- r{} [ltail=cluster_node{}, lhead=cluster_node{}, {}];\n",
                         firstRankOfNode[a], firstRankOfNode[b], a, b,
                         edgeAttrs(topo, LinkTier::kNetwork));
  out += "}\n";
  return out;
}

}  // namespace ssc
