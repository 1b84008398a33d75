// SPDX-License-Identifier: MIT
#include "src/topology/link_defaults.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

namespace ssc {
namespace {

// One row per GPU family. Bandwidths are usable GB/s per link per direction, which is what a
// cost model divides bytes by; peak figures are in the source text. Latencies are per-hop
// estimates for the cost model's alpha term: no vendor publishes them in this form.
struct ModelDefaults {
  const char* model;
  const char* aliases[3];  // other names of the same silicon
  LinkSpec usr, xgmi, net;
  // The intra-GPU path is one resource all partitions share (HBM under MPS), not a link per
  // neighbouring pair (AMD USR): the default is then divided among the partitions.
  bool usrShared;
};

const LinkSpec kNet400G{45.0, 5.0,
                        "estimate: one 400 Gb/s NIC per GPU (50 GB/s line rate), ~90% usable; "
                        "latency estimate for RoCE/InfiniBand"};

const ModelDefaults kTable[] = {
    {"MI300X",
     {"MI325X", nullptr, nullptr},
     {450.0, 1.0,
      "estimate: MI300X USR per neighbouring partition pair, ~10x one XGMI link (Starscream paper "
      "Sec. I) and well inside the 2.4-3.0 TB/s IOD-to-IOD links AMD presented at VLSI 2024; "
      "latency estimate"},
     {48.0, 2.0,
      "default: MI300X XGMI, 64 GB/s peak per link per direction (x16 at 32 GT/s, 128 GB/s "
      "bidirectional, 7 links per GPU: AMD MI300X specifications), ~75% usable; latency estimate"},
     kNet400G,
     false},
    {"MI355X",
     {"MI350X", nullptr, nullptr},
     {900.0, 1.0,
      "estimate: MI355X USR per partition pair, not published; assumed 2x the MI300X figure since "
      "CDNA 4 joins its two IODs with wider die-to-die links; latency estimate"},
     {57.6, 2.0,
      "default: MI355X Infinity Fabric, 76.8 GB/s peak per link per direction (153.6 GB/s "
      "bidirectional, 7 links per GPU: AMD MI355X specifications), ~75% usable; latency estimate"},
     kNet400G,
     false},
    {"H200",
     {"H100", nullptr, nullptr},
     {2000.0, 1.0,
      "estimate: H200 HBM3e 4.8 TB/s (NVIDIA specifications); a device copy reads and writes, so "
      "<= 2.4 TB/s, ~2.0 TB/s usable, shared by the GPU's MPS partitions; latency estimate"},
     {370.0, 2.0,
      "estimate: H200 NVLink 4, 450 GB/s per direction per GPU through NVSwitch (900 GB/s "
      "bidirectional, NVIDIA specifications), ~80% usable; latency estimate"},
     {45.0, 5.0,
      "estimate: one 400 Gb/s ConnectX-7 NIC per GPU (50 GB/s line rate), ~90% usable; latency "
      "estimate"},
     true},
};

const ModelDefaults* findModel(std::string_view model) {
  for (const auto& row : kTable) {
    if (model == row.model) return &row;
    for (const char* alias : row.aliases)
      if (alias != nullptr && model == alias) return &row;
  }
  return nullptr;
}

}  // namespace

LinkSpec defaultLinkSpec(std::string_view model, LinkTier tier, int partitionsPerGpu) {
  const ModelDefaults* row = findModel(model);
  const ModelDefaults& use = row != nullptr ? *row : kTable[0];
  LinkSpec spec = tier == LinkTier::kIntraGpu   ? use.usr
                  : tier == LinkTier::kInterGpu ? use.xgmi
                                                : use.net;
  if (tier == LinkTier::kIntraGpu && use.usrShared && partitionsPerGpu > 1) {
    spec.bandwidthGBps /= partitionsPerGpu;
    spec.source += fmt::format(" (/{} partitions)", partitionsPerGpu);
  }
  if (row == nullptr) {
    spec.source =
        fmt::format("{} GPU model: {} figures; {}",
                    model.empty() ? std::string("unknown") : fmt::format("unlisted '{}'", model),
                    use.model, spec.source);
  }
  return spec;
}

std::string normalizeGpuModel(std::string_view deviceName) {
  std::string upper;
  for (char c : deviceName) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  // Longest names first, so "MI300X" is not taken for "MI300" and "H100" not for "H10".
  static const char* const kKnown[] = {"MI355X", "MI350X", "MI325X", "MI300X", "MI300A", "MI250X",
                                       "MI210",  "H200",   "H100",   "B200",   "A100"};
  for (const char* known : kKnown)
    if (upper.find(known) != std::string::npos) return known;
  auto begin = deviceName.find_first_not_of(" \t\n");
  auto end = deviceName.find_last_not_of(" \t\n");
  if (begin == std::string_view::npos) return "";
  return std::string(deviceName.substr(begin, end - begin + 1));
}

}  // namespace ssc
