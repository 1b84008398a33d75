// SPDX-License-Identifier: MIT
// PeerMemoryRuntime on the GPU: the allocation behind a plain device pointer (hipMalloc'd by the
// application, PyTorch's caching allocator, a benchmark), exported with a runtime IPC handle and
// opened through the process-wide ImportCache (the runtime refuses to open one handle twice).
#pragma once

#include "transports/usr/peer_memory.h"

namespace ssc::gpu {

class GpuPeerMemory : public PeerMemoryRuntime {
 public:
  explicit GpuPeerMemory(int device) : device_(device) {}
  bool query(const void* p, size_t bytes, PeerAllocation* out, std::string* why) override;
  bool exportHandle(const PeerAllocation& a, uint8_t handle[kPeerHandleBytes],
                    std::string* why) override;
  bool open(const uint8_t handle[kPeerHandleBytes], const PeerAllocation& a, void** mapped,
            std::string* why) override;
  void close(void* mapped, const PeerAllocation& a) override;

 private:
  int device_;  // the communicator's: made current around every runtime call
};

}  // namespace ssc::gpu
