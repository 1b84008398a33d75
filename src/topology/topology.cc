// SPDX-License-Identifier: MIT
// Graph helpers, the built-in shapes, the invariant check, and the JSON writer. The JSON reader
// (the emulation file format) is topology_file.cc; both follow docs/topology-format.md.
#include "src/topology/topology.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "src/core/errors.h"
#include "src/topology/link_defaults.h"

namespace ssc {

const char* linkTierName(LinkTier tier) {
  switch (tier) {
    case LinkTier::kIntraGpu: return "USR";
    case LinkTier::kInterGpu: return "XGMI";
    case LinkTier::kNetwork: return "NET";
  }
  return "?";
}

bool Topology::uniformPartitions() const {
  for (const auto& gpu : gpus)
    if (gpu.ranks.size() != gpus.front().ranks.size()) return false;
  return true;
}

int Topology::maxPartitions() const {
  size_t most = 0;
  for (const auto& gpu : gpus) most = std::max(most, gpu.ranks.size());
  return static_cast<int>(most);
}

LinkTier Topology::tierBetween(int a, int b) const {
  if (ranks[a].gpu == ranks[b].gpu) return LinkTier::kIntraGpu;
  if (ranks[a].node == ranks[b].node) return LinkTier::kInterGpu;
  return LinkTier::kNetwork;
}

const LinkSpec& Topology::link(LinkTier tier) const {
  switch (tier) {
    case LinkTier::kIntraGpu: return intraGpu;
    case LinkTier::kInterGpu: return interGpu;
    case LinkTier::kNetwork: break;
  }
  return network;
}

int hardwarePartitions(std::string_view mode, std::string_view model) {
  if (mode == "SPX") return 1;
  if (mode == "DPX") return 2;
  if (mode == "TPX") return 3;
  if (mode == "QPX") return 4;
  if (mode == "CPX") {
    if (model == "MI300X" || model == "MI325X" || model == "MI355X" || model == "MI350X") return 8;
    if (model == "MI300A") return 6;
  }
  return 0;
}

bool ranksShareComputeUnits(const Topology& topo) {
  for (const GpuInfo& g : topo.gpus)
    if (static_cast<int>(g.ranks.size()) >
        std::max(1, hardwarePartitions(g.computePartition, g.model)))
      return true;
  return false;
}

int memoryDomainsOf(const std::string& memoryPartition) {
  if (memoryPartition.size() < 4 || memoryPartition.compare(0, 3, "NPS") != 0) return 0;
  int domains = 0;
  for (size_t i = 3; i < memoryPartition.size(); ++i) {
    const char c = memoryPartition[i];
    if (c < '0' || c > '9' || domains > 1000) return 0;
    domains = domains * 10 + (c - '0');
  }
  return domains;
}

int partitionMemoryDomain(int partition, int partitions, int domains) {
  if (domains <= 0 || partitions <= 0 || domains > partitions || partition < 0 ||
      partition >= partitions)
    return -1;
  return partition * domains / partitions;
}

Topology makeUniformTopology(int nnodes, int gpusPerNode, int partitionsPerGpu) {
  Topology topo;
  nnodes = std::max(nnodes, 0);
  gpusPerNode = std::max(gpusPerNode, 0);
  partitionsPerGpu = std::max(partitionsPerGpu, 0);
  topo.name = fmt::format("uniform-{}x{}x{}", nnodes, gpusPerNode, partitionsPerGpu);
  topo.nnodes = nnodes;
  for (int node = 0; node < nnodes; ++node) {
    for (int local = 0; local < gpusPerNode; ++local) {
      GpuInfo gpu;
      gpu.node = node;
      gpu.localIndex = local;
      const int g = static_cast<int>(topo.gpus.size());
      for (int p = 0; p < partitionsPerGpu; ++p) {
        gpu.ranks.push_back(topo.nranks());
        topo.ranks.push_back(RankPlacement{node, g, p, -1});
      }
      topo.gpus.push_back(std::move(gpu));
    }
  }
  topo.intraGpu = defaultLinkSpec("", LinkTier::kIntraGpu, partitionsPerGpu);
  topo.interGpu = defaultLinkSpec("", LinkTier::kInterGpu, partitionsPerGpu);
  topo.network = defaultLinkSpec("", LinkTier::kNetwork, partitionsPerGpu);
  return topo;
}

Topology makeFlatTopology(int nranks) {
  Topology topo = makeUniformTopology(1, nranks, 1);
  topo.name = "flat";
  return topo;
}

sscResult_t checkTopology(const Topology& topo) {
  auto bad = [&](const std::string& what) {
    return fail(sscInvalidArgument, "topology '{}' is inconsistent: {}", topo.name, what);
  };
  if (topo.ranks.empty()) return bad("it has no ranks");
  if (topo.nnodes < 1) return bad(fmt::format("nnodes is {}", topo.nnodes));
  if (!topo.nodeNames.empty() && static_cast<int>(topo.nodeNames.size()) != topo.nnodes)
    return bad(fmt::format("{} node names for {} nodes", topo.nodeNames.size(), topo.nnodes));
  const int ngpus = static_cast<int>(topo.gpus.size());
  // GPUs are numbered node-major, local indices 0..n-1 on each node, and no node is empty: the
  // file format numbers them the same way, so a topology survives a JSON round trip unchanged.
  int expectNode = 0, expectLocal = 0;
  for (int g = 0; g < ngpus; ++g) {
    const GpuInfo& gpu = topo.gpus[g];
    if (gpu.node == expectNode + 1 && expectLocal > 0) ++expectNode, expectLocal = 0;
    if (gpu.node != expectNode || gpu.localIndex != expectLocal)
      return bad(fmt::format("gpu {} is (node {}, local {}), expected (node {}, local {})", g,
                             gpu.node, gpu.localIndex, expectNode, expectLocal));
    ++expectLocal;
    if (gpu.ranks.empty()) return bad(fmt::format("gpu {} has no partitions", g));
    for (int p = 0; p < static_cast<int>(gpu.ranks.size()); ++p) {
      const int r = gpu.ranks[p];
      if (r < 0 || r >= topo.nranks())
        return bad(fmt::format("gpu {} partition {} is rank {} of {}", g, p, r, topo.nranks()));
      const RankPlacement& place = topo.ranks[r];
      if (place.gpu != g || place.partition != p || place.node != gpu.node)
        return bad(
            fmt::format("gpu {} lists rank {} as partition {} on node {}, but the rank says "
                        "gpu {} partition {} node {}",
                        g, r, p, gpu.node, place.gpu, place.partition, place.node));
    }
  }
  if (ngpus == 0 || expectNode != topo.nnodes - 1)
    return bad(fmt::format("{} nodes declared, GPUs found on {}", topo.nnodes,
                           ngpus == 0 ? 0 : expectNode + 1));
  // Every rank sits on a GPU that lists it (the loop above checked the converse).
  for (int r = 0; r < topo.nranks(); ++r) {
    const RankPlacement& place = topo.ranks[r];
    if (place.gpu < 0 || place.gpu >= ngpus || place.partition < 0 ||
        place.partition >= static_cast<int>(topo.gpus[place.gpu].ranks.size()) ||
        topo.gpus[place.gpu].ranks[place.partition] != r)
      return bad(fmt::format("rank {} claims gpu {} partition {}, which does not list it", r,
                             place.gpu, place.partition));
  }
  for (LinkTier tier : {LinkTier::kIntraGpu, LinkTier::kInterGpu, LinkTier::kNetwork})
    if (!(topo.link(tier).bandwidthGBps > 0) || !(topo.link(tier).latencyUs >= 0))
      return bad(fmt::format("{} link has bandwidth {} GB/s, latency {} us", linkTierName(tier),
                             topo.link(tier).bandwidthGBps, topo.link(tier).latencyUs));
  return sscSuccess;
}

// ---- JSON writer -------------------------------------------------------------------------

namespace {

using OJson = nlohmann::ordered_json;

// Scalars never throw: invalid UTF-8 (a GPU layer handing over junk bytes) is replaced.
std::string scalarText(const OJson& j) {
  return j.dump(-1, ' ', false, OJson::error_handler_t::replace);
}

bool isScalar(const OJson& j) { return !j.is_array() && !j.is_object(); }

bool isFlat(const OJson& j) {
  if (isScalar(j)) return true;
  return std::all_of(j.begin(), j.end(), [](const OJson& e) { return isScalar(e); });
}

// Like dump(2), except that arrays and objects of scalars stay on one line: a 128-rank
// placement is 128 lines of "[node, gpu, partition, numa]", not 768 lines of numbers.
void writePretty(const OJson& j, int indent, std::string* out) {
  if (isFlat(j)) {
    if (isScalar(j)) {
      *out += scalarText(j);
      return;
    }
    *out += j.is_array() ? "[" : "{";
    bool first = true;
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (!first) *out += ", ";
      first = false;
      if (j.is_object()) *out += scalarText(OJson(it.key())) + ": ";
      *out += scalarText(*it);
    }
    *out += j.is_array() ? "]" : "}";
    return;
  }
  const std::string pad(indent + 2, ' ');
  *out += j.is_array() ? "[\n" : "{\n";
  bool first = true;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!first) *out += ",\n";
    first = false;
    *out += pad;
    if (j.is_object()) *out += scalarText(OJson(it.key())) + ": ";
    writePretty(*it, indent + 2, out);
  }
  *out += "\n" + std::string(indent, ' ') + (j.is_array() ? "]" : "}");
}

