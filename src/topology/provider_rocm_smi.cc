// SPDX-License-Identifier: MIT
// The rocm-smi provider: XGMI link type, hops and peak bandwidth between AMD GPUs, the NUMA
// node of each, and partition modes where the installed rocm-smi has the calls (ROCm >= 6;
// Debian's 5.2 has none, the sysfs provider covers that case).
//
// librocm_smi64 is loaded with dlopen rather than linked: a library built on a machine with
// rocm-smi must still load on one without it (the H200 host runs what we build here). The
// header, when present at build time, gives the function types (SSC_HAVE_ROCM_SMI), and CMake
// checks whether it declares the partition calls (SSC_HAVE_RSMI_PARTITION).
#include <filesystem>
#include <mutex>
#include <set>
#include <tuple>

#include "src/core/log.h"
#include "src/topology/provider.h"

#if SSC_HAVE_ROCM_SMI
#include <dlfcn.h>
#include <rocm_smi/rocm_smi.h>
#endif

namespace ssc {
namespace {

constexpr int kLinkPcie = 1;  // RSMI_IOLINK_TYPE_PCIEXPRESS
constexpr int kLinkXgmi = 2;  // RSMI_IOLINK_TYPE_XGMI

// domain:bus:device of a BDFID, the identity of a physical GPU. ROCm 6 puts the partition id
// in bits 28-31 and the function in bits 0-2: both are dropped.
std::tuple<int, int, int> physicalGpu(uint64_t bdfid) {
  return {static_cast<int>((bdfid >> 32) & 0xffffffffu), static_cast<int>((bdfid >> 8) & 0xff),
          static_cast<int>((bdfid >> 3) & 0x1f)};
}

#if SSC_HAVE_ROCM_SMI
// The calls used, resolved once. The handle is never closed: rocm-smi keeps state (and may
// keep threads) after rsmi_shut_down, and unloading under it is not worth the risk.
struct RocmSmiLibrary {
  decltype(&rsmi_init) init = nullptr;
  decltype(&rsmi_shut_down) shutDown = nullptr;
  decltype(&rsmi_num_monitor_devices) numDevices = nullptr;
  decltype(&rsmi_dev_pci_id_get) pciId = nullptr;
  decltype(&rsmi_topo_numa_affinity_get) numa = nullptr;
  decltype(&rsmi_topo_get_link_type) linkType = nullptr;
  decltype(&rsmi_topo_get_link_weight) linkWeight = nullptr;
  decltype(&rsmi_minmax_bandwidth_get) bandwidth = nullptr;
#if SSC_HAVE_RSMI_PARTITION
  decltype(&rsmi_dev_compute_partition_get) computePartition = nullptr;
  decltype(&rsmi_dev_memory_partition_get) memoryPartition = nullptr;
#endif
  bool ok = false;
};

template <typename F>
void resolve(void* handle, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(handle, name));
}

const RocmSmiLibrary& library() {
  static const RocmSmiLibrary lib = [] {
    RocmSmiLibrary l;
    void* handle = dlopen("librocm_smi64.so.1", RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) handle = dlopen("librocm_smi64.so", RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      SSC_LOG(kInfo, "rocm-smi provider: librocm_smi64 not loadable ({})", dlerror());
      return l;
    }
    resolve(handle, "rsmi_init", &l.init);
    resolve(handle, "rsmi_shut_down", &l.shutDown);
    resolve(handle, "rsmi_num_monitor_devices", &l.numDevices);
    resolve(handle, "rsmi_dev_pci_id_get", &l.pciId);
    resolve(handle, "rsmi_topo_numa_affinity_get", &l.numa);
    resolve(handle, "rsmi_topo_get_link_type", &l.linkType);
    resolve(handle, "rsmi_topo_get_link_weight", &l.linkWeight);
    resolve(handle, "rsmi_minmax_bandwidth_get", &l.bandwidth);
#if SSC_HAVE_RSMI_PARTITION
    resolve(handle, "rsmi_dev_compute_partition_get", &l.computePartition);  // may stay null
    resolve(handle, "rsmi_dev_memory_partition_get", &l.memoryPartition);
#endif
    l.ok = l.init && l.shutDown && l.numDevices && l.pciId && l.numa && l.linkType &&
           l.linkWeight && l.bandwidth;
    if (!l.ok) SSC_LOG(kInfo, "rocm-smi provider: librocm_smi64 lacks an expected call");
    return l;
  }();
  return lib;
}
#endif  // SSC_HAVE_ROCM_SMI

bool contributeRocmSmi(const DiscoveryOptions& options, LocalRankInfo* info) {
  if (info->pciDomain < 0) return false;
  std::vector<RocmSmiDevice> devices;
  return queryRocmSmi(options.sysfsRoot, &devices) && applyRocmSmi(devices, info);
}

}  // namespace

