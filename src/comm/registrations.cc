// SPDX-License-Identifier: MIT
#include "src/comm/registrations.h"

#include <cstdint>
#include <iterator>
#include <utility>

namespace ssc {

bool RegistrationTable::overlaps(const void* base, size_t bytes) const {
  const auto* p = static_cast<const char*>(base);
  std::lock_guard<std::mutex> g(mu_);
  // Registered buffers never overlap each other, so only the neighbours on each side matter.
  auto next = byStart_.upper_bound(p);
  if (next != byStart_.end() && p + bytes > next->first) return true;
  if (next == byStart_.begin()) return false;
  const auto prev = std::prev(next);
  return prev->first + prev->second.bytes > p;
}

int RegistrationTable::add(void* base, size_t bytes, std::vector<void*> peerBases) {
  std::lock_guard<std::mutex> g(mu_);
  Registration reg;
  reg.bytes = bytes;
  reg.index = next_++;
  reg.peerBases = std::move(peerBases);
  const int index = reg.index;
  byStart_.emplace(static_cast<const char*>(base), std::move(reg));
  return index;
}

bool RegistrationTable::take(const void* handle, Registration* out) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = handle == nullptr ? byStart_.end() : byStart_.find(static_cast<const char*>(handle));
  if (it == byStart_.end()) return false;
  *out = std::move(it->second);
  byStart_.erase(it);
  return true;
}

std::map<const char*, Registration>::const_iterator RegistrationTable::holding(const char* p,
                                                                               size_t bytes) const {
  auto it = byStart_.upper_bound(p);
  if (it == byStart_.begin()) return byStart_.end();
  --it;
  const auto base = reinterpret_cast<uintptr_t>(it->first), x = reinterpret_cast<uintptr_t>(p);
  if (x + bytes > base + it->second.bytes) return byStart_.end();
  return it;
}

size_t RegistrationTable::size() const {
  std::lock_guard<std::mutex> g(mu_);
  return byStart_.size();
}

}  // namespace ssc
