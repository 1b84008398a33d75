// SPDX-License-Identifier: MIT
// The buffers registered on one communicator (sscCommRegister), by start address, under a lock
// of their own: the API registers and deregisters them, collectives and the operators look up
// the peers' views of them. Every walk over the table is here.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <vector>

namespace ssc {

// A buffer registered with sscCommRegister. Registration is collective, so the i-th
// registration of every rank is the same logical buffer: peers' copies sit at peerBases.
struct Registration {
  size_t bytes = 0;
  int index = 0;                 // order of registration on this communicator
  std::vector<void*> peerBases;  // rank q's buffer mapped here; empty: not shareable
};

class RegistrationTable {
 public:
  RegistrationTable() = default;
  RegistrationTable(const RegistrationTable&) = delete;
  RegistrationTable& operator=(const RegistrationTable&) = delete;

  // Whether [base, base + bytes) overlaps a registered buffer.
  bool overlaps(const void* base, size_t bytes) const;

  // Records the buffer at `base` (its peers' views, if any: one per rank, or none); returns its
  // index, the order of registration.
  int add(void* base, size_t bytes, std::vector<void*> peerBases);

  // Removes the registration whose buffer starts at `handle` into *out; false when there is none.
  bool take(const void* handle, Registration* out);

  // Calls f(base, registration) under the table's lock with the registration that holds
  // [p, p + bytes) (`exact`: the one that starts at p) when the backend mapped every rank's copy
  // of it here; false, without calling f, when there is none. No copy: collectives look their
  // buffers up on every call.
  template <class F>
  bool withMapped(const void* p, size_t bytes, bool exact, F&& f) const {
    const auto* at = static_cast<const char*>(p);
    std::lock_guard<std::mutex> g(mu_);
    const auto it = holding(at, bytes);
    if (it == byStart_.end() || (exact && it->first != at)) return false;
    // The backend maps every rank's copy or none (Backend::registerBuffer).
    if (it->second.peerBases.empty()) return false;
    f(it->first, it->second);
    return true;
  }

  size_t size() const;

 private:
  // The entry holding [p, p + bytes), or end(); lock held.
  std::map<const char*, Registration>::const_iterator holding(const char* p, size_t bytes) const;

  mutable std::mutex mu_;
  std::map<const char*, Registration> byStart_;
  int next_ = 0;
};

}  // namespace ssc
