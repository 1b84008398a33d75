// Plans on the device: a RankPlan's steps are uploaded once per cached plan (comm->plans hands
// out the same shared_ptr for the same call shape) and reused by every launch. The upload also
// decides where the kernel needs an inter-block barrier (DevStep::barrier), see the .cc.
#pragma once

#include <cstdint>
#include <map>
#include <memory>

#include "src/collectives/plan.h"
#include "src/kernels/gpu/plan_kernel.h"
#include "starscream/starscream.h"

namespace ssc::gpu {

struct DevicePlan {
  DevStep* steps = nullptr;  // device memory
  uint32_t stepBegin[kMaxChannels + 1] = {};
  int channels = 0;
};

// One plan step in the kernel's layout (barrier flag cleared; PlanCache places barriers).
DevStep devStep(const Step& s);

class PlanCache {
 public:
  PlanCache(uint64_t slotBytes, uint64_t pieceBytes, int blocksPerChannel)
      : slotBytes_(slotBytes), pieceBytes_(pieceBytes), blocks_(blocksPerChannel) {}
  ~PlanCache();
  // The device copy of `plan` for elements of `elemBytes`; uploads it on first use. Holding the
  // shared_ptr keeps the key address from being reused by another plan while cached.
  sscResult_t get(const std::shared_ptr<const RankPlan>& plan, size_t elemBytes, const DevicePlan** out);

 private:
  void clear();
  struct Entry {
    std::shared_ptr<const RankPlan> plan;
    DevicePlan dev;
  };
  uint64_t slotBytes_, pieceBytes_;
  int blocks_;
  std::map<std::pair<const RankPlan*, size_t>, Entry> entries_;
};

}  // namespace ssc::gpu
