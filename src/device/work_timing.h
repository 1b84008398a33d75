// SPDX-License-Identifier: MIT
// When a traced Work ran (STARSCREAM_TRACE, src/comm/trace.h): the backend that runs it fills
// this in, the communicator's trace reads it back later without waiting for the device. The host
// backend stamps the executor's own start and end; the GPU backend records a pair of timing
// events around the work on its stream (src/device/gpu/gpu_timing.h). Untraced work has none.
#pragma once

#include <time.h>

#include <atomic>
#include <cstdint>
#include <memory>

namespace ssc {

// CLOCK_MONOTONIC in nanoseconds: the one clock of every trace timestamp in a process.
inline int64_t monotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// A device's view of a work's interval (the GPU backend's events).
class DeviceTimer {
 public:
  virtual ~DeviceTimer() = default;
  // 1 and the interval on the monotonic clock once the work has finished, 0 while it has not,
  // -1 when it never will be known (an error, an abort).
  virtual int read(int64_t* startNs, int64_t* endNs) = 0;
};

struct WorkTiming {
  // Host backend: the executor's monotonicNs() when it started and finished the work; 0: not yet.
  std::atomic<int64_t> startNs{0}, endNs{0};
  // GPU backend: set at enqueue when the stream was not being captured.
  std::unique_ptr<DeviceTimer> device;

  // Same contract as DeviceTimer::read.
  int read(int64_t* start, int64_t* end) {
    if (device != nullptr) return device->read(start, end);
    const int64_t e = endNs.load(std::memory_order_acquire);
    if (e == 0) return 0;
    *start = startNs.load(std::memory_order_relaxed);
    *end = e;
    return 1;
  }
};

}  // namespace ssc
