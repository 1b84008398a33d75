// SPDX-License-Identifier: MIT
#include "src/comm/work_tracker.h"

namespace ssc {

void WorkTracker::queued() {
  std::lock_guard<std::mutex> g(mu_);
  ++pending_;
}

void WorkTracker::done() {
  std::lock_guard<std::mutex> g(mu_);
  if (--pending_ == 0) changed_.notify_all();
}

void WorkTracker::waitIdle() {
  std::unique_lock<std::mutex> lk(mu_);
  changed_.wait(lk, [&] { return pending_ == 0; });
}

bool WorkTracker::idle() const {
  std::lock_guard<std::mutex> g(mu_);
  return pending_ == 0;
}

void WorkTracker::enter() {
  std::lock_guard<std::mutex> g(mu_);
  ++users_;
}

void WorkTracker::leave() {
  std::lock_guard<std::mutex> g(mu_);
  if (--users_ == 0) changed_.notify_all();
}

void WorkTracker::waitUnused() {
  std::unique_lock<std::mutex> lk(mu_);
  changed_.wait(lk, [&] { return users_ == 0; });
}

}  // namespace ssc
