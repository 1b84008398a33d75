// SPDX-License-Identifier: MIT
// The plans one communicator has built, under a lock of their own: collective plans by call
// shape, fused point-to-point plans by their ops. Plans are pure functions of their key, so a
// call whose shape was seen before reuses the same plan object (and the GPU backend, which
// uploads a plan once per object, never uploads it again). Every look-up and insertion is here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "src/collectives/plan.h"
#include "starscream/starscream.h"

namespace ssc {

// Plans the cache keeps per kind (collective shapes, point-to-point patterns); past it that
// kind's cache starts over, so a program that never repeats a shape cannot grow it without end.
constexpr size_t kMaxCachedPlans = 256;

// A collective plan's key: (collective, algorithm, count, root, element size, in place, packet
// one-shot, wide grid), everything the plan depends on besides the communicator itself.
using CollPlanKey = std::tuple<int, int, uint64_t, int, size_t, bool, bool, bool>;
// A fused point-to-point plan's key: per op, (send << 32 | peer) then its bytes. The buffers
// travel in the Work, so a repeated group pattern (a ring exchange every step) has one key.
using P2pPlanKey = std::vector<uint64_t>;

class PlanCache {
 public:
  using Plan = std::shared_ptr<const RankPlan>;

  PlanCache() = default;
  PlanCache(const PlanCache&) = delete;
  PlanCache& operator=(const PlanCache&) = delete;

  // The cached plan for `key` into *out, else the one build(&plan) makes, cached when it
  // succeeds; build's failure is returned with nothing cached and *out untouched.
  //
  // build runs under the cache's lock: two threads asking for the same new shape then build it
  // once and get the same object (the GPU backend would otherwise upload two copies, and
  // STARSCREAM_DUMP_PLAN would print it twice), and a shape is built once per communicator, so
  // holding the lock for it costs nothing after the first call. build must therefore take no
  // lock of the communicator's and never call back into the cache (see the lock order in comm.h).
  template <class Build>
  sscResult_t collPlan(const CollPlanKey& key, Build&& build, Plan* out) {
    std::lock_guard<std::mutex> g(mu_);
    return lookUpOrBuild(coll_, key, build, out);
  }
  template <class Build>
  sscResult_t p2pPlan(const P2pPlanKey& key, Build&& build, Plan* out) {
    std::lock_guard<std::mutex> g(mu_);
    return lookUpOrBuild(p2p_, key, build, out);
  }

  // Forgets the collective plans: the tuner changed (calibration), so a shape may now choose
  // another algorithm. Point-to-point plans stay: they have one algorithm and never ask the
  // tuner. Plans already handed out stay valid: their callers hold their own reference.
  void clearCollPlans();

  size_t collSize() const;
  size_t p2pSize() const;

 private:
  // Lock held.
  template <class Map, class Build>
  static sscResult_t lookUpOrBuild(Map& cache, const typename Map::key_type& key, Build& build,
                                   Plan* out) {
    if (auto it = cache.find(key); it != cache.end()) {
      *out = it->second;
      return sscSuccess;
    }
    Plan plan;
    if (sscResult_t r = build(&plan); r != sscSuccess) return r;
    if (cache.size() >= kMaxCachedPlans) cache.clear();
    cache.emplace(key, plan);
    *out = std::move(plan);
    return sscSuccess;
  }

  mutable std::mutex mu_;
  std::map<CollPlanKey, Plan> coll_;
  std::map<P2pPlanKey, Plan> p2p_;
};

}  // namespace ssc