bool queryRocmSmi(const std::string& sysfsRoot, std::vector<RocmSmiDevice>* out) {
  out->clear();
#if !SSC_HAVE_ROCM_SMI
  (void)sysfsRoot;
  return false;
#else
  // rocm-smi reads the amdgpu KFD topology; without it rsmi_init fails noisily on stderr (on
  // every NVIDIA or CPU-only host that has the package), so do not ask.
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::path(sysfsRoot) / "class" / "kfd", ec))
    return false;
  const RocmSmiLibrary& rsmi = library();
  if (!rsmi.ok) return false;
  // sscCommInitAll discovers for several ranks of one process at once; rocm-smi's init and
  // shutdown pair is process-wide state, so one query runs at a time.
  static std::mutex serial;
  std::lock_guard<std::mutex> lock(serial);
  if (rsmi.init(0) != RSMI_STATUS_SUCCESS) {
    SSC_LOG(kInfo, "rocm-smi provider: rsmi_init failed (no amdgpu driver?)");
    return false;
  }
  uint32_t count = 0;
  if (rsmi.numDevices(&count) == RSMI_STATUS_SUCCESS) {
    out->resize(count);
    for (uint32_t i = 0; i < count; ++i) {
      RocmSmiDevice& dev = (*out)[i];
      if (rsmi.pciId(i, &dev.bdfid) != RSMI_STATUS_SUCCESS) dev.bdfid = ~uint64_t{0};
      uint32_t numa = 0;
      // rocm-smi reports "no NUMA" as a huge value (the kernel's -1, unsigned).
      if (rsmi.numa(i, &numa) == RSMI_STATUS_SUCCESS && numa < 4096)
        dev.numaNode = static_cast<int>(numa);
#if SSC_HAVE_RSMI_PARTITION
      char mode[32] = {};
      if (rsmi.computePartition &&
          rsmi.computePartition(i, mode, sizeof(mode)) == RSMI_STATUS_SUCCESS)
        dev.computePartition = fieldText(mode);
      char memory[32] = {};
      if (rsmi.memoryPartition &&
          rsmi.memoryPartition(i, memory, sizeof(memory)) == RSMI_STATUS_SUCCESS)
        dev.memoryPartition = fieldText(memory);
#endif
      dev.links.resize(count);
      for (uint32_t j = 0; j < count; ++j) {
        if (i == j) continue;
        RocmSmiLink& link = dev.links[j];
        RSMI_IO_LINK_TYPE type = RSMI_IOLINK_TYPE_UNDEFINED;
        if (rsmi.linkType(i, j, &link.hops, &type) == RSMI_STATUS_SUCCESS)
          link.type = static_cast<int>(type);
        if (rsmi.linkWeight(i, j, &link.weight) != RSMI_STATUS_SUCCESS) link.weight = 0;
        uint64_t minBw = 0, maxBw = 0;
        // Defined only for one-hop XGMI; other pairs answer with an error, which is expected.
        if (link.type == kLinkXgmi && link.hops == 1 &&
            rsmi.bandwidth(i, j, &minBw, &maxBw) == RSMI_STATUS_SUCCESS)
          link.maxBandwidthMBps = maxBw;
      }
    }
  }
  rsmi.shutDown();
  return !out->empty();
#endif
}

bool applyRocmSmi(const std::vector<RocmSmiDevice>& devices, LocalRankInfo* info) {
  const auto self = std::make_tuple(info->pciDomain, info->pciBus, info->pciDevice);
  // The exact function if rocm-smi lists partitions as devices (ROCm 6 in CPX mode), else the
  // first device on the same physical GPU.
  int me = -1;
  for (size_t i = 0; i < devices.size(); ++i) {
    if (physicalGpu(devices[i].bdfid) != self) continue;
    if (me < 0) me = static_cast<int>(i);
    if (static_cast<int>(devices[i].bdfid & 0x7) == info->pciFunction) {
      me = static_cast<int>(i);
      break;
    }
  }
  if (me < 0) return false;
  const RocmSmiDevice& dev = devices[me];
  if (info->hostNuma < 0) info->hostNuma = dev.numaNode;
  if (fieldText(info->computePartition).empty())
    setField(info->computePartition, dev.computePartition);
  if (fieldText(info->memoryPartition).empty())
    setField(info->memoryPartition, dev.memoryPartition);

  // One-hop XGMI peers, counted as physical GPUs (partitions of a peer are one GPU), and the
  // slowest of their links: a ring or all-to-all step goes at the pace of its slowest link.
  std::set<std::tuple<int, int, int>> xgmiPeers;
  bool anyPcie = false;
  uint64_t slowestMBps = 0;
  for (size_t j = 0; j < devices.size() && j < dev.links.size(); ++j) {
    const auto peer = physicalGpu(devices[j].bdfid);
    if (peer == self) continue;
    const RocmSmiLink& link = dev.links[j];
    anyPcie |= link.type == kLinkPcie;
    if (link.type != kLinkXgmi || link.hops != 1) continue;
    xgmiPeers.insert(peer);
    if (link.maxBandwidthMBps > 0 && (slowestMBps == 0 || link.maxBandwidthMBps < slowestMBps))
      slowestMBps = link.maxBandwidthMBps;
  }
  setField(info->interGpuLink, !xgmiPeers.empty() ? "XGMI" : anyPcie ? "PCIE" : "");
  info->xgmiPeers = static_cast<int32_t>(xgmiPeers.size());
  info->xgmiPeakGBps = static_cast<double>(slowestMBps) / 1000.0;
  return true;
}

const TopologyProvider& rocmSmiProvider() {
#if SSC_HAVE_ROCM_SMI
  static const TopologyProvider provider{"rocm-smi", true, contributeRocmSmi};
#else
  static const TopologyProvider provider{"rocm-smi", false, contributeRocmSmi};
#endif
  return provider;
}

}  // namespace ssc
