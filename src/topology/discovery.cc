// SPDX-License-Identifier: MIT
// discoverLocal (one rank, this process) and buildTopology (all ranks' answers -> one graph).
// The providers themselves are provider_*.cc; this file decides how their answers combine.
#include "src/topology/discovery.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "src/core/errors.h"
#include "src/core/log.h"
#include "src/topology/link_defaults.h"
#include "src/topology/provider.h"

namespace ssc {
namespace {

// Fraction of a link's peak that collectives sustain; the same estimate the XGMI default uses
// (docs/topology-format.md, "Defaults"), applied to the peak rocm-smi reports.
constexpr double kXgmiUsableFraction = 0.75;

std::string readFirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
  return line;
}

// The memory domain (GPU-local) of a rank: the hardware partition index (the PCI function on
// AMD) spread over the domains the memory mode makes.
int rankMemoryDomain(const LocalRankInfo& info) {
  const int domains = memoryDomainsOf(std::string(fieldText(info.memoryPartition)));
  if (domains == 1) return 0;
  const int slots =
      hardwarePartitions(fieldText(info.computePartition), fieldText(info.deviceModel));
  if (slots <= 0 || info.pciFunction < 0 || info.pciFunction >= slots) return -1;
  return partitionMemoryDomain(info.pciFunction, slots, domains);
}

// How a rank's device is identified, in order of preference (see buildTopology).
struct GpuKey {
  int node;
  int kind;  // 0: PCI domain:bus:device, 1: UUID, 2: no device (one GPU per rank)
  int domain, bus, device;
  std::string uuid;
  int soleRank;  // kind 2 only
  auto operator<=>(const GpuKey&) const = default;
};

GpuKey keyOf(const LocalRankInfo& info, int node, int rank) {
  if (info.hasGpu && info.pciDomain >= 0)
    return {node, 0, info.pciDomain, info.pciBus, info.pciDevice, "", -1};
  if (info.hasGpu && !fieldText(info.gpuUuid).empty())
    return {node, 1, -1, -1, -1, std::string(fieldText(info.gpuUuid)), -1};
  return {node, 2, -1, -1, -1, "", rank};
}

void warnIfDiffers(int gpu, const char* what, std::string_view first, std::string_view other,
                   int rank) {
  if (first != other)
    SSC_LOG(kWarn, "topology: GPU {} ranks disagree on {}: '{}' vs '{}' (rank {}); using the first",
            gpu, what, first, other, rank);
}

LinkSpec interGpuSpec(const std::vector<LocalRankInfo>& all, const std::string& model,
                      int partitions) {
  // rocm-smi's figure is used only when every GPU rank reported one: a partial answer would
  // describe some links and silently stand for the others.
  double slowest = 0;
  for (const auto& info : all) {
    if (!info.hasGpu) continue;
    if (fieldText(info.interGpuLink) != "XGMI" || !(info.xgmiPeakGBps > 0)) {
      slowest = 0;
      break;
    }
    slowest = slowest == 0 ? info.xgmiPeakGBps : std::min(slowest, info.xgmiPeakGBps);
  }
  LinkSpec spec = defaultLinkSpec(model, LinkTier::kInterGpu, partitions);
  if (slowest > 0) {
    spec.bandwidthGBps = slowest * kXgmiUsableFraction;
    spec.source = fmt::format(
        "rocm-smi: {:.3g} GB/s peak on the slowest one-hop XGMI link, "
        "~{:.0f}% usable (estimate); latency estimate",
        slowest, kXgmiUsableFraction * 100);
  }
  return spec;
}

}  // namespace

bool parsePciBusId(std::string_view text, int* domain, int* bus, int* device, int* function) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  // Hex fields separated by ':' ':' '.', each within its PCI width.
  auto hexField = [&](char end, int maxDigits, unsigned long limit, unsigned long* value) {
    size_t n = 0;
    *value = 0;
    while (n < text.size() && std::isxdigit(static_cast<unsigned char>(text[n]))) {
      const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(text[n])));
      *value = *value * 16 + static_cast<unsigned long>(c <= '9' ? c - '0' : c - 'a' + 10);
      if (++n > static_cast<size_t>(maxDigits)) return false;
    }
    if (n == 0 || *value > limit) return false;
    if (end != '\0') {
      if (n >= text.size() || text[n] != end) return false;
      ++n;
    } else if (n != text.size()) {
      return false;
    }
    text.remove_prefix(n);
    return true;
  };
  unsigned long d = 0, b = 0, dev = 0, fn = 0;
  // With a domain there are two ':' before the '.'; without, one ("0c:00.3", domain 0).
  const bool hasDomain = std::count(text.begin(), text.end(), ':') == 2;
  if (hasDomain && !hexField(':', 8, 0xffffffffUL, &d)) return false;
  if (!hexField(':', 2, 0xff, &b) || !hexField('.', 2, 0x1f, &dev) || !hexField('\0', 1, 7, &fn))
    return false;
  // The domain is kept as an int: a 32-bit domain (NVML's 8 digits, VMD bridges) above
  // INT_MAX is not a device we can address anyway.
  if (d > 0x7fffffffUL) return false;
  *domain = static_cast<int>(d), *bus = static_cast<int>(b), *device = static_cast<int>(dev),
  *function = static_cast<int>(fn);
  return true;
}

