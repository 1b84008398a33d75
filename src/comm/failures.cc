// SPDX-License-Identifier: MIT
#include "src/comm/failures.h"

#include <fmt/format.h>

namespace ssc {

bool FailureRecord::recordError(sscResult_t code, const std::string& message) {
  std::lock_guard<std::mutex> g(mu_);
  // The code changes only under this lock (here and in initStarted/initSucceeded), so the
  // message read with it belongs to it, and a plain read and store are enough.
  const int now = code_.load();
  if (now != sscSuccess && now != sscInProgress) return false;  // the first error stays
  code_.store(code);
  message_ = message;
  return true;
}

void FailureRecord::initStarted() {
  std::lock_guard<std::mutex> g(mu_);
  code_.store(sscInProgress);
}

void FailureRecord::initSucceeded() {
  std::lock_guard<std::mutex> g(mu_);
  if (code_.load() == sscInProgress) code_.store(sscSuccess);
}

std::string FailureRecord::message() const {
  std::lock_guard<std::mutex> g(mu_);
  return message_;
}

bool FailureRecord::notePeerGone(const std::string& why) {
  std::lock_guard<std::mutex> g(mu_);
  if (!peerGone_.empty()) return false;
  peerGone_ = why;
  return true;
}

std::string FailureRecord::peerGone() const {
  std::lock_guard<std::mutex> g(mu_);
  return peerGone_;
}

bool FailureRecord::notePeerLeft(const std::string& why) {
  std::lock_guard<std::mutex> g(mu_);
  if (!peerLeft_.empty()) return false;
  peerLeft_ = why;
  return true;
}

std::string FailureRecord::peerLeft() const {
  std::lock_guard<std::mutex> g(mu_);
  return peerLeft_;
}

std::string FailureRecord::text(const std::string& local, bool aborted) const {
  std::lock_guard<std::mutex> g(mu_);
  if (!aborted) {
    // Not aborted: a wait ran out of time or failed by itself. When a peer has left, the wait most
    // likely needed it, so say so.
    if (peerLeft_.empty() || local.find(peerLeft_) != std::string::npos) return local;
    return local.empty() ? peerLeft_ : fmt::format("{} (note: {})", local, peerLeft_);
  }
  const std::string& why = peerGone_.empty() ? message_ : peerGone_;
  if (why.empty() || local.find(why) != std::string::npos) return local;
  return local.empty() ? why : fmt::format("{} ({})", why, local);
}

}  // namespace ssc
