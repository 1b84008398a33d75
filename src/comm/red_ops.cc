// SPDX-License-Identifier: MIT
#include "src/comm/red_ops.h"

namespace ssc {

bool RedOpTable::create(const PreMulSumOp& op, int* id) {
  std::lock_guard<std::mutex> g(mu_);
  int n = 0;
  if (!free_.empty()) {
    n = *free_.begin();
    free_.erase(free_.begin());
  } else if (next_ < end_) {
    n = next_++;
  } else {
    return false;
  }
  ops_.emplace(n, op);
  *id = n;
  return true;
}

bool RedOpTable::find(int id, PreMulSumOp* out) const {
  std::lock_guard<std::mutex> g(mu_);
  auto it = ops_.find(id);
  if (it == ops_.end()) return false;
  *out = it->second;
  return true;
}

bool RedOpTable::destroy(int id) {
  std::lock_guard<std::mutex> g(mu_);
  if (ops_.erase(id) == 0) return false;
  free_.insert(id);
  return true;
}

size_t RedOpTable::size() const {
  std::lock_guard<std::mutex> g(mu_);
  return ops_.size();
}

}  // namespace ssc
