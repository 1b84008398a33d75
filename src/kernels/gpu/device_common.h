// Device-side pieces both executors share (the FIFO plan kernel and the symmetric kernels):
// recording a kernel error for the host, and bounded waits. Device compilers only.
#pragma once

#include <cstdint>

#include "src/device/gpu/gpu_runtime.h"

namespace ssc::gpu {

// Where a kernel reports failure: a device word every wait polls (so one failing block stops the
// others) and a host-mapped copy the backend's watcher thread reads.
struct ErrorSink {
  uint32_t* device;
  uint32_t* host;  // {code, peer, channel, detail}
};

// First error wins. The detail words are written before the code, with a system fence between,
// so a host that sees the code sees its details.
__device__ inline void recordError(ErrorSink e, uint32_t code, int peer, int channel,
                                   uint64_t detail) {
  if (atomicCAS(e.device, 0u, code) == 0u) {
    volatile uint32_t* h = e.host;
    h[1] = static_cast<uint32_t>(peer);
    h[2] = static_cast<uint32_t>(channel);
    h[3] = static_cast<uint32_t>(detail);
    __threadfence_system();
    h[0] = code;
  }
}

// Polls until done(). False when the wait timed out (recorded as kKernelTimeout against `peer`)
// or another block/thread recorded an error. The timer and the error word are read every 256
// polls only: they cost a global load each, and the common case is a short wait.
template <class Done>
__device__ bool boundedWait(ErrorSink e, uint64_t timeoutTicks, uint32_t timeoutCode, Done done,
                            int peer, int channel) {
  uint64_t start = 0;
  for (uint32_t iter = 1;; ++iter) {
    if (done()) return true;
    if ((iter & 255u) == 0) {
      if (*reinterpret_cast<volatile uint32_t*>(e.device) != 0) return false;
      const uint64_t now = sscGpuTimer();
      if (start == 0) start = now;
      else if (timeoutTicks != 0 && now - start > timeoutTicks) {
        recordError(e, timeoutCode, peer, channel, 0);
        return false;
      }
    }
  }
}

}  // namespace ssc::gpu
