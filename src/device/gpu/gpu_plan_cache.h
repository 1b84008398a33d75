// SPDX-License-Identifier: MIT
// Plans on the device. A plan of at most kInlineSteps steps travels in the kernel's parameters
// (no device memory at all); a larger one is uploaded once per cached plan (the communicator's
// PlanCache hands out the same shared_ptr for the same call shape) and reused by every launch.
// Nothing here synchronizes the device: an upload goes through the cache's own stream, in relaxed
// capture mode so that it is legal while the caller captures a graph. The upload also decides
// where the kernel needs an inter-block barrier (DevStep::barrier), see the .cc. A point-to-point
// plan with the one-copy handshake also uploads its operations (DevP2pOp).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "src/collectives/algorithms.h"
#include "src/collectives/plan.h"
#include "src/platform/gpu_runtime.h"
#include "src/kernels/gpu/plan_kernel.h"
#include "starscream/starscream.h"

namespace ssc::gpu {

struct DevicePlan {
  DevStep* steps = nullptr;  // device memory; null: the plan is inline
  DevStep inlineSteps[kInlineSteps] = {};
  uint32_t stepBegin[kMaxChannels + 1] = {};
  int channels = 0;
  DevP2pOp* p2pOps = nullptr;  // device memory; null: the plan has no one-copy handshake
  uint32_t p2pCount = 0;
};

// One plan step in the kernel's layout (barrier flag cleared; PlanCache places barriers).
DevStep devStep(const Step& s);

// A group's operations as the one-copy handshake reads them (pairs, receive ranks, exchanges).
std::vector<DevP2pOp> devP2pOps(const std::vector<P2pOp>& ops);

// Whether the plan opens with the one-copy handshake (its channel 0 starts with kP2pOffer,
// kP2pPush or kP2pWait steps).
bool hasP2pHandshake(const RankPlan& plan);

class LaunchOrder;

class PlanCache {
 public:
  // Uploaded plans kept at most (their steps are 48 bytes each); past it the cache drains the
  // communicator's work and starts over (a workload with that many distinct large call shapes).
  static constexpr size_t kMaxUploaded = 1024;

  PlanCache(uint64_t slotBytes, uint64_t pieceBytes, int blocksPerChannel, LaunchOrder* order)
      : slotBytes_(slotBytes), pieceBytes_(pieceBytes), blocks_(blocksPerChannel), order_(order) {}
  ~PlanCache();
  // The device form of `plan` for elements of `elemBytes`; uploads it on first use when it does
  // not fit inline. Holding the shared_ptr keeps the key address from being reused by another
  // plan while cached. The caller holds the communicator's enqueue lock.
  // `capturing`: the launch goes into a graph, which keeps the device pointer for its replays;
  // from then on uploaded plans are kept until the cache is destroyed. `p2pOps`: the group's
  // operations, required for a plan with the one-copy handshake (the plan is made from them).
  sscResult_t get(const std::shared_ptr<const RankPlan>& plan, size_t elemBytes, bool capturing,
                  const std::vector<P2pOp>* p2pOps, const DevicePlan** out);

 private:
  void clear();
  sscResult_t upload(const void* data, size_t bytes, void** out);
  struct Entry {
    std::shared_ptr<const RankPlan> plan;
    DevicePlan dev;
  };
  uint64_t slotBytes_, pieceBytes_;
  int blocks_;
  std::map<std::pair<const RankPlan*, size_t>, Entry> entries_;
  LaunchOrder* order_;
  hipStream_t uploadStream_ = nullptr;
  size_t uploaded_ = 0;  // entries with device steps
  bool captured_ = false;
};

}  // namespace ssc::gpu
