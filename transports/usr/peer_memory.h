// SPDX-License-Identifier: MIT
// transports/usr: what a runtime must offer so that a rank can map its peers' memory on its own
// (no registration by the application): find the allocation behind a pointer, export it, open a
// peer's export, close it. The GPU backend implements it with runtime IPC handles
// (src/device/gpu/gpu_peer_memory.cc), the host backend over its memfd allocations
// (transports/host/shm_registry.cc), tests with a fake (tests/transports).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace ssc {

// Opaque export of one allocation (a hipIpcMemHandle_t / cudaIpcMemHandle_t is 64 bytes).
constexpr size_t kPeerHandleBytes = 64;

struct PeerAllocation {
  uint64_t base = 0;   // start of the allocation in its owner's address space
  uint64_t bytes = 0;  // its size
  // Unique for the owning process's lifetime (the runtime's buffer id): an allocation freed and
  // another made at the same address get different ids, so a stale export is never reused.
  uint64_t id = 0;
};

class PeerMemoryRuntime {
 public:
  virtual ~PeerMemoryRuntime() = default;
  // The allocation holding all of [p, p + bytes); false (with why) when there is none or the
  // runtime cannot share it (say, a VMM allocation without an exportable handle).
  virtual bool query(const void* p, size_t bytes, PeerAllocation* out, std::string* why) = 0;
  // Exports `a` (found by query) for peers of this node.
  virtual bool exportHandle(const PeerAllocation& a, uint8_t handle[kPeerHandleBytes],
                            std::string* why) = 0;
  // Maps a peer's export into this process; `a` is the peer's PeerAllocation of it.
  virtual bool open(const uint8_t handle[kPeerHandleBytes], const PeerAllocation& a, void** mapped,
                    std::string* why) = 0;
  // Unmaps what open() mapped. Called only once no queued work can touch it.
  virtual void close(void* mapped, const PeerAllocation& a) = 0;
};

}  // namespace ssc
