// Host side of the symmetric (zero-copy) executor: turns a Work whose plan has peer steps
// (Algo::kSymmetric) into one launch of src/kernels/gpu/sym_kernel.cu, and owns the
// communicator's registrations and the monotonic counters its protocols need (barrier epochs,
// LL rounds). Counters advance identically on every rank because every rank enqueues the same
// calls in the same order and sizes them the same way.
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

// LL rounds are 64-bit and never reused; a packet line carries the low 32 bits as its flag. A
// line left in the inbox 2^32 rounds ago would carry the same flag as the current round, so when
// the low bits are about to wrap, each parity's inbox is cleared once after its last use (see
// the .cc), and the round whose low bits are 0 (the value of a cleared line) is skipped.
// Returns the round after `round` (parities keep alternating).
uint64_t nextLLRound(uint64_t round);
// True when the inbox of `round`'s parity must be cleared after that round's kernel.
bool llClearsAfter(uint64_t round);

class SymmetricExecutor {
 public:
  // `config`: the communicator's (outlives the executor); its packetMaxBytes caps the LL path.
  SymmetricExecutor(const GpuConnections* conns, const LaunchLimits& limits, int rank, int nranks,
                    uint64_t timeoutTicks, const CommConfig* config)
      : conns_(conns), limits_(limits), rank_(rank), nranks_(nranks), timeoutTicks_(timeoutTicks),
        config_(config), nextRound_(firstLLRound()) {}

  // Launches `work` on `stream`. The caller serialises calls on one communicator.
  sscResult_t enqueue(const Work& work, void* stream);
  Registrations& registrations() { return regs_; }

 private:
  const GpuConnections* conns_;
  LaunchLimits limits_;
  int rank_, nranks_;
  uint64_t timeoutTicks_;
  const CommConfig* config_;
  uint64_t nextEpoch_ = 1;   // barrier numbers; slots start at 0
  uint64_t nextRound_;       // LL rounds (64-bit); inbox flags start at 0
  static uint64_t firstLLRound();
  uint64_t gridSyncs_ = 0;   // local grid counter's value
  Registrations regs_;
};

}  // namespace ssc::gpu
