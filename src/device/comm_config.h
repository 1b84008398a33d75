// SPDX-License-Identifier: MIT
// A communicator's settings, fixed when it is created (from the STARSCREAM_* registry), so that
// no call re-reads or re-parses the environment and two communicators of one process may differ,
// as NCCL's per-communicator config and Gloo's options allow. It sits with the backend seam
// because backends read it too (the packet threshold).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "src/collectives/plan.h"

namespace ssc {

constexpr size_t kNumCollKinds = static_cast<size_t>(CollKind::kSendRecv) + 1;

// The algorithm STARSCREAM_ALGO forces per collective, indexed by CollKind (kAuto: the tuner
// chooses).
using ForcedAlgos = std::array<Algo, kNumCollKinds>;
inline ForcedAlgos noForcedAlgos() {
  ForcedAlgos f;
  f.fill(Algo::kAuto);
  return f;
}

// STARSCREAM_ZERO_COPY_GRID: the grid a zero-copy all-gather runs on (RankPlan::wideGrid); kAuto:
// the tuner's choice per size.
enum class ZeroCopyGrid : uint8_t { kAuto, kBulk, kWide };

struct CommConfig {
  ForcedAlgos forcedAlgos = noForcedAlgos();        // STARSCREAM_ALGO
  ZeroCopyGrid zeroCopyGrid = ZeroCopyGrid::kAuto;  // STARSCREAM_ZERO_COPY_GRID
  bool dumpPlans = false;                           // STARSCREAM_DUMP_PLAN
  // The largest all-reduce (bytes per rank) the backend may send as packets without registration
  // (the GPU's LL one-shot), capped by the backend's own limit; 0 turns packets off. Tests and
  // benchmarks lower it on one communicator to time the bulk path.
  uint64_t packetMaxBytes = UINT64_MAX;
  // STARSCREAM_ZERO_COPY_MIN_BYTES: plain-buffer calls below it take the FIFO path.
  uint64_t zeroCopyMinBytes = 0;
  // The ops layer's settings that every rank must share (init compares them), as chosen:
  std::string gemmBarrier = "auto";  // STARSCREAM_GEMM_BARRIER, read by sscGemmCreate
  std::string attnPrefill = "auto";  // STARSCREAM_ATTN_PREFILL, read by sscKvCacheCreate
};

}  // namespace ssc
