// SPDX-License-Identifier: MIT
#include "src/comm/plan_cache.h"

namespace ssc {

void PlanCache::clearCollPlans() {
  std::lock_guard<std::mutex> g(mu_);
  coll_.clear();
}

size_t PlanCache::collSize() const {
  std::lock_guard<std::mutex> g(mu_);
  return coll_.size();
}

size_t PlanCache::p2pSize() const {
  std::lock_guard<std::mutex> g(mu_);
  return p2p_.size();
}

}  // namespace ssc
