// SPDX-License-Identifier: MIT
// Topology discovery. At communicator init each rank fills one LocalRankInfo about itself
// (discoverLocal), the bootstrap all-gathers them, and every rank runs buildTopology on the
// same vector, so every rank derives the same graph without further communication.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "src/topology/topology.h"

namespace ssc {

// What the GPU layer (src/device) knows about the rank's device; discovery itself never calls a
// GPU runtime. Strings are NUL-terminated; "" and 0 mean unknown.
struct GpuRuntimeInfo {
  char uuid[64];      // device UUID; identical for the MPS clients of one NVIDIA GPU
  char pciBusId[32];  // "0000:0c:00.3"; AMD CPX/DPX/QPX partitions carry the partition in .function
  int computeUnits;   // CUs (AMD) / SMs (NVIDIA) this rank can use
  char name[64];      // runtime device name: "AMD Instinct MI300X", "NVIDIA H200"
};

inline constexpr uint32_t kLocalRankInfoVersion = 1;

// One rank's view of itself, exchanged verbatim between ranks: fixed size, no pointers,
// NUL-terminated char arrays (providers truncate). buildTopology reads peers' copies with
// bounded string reads, so a corrupt entry cannot overrun.
struct LocalRankInfo {
  uint32_t version;  // kLocalRankInfoVersion
  uint32_t size;     // sizeof(LocalRankInfo) of the build that filled it
  char hostname[128];
  char bootId[40];  // /proc/sys/kernel/random/boot_id: tells apart hosts of one name
  int32_t hasGpu;   // 0: host backend, no device
  char gpuUuid[64];
  char pciBusId[32];                                  // normalised "dddd:bb:dd.f", "" unknown
  int32_t pciDomain, pciBus, pciDevice, pciFunction;  // parsed from pciBusId, -1 unknown
  int32_t computeUnits;
  char deviceName[64];       // as the runtime reports it
  char deviceModel[32];      // normalised: "MI300X", "H200" (link defaults are keyed by it)
  char computePartition[8];  // SPX, DPX, QPX, CPX; "" unknown
  char memoryPartition[8];   // NPS1, NPS2, NPS4; "" unknown
  int32_t hostNuma;          // host NUMA node of the GPU's PCI device (no GPU: of the rank)
  // The inter-GPU link as rocm-smi sees it from this GPU: "XGMI", "PCIE", "" unknown; the
  // number of one-hop XGMI peers and the smallest peak bandwidth among them (0: unknown).
  char interGpuLink[8];
  int32_t xgmiPeers;
  double xgmiPeakGBps;
  char providers[64];  // which providers contributed, for diagnostics: "sysfs,hwloc"
};
static_assert(std::is_trivially_copyable_v<LocalRankInfo>, "exchanged as bytes");
static_assert(std::is_standard_layout_v<LocalRankInfo>, "exchanged as bytes");
static_assert(sizeof(LocalRankInfo) <= 2048, "all-gathered at every init: keep it small");

// Where discovery looks. The roots exist so tests can inject fake trees; the communicator
// passes the defaults (or what the STARSCREAM_TOPO_* variables say, once registered).
struct DiscoveryOptions {
  std::string sysfsRoot = "/sys";
  std::string procRoot = "/proc";
  bool useSysfs = true;
  bool useRocmSmi = true;
  bool useHwloc = true;
};

// Fills *out about this process and (when gpu is not null) its device, from the runtime's
// answers plus every provider built in and working here. A missing provider or file is not an
// error: the field stays unknown. Fails only on a null out.
sscResult_t discoverLocal(const GpuRuntimeInfo* gpu, LocalRankInfo* out);
sscResult_t discoverLocal(const GpuRuntimeInfo* gpu, const DiscoveryOptions& options,
                          LocalRankInfo* out);

// The graph from every rank's LocalRankInfo (indexed by rank). Deterministic: a function of the
// vector alone. Nodes are distinct (hostname, boot id) pairs, numbered by their lowest rank.
// Partitions of one GPU are ranks sharing a PCI domain:bus:device (AMD partitions differ in the
// function) or, without a PCI id, a device UUID (MPS clients of one NVIDIA GPU); ranks without
// a device are a GPU each (host backend). GPUs on a node are numbered by PCI address, partitions
// on a GPU by PCI function then rank (the XCD ring order). Link figures come from rocm-smi where
// every GPU reported one, else from the model defaults (link_defaults.h).
sscResult_t buildTopology(const std::vector<LocalRankInfo>& all, Topology* out);

// "0000:0C:00.3" or "0c:00.3" (domain 0) -> parts; false when it does not parse.
bool parsePciBusId(std::string_view text, int* domain, int* bus, int* device, int* function);

// A bounded view of a fixed-size char field that may lack its terminating NUL.
template <size_t N>
std::string_view fieldText(const char (&field)[N]) {
  size_t n = 0;
  while (n < N && field[n] != '\0') ++n;
  return std::string_view(field, n);
}

// Copies text into a fixed-size field, truncating, always NUL-terminated.
template <size_t N>
void setField(char (&field)[N], std::string_view text) {
  const size_t n = text.size() < N - 1 ? text.size() : N - 1;
  for (size_t i = 0; i < n; ++i) field[i] = text[i];
  for (size_t i = n; i < N; ++i) field[i] = '\0';
}

}  // namespace ssc
