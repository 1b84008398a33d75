// SPDX-License-Identifier: MIT
// A tuner profile: the cost model's parameters for one kind of machine, per tier and protocol.
// Profiles are JSON files (docs/tuner.md, tuner/profiles/); a measured one is written by
// starscream-tune, a projected one by hand from published link figures. Every number says where it
// came from, because a projection is only as good as its sources.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "src/topology/topology.h"
#include "starscream/starscream.h"

namespace ssc {

// How a step moves its bytes. kFifo: send/receive through connection FIFOs (ring, bidirectional
// ring, direct, hierarchical). kLL: flag-carrying packets (the GPU's small one-shot all-reduce).
// kZeroCopy: loads/stores into peers' registered buffers (the symmetric algorithm's bulk path:
// one large block per SM). kZeroCopyWide: the same stores of all-gather's push, from several
// small blocks per SM (RankPlan::wideGrid): more requests in flight for a size that leaves the
// bulk grid idle, more scheduling where one block per SM streams already (which wins depends on
// the size and the device: calibration times both). Staged calls (plain buffers through the staging
// buffers) are zero-copy plus two local copies.
enum class Protocol : uint8_t { kFifo = 0, kLL = 1, kZeroCopy = 2, kZeroCopyWide = 3 };
inline constexpr int kNumProtocols = 4;
inline constexpr int kNumTiers = 3;
const char* protocolName(
    Protocol p);  // "fifo", "ll", "zero_copy", "zero_copy_wide" (the profile's keys)

// The figures a profile may hold (parseProfile refuses others, naming the field): what a fit or a
// calibration writes is kept inside them, so that every profile written can be read back.
inline constexpr double kProfileMaxLatencyUs = 1e6;
inline constexpr double kProfileMinBandwidthGBps = 1e-3, kProfileMaxBandwidthGBps = 1e6;

// One (tier, protocol) pair: every step pays latencyUs, then moves its bytes at bandwidthGBps;
// bytes a zero-copy step stores into peers' memory move at storeBandwidthGBps. Hopper GPUs store
// into peers more slowly than they load from them (perf/bulk_shapes.cu measures both: a rank
// reading alone runs above the copy rate, the all-gather's push of one read and K remote writes
// below it), so one rate per protocol makes all-gathers too fast and reductions too slow.
struct AlphaBeta {
  double latencyUs = 0;
  double bandwidthGBps = 0;       // 0: not given (the model derives it from the topology's link)
  double storeBandwidthGBps = 0;  // 0: bandwidthGBps
  bool operator==(const AlphaBeta&) const = default;
};

// The parameters for one partitioning (partitions per GPU): under MPS a partition's share of the
// GPU changes with their number, so a measured profile holds one variant per partition count.
struct ProfileVariant {
  int partitionsPerGpu = 0;  // 0: any
  double launchUs = 5.0;     // per call: kernel launch and completion of the lightest kernel
  // What a call of each protocol costs beyond launchUs, once: each has a kernel of its own (the
  // FIFO plan kernel walks its plan and meets its peers' first slots; the LL, bulk and push
  // kernels differ in grid, code and barriers). With one launch for all, a fit puts the launch
  // at the zero-copy calls' whole time, and the push kernel's smaller fixed cost cannot show.
  // 0: none.
  std::array<double, kNumProtocols> launchExtraUs{};
  // The largest all-gather (bytes of output) the wide grid is costed for; beyond it the model
  // does not choose it. 0: any size. The wide grid's rate is not one number: it can beat the bulk
  // grid up to some size and lose beyond it, which no (latency, bandwidth) pair can follow;
  // starscream-tune and the calibration set it from the sweep's two grids.
  double wideGridMaxBytes = 0;
  double copyGBps = 0;  // local copy/reduce steps and staging copies; 0: from the USR tier
  // The GPU's last-level cache: a one-rank call (one copy) whose input and output fit in it
  // costs its launch only (the data stays in the cache across back-to-back calls). 0: none.
  double cacheMB = 0;
  std::array<std::array<AlphaBeta, kNumProtocols>, kNumTiers> tiers{};  // [tier][protocol]
  bool operator==(const ProfileVariant&) const = default;
};

struct TunerProfile {
  std::string name;    // "h200-mps", "default (topology links)", ...
  std::string origin;  // the file it was read from, or "built-in"
  std::string gpuModel;
  std::string source;  // where the numbers came from
  std::vector<ProfileVariant> variants;
  // The variant for a partition count: exact match, else partitionsPerGpu 0, else the nearest.
  const ProfileVariant& variantFor(int partitionsPerGpu) const;
  bool operator==(const TunerProfile&) const = default;
};

// A profile with no measured numbers: every tier and protocol from the topology's links (zero-copy
// at the link's figures, LL at a quarter of its bandwidth: half the bytes of a packet are flags
// and the receiver polls them; FIFO with the link's latency and no bandwidth, which the Tuner
// resolves to the link's figure times the FIFO kernel's share of the compute units), launch 5 us.
TunerProfile defaultProfile(const Topology& topo);

// The host backend's profile: every rank's buffers are in one RAM, so the tiers are labels. A FIFO
// step copies each byte twice (into the FIFO, out of it) where a zero-copy step copies it once;
// the latency (a handoff between threads/processes) and the copy rate are estimates.
TunerProfile hostProfile();

// Reads a profile (format "starscream-tuner-profile/1", docs/tuner.md). Errors are
// sscInvalidArgument naming the origin, the field and, for JSON syntax errors, the line.
sscResult_t parseProfile(const std::string& text, const std::string& origin, TunerProfile* out);
sscResult_t loadProfileFile(const std::string& path, TunerProfile* out);
// The profile's JSON text (what starscream-tune writes), figures to four significant digits.
std::string profileToJson(const TunerProfile& profile);

// The profile a communicator uses: STARSCREAM_TUNER_PROFILE when set (a path; errors refuse
// init), else the shipped profile for the topology's GPU model when one is installed
// (tuner/profiles/<model>*.json next to the sources or under share/starscream), else
// defaultProfile(topo).
sscResult_t resolveProfile(const Topology& topo, TunerProfile* out);

}  // namespace ssc
