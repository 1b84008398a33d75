// SPDX-License-Identifier: MIT
// The amdgpu sysfs provider: partition modes and NUMA node straight from the kernel. It needs no
// library, so it is always built; on a machine without amdgpu it finds no files and says nothing.
// Layout (Linux amdgpu, MI300 series):
//   <root>/bus/pci/devices/0000:0c:00.0/{current,available}_{compute,memory}_partition
//   <root>/bus/pci/devices/0000:0c:00.0/numa_node
//   <root>/class/drm/cardN/device -> the PCI device (or, for the extra partitions of a
//   partitioned GPU, an amdgpu_xcp platform device without partition files)
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "src/core/log.h"
#include "src/topology/provider.h"

namespace ssc {
namespace {

namespace fs = std::filesystem;

// The first line of a sysfs file, trimmed; "" when it cannot be read.
std::string readLine(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return "";
  const auto begin = line.find_first_not_of(" \t\r");
  const auto end = line.find_last_not_of(" \t\r");
  return begin == std::string::npos ? "" : line.substr(begin, end - begin + 1);
}

// "SPX, DPX, QPX, CPX" (the kernel's format) or space separated -> upper-case tokens.
std::vector<std::string> readList(const fs::path& path) {
  std::string text = readLine(path);
  std::replace(text.begin(), text.end(), ',', ' ');
  std::istringstream in(text);
  std::vector<std::string> items;
  for (std::string item; in >> item;) {
    for (char& c : item) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    items.push_back(item);
  }
  return items;
}

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

unsigned readHex(const fs::path& path) {
  try {
    return static_cast<unsigned>(std::stoul(readLine(path), nullptr, 16));
  } catch (...) {
    return 0;
  }
}

void readDeviceDir(const fs::path& dir, SysfsPciDevice* out) {
  out->vendor = readHex(dir / "vendor");
  out->device = readHex(dir / "device");
  const std::string numa = readLine(dir / "numa_node");
  try {
    out->numaNode = numa.empty() ? -1 : std::max(-1, std::stoi(numa));
  } catch (...) {
    out->numaNode = -1;
  }
  out->computePartition = upper(readLine(dir / "current_compute_partition"));
  out->memoryPartition = upper(readLine(dir / "current_memory_partition"));
  out->availableComputePartitions = readList(dir / "available_compute_partition");
  out->availableMemoryPartitions = readList(dir / "available_memory_partition");
}

bool contributeSysfs(const DiscoveryOptions& options, LocalRankInfo* info) {
  if (info->pciDomain < 0) return false;
  SysfsPciDevice dev;
  // The partitions of a CPX/DPX/QPX GPU are numbered in the function field but are not PCI
  // functions: the physical function (.0) holds the files for all of them.
  if (!readSysfsPciDevice(options.sysfsRoot, info->pciDomain, info->pciBus, info->pciDevice,
                          info->pciFunction, &dev) &&
      !readSysfsPciDevice(options.sysfsRoot, info->pciDomain, info->pciBus, info->pciDevice, 0,
                          &dev))
    return false;
  bool any = false;
  if (fieldText(info->computePartition).empty() && !dev.computePartition.empty())
    setField(info->computePartition, dev.computePartition), any = true;
  if (fieldText(info->memoryPartition).empty() && !dev.memoryPartition.empty())
    setField(info->memoryPartition, dev.memoryPartition), any = true;
  if (info->hostNuma < 0 && dev.numaNode >= 0) info->hostNuma = dev.numaNode, any = true;
  SSC_LOG(kTrace, "sysfs {}: compute {} (of {}), memory {} (of {}), numa {}", dev.pciBusId,
          dev.computePartition, fmt::join(dev.availableComputePartitions, "/"), dev.memoryPartition,
          fmt::join(dev.availableMemoryPartitions, "/"), dev.numaNode);
  return any;
}

}  // namespace

bool readSysfsPciDevice(const std::string& sysfsRoot, int domain, int bus, int device, int function,
                        SysfsPciDevice* out) {
  const std::string busId = fmt::format("{:04x}:{:02x}:{:02x}.{:x}", domain, bus, device, function);
  const fs::path dir = fs::path(sysfsRoot) / "bus" / "pci" / "devices" / busId;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return false;
  *out = SysfsPciDevice{};
  out->pciBusId = busId;
  readDeviceDir(dir, out);
  return true;
}

std::vector<SysfsPciDevice> listSysfsAmdGpus(const std::string& sysfsRoot) {
  std::vector<std::pair<int, SysfsPciDevice>> cards;
  std::error_code ec;
  const fs::path drm = fs::path(sysfsRoot) / "class" / "drm";
  for (fs::directory_iterator it(drm, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    // cardN only: renderDN and the connector entries (card0-DP-1) describe the same devices.
    if (name.size() <= 4 || name.size() > 10 || name.compare(0, 4, "card") != 0 ||
        !std::all_of(name.begin() + 4, name.end(),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      continue;
    const fs::path dev = it->path() / "device";
    // uevent names the PCI slot; amdgpu_xcp partition devices have none and are skipped.
    std::ifstream uevent(dev / "uevent");
    std::string line, slot, driver;
    while (std::getline(uevent, line)) {
      if (line.rfind("PCI_SLOT_NAME=", 0) == 0) slot = line.substr(14);
      if (line.rfind("DRIVER=", 0) == 0) driver = line.substr(7);
    }
    SysfsPciDevice info;
    readDeviceDir(dev, &info);
    if (slot.empty() || (info.vendor != 0x1002 && driver != "amdgpu")) continue;
    info.pciBusId = slot;
    cards.emplace_back(std::stoi(name.substr(4)), std::move(info));
  }
  std::sort(cards.begin(), cards.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<SysfsPciDevice> out;
  for (auto& card : cards) out.push_back(std::move(card.second));
  return out;
}

const TopologyProvider& sysfsProvider() {
  static const TopologyProvider provider{"sysfs", true, contributeSysfs};
  return provider;
}

}  // namespace ssc
