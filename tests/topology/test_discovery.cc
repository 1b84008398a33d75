// SPDX-License-Identifier: MIT
// Discovery without the hardware: fake amdgpu sysfs trees (CPX/NPS4, DPX/NPS2, SPX/NPS1),
// injected rocm-smi answers, and buildTopology over hand-made LocalRankInfo vectors. The
// strongest checks discover a whole injected machine and compare the graph with the shipped
// emulation file of the same machine.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "src/core/errors.h"
#include "src/topology/discovery.h"
#include "src/topology/link_defaults.h"
#include "src/topology/provider.h"
#include "src/topology/topology.h"

namespace ssc {
namespace {

namespace fs = std::filesystem;

// ---- fake machines -----------------------------------------------------------------------

// A temporary root holding fake /sys and /proc trees.
class FakeRoot {
 public:
  FakeRoot() {
    root_ = fs::temp_directory_path() /
            ("ssc-topo-sysfs-" + std::to_string(getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    write("proc/sys/kernel/random/boot_id", "11111111-2222-3333-4444-555555555555\n");
  }
  ~FakeRoot() { fs::remove_all(root_); }

  void write(const std::string& rel, const std::string& text) {
    const fs::path path = root_ / rel;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }

  // One amdgpu PCI device with its partition files, and a DRM card pointing at it.
  void addAmdGpu(int card, const std::string& bdf, const std::string& compute,
                 const std::string& memory, int numa) {
    const std::string dev = "sys/bus/pci/devices/" + bdf + "/";
    write(dev + "vendor", "0x1002\n");
    write(dev + "device", "0x74a1\n");
    write(dev + "numa_node", std::to_string(numa) + "\n");
    write(dev + "uevent", "DRIVER=amdgpu\nPCI_SLOT_NAME=" + bdf + "\n");
    write(dev + "current_compute_partition", compute + "\n");
    write(dev + "current_memory_partition", memory + "\n");
    write(dev + "available_compute_partition", "SPX, DPX, QPX, CPX\n");
    write(dev + "available_memory_partition", "NPS1, NPS4\n");
    fs::create_directories(root_ / "sys/class/drm" / ("card" + std::to_string(card)));
    fs::create_directory_symlink(
        root_ / "sys/bus/pci/devices" / bdf,
        root_ / "sys/class/drm" / ("card" + std::to_string(card)) / "device");
  }

  DiscoveryOptions options() const {
    DiscoveryOptions o;
    o.sysfsRoot = (root_ / "sys").string();
    o.procRoot = (root_ / "proc").string();
    o.useRocmSmi = false;  // the installed library would answer for the real machine
    o.useHwloc = false;
    return o;
  }
  std::string sys() const { return (root_ / "sys").string(); }

 private:
  fs::path root_;
};

GpuRuntimeInfo runtime(const std::string& pci, const std::string& uuid, const std::string& name,
                       int cus) {
  GpuRuntimeInfo g{};
  setField(g.pciBusId, pci);
  setField(g.uuid, uuid);
  setField(g.name, name);
  g.computeUnits = cus;
  return g;
}

// What a rank on `host` reports, built by hand (discoverLocal would use this host's name).
LocalRankInfo rankInfo(const std::string& host, const std::string& pci,
                       const std::string& uuid = "", const std::string& model = "",
                       const std::string& compute = "", const std::string& memory = "",
                       const std::string& boot = "boot-1") {
  LocalRankInfo info{};
  info.version = kLocalRankInfoVersion;
  info.size = sizeof(LocalRankInfo);
  info.hasGpu = !pci.empty() || !uuid.empty();
  info.pciDomain = info.pciBus = info.pciDevice = info.pciFunction = -1;
  info.hostNuma = -1;
  setField(info.hostname, host);
  setField(info.bootId, boot);
  if (!pci.empty()) {
    EXPECT_TRUE(
        parsePciBusId(pci, &info.pciDomain, &info.pciBus, &info.pciDevice, &info.pciFunction))
        << pci;
  }
  setField(info.pciBusId, pci);
  setField(info.gpuUuid, uuid);
  setField(info.deviceModel, model);
  setField(info.computePartition, compute);
  setField(info.memoryPartition, memory);
  return info;
}

std::string bdf(int bus, int function) {
  char text[16];
  std::snprintf(text, sizeof(text), "0000:%02x:00.%d", bus, function);
  return text;
}

// Bus numbers of the 8 GPUs of an MI300X platform, ascending: GPUs are numbered in PCI order.
const int kBuses[8] = {0x0c, 0x22, 0x38, 0x5c, 0x9f, 0xaf, 0xbf, 0xdf};

Topology shipped(const std::string& name) {
  Topology topo;
  EXPECT_EQ(loadTopologyFile(std::string(SSC_SOURCE_DIR) + "/tools/topologies/" + name + ".json",
                             kAnyRankCount, &topo),
            sscSuccess)
      << lastError();
  return topo;
}

// Discovers a whole injected node (each rank's runtime answer + the fake sysfs), builds the
// graph, and checks it places every rank as the shipped emulation file of that machine does.
void expectSameMachine(const FakeRoot& fake, const std::vector<GpuRuntimeInfo>& runtimes,
                       const std::string& file) {
  std::vector<LocalRankInfo> all(runtimes.size());
  for (size_t r = 0; r < runtimes.size(); ++r)
    ASSERT_EQ(discoverLocal(&runtimes[r], fake.options(), &all[r]), sscSuccess) << lastError();
  Topology found;
  ASSERT_EQ(buildTopology(all, &found), sscSuccess) << lastError();
  const Topology expected = shipped(file);
  ASSERT_EQ(found.nranks(), expected.nranks());
  EXPECT_EQ(found.ranks, expected.ranks);  // node, GPU, partition and memory domain per rank
  ASSERT_EQ(found.gpus.size(), expected.gpus.size());
  for (size_t g = 0; g < found.gpus.size(); ++g) {
    EXPECT_EQ(found.gpus[g].ranks, expected.gpus[g].ranks) << "gpu " << g;
    EXPECT_EQ(found.gpus[g].model, expected.gpus[g].model);
    EXPECT_EQ(found.gpus[g].computePartition, expected.gpus[g].computePartition);
    EXPECT_EQ(found.gpus[g].memoryPartition, expected.gpus[g].memoryPartition);
    EXPECT_EQ(found.gpus[g].pciBusId, bdf(kBuses[g], 0).substr(0, 10));
  }
  EXPECT_EQ(found.intraGpu.bandwidthGBps, expected.intraGpu.bandwidthGBps);
  EXPECT_EQ(found.interGpu.bandwidthGBps, expected.interGpu.bandwidthGBps);
}

// ---- sysfs ---------------------------------------------------------------------------------

TEST(TopoSysfs, ReadsPartitionModesAndNuma) {
  FakeRoot fake;
  fake.addAmdGpu(0, "0000:0c:00.0", "CPX", "NPS4", 0);
  fake.addAmdGpu(1, "0000:22:00.0", "dpx", "nps2", 1);  // the kernel's case is not relied on
  fake.addAmdGpu(2, "0000:38:00.0", "SPX", "NPS1", -1);
  SysfsPciDevice dev;
  ASSERT_TRUE(readSysfsPciDevice(fake.sys(), 0, 0x0c, 0, 0, &dev));
  EXPECT_EQ(dev.computePartition, "CPX");
  EXPECT_EQ(dev.memoryPartition, "NPS4");
  EXPECT_EQ(dev.availableComputePartitions, (std::vector<std::string>{"SPX", "DPX", "QPX", "CPX"}));
  EXPECT_EQ(dev.availableMemoryPartitions, (std::vector<std::string>{"NPS1", "NPS4"}));
  EXPECT_EQ(dev.numaNode, 0);
  EXPECT_EQ(dev.vendor, 0x1002u);
  ASSERT_TRUE(readSysfsPciDevice(fake.sys(), 0, 0x22, 0, 0, &dev));
  EXPECT_EQ(dev.computePartition, "DPX");
  EXPECT_EQ(dev.memoryPartition, "NPS2");
  EXPECT_EQ(dev.numaNode, 1);
  ASSERT_TRUE(readSysfsPciDevice(fake.sys(), 0, 0x38, 0, 0, &dev));
  EXPECT_EQ(dev.computePartition, "SPX");
  EXPECT_EQ(dev.numaNode, -1);
  EXPECT_FALSE(readSysfsPciDevice(fake.sys(), 0, 0x99, 0, 0, &dev));
}

TEST(TopoSysfs, ListsAmdGpusInCardOrderSkippingPartitionNodes) {
  FakeRoot fake;
  fake.addAmdGpu(1, "0000:22:00.0", "CPX", "NPS4", 1);
  fake.addAmdGpu(0, "0000:0c:00.0", "CPX", "NPS4", 0);
  // A partition's DRM node is an amdgpu_xcp platform device: no PCI slot, no partition files.
  fake.write("sys/devices/platform/amdgpu_xcp_1/uevent", "DRIVER=amdgpu_xcp\n");
  fs::create_directories(fs::path(fake.sys()) / "class/drm/card2");
  fs::create_directory_symlink(fs::path(fake.sys()) / "devices/platform/amdgpu_xcp_1",
                               fs::path(fake.sys()) / "class/drm/card2/device");
  fake.write("sys/class/drm/renderD128/device/uevent", "PCI_SLOT_NAME=0000:0c:00.0\n");
  fake.write("sys/class/drm/card0-DP-1/status", "disconnected\n");
  const auto gpus = listSysfsAmdGpus(fake.sys());
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[0].pciBusId, "0000:0c:00.0");
  EXPECT_EQ(gpus[1].pciBusId, "0000:22:00.0");
  EXPECT_TRUE(listSysfsAmdGpus("/nonexistent").empty());
}

TEST(TopoDiscovery, LocalRankOnCpxPartition) {
  FakeRoot fake;
  fake.addAmdGpu(0, "0000:0c:00.0", "CPX", "NPS4", 1);
  const GpuRuntimeInfo gpu = runtime("0000:0C:00.3", "uuid-0c", "AMD Instinct MI300X", 38);
  LocalRankInfo info;
  ASSERT_EQ(discoverLocal(&gpu, fake.options(), &info), sscSuccess) << lastError();
  EXPECT_EQ(info.version, kLocalRankInfoVersion);
  EXPECT_EQ(info.size, sizeof(LocalRankInfo));
  EXPECT_EQ(fieldText(info.bootId), "11111111-2222-3333-4444-555555555555");
  EXPECT_FALSE(fieldText(info.hostname).empty());
  EXPECT_EQ(fieldText(info.pciBusId), "0000:0c:00.3");
  EXPECT_EQ(info.pciFunction, 3);
  EXPECT_EQ(fieldText(info.deviceModel), "MI300X");
  EXPECT_EQ(fieldText(info.computePartition), "CPX");  // from the physical function .0
  EXPECT_EQ(fieldText(info.memoryPartition), "NPS4");
  EXPECT_EQ(info.hostNuma, 1);
  EXPECT_EQ(info.computeUnits, 38);
  EXPECT_EQ(fieldText(info.providers), "sysfs");
}

TEST(TopoDiscovery, MissingTreesAreNotErrors) {
  DiscoveryOptions options;
  options.sysfsRoot = "/nonexistent/sys";
  options.procRoot = "/nonexistent/proc";
  options.useRocmSmi = options.useHwloc = false;
  const GpuRuntimeInfo gpu = runtime("0000:1b:00.0", "GPU-abc", "NVIDIA H200", 132);
  LocalRankInfo info;
  ASSERT_EQ(discoverLocal(&gpu, options, &info), sscSuccess);
  EXPECT_EQ(fieldText(info.computePartition), "");
  EXPECT_EQ(fieldText(info.bootId), "");
  EXPECT_EQ(info.hostNuma, -1);
  EXPECT_EQ(fieldText(info.deviceModel), "H200");
  EXPECT_EQ(discoverLocal(&gpu, options, nullptr), sscInvalidArgument);
}

TEST(TopoDiscovery, InjectedMi300xCpxNps4NodeMatchesItsFile) {
  FakeRoot fake;
  std::vector<GpuRuntimeInfo> ranks;
  for (int g = 0; g < 8; ++g) {
    fake.addAmdGpu(g, bdf(kBuses[g], 0), "CPX", "NPS4", g / 4);
    for (int x = 0; x < 8; ++x)
      ranks.push_back(runtime(bdf(kBuses[g], x), "", "AMD Instinct MI300X", 38));
  }
  expectSameMachine(fake, ranks, "mi300x-8x-cpx-nps4");
}

TEST(TopoDiscovery, InjectedMi355xDpxNps2NodeMatchesItsFile) {
  FakeRoot fake;
  std::vector<GpuRuntimeInfo> ranks;
  for (int g = 0; g < 8; ++g) {
    fake.addAmdGpu(g, bdf(kBuses[g], 0), "DPX", "NPS2", g / 4);
    for (int x = 0; x < 2; ++x)
      ranks.push_back(runtime(bdf(kBuses[g], x), "", "AMD Instinct MI355X", 128));
  }
  expectSameMachine(fake, ranks, "mi355x-8x-dpx-nps2");
}

TEST(TopoDiscovery, InjectedMi300xSpxNps1NodeMatchesItsFile) {
  FakeRoot fake;
  std::vector<GpuRuntimeInfo> ranks;
  for (int g = 0; g < 8; ++g) {
    fake.addAmdGpu(g, bdf(kBuses[g], 0), "SPX", "NPS1", g / 4);
    ranks.push_back(runtime(bdf(kBuses[g], 0), "", "AMD Instinct MI300X", 304));
  }
  expectSameMachine(fake, ranks, "mi300x-8x-spx-nps1");
}

// ---- rocm-smi ------------------------------------------------------------------------------

uint64_t bdfid(int bus, int function, int partition = 0) {
  return (uint64_t{0} << 32) | (uint64_t(partition) << 28) | (uint64_t(bus) << 8) |
         uint64_t(function);
}

// n physical GPUs, `parts` rocm-smi devices each (ROCm 6 lists CPX partitions as devices),
// fully connected by one-hop XGMI at `mbps`.
std::vector<RocmSmiDevice> xgmiHive(int n, int parts, uint64_t mbps) {
  std::vector<RocmSmiDevice> devs;
  for (int g = 0; g < n; ++g)
    for (int p = 0; p < parts; ++p) {
      RocmSmiDevice d;
      d.bdfid = bdfid(kBuses[g], p, p);
      d.numaNode = g / 4;
      devs.push_back(d);
    }
  for (auto& d : devs) {
    d.links.resize(devs.size());
    for (size_t j = 0; j < devs.size(); ++j)
      if (&devs[j] != &d) d.links[j] = RocmSmiLink{2, 1, 15, mbps};
  }
  return devs;
}

TEST(TopoRocmSmi, XgmiPeersNumaAndBandwidth) {
  LocalRankInfo info = rankInfo("h", bdf(kBuses[2], 0), "", "MI300X");
  ASSERT_TRUE(applyRocmSmi(xgmiHive(8, 1, 64000), &info));
  EXPECT_EQ(fieldText(info.interGpuLink), "XGMI");
  EXPECT_EQ(info.xgmiPeers, 7);
  EXPECT_DOUBLE_EQ(info.xgmiPeakGBps, 64.0);
  EXPECT_EQ(info.hostNuma, 0);
}

TEST(TopoRocmSmi, PartitionsListedAsDevicesCountAsOneGpu) {
  LocalRankInfo info = rankInfo("h", bdf(kBuses[5], 6), "", "MI300X");
  auto devs = xgmiHive(8, 8, 64000);
  devs[5 * 8 + 6].computePartition = "CPX";
  devs[5 * 8 + 6].memoryPartition = "NPS4";
  devs[5 * 8 + 6].links[0].maxBandwidthMBps = 50000;  // one slower link: the slowest counts
  ASSERT_TRUE(applyRocmSmi(devs, &info));
  EXPECT_EQ(info.xgmiPeers, 7);
  EXPECT_DOUBLE_EQ(info.xgmiPeakGBps, 50.0);
  EXPECT_EQ(fieldText(info.computePartition), "CPX");
  EXPECT_EQ(fieldText(info.memoryPartition), "NPS4");
  EXPECT_EQ(info.hostNuma, 1);
}

TEST(TopoRocmSmi, PcieOnlyAndUnknownDevice) {
  auto devs = xgmiHive(2, 1, 0);
  for (auto& d : devs)
    for (auto& l : d.links) l.type = 1;
  LocalRankInfo info = rankInfo("h", bdf(kBuses[0], 0));
  ASSERT_TRUE(applyRocmSmi(devs, &info));
  EXPECT_EQ(fieldText(info.interGpuLink), "PCIE");
  EXPECT_EQ(info.xgmiPeers, 0);
  LocalRankInfo other = rankInfo("h", bdf(0x77, 0));
  EXPECT_FALSE(applyRocmSmi(devs, &other));
  // The real library on this machine: answers or declines, never crashes; without an amdgpu
  // driver (no class/kfd) it is not even initialised.
  std::vector<RocmSmiDevice> real;
  if (!queryRocmSmi("/sys", &real)) {
    EXPECT_TRUE(real.empty());
  }
  EXPECT_FALSE(queryRocmSmi("/nonexistent", &real));
}

TEST(TopoRocmSmi, BandwidthReachesTheGraphWhenEveryGpuReportsIt) {
  const auto hive = xgmiHive(8, 1, 64000);
  std::vector<LocalRankInfo> all;
  for (int g = 0; g < 8; ++g) {
    all.push_back(rankInfo("h", bdf(kBuses[g], 0), "", "MI300X", "SPX", "NPS1"));
    ASSERT_TRUE(applyRocmSmi(hive, &all.back()));
  }
  Topology topo;
  ASSERT_EQ(buildTopology(all, &topo), sscSuccess) << lastError();
  EXPECT_DOUBLE_EQ(topo.interGpu.bandwidthGBps, 48.0);  // 64 GB/s peak, 75% usable
  EXPECT_NE(topo.interGpu.source.find("rocm-smi"), std::string::npos) << topo.interGpu.source;
  all[3].xgmiPeakGBps = 0;  // one GPU without an answer: back to the documented default
  ASSERT_EQ(buildTopology(all, &topo), sscSuccess);
  EXPECT_EQ(topo.interGpu.source.find("rocm-smi"), std::string::npos) << topo.interGpu.source;
}

// ---- buildTopology ---------------------------------------------------------------------------

TEST(TopoBuild, MpsRanksSharingOneUuidAreOneGpu) {
  std::vector<LocalRankInfo> all;
  for (int r = 0; r < 8; ++r) all.push_back(rankInfo("h200", "", "GPU-5f1c", "H200", "MPS"));
  Topology topo;
  ASSERT_EQ(buildTopology(all, &topo), sscSuccess) << lastError();
  ASSERT_EQ(topo.gpus.size(), 1u);
  EXPECT_EQ(topo.gpus[0].ranks, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(topo.gpus[0].uuid, "GPU-5f1c");
  EXPECT_EQ(topo.nnodes, 1);
  EXPECT_EQ(topo.ranks[5].partition, 5);
  EXPECT_EQ(topo.ranks[5].numa, -1);
  // The H200 USR default is the HBM shared by the partitions.
  EXPECT_DOUBLE_EQ(topo.intraGpu.bandwidthGBps, 2000.0 / 8);
}

TEST(TopoBuild, MpsRanksSharingOnePciIdAreOneGpu) {
  std::vector<LocalRankInfo> all;
  for (int r = 0; r < 4; ++r) all.push_back(rankInfo("h200", "0000:1b:00.0", "GPU-5f1c", "H200"));
  Topology topo;
  ASSERT_EQ(buildTopology(all, &topo), sscSuccess) << lastError();
  ASSERT_EQ(topo.gpus.size(), 1u);
  EXPECT_EQ(topo.gpus[0].ranks, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(topo.gpus[0].pciBusId, "0000:1b:00");
}

TEST(TopoBuild, AmdPartitionsGroupByPciDeviceAndOrderByFunction) {
  // 16 ranks on 2 CPX GPUs, launched in a scrambled order: rank r on GPU r % 2 (the second
  // GPU, bus 0x22, gets rank 0), XCD 7 - r / 2.
  std::vector<LocalRankInfo> all;
  for (int r = 0; r < 16; ++r)
    all.push_back(
        rankInfo("h", bdf(r % 2 == 0 ? 0x22 : 0x0c, 7 - r / 2), "", "MI300X", "CPX", "NPS4"));
  Topology topo;
  ASSERT_EQ(buildTopology(all, &topo), sscSuccess) << lastError();
  ASSERT_EQ(topo.gpus.size(), 2u);
  EXPECT_EQ(topo.gpus[0].pciBusId, "0000:0c:00");  // GPUs in PCI order, not rank order
  EXPECT_EQ(topo.gpus[0].ranks, (std::vector<int>{15, 13, 11, 9, 7, 5, 3, 1}));
  EXPECT_EQ(topo.gpus[1].ranks, (std::vector<int>{14, 12, 10, 8, 6, 4, 2, 0}));
  EXPECT_EQ(topo.ranks[0].gpu, 1);
  EXPECT_EQ(topo.ranks[0].partition, 7);
  EXPECT_EQ(topo.ranks[0].numa, 3);  // XCD 7 is on IOD 3
  EXPECT_EQ(topo.gpus[0].computePartition, "CPX");
}

TEST(TopoBuild, MemoryDomainFollowsTheHardwarePartitionNotTheRankCount) {
  // A job on XCDs 2 and 5 of one CPX/NPS4 GPU: partitions 0 and 1 of the graph, but memory
  // domains 1 and 2, where the hardware puts those XCDs.
  std::vector<LocalRankInfo> all = {rankInfo("h", bdf(0x0c, 5), "", "MI300X", "CPX", "NPS4"),
                                    rankInfo("h", bdf(0x0c, 2), "", "MI300X", "CPX", "NPS4")};
  Topology topo;
  ASSERT_EQ(buildTopology(all, &topo), sscSuccess) << lastError();
  EXPECT_EQ(topo.gpus[0].ranks, (std::vector<int>{1, 0}));
  EXPECT_EQ(topo.ranks[1].numa, 1);
  EXPECT_EQ(topo.ranks[0].numa, 2);
}

TEST(TopoBuild, HostsAndBootIdsMakeNodes) {
  std::vector<LocalRankInfo> all = {
      rankInfo("b", "0000:0c:00.0"), rankInfo("a", "0000:0c:00.0"), rankInfo("b", "0000:22:00.0"),
      rankInfo("a", "0000:22:00.0"),
      // Same host name, another boot: a cloned machine, not the same one.
      rankInfo("a", "0000:0c:00.0", "", "", "", "", "boot-2")};
  Topology topo;
  ASSERT_EQ(buildTopology(all, &topo), sscSuccess) << lastError();
  EXPECT_EQ(topo.nnodes, 3);
  EXPECT_EQ(topo.nodeNames, (std::vector<std::string>{"b", "a", "a"}));  // by lowest rank
  EXPECT_EQ(topo.ranks[0].node, 0);
  EXPECT_EQ(topo.ranks[1].node, 1);
  EXPECT_EQ(topo.ranks[4].node, 2);
  EXPECT_EQ(topo.gpus.size(), 5u);
  EXPECT_EQ(topo.tierBetween(0, 2), LinkTier::kInterGpu);
  EXPECT_EQ(topo.tierBetween(0, 1), LinkTier::kNetwork);
  EXPECT_EQ(checkTopology(topo), sscSuccess);
}

TEST(TopoBuild, RanksWithoutDevicesAreOneGpuEach) {
  std::vector<LocalRankInfo> all = {rankInfo("h", ""), rankInfo("h", ""), rankInfo("h", "")};
  Topology topo;
  ASSERT_EQ(buildTopology(all, &topo), sscSuccess) << lastError();
  EXPECT_EQ(topo.gpus.size(), 3u);
  EXPECT_EQ(topo.gpus[2].ranks, (std::vector<int>{2}));
  EXPECT_EQ(topo.maxPartitions(), 1);
}

// Every rank builds from the same all-gathered vector; a different launch order of the same
// machine moves ranks, never the GPUs and partitions they land on.
TEST(TopoBuild, DeterministicAndFollowsRankRelabelling) {
  std::vector<LocalRankInfo> all;
  for (int n = 0; n < 2; ++n)
    for (int g = 0; g < 4; ++g)
      for (int x = 0; x < 8; ++x)
        all.push_back(
            rankInfo(n == 0 ? "n0" : "n1", bdf(kBuses[g], x), "", "MI300X", "CPX", "NPS4"));
  Topology first, again;
  ASSERT_EQ(buildTopology(all, &first), sscSuccess) << lastError();
  ASSERT_EQ(buildTopology(all, &again), sscSuccess);
  EXPECT_EQ(first, again);

  std::vector<int> perm(all.size());  // new rank perm[r] runs what old rank r ran
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin() + 1, perm.end(), std::mt19937(42));  // rank 0 stays: node order kept
  std::vector<LocalRankInfo> shuffled(all.size());
  for (size_t r = 0; r < all.size(); ++r) shuffled[perm[r]] = all[r];
  Topology moved;
  ASSERT_EQ(buildTopology(shuffled, &moved), sscSuccess) << lastError();
  for (size_t r = 0; r < all.size(); ++r) {
    const RankPlacement& a = first.ranks[r];
    const RankPlacement& b = moved.ranks[perm[r]];
    EXPECT_EQ(moved.nodeNames[b.node], first.nodeNames[a.node]) << "rank " << r;
    EXPECT_EQ(moved.gpus[b.gpu].pciBusId, first.gpus[a.gpu].pciBusId) << "rank " << r;
    EXPECT_EQ(b.partition, a.partition) << "rank " << r;
    EXPECT_EQ(b.numa, a.numa) << "rank " << r;
  }
}

TEST(TopoBuild, RejectsBadInput) {
  Topology topo;
  EXPECT_EQ(buildTopology({}, &topo), sscInvalidArgument);
  std::vector<LocalRankInfo> all = {rankInfo("h", "0000:0c:00.0"), rankInfo("h", "0000:0c:00.1")};
  all[1].version = kLocalRankInfoVersion + 1;
  EXPECT_EQ(buildTopology(all, &topo), sscInvalidUsage);
  EXPECT_NE(lastError().find("rank 1"), std::string::npos) << lastError();
  EXPECT_EQ(buildTopology(all, nullptr), sscInvalidArgument);
}

TEST(TopoBuild, UnterminatedStringsFromAPeerAreBounded) {
  LocalRankInfo info = rankInfo("h", "0000:0c:00.0");
  std::fill(std::begin(info.hostname), std::end(info.hostname), 'x');
  std::fill(std::begin(info.gpuUuid), std::end(info.gpuUuid), 'u');
  std::fill(std::begin(info.deviceModel), std::end(info.deviceModel), 'm');
  Topology topo;
  ASSERT_EQ(buildTopology({info}, &topo), sscSuccess) << lastError();
  EXPECT_EQ(topo.nodeNames[0], std::string(sizeof(info.hostname), 'x'));
  EXPECT_EQ(topo.gpus[0].model.size(), sizeof(info.deviceModel));
}

TEST(TopoBuild, DiscoveredTopologyRoundTripsThroughJson) {
  std::vector<LocalRankInfo> all;
  for (int x = 0; x < 8; ++x) {
    all.push_back(rankInfo("node-a", bdf(0x0c, x), "uuid-a", "MI300X", "CPX", "NPS4"));
    all.back().hostNuma = 0;
    all.back().computeUnits = 38;
  }
  Topology topo, again;
  ASSERT_EQ(buildTopology(all, &topo), sscSuccess) << lastError();
  const std::string json = topologyToJson(topo);
  ASSERT_EQ(parseTopology(json, "captured.json", 8, &again), sscSuccess) << lastError() << json;
  EXPECT_EQ(topo, again) << json;
}

// ---- helpers -------------------------------------------------------------------------------

TEST(TopoDiscoveryHelpers, ParsesPciBusIds) {
  int d = -1, b = -1, dev = -1, fn = -1;
  ASSERT_TRUE(parsePciBusId("0000:0C:00.3", &d, &b, &dev, &fn));
  EXPECT_EQ(std::make_tuple(d, b, dev, fn), std::make_tuple(0, 0x0c, 0, 3));
  ASSERT_TRUE(parsePciBusId("00000001:1b:1f.7\n", &d, &b, &dev, &fn));  // NVML's 8-digit domain
  EXPECT_EQ(std::make_tuple(d, b, dev, fn), std::make_tuple(1, 0x1b, 0x1f, 7));
  ASSERT_TRUE(parsePciBusId("c1:00.0", &d, &b, &dev, &fn));
  EXPECT_EQ(std::make_tuple(d, b, dev, fn), std::make_tuple(0, 0xc1, 0, 0));
  for (const char* bad : {"", "0000:0c:00", "0000:0c:20.0", "0000:0c:00.8", "0000:100:00.0",
                          "zz:00.0", "0000:0c:00.0x", "0:0:0:0.0"})
    EXPECT_FALSE(parsePciBusId(bad, &d, &b, &dev, &fn)) << bad;
}

TEST(TopoDiscoveryHelpers, ModelNamesAndDefaults) {
  EXPECT_EQ(normalizeGpuModel("AMD Instinct MI300X"), "MI300X");
  EXPECT_EQ(normalizeGpuModel("AMD Instinct MI355X"), "MI355X");
  EXPECT_EQ(normalizeGpuModel("NVIDIA H200"), "H200");
  EXPECT_EQ(normalizeGpuModel("  gfx942 "), "gfx942");
  EXPECT_EQ(defaultLinkSpec("MI300X", LinkTier::kInterGpu, 8).bandwidthGBps, 48.0);
  EXPECT_EQ(defaultLinkSpec("MI325X", LinkTier::kInterGpu, 8).bandwidthGBps, 48.0);
  EXPECT_DOUBLE_EQ(defaultLinkSpec("MI355X", LinkTier::kInterGpu, 2).bandwidthGBps, 57.6);
  EXPECT_EQ(defaultLinkSpec("H200", LinkTier::kIntraGpu, 4).bandwidthGBps, 500.0);
  EXPECT_EQ(defaultLinkSpec("MI300X", LinkTier::kIntraGpu, 8).bandwidthGBps, 450.0);
  EXPECT_NE(defaultLinkSpec("XYZ", LinkTier::kNetwork, 1).source.find("unlisted 'XYZ'"),
            std::string::npos);
}

TEST(TopoHwloc, SummaryAndRankNuma) {
  MachineSummary summary;
  if (!hwlocMachineSummary(&summary)) GTEST_SKIP() << "hwloc not built in";
  EXPECT_GE(summary.numaNodes, 1);
  EXPECT_GE(summary.pus, 1);
  EXPECT_NE(formatMachineSummary(summary).find("NUMA node"), std::string::npos);
  DiscoveryOptions options;
  options.useSysfs = options.useRocmSmi = false;
  LocalRankInfo info;
  ASSERT_EQ(discoverLocal(nullptr, options, &info), sscSuccess);
  EXPECT_EQ(info.hasGpu, 0);
  // One NUMA node: every process is bound to it.
  if (summary.numaNodes == 1) {
    EXPECT_EQ(info.hostNuma, 0);
  }
}

}  // namespace
}  // namespace ssc
