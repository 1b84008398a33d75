// SPDX-License-Identifier: MIT
#include "src/topology/topology_format.h"

#include <algorithm>

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
    case LinkTier::kIntraGpu: return {"#1f77b4", "solid", 2};
    case LinkTier::kInterGpu: return {"#d62728", "solid", 1};
    case LinkTier::kNetwork: break;
  }
  return {"#2ca02c", "dashed", 1};
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

std::string formatTopologyText(const Topology& topo, bool sources) {
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
    // What the tier joins, and whether this topology has any such pair of ranks at all.
    const bool used = tier == LinkTier::kIntraGpu ? topo.maxPartitions() > 1
                      : tier == LinkTier::kInterGpu
                          ? topo.gpus.size() > static_cast<size_t>(topo.nnodes)
                          : topo.nnodes > 1;
    const char* joins = tier == LinkTier::kIntraGpu   ? "partitions of a GPU"
                        : tier == LinkTier::kInterGpu ? "GPUs of a node"
                                                      : "nodes";
    // The provenance in a word ("estimate", "emulation file", ...): the rest with --sources.
    const std::string brief = spec.source.substr(0, spec.source.find(':'));
    out += fmt::format("  {:<4} {:>11} {:>8}  {:<20} {}\n", linkTierName(tier),
                       gbps(spec.bandwidthGBps), fmt::format("{:.3g} us", spec.latencyUs),
                       used ? joins : "(none here)", brief);
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
  if (sources) {
    out += "where the link figures come from:\n";
    for (LinkTier tier : {LinkTier::kIntraGpu, LinkTier::kInterGpu, LinkTier::kNetwork})
      out += fmt::format("  {:<4} {}\n", linkTierName(tier), topo.link(tier).source);
  }
  return out;
}

