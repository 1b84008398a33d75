// SPDX-License-Identifier: MIT
// Symmetric registration on the GPU backend (Backend::registerBuffer): every rank's registered
// buffer mapped into every other rank's process through runtime IPC handles.
//
// IPC exports whole allocations, so the backend remembers what its memAlloc handed out
// (AllocationTable) and a registration exports the allocation that contains the buffer, together
// with the buffer's offset in it. Peers' allocations are opened once per process however many
// registrations (of one or several communicators) name them (ImportCache, reference-counted):
// the runtime refuses to open one handle twice in a process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "src/device/backend.h"
#include "starscream/starscream.h"

namespace ssc::gpu {

class AllocationTable {
 public:
  static AllocationTable& process();
  void add(void* base, size_t bytes);
  void remove(void* base);
  // The allocation that holds all of [p, p + bytes); false when none does.
  bool find(const void* p, size_t bytes, void** base, size_t* size) const;

 private:
  mutable std::mutex mu_;
  std::map<uintptr_t, size_t> allocs_;  // base -> bytes
};

class ImportCache {
 public:
  static ImportCache& process();
  // Maps the allocation behind an IPC handle (raw bytes of hipIpcMemHandle_t), or takes one
  // more reference on an earlier mapping of it. False on failure, with the reason in *why when
  // given (the thread's last error untouched: a fallback), else in lastError().
  bool open(const std::string& handle, void** mapped, std::string* why = nullptr);
  // Drops one reference; the last one unmaps.
  void close(void* mapped);

 private:
  struct Import {
    void* mapped = nullptr;
    int refs = 0;
  };
  std::mutex mu_;
  std::map<std::string, Import> byHandle_;
  std::map<void*, std::string> byMapped_;
};

// One communicator's registrations: what each mapped, so deregistration (or the communicator's
// end) releases exactly that.
class Registrations {
 public:
  ~Registrations();
  // Collective over comm (bootstrap all-gathers). On success peerBases holds rank q's buff as
  // mapped here (peerBases[rank] = buff), or is empty on every rank when any rank cannot share
  // its buffer (not from memAlloc, export or open failed): registration then only records it.
  // Errors are returned only for failures of the bootstrap itself.
  sscResult_t add(CommView* comm, void* buff, size_t bytes, std::vector<void*>* peerBases);
  // Local: unmaps what add() mapped for buff (nothing when it mapped nothing).
  void remove(void* buff);

 private:
  std::mutex mu_;
  std::map<void*, std::vector<void*>> opened_;  // buff -> peers' mapped allocation bases
};

}  // namespace ssc::gpu