sscResult_t discoverLocal(const GpuRuntimeInfo* gpu, LocalRankInfo* out) {
  return discoverLocal(gpu, DiscoveryOptions{}, out);
}

sscResult_t discoverLocal(const GpuRuntimeInfo* gpu, const DiscoveryOptions& options,
                          LocalRankInfo* out) {
  if (out == nullptr) return fail(sscInvalidArgument, "discoverLocal: out is null");
  try {
    LocalRankInfo info{};
    info.version = kLocalRankInfoVersion;
    info.size = sizeof(LocalRankInfo);
    info.pciDomain = info.pciBus = info.pciDevice = info.pciFunction = -1;
    info.hostNuma = -1;
    char host[sizeof(info.hostname)] = {};
    if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
    setField(info.hostname, fieldText(host));
    setField(info.bootId, readFirstLine(options.procRoot + "/sys/kernel/random/boot_id"));

    if (gpu != nullptr) {
      info.hasGpu = 1;
      setField(info.gpuUuid, fieldText(gpu->uuid));
      int d = 0, b = 0, dev = 0, fn = 0;
      if (parsePciBusId(fieldText(gpu->pciBusId), &d, &b, &dev, &fn)) {
        info.pciDomain = d, info.pciBus = b, info.pciDevice = dev, info.pciFunction = fn;
        setField(info.pciBusId, fmt::format("{:04x}:{:02x}:{:02x}.{:x}", d, b, dev, fn));
      } else if (!fieldText(gpu->pciBusId).empty()) {
        SSC_LOG(kWarn, "topology: GPU PCI bus id '{}' does not parse; grouping by UUID",
                fieldText(gpu->pciBusId));
      }
      info.computeUnits = gpu->computeUnits;
      setField(info.deviceName, fieldText(gpu->name));
      setField(info.deviceModel, normalizeGpuModel(fieldText(gpu->name)));
    }

    const bool enabled[] = {options.useSysfs, options.useRocmSmi, options.useHwloc};
    const TopologyProvider* providers[] = {&sysfsProvider(), &rocmSmiProvider(), &hwlocProvider()};
    std::string used;
    for (size_t i = 0; i < std::size(providers); ++i) {
      if (!enabled[i] || !providers[i]->builtIn) continue;
      if (providers[i]->contribute(options, &info))
        used += (used.empty() ? "" : ",") + std::string(providers[i]->name);
    }
    setField(info.providers, used);
    const std::string device =
        info.hasGpu
            ? fmt::format("{} at {} ({}/{})", fieldText(info.deviceName), fieldText(info.pciBusId),
                          fieldText(info.computePartition), fieldText(info.memoryPartition))
            : std::string("no GPU");
    SSC_LOG(kInfo, "topology: local host {} boot {}: {}, host numa {} (providers: {})",
            fieldText(info.hostname), fieldText(info.bootId), device, info.hostNuma,
            used.empty() ? "none" : used);
    *out = info;
    return sscSuccess;
  } catch (const std::exception& e) {
    return SSC_INTERNAL("topology discovery failed: {}", e.what());
  } catch (...) {
    return SSC_INTERNAL("topology discovery failed");
  }
}

