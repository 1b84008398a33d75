// SPDX-License-Identifier: MIT
// How big the GPU backend's launches may be on one communicator, agreed by all ranks at connect.
//
// Both executors need every block of a launch resident at once: FIFO blocks of one channel spin
// on each other, and symmetric blocks meet the same-index block of every peer at barriers, so a
// block that is not scheduled until another finishes can deadlock the call. A rank's share of
// the GPU: under an MPS cap (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE < 100) the SM count the runtime
// reports, which already is the capped count (seen on the H200: 14 of 132 SMs at 12%); without
// one, the device's SMs divided among the ranks on it. Grids are kept within share x (blocks per
// SM from the occupancy API).
//
// Grid sizes must also be equal on all ranks (FIFO pieces are split by blocks per channel;
// symmetric barrier slots are per block index), so every rank contributes its limits and all
// take the minimum.
#pragma once

#include "src/device/backend.h"
#include "starscream/starscream.h"

namespace ssc::gpu {

struct LaunchLimits {
  int blocksPerChannel = 1;  // FIFO plan kernel, per channel (a power of two)
  int symBlocks = 1;         // the symmetric kernel's largest grid
  int shareSMs = 1;          // the smallest rank's SM share
  bool sameDevice = false;   // every rank runs on one GPU (device-scope flags suffice)
};

// Collective over comm (one bootstrap all-gather). `channels`: the FIFO transport's channels.
sscResult_t agreeLaunchLimits(CommView* comm, int channels, LaunchLimits* out);

}  // namespace ssc::gpu
