// SPDX-License-Identifier: MIT
// Host side of the symmetric (zero-copy) executor: turns a Work whose plan has peer steps
// (Algo::kSymmetric) into one launch of src/kernels/gpu/sym_kernel.cu, and owns the
// communicator's registrations. The protocols' counters (barrier epochs, LL rounds) live in
// device memory and advance on the device (sym_kernel.h), so a launch captured into a graph
// replays right; they advance identically on every rank because every rank runs the same calls
// in the same order and sizes their grids the same way.
#pragma once

#include <cstdint>

#include "src/device/gpu/gpu_census.h"
#include "src/device/gpu/gpu_registry.h"
#include "src/device/comm_config.h"
#include "src/device/work.h"
#include "src/kernels/gpu/plan_kernel.h"
#include "src/kernels/gpu/sym_kernel.h"

namespace ssc::gpu {

class GpuConnections;

// The call's reduction as both GPU kernels take it.
DevReduce devReduceOf(const ReduceSpec& rs);

// True when the plan uses peer steps (and must run here rather than in the FIFO kernel).
bool isSymmetricPlan(const RankPlan& plan);

// Test hook: symmetric-plan launches (LL or bulk) in this process so far.
uint64_t symmetricLaunches();
// Test hook: the LL round the next communicator created in this process starts at (default 1),
// so a test can run calls across the point where the 32-bit packet flag wraps.
void setFirstLLRound(uint64_t round);

// The LL round after `round` and whether `round`'s inbox parity is cleared after it
// (llNextRound, llClearsAfterRound in sym_kernel.h: the kernel advances rounds on the device).
uint64_t nextLLRound(uint64_t round);
bool llClearsAfter(uint64_t round);

class SymmetricExecutor {
 public:
  // `config`: the communicator's (outlives the executor); its packetMaxBytes caps the LL path.
  SymmetricExecutor(const GpuConnections* conns, const LaunchLimits& limits, int rank, int nranks,
                    uint64_t timeoutTicks, const CommConfig* config)
      : conns_(conns),
        limits_(limits),
        rank_(rank),
        nranks_(nranks),
        timeoutTicks_(timeoutTicks),
        config_(config) {}

  // Writes the first LL round (setFirstLLRound) into this rank's control area; once, at
  // connect, before any launch.
  sscResult_t init();
  // Launches `work` on `stream`; `timing`: what a traced call's kernels stamp (kernel_timing.h;
  // slot null: untimed), the start in its first launch, the end in its last. *launched is set
  // once a launch is queued. The caller serialises calls on one communicator.
  sscResult_t enqueue(const Work& work, void* stream, const KernelTiming& timing, bool* launched);
  Registrations& registrations() { return regs_; }

 private:
  const GpuConnections* conns_;
  LaunchLimits limits_;
  int rank_, nranks_;
  uint64_t timeoutTicks_;
  const CommConfig* config_;
  static uint64_t firstLLRound();
  Registrations regs_;
};

}  // namespace ssc::gpu