sscResult_t buildTopology(const std::vector<LocalRankInfo>& all, Topology* out) {
  if (out == nullptr) return fail(sscInvalidArgument, "buildTopology: out is null");
  if (all.empty()) return fail(sscInvalidArgument, "buildTopology: no ranks");
  for (size_t r = 0; r < all.size(); ++r)
    if (all[r].version != kLocalRankInfoVersion || all[r].size != sizeof(LocalRankInfo))
      return fail(sscInvalidUsage,
                  "buildTopology: rank {} sent topology info of version {} size {}, this build "
                  "expects version {} size {}: all ranks must run the same Starscream build",
                  r, all[r].version, all[r].size, kLocalRankInfoVersion, sizeof(LocalRankInfo));
  try {
    const int nranks = static_cast<int>(all.size());
    Topology topo;
    topo.name = "discovered";

    // Nodes: distinct (hostname, boot id), numbered in order of their lowest rank.
    std::map<std::pair<std::string, std::string>, int> nodeOf;
    std::vector<int> rankNode(nranks);
    for (int r = 0; r < nranks; ++r) {
      auto key = std::make_pair(std::string(fieldText(all[r].hostname)),
                                std::string(fieldText(all[r].bootId)));
      auto [it, added] = nodeOf.emplace(key, static_cast<int>(topo.nodeNames.size()));
      if (added) topo.nodeNames.push_back(key.first);
      rankNode[r] = it->second;
    }
    topo.nnodes = static_cast<int>(topo.nodeNames.size());

    // GPUs: ranks grouped by device identity, then numbered node-major, by PCI address within
    // a node (rocm-smi's and nvidia-smi's order), by lowest rank where there is no PCI id.
    std::map<GpuKey, std::vector<int>> groups;
    for (int r = 0; r < nranks; ++r) groups[keyOf(all[r], rankNode[r], r)].push_back(r);
    std::vector<std::pair<const GpuKey*, std::vector<int>*>> order;
    for (auto& [key, ranks] : groups) order.emplace_back(&key, &ranks);
    std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
      const GpuKey& x = *a.first;
      const GpuKey& y = *b.first;
      return std::tie(x.node, x.kind, x.domain, x.bus, x.device, a.second->front()) <
             std::tie(y.node, y.kind, y.domain, y.bus, y.device, b.second->front());
    });

    topo.ranks.resize(nranks);
    std::vector<int> localCount(topo.nnodes, 0);
    for (auto& [key, ranksPtr] : order) {
      std::vector<int>& ranks = *ranksPtr;
      // Partitions along the XCD ring: AMD numbers a GPU's partitions (XCDs in CPX) in the PCI
      // function, and its XCD numbering is the ring order; MPS clients share function 0 and
      // fall back to rank order.
      std::stable_sort(ranks.begin(), ranks.end(), [&](int a, int b) {
        return std::max(all[a].pciFunction, 0) < std::max(all[b].pciFunction, 0);
      });
      const int g = static_cast<int>(topo.gpus.size());
      const LocalRankInfo& first = all[ranks.front()];
      GpuInfo gpu;
      gpu.node = key->node;
      gpu.localIndex = localCount[key->node]++;
      gpu.model = std::string(fieldText(first.deviceModel));
      gpu.uuid = std::string(fieldText(first.gpuUuid));
      if (key->kind == 0)
        gpu.pciBusId = fmt::format("{:04x}:{:02x}:{:02x}", key->domain, key->bus, key->device);
      gpu.computePartition = std::string(fieldText(first.computePartition));
      gpu.memoryPartition = std::string(fieldText(first.memoryPartition));
      gpu.hostNuma = first.hostNuma;
      gpu.computeUnits = first.computeUnits;
      gpu.ranks = ranks;
      for (size_t p = 0; p < ranks.size(); ++p) {
        const LocalRankInfo& info = all[ranks[p]];
        warnIfDiffers(g, "model", gpu.model, fieldText(info.deviceModel), ranks[p]);
        warnIfDiffers(g, "compute partition", gpu.computePartition,
                      fieldText(info.computePartition), ranks[p]);
        warnIfDiffers(g, "memory partition", gpu.memoryPartition, fieldText(info.memoryPartition),
                      ranks[p]);
        if (p > 0 && info.pciFunction >= 0 && info.pciFunction == all[ranks[p - 1]].pciFunction &&
            hardwarePartitions(gpu.computePartition, gpu.model) > 1)
          SSC_LOG(kInfo, "topology: ranks {} and {} share partition {} of GPU {}", ranks[p - 1],
                  ranks[p], info.pciFunction, g);
        topo.ranks[ranks[p]] =
            RankPlacement{gpu.node, g, static_cast<int>(p), rankMemoryDomain(info)};
      }
      topo.gpus.push_back(std::move(gpu));
    }

    const std::string& model = topo.gpus.front().model;
    const int partitions = topo.maxPartitions();
    topo.intraGpu = defaultLinkSpec(model, LinkTier::kIntraGpu, partitions);
    topo.interGpu = interGpuSpec(all, model, partitions);
    topo.network = defaultLinkSpec(model, LinkTier::kNetwork, partitions);
    SSC_CHECK(checkTopology(topo));
    *out = std::move(topo);
    return sscSuccess;
  } catch (const std::exception& e) {
    return SSC_INTERNAL("buildTopology failed: {}", e.what());
  } catch (...) {
    return SSC_INTERNAL("buildTopology failed");
  }
}

}  // namespace ssc
