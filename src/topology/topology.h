// SPDX-License-Identifier: MIT
// The two-tier topology graph: node > physical GPU > partition (= rank). It is the only input the
// algorithms and tuner use for placement. Built at communicator init from what each rank
// discovered locally (LocalRankInfo, exchanged over the bootstrap) or from an emulation file
// (STARSCREAM_TOPO_FILE), identically on every rank.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "starscream/starscream.h"

namespace ssc {

enum class LinkTier : uint8_t {
  kIntraGpu = 0 /* USR / on-die */,
  kInterGpu = 1 /* XGMI, NVLink, PCIe */,
  kNetwork = 2
};
const char* linkTierName(LinkTier tier);  // "USR", "XGMI", "NET"

struct LinkSpec {
  double bandwidthGBps = 0;  // usable unidirectional bandwidth of one link, GB/s
  double latencyUs = 0;
  std::string source;  // where the number came from ("emulation file", "default: MI300X spec", ...)
  bool operator==(const LinkSpec&) const = default;
};

struct RankPlacement {
  int node = 0;       // index into Topology::nodes order (0..nnodes-1)
  int gpu = 0;        // global physical-GPU index (0..gpus.size()-1)
  int partition = 0;  // index of this rank on its GPU, in XCD/IOD ring order
  // NUMA domain of the partition's memory, -1 unknown. GPU-local: memory domain (IOD) index
  // within the GPU (0..NPS-1), so two partitions of one GPU share HBM locality iff equal.
  int numa = -1;
  bool operator==(const RankPlacement&) const = default;
};

struct GpuInfo {
  int node = 0;
  int localIndex = 0;            // index of this GPU on its node
  std::string model;             // "MI300X", "H200", ...
  std::string uuid;              // may be empty (emulated)
  std::string pciBusId;          // "dddd:bb:dd" of the physical GPU (no function); "" emulated
  std::string computePartition;  // SPX, DPX, QPX, CPX ("" unknown)
  std::string memoryPartition;   // NPS1, NPS2, NPS4 ("" unknown)
  std::vector<int> ranks;        // ranks on this GPU ordered by partition index
  int hostNuma = -1;             // host NUMA node nearest the GPU's PCI device, -1 unknown
  int computeUnits = 0;          // CUs (AMD) or SMs (NVIDIA) per partition, 0 unknown
  bool operator==(const GpuInfo&) const = default;
};

struct Topology {
  std::string name;  // from the file, or "discovered"
  int nnodes = 1;
  std::vector<RankPlacement> ranks;    // indexed by rank
  std::vector<GpuInfo> gpus;           // indexed by global GPU index
  LinkSpec intraGpu;                   // USR tier
  LinkSpec interGpu;                   // XGMI / NVLink tier
  LinkSpec network;                    // between nodes
  std::vector<std::string> nodeNames;  // hostname per node; empty, or "" entries, when emulated

  int nranks() const { return static_cast<int>(ranks.size()); }
  const GpuInfo& gpuOf(int rank) const { return gpus[ranks[rank].gpu]; }
  // True when every GPU has the same number of partitions.
  bool uniformPartitions() const;
  int maxPartitions() const;
  // The tier a message from rank a to rank b crosses: same GPU, same node, or the network.
  LinkTier tierBetween(int a, int b) const;
  const LinkSpec& link(LinkTier tier) const;
  // Field-wise: "identical on every rank" is tested with it.
  bool operator==(const Topology&) const = default;
};

// Passed as nranks to accept whatever rank count a file describes (starscream-topo, tests).
inline constexpr int kAnyRankCount = -1;

// Every rank its own GPU, all on one node: the shape a flat library assumes.
Topology makeFlatTopology(int nranks);

// nnodes x gpusPerNode GPUs of partitionsPerGpu partitions each, ranks packed node-major,
// GPU-major, partition-minor, default (MI300X) link figures: a file-less shape for tests.
Topology makeUniformTopology(int nnodes, int gpusPerNode, int partitionsPerGpu);

// Partitions a compute partition mode splits a GPU into ("CPX" on an MI300X: 8, one per XCD; a
// property of the model there); 0 for a mode that is no hardware partitioning ("", "MPS").
int hardwarePartitions(std::string_view mode, std::string_view model);
// Whether two ranks of this topology run on the same compute units: some GPU holds more ranks
// than its compute mode makes hardware partitions (MPS clients or plain processes sharing one
// GPU's SMs, the H200 emulation of tools/emulate/partition-run.sh). A kernel of one rank that
// waits for another then holds SMs the other may need (docs/gemm.md, the arrival barrier).
bool ranksShareComputeUnits(const Topology& topo);

// Memory (NUMA) domains per GPU a memory partition mode implies: "NPS4" -> 4; 0 if unknown.
int memoryDomainsOf(const std::string& memoryPartition);
// The memory domain of partition p of P on a GPU with `domains` domains. Partitions spread evenly
// along the XCD ring (MI300X CPX/NPS4: XCDs 0-1 on IOD 0, 2-3 on IOD 1, ...). -1 when domains is
// unknown (0) or exceeds P (a partition then interleaves over several domains).
int partitionMemoryDomain(int partition, int partitions, int domains);

// Checks the invariants every consumer relies on (ranks[r] and gpus[g].ranks agree, partition
// indices are 0..P-1 on every GPU, nodes and GPU local indices in range). sscInvalidArgument
// with the first violation; loadTopologyFile and buildTopology only return topologies that pass.
sscResult_t checkTopology(const Topology& topo);

// Loads an emulation file (format: docs/topology-format.md). Fails with sscInvalidArgument and a
// message naming the file, the field and what was wrong; with sscInvalidUsage when the file's
// rank count differs from nranks.
// nranks may be kAnyRankCount. No exception escapes; *out is written only on success.
sscResult_t loadTopologyFile(const std::string& path, int nranks, Topology* out);
// The same from text; `origin` names the source in error messages (a path, "<test>").
sscResult_t parseTopology(const std::string& text, const std::string& origin, int nranks,
                          Topology* out);

// JSON text of a topology (the format starscream-topo --json prints). It is itself a valid
// topology file: parseTopology(topologyToJson(t)) gives back t, with explicit placement.
std::string topologyToJson(const Topology& topo);

}  // namespace ssc
