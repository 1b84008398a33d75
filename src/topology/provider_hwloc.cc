// SPDX-License-Identifier: MIT
// The hwloc provider: the host NUMA node of the rank's GPU (through the PCI tree), or of the
// rank itself when it has no GPU (host backend: where its shared-memory buffers should live);
// and the machine summary starscream-topo prints. Built when CMake finds hwloc (SSC_HAVE_HWLOC).
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "src/core/log.h"
#include "src/topology/provider.h"

#if SSC_HAVE_HWLOC
#include <hwloc.h>
#endif

namespace ssc {
namespace {

#if SSC_HAVE_HWLOC
// A loaded hwloc topology, destroyed on scope exit.
struct HwlocTopology {
  hwloc_topology_t topo = nullptr;
  bool loaded = false;
  explicit HwlocTopology(bool withIo) {
    if (hwloc_topology_init(&topo) != 0) {
      topo = nullptr;
      return;
    }
    // PCI objects are off by default in hwloc 2; "important" keeps GPUs, NICs and their bridges.
    if (withIo) hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    loaded = hwloc_topology_load(topo) == 0;
    if (!loaded) SSC_LOG(kInfo, "hwloc provider: hwloc_topology_load failed");
  }
  ~HwlocTopology() {
    if (topo != nullptr) hwloc_topology_destroy(topo);
  }
  HwlocTopology(const HwlocTopology&) = delete;
  HwlocTopology& operator=(const HwlocTopology&) = delete;
};

// The one NUMA node whose CPUs are the closest to obj, or -1 when hwloc attaches obj above
// several (a device on a package with NPS4 memory, say): naming one of them would be a guess.
int singleNumaNode(hwloc_topology_t topo, hwloc_obj_t obj) {
  hwloc_obj_t parent = hwloc_get_non_io_ancestor_obj(topo, obj);
  if (parent == nullptr || parent->nodeset == nullptr || hwloc_bitmap_weight(parent->nodeset) != 1)
    return -1;
  return hwloc_bitmap_first(parent->nodeset);
}

// The NUMA node the rank is bound to, -1 when it may run on CPUs of several.
int boundNumaNode(hwloc_topology_t topo) {
  hwloc_bitmap_t cpus = hwloc_bitmap_alloc(), nodes = hwloc_bitmap_alloc();
  int node = -1;
  if (cpus != nullptr && nodes != nullptr &&
      hwloc_get_cpubind(topo, cpus, HWLOC_CPUBIND_PROCESS) == 0) {
    hwloc_cpuset_to_nodeset(topo, cpus, nodes);
    if (hwloc_bitmap_weight(nodes) == 1) node = hwloc_bitmap_first(nodes);
  }
  hwloc_bitmap_free(cpus);
  hwloc_bitmap_free(nodes);
  return node;
}
#endif  // SSC_HAVE_HWLOC

bool contributeHwloc(const DiscoveryOptions& /*options*/, LocalRankInfo* info) {
#if !SSC_HAVE_HWLOC
  (void)info;
  return false;
#else
  if (info->hostNuma >= 0) return false;  // sysfs or rocm-smi answered already: skip the load
  const bool device = info->hasGpu != 0 && info->pciDomain >= 0;
  HwlocTopology h(device);
  if (!h.loaded) return false;
  if (!device) {
    info->hostNuma = boundNumaNode(h.topo);
    return info->hostNuma >= 0;
  }
  hwloc_obj_t pci = hwloc_get_pcidev_by_busid(h.topo, info->pciDomain, info->pciBus,
                                              info->pciDevice, info->pciFunction);
  // Partitions are numbered in the function field without being PCI functions: use .0.
  if (pci == nullptr)
    pci = hwloc_get_pcidev_by_busid(h.topo, info->pciDomain, info->pciBus, info->pciDevice, 0);
  if (pci == nullptr) return false;
  info->hostNuma = singleNumaNode(h.topo, pci);
  return info->hostNuma >= 0;
#endif
}

}  // namespace

bool hwlocMachineSummary(MachineSummary* out) {
  *out = MachineSummary{};
#if !SSC_HAVE_HWLOC
  return false;
#else
  HwlocTopology h(true);
  if (!h.loaded) return false;
  out->packages = hwloc_get_nbobjs_by_type(h.topo, HWLOC_OBJ_PACKAGE);
  out->numaNodes = hwloc_get_nbobjs_by_type(h.topo, HWLOC_OBJ_NUMANODE);
  out->cores = hwloc_get_nbobjs_by_type(h.topo, HWLOC_OBJ_CORE);
  out->pus = hwloc_get_nbobjs_by_type(h.topo, HWLOC_OBJ_PU);
  for (hwloc_obj_t pci = hwloc_get_next_pcidev(h.topo, nullptr); pci != nullptr;
       pci = hwloc_get_next_pcidev(h.topo, pci)) {
    const auto& attr = pci->attr->pcidev;
    const unsigned base = attr.class_id >> 8;
    // 0x03 display (GPUs), 0x12 processing accelerator (Instinct, H200 SXM); 0x0200 Ethernet,
    // 0x0207 InfiniBand.
    const char* kind = (base == 0x03 || base == 0x12)                         ? "GPU"
                       : (attr.class_id == 0x0200 || attr.class_id == 0x0207) ? "NIC"
                                                                              : nullptr;
    if (kind == nullptr) continue;
    out->devices.push_back(
        {fmt::format("{:04x}:{:02x}:{:02x}.{:x}", attr.domain, attr.bus, attr.dev, attr.func), kind,
         attr.vendor_id, attr.device_id, singleNumaNode(h.topo, pci)});
  }
  unsigned nr = 1;
  hwloc_distances_s* dist = nullptr;
  if (hwloc_distances_get_by_type(h.topo, HWLOC_OBJ_NUMANODE, &nr, &dist,
                                  HWLOC_DISTANCES_KIND_MEANS_LATENCY, 0) == 0 &&
      nr == 1 && dist != nullptr) {
    out->numaDistances.assign(dist->nbobjs, std::vector<uint64_t>(dist->nbobjs));
    for (unsigned i = 0; i < dist->nbobjs; ++i)
      for (unsigned j = 0; j < dist->nbobjs; ++j)
        out->numaDistances[i][j] = dist->values[i * dist->nbobjs + j];
    hwloc_distances_release(h.topo, dist);
  }
  return true;
#endif
}

std::string formatMachineSummary(const MachineSummary& s) {
  auto count = [](int n, const char* what) {
    return fmt::format("{} {}{}", n, what, n == 1 ? "" : "s");
  };
  std::string out =
      fmt::format("machine (hwloc): {}, {}, {}, {}\n", count(s.packages, "package"),
                  count(s.numaNodes, "NUMA node"), count(s.cores, "core"), count(s.pus, "PU"));
  for (const auto& d : s.devices)
    out += fmt::format("  {} {} [{:04x}:{:04x}] numa {}\n", d.kind, d.busId, d.vendor, d.device,
                       d.numaNode >= 0 ? fmt::format("{}", d.numaNode) : "?");
  if (!s.numaDistances.empty()) {
    out += "  NUMA distances:";
    for (const auto& row : s.numaDistances) out += fmt::format(" [{}]", fmt::join(row, " "));
    out += "\n";
  }
  return out;
}

const TopologyProvider& hwlocProvider() {
#if SSC_HAVE_HWLOC
  static const TopologyProvider provider{"hwloc", true, contributeHwloc};
#else
  static const TopologyProvider provider{"hwloc", false, contributeHwloc};
#endif
  return provider;
}

}  // namespace ssc
