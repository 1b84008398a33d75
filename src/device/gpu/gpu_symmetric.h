// Host side of the symmetric (zero-copy) executor: turns a Work whose plan has peer steps
// (Algo::kSymmetric) into one launch of src/kernels/gpu/sym_kernel.cu, and owns the
// communicator's registrations and the monotonic counters its protocols need (barrier epochs,
// LL rounds). Counters advance identically on every rank because every rank enqueues the same
// calls in the same order and sizes them the same way.
#pragma once

#include <cstdint>

#include "src/device/gpu/gpu_census.h"
#include "src/device/gpu/gpu_registry.h"
#include "src/device/work.h"
#include "src/kernels/gpu/plan_kernel.h"
#include "src/kernels/gpu/sym_kernel.h"

namespace ssc::gpu {

class GpuConnections;

// The call's reduction as both GPU kernels take it.
DevReduce devReduceOf(const ReduceSpec& rs);

// True when the plan uses peer steps (and must run here rather than in the FIFO kernel).
bool isSymmetricPlan(const RankPlan& plan);

// Test/benchmark hook: the largest one-shot all-reduce (bytes) that takes the LL path, at most
// kLLMaxBytes (the inbox size); 0 turns LL off (the bulk kernel then runs the plan as written),
// ~0 restores the default kLLDefaultMaxBytes. Process-wide. In-place one-shots always take LL.
void setLLMaxBytes(uint64_t bytes);
// The current LL limit (what setLLMaxBytes left).
uint64_t llMaxBytes();
// Test hook: symmetric-plan launches (LL or bulk) in this process so far.
uint64_t symmetricLaunches();

class SymmetricExecutor {
 public:
  SymmetricExecutor(const GpuConnections* conns, const LaunchLimits& limits, int rank, int nranks,
                    uint64_t timeoutTicks)
      : conns_(conns), limits_(limits), rank_(rank), nranks_(nranks), timeoutTicks_(timeoutTicks) {}

  // Launches `work` on `stream`. The caller serialises calls on one communicator.
  sscResult_t enqueue(const Work& work, void* stream);
  Registrations& registrations() { return regs_; }

 private:
  const GpuConnections* conns_;
  LaunchLimits limits_;
  int rank_, nranks_;
  uint64_t timeoutTicks_;
  uint64_t nextEpoch_ = 1;   // barrier numbers; slots start at 0
  uint64_t nextRound_ = 1;   // LL rounds; inbox flags start at 0
  uint64_t gridSyncs_ = 0;   // local grid counter's value
  Registrations regs_;
};

}  // namespace ssc::gpu
