// SPDX-License-Identifier: MIT
// Discovery providers: each is one source of facts about the local machine behind one
// interface, optional at build time (its library or header may be absent: it is then compiled
// as a stub with builtIn = false) and at run time (no driver, no file: it contributes nothing).
// discoverLocal (discovery.cc) runs them in a fixed order; each fills only fields still unknown,
// so the order states which source wins: sysfs (the kernel's own answer), then rocm-smi, then
// hwloc.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/topology/discovery.h"

namespace ssc {

struct TopologyProvider {
  const char* name;
  bool builtIn;
  // Adds what the provider knows to *info (device fields are keyed by info->pciBusId); true
  // when it contributed anything. Never fails: a provider that cannot answer leaves fields alone.
  bool (*contribute)(const DiscoveryOptions& options, LocalRankInfo* info);
};

const TopologyProvider& sysfsProvider();    // provider_sysfs.cc: amdgpu partition modes, NUMA
const TopologyProvider& rocmSmiProvider();  // provider_rocm_smi.cc: XGMI links, NUMA, partitions
const TopologyProvider& hwlocProvider();    // provider_hwloc.cc: NUMA of a PCI device or the rank

// ---- sysfs (amdgpu) ------------------------------------------------------------------------

// What the kernel says about one PCI function. Partition files exist only on partitionable
// amdgpu devices (MI300 series and later), and only on the physical function: the partitions
// of a CPX GPU are not PCI devices of their own.
struct SysfsPciDevice {
  std::string pciBusId;             // "0000:0c:00.0"
  unsigned vendor = 0, device = 0;  // PCI ids (0x1002 AMD, 0x10de NVIDIA)
  int numaNode = -1;                // numa_node; the kernel writes -1 when unknown
  std::string computePartition;     // current_compute_partition: "CPX"
  std::string memoryPartition;      // current_memory_partition: "NPS4"
  std::vector<std::string> availableComputePartitions;  // available_compute_partition
  std::vector<std::string> availableMemoryPartitions;   // available_memory_partition
};

// Reads <sysfsRoot>/bus/pci/devices/<dddd:bb:dd.f>/. false when the device directory is absent.
bool readSysfsPciDevice(const std::string& sysfsRoot, int domain, int bus, int device, int function,
                        SysfsPciDevice* out);
// The amdgpu devices behind <sysfsRoot>/class/drm/card*/device, in card order; partition
// nodes (amdgpu_xcp platform devices, no PCI slot) are skipped.
std::vector<SysfsPciDevice> listSysfsAmdGpus(const std::string& sysfsRoot);

// ---- rocm-smi ------------------------------------------------------------------------------

// rocm-smi's answers, gathered once so that the logic that uses them is testable without the
// library (tests inject answers; the provider queries librocm_smi64 at run time).
struct RocmSmiLink {
  int type = 0;  // RSMI_IO_LINK_TYPE: 1 PCIe, 2 XGMI, 0 unknown
  uint64_t hops = 0, weight = 0;
  uint64_t maxBandwidthMBps = 0;  // rsmi_minmax_bandwidth_get (one-hop XGMI only), 0 unknown
};
struct RocmSmiDevice {
  uint64_t bdfid = 0;  // rsmi_dev_pci_id_get: domain << 32 | bus << 8 | device << 3 | function
  int numaNode = -1;
  std::string computePartition, memoryPartition;  // only where rocm-smi has the partition calls
  std::vector<RocmSmiLink> links;                 // to every device, by index (self: type 0)
};
// Queries librocm_smi64 (loaded with dlopen: a build must also run where rocm-smi is absent,
// like the H200 host). false when it is not built in, not installed, or there is no amdgpu
// driver (no <sysfsRoot>/class/kfd: rocm-smi is then not even initialised).
bool queryRocmSmi(const std::string& sysfsRoot, std::vector<RocmSmiDevice>* out);
// Fills info's NUMA node, inter-GPU link and (if given) partition modes from the device whose
// PCI domain:bus:device matches info's. true when a device matched.
bool applyRocmSmi(const std::vector<RocmSmiDevice>& devices, LocalRankInfo* info);

// ---- hwloc ---------------------------------------------------------------------------------

// What hwloc sees of this machine, for starscream-topo's local view.
struct MachineSummary {
  int packages = 0, numaNodes = 0, cores = 0, pus = 0;
  struct PciDevice {
    std::string busId, kind;  // kind: "GPU", "NIC"
    unsigned vendor = 0, device = 0;
    int numaNode = -1;
  };
  std::vector<PciDevice> devices;                    // GPUs and NICs, in PCI order
  std::vector<std::vector<uint64_t>> numaDistances;  // relative latency, if the OS reports it
};
// false when hwloc is not built in or cannot load the topology.
bool hwlocMachineSummary(MachineSummary* out);
std::string formatMachineSummary(const MachineSummary& summary);

}  // namespace ssc