OJson linkJson(const LinkSpec& spec) {
  OJson j;
  j["bandwidth_gbps"] = spec.bandwidthGBps;
  j["latency_us"] = spec.latencyUs;
  if (!spec.source.empty()) j["source"] = spec.source;
  return j;
}

// A per-GPU value for the whole file when every GPU agrees, so that the common (uniform) case
// prints as one key and not as a "gpus" list.
template <typename Get>
bool allGpusAgree(const Topology& topo, Get get) {
  return std::all_of(topo.gpus.begin(), topo.gpus.end(),
                     [&](const GpuInfo& g) { return get(g) == get(topo.gpus.front()); });
}

}  // namespace

std::string topologyToJson(const Topology& topo) {
  OJson j;
  j["format"] = "starscream-topology/1";
  j["name"] = topo.name;
  j["nodes"] = topo.nnodes;

  std::vector<int> gpusPerNode(std::max(topo.nnodes, 0), 0);
  for (const auto& gpu : topo.gpus)
    if (gpu.node >= 0 && gpu.node < topo.nnodes) ++gpusPerNode[gpu.node];
  const bool evenNodes = std::all_of(gpusPerNode.begin(), gpusPerNode.end(),
                                     [&](int n) { return n == gpusPerNode.front(); });
  j["gpus_per_node"] =
      evenNodes && !gpusPerNode.empty() ? OJson(gpusPerNode.front()) : OJson(gpusPerNode);

  std::vector<int> partitions;
  for (const auto& gpu : topo.gpus) partitions.push_back(static_cast<int>(gpu.ranks.size()));
  j["partitions_per_gpu"] = topo.uniformPartitions() && !partitions.empty()
                                ? OJson(partitions.front())
                                : OJson(partitions);

  const bool sameModel = allGpusAgree(topo, [](const GpuInfo& g) { return g.model; });
  const bool sameCompute = allGpusAgree(topo, [](const GpuInfo& g) { return g.computePartition; });
  const bool sameMemory = allGpusAgree(topo, [](const GpuInfo& g) { return g.memoryPartition; });
  if (!topo.gpus.empty()) {
    if (sameModel && !topo.gpus[0].model.empty()) j["gpu_model"] = topo.gpus[0].model;
    if (sameCompute && !topo.gpus[0].computePartition.empty())
      j["compute_partition"] = topo.gpus[0].computePartition;
    if (sameMemory && !topo.gpus[0].memoryPartition.empty())
      j["memory_partition"] = topo.gpus[0].memoryPartition;
  }

  OJson placement = OJson::array();
  for (const auto& place : topo.ranks) {
    const int local = place.gpu >= 0 && place.gpu < static_cast<int>(topo.gpus.size())
                          ? topo.gpus[place.gpu].localIndex
                          : place.gpu;
    placement.push_back(OJson::array({place.node, local, place.partition, place.numa}));
  }
  j["placement"] = std::move(placement);

  j["links"]["usr"] = linkJson(topo.intraGpu);
  j["links"]["xgmi"] = linkJson(topo.interGpu);
  j["links"]["net"] = linkJson(topo.network);

  // Per-GPU details only when there is something per-GPU to say (discovered machines).
  const bool perGpu =
      !sameModel || !sameCompute || !sameMemory ||
      std::any_of(topo.gpus.begin(), topo.gpus.end(), [](const GpuInfo& g) {
        return !g.uuid.empty() || !g.pciBusId.empty() || g.hostNuma >= 0 || g.computeUnits > 0;
      });
  if (perGpu) {
    OJson gpus = OJson::array();
    for (const auto& gpu : topo.gpus) {
      OJson g;
      g["model"] = gpu.model;
      g["uuid"] = gpu.uuid;
      g["pci_bus_id"] = gpu.pciBusId;
      g["compute_partition"] = gpu.computePartition;
      g["memory_partition"] = gpu.memoryPartition;
      g["host_numa"] = gpu.hostNuma;
      g["compute_units"] = gpu.computeUnits;
      gpus.push_back(std::move(g));
    }
    j["gpus"] = std::move(gpus);
  }
  if (!topo.nodeNames.empty()) j["node_names"] = topo.nodeNames;

  std::string out;
  writePretty(j, 0, &out);
  out += "\n";
  return out;
}

}  // namespace ssc