std::string formatTopologyDot(const Topology& topo) {
  // Drawn to stay legible at 64 ranks and more: each GPU is a cluster whose partitions sit in one
  // row joined by their USR ring; the XGMI mesh of a node with three or more GPUs is drawn as one
  // hub every GPU joins (a full mesh of 8 GPUs would be 28 crossing lines), the first half of the
  // GPUs in a row above it and the rest below; bandwidths and latencies are in the legend, not on
  // every edge. Every edge carries class="USR|XGMI|NET" (the tests read it back).
  std::string out = fmt::format("graph {} {{\n", dotQuote(topo.name));
  // compound=true lets XGMI and NET edges end at cluster borders (lhead/ltail): they join GPUs
  // and nodes, not particular partitions.
  out +=
      "  compound=true;\n  newrank=true;\n  nodesep=0.12;\n  ranksep=0.5;\n"
      "  fontname=\"Helvetica\";\n";
  out +=
      "  node [shape=box, style=\"rounded,filled\", fillcolor=\"#f2f2f2\", fontname=\"Helvetica\", "
      "fontsize=9, margin=\"0.05,0.02\", width=0.3, height=0.3];\n";
  out += "  edge [fontname=\"Helvetica\", fontsize=9];\n";
  out += fmt::format(
      "  label={};\n  labelloc=t;\n  fontsize=14;\n",
      dotQuote(fmt::format("{}: {}, {}, {}", topo.name, plural(topo.ranks.size(), "rank", "ranks"),
                           plural(topo.gpus.size(), "GPU", "GPUs"),
                           plural(static_cast<size_t>(topo.nnodes), "node", "nodes"))));
  auto gpusOfNode = [&](int node) {
    std::vector<size_t> out;
    for (size_t g = 0; g < topo.gpus.size(); ++g)
      if (topo.gpus[g].node == node) out.push_back(g);
    return out;
  };
  for (int node = 0; node < topo.nnodes; ++node) {
    const bool named =
        node < static_cast<int>(topo.nodeNames.size()) && !topo.nodeNames[node].empty();
    out += fmt::format(
        "  subgraph cluster_node{} {{\n    label={};\n    style=rounded;\n", node,
        dotQuote(fmt::format("node {}{}", node, named ? " (" + topo.nodeNames[node] + ")" : "")));
    // Declared top row first, in reverse: Graphviz then lays both rows out in index order from
    // the left (the invisible ordering edges below alone do not get it there).
    std::vector<size_t> declared = gpusOfNode(node);
    const size_t half = declared.size() >= 2 ? (declared.size() + 1) / 2 : declared.size();
    std::reverse(declared.begin(), declared.begin() + static_cast<std::ptrdiff_t>(half));
    for (size_t g : declared) {
      const GpuInfo& gpu = topo.gpus[g];
      std::string label = fmt::format("GPU {}", gpu.localIndex);
      if (!gpu.model.empty()) label += " " + gpu.model;
      if (!modes(gpu).empty()) label += " " + modes(gpu);
      out += fmt::format(
          "    subgraph cluster_gpu{} {{\n      label={};\n      style=filled;\n"
          "      fillcolor=\"#dbe9f6\";\n",
          g, dotQuote(label));
      for (int r : gpu.ranks) {
        const RankPlacement& place = topo.ranks[r];
        std::string text = fmt::format("r{}\\np{}", r, place.partition);
        if (place.numa >= 0) text += fmt::format("\\nm{}", place.numa);
        out += fmt::format("      r{} [label=\"{}\"];\n", r, text);
      }
      out += "    }\n";
    }
    if (gpusOfNode(node).size() >= 2)
      out += fmt::format(
          "    xgmi{} [label=\"{}\\nall-to-all\", shape=ellipse, style=filled, "
          "fillcolor=\"#fbe3e3\", color=\"{}\", fontcolor=\"{}\"];\n",
          node, linkTierName(LinkTier::kInterGpu), styleOf(LinkTier::kInterGpu).color,
          styleOf(LinkTier::kInterGpu).color);
    out += "  }\n";
  }
  auto attrs = [](LinkTier tier) {
    const TierStyle st = styleOf(tier);
    return fmt::format("class=\"{}\", color=\"{}\", style={}, penwidth={}", linkTierName(tier),
                       st.color, st.style, st.penwidth);
  };
  // USR: the ring of partitions in XCD order. Two partitions share one link; one has none.
  // The closing edge of a longer ring does not constrain the layout.
  for (const GpuInfo& gpu : topo.gpus) {
    const size_t p = gpu.ranks.size();
    const size_t edges = p < 2 ? 0 : p == 2 ? 1 : p;
    // Every edge written left to right (the closing one too): a cycle of flat edges would let
    // Graphviz reverse the row.
    for (size_t i = 0; i < edges; ++i)
      out += fmt::format("  r{} -- r{} [{}];\n", gpu.ranks[std::min(i, (i + 1) % p)],
                         gpu.ranks[std::max(i, (i + 1) % p)], attrs(LinkTier::kIntraGpu));
  }
  // XGMI / NVLink: every pair of GPUs on a node is linked (MI300X and MI355X platforms are fully
  // connected meshes; an NVSwitch node is all-to-all as well), drawn as a hub every GPU joins.
  for (int node = 0; node < topo.nnodes; ++node) {
    const std::vector<size_t> gpus = gpusOfNode(node);
    if (gpus.size() < 2) continue;
    for (size_t i = 0; i < gpus.size(); ++i) {
      const size_t g = gpus[i];
      const int r = topo.gpus[g].ranks[0];
      // The first half above the hub, the second below: two rows of GPUs, not one wide one.
      if (i < (gpus.size() + 1) / 2)
        out += fmt::format("  r{} -- xgmi{} [ltail=cluster_gpu{}, {}];\n", r, node, g,
                           attrs(LinkTier::kInterGpu));
      else
        out += fmt::format("  xgmi{} -- r{} [lhead=cluster_gpu{}, {}];\n", node, r, g,
                           attrs(LinkTier::kInterGpu));
    }
  }
  // Rows: the partitions of a GPU side by side (their ring drawn along them), the GPUs of a row
  // side by side in index order (an invisible flat edge puts its tail on the left). A node with
  // a hub has two rows of GPUs, above and below it; otherwise one.
  for (int node = 0; node < topo.nnodes; ++node) {
    const std::vector<size_t> gpus = gpusOfNode(node);
    const size_t half = gpus.size() >= 2 ? (gpus.size() + 1) / 2 : gpus.size();
    for (size_t first : {size_t{0}, half}) {
      const size_t last = first == 0 ? half : gpus.size();
      if (first >= last) continue;
      out += "  { rank=same;";
      for (size_t i = first; i < last; ++i)
        for (int r : topo.gpus[gpus[i]].ranks) out += fmt::format(" r{};", r);
      out += " }\n";
      for (size_t i = first; i + 1 < last; ++i)
        out += fmt::format("  r{} -- r{} [style=invis];\n", topo.gpus[gpus[i]].ranks.back(),
                           topo.gpus[gpus[i + 1]].ranks.front());
    }
  }
  // NET: every pair of nodes, drawn between the nodes' first GPUs.
  std::vector<int> firstRankOfNode(topo.nnodes, -1);
  for (const GpuInfo& gpu : topo.gpus)
    if (firstRankOfNode[gpu.node] < 0) firstRankOfNode[gpu.node] = gpu.ranks[0];
  for (int a = 0; a < topo.nnodes; ++a)
    for (int b = a + 1; b < topo.nnodes; ++b)
      out += fmt::format(
          "  r{} -- r{} [ltail=cluster_node{}, lhead=cluster_node{}, constraint=false, {}];\n",
          firstRankOfNode[a], firstRankOfNode[b], a, b, attrs(LinkTier::kNetwork));
  // The legend: what a box is, and each tier's colour, bandwidth and latency.
  std::string rows;
  rows +=
      "<TR><TD COLSPAN=\"3\" ALIGN=\"LEFT\"><B>Legend</B>: a box is one rank on one "
      "partition (rN = rank N, pM = partition M, mK = memory domain K)</TD></TR>";
  const struct {
    LinkTier tier;
    const char* what;
  } tiers[] = {
      {LinkTier::kIntraGpu, "within a GPU: ring of its partitions"},
      {LinkTier::kInterGpu, "between GPUs of a node: every pair linked"},
      {LinkTier::kNetwork, "between nodes"},
  };
  for (const auto& t : tiers) {
    const LinkSpec& spec = topo.link(t.tier);
    const TierStyle st = styleOf(t.tier);
    rows += fmt::format(
        "<TR><TD BGCOLOR=\"{}\"><FONT COLOR=\"white\"><B>{}</B></FONT></TD>"
        "<TD ALIGN=\"LEFT\">{}{}</TD><TD ALIGN=\"LEFT\">{} per link per direction, {:.3g} us"
        "</TD></TR>",
        st.color, linkTierName(t.tier), t.what,
        std::string(st.style) == "dashed" ? " (dashed)" : "", gbps(spec.bandwidthGBps),
        spec.latencyUs);
  }
  out += "  subgraph cluster_legend {\n    label=\"\";\n    style=invis;\n";
  out += fmt::format(
      "    legend [shape=plaintext, style=\"\", fontsize=10, label=<<TABLE BORDER=\"0\" "
      "CELLBORDER=\"1\" CELLSPACING=\"0\" CELLPADDING=\"4\">{}</TABLE>>];\n  }}\n",
      rows);
  // Below the drawing: one rank under the last partition.
  if (!topo.ranks.empty())
    out += fmt::format("  r{} -- legend [style=invis];\n", topo.ranks.size() - 1);
  out += "}\n";
  return out;
}

}  // namespace ssc
