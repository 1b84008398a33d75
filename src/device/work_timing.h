// SPDX-License-Identifier: MIT
// When a traced Work ran (STARSCREAM_TRACE, src/comm/trace.h): the backend that runs it fills
// this in, the communicator's trace reads it back later without waiting for the device. The host
// backend stamps the executor's own start and end; the GPU backend attaches a timer whose slot
// the work's kernels stamp with their own clock (src/device/gpu/gpu_timing.h). Untraced work has
// none.
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

// A device's view of a work's interval (the GPU backend's timing slots).
class DeviceTimer {
 public:
  virtual ~DeviceTimer() = default;
  // 1 and the interval on the monotonic clock once the work has finished, 0 while it has not,
  // -1 when it never will be known (an error, an abort). Never waits for the work. `fresh`: the
  // caller needs the newest state (the trace's final write), so a timer that reads a copy of the
  // device's state made now and then (the GPU backend's) makes one now.
  virtual int read(int64_t* startNs, int64_t* endNs, bool fresh) = 0;
};

struct WorkTiming {
  // Host backend: the executor's monotonicNs() when it started and finished the work; 0: not yet.
  std::atomic<int64_t> startNs{0}, endNs{0};

  // GPU backend: the work's timer, attached at enqueue. The trace may read this from another
  // thread while the backend is still enqueueing, so the timer is published through `source`.
  void attach(std::unique_ptr<DeviceTimer> timer) {
    device_ = std::move(timer);
    source_.store(kDevice, std::memory_order_release);
  }
  // GPU backend: the work goes without a device time (captured into a graph, no timing slot).
  void markUnknown() { source_.store(kUnknown, std::memory_order_release); }

  // Same contract as DeviceTimer::read.
  int read(int64_t* start, int64_t* end, bool fresh = false) {
    const int source = source_.load(std::memory_order_acquire);
    if (source == kUnknown) return -1;
    if (source == kDevice) return device_->read(start, end, fresh);
    const int64_t e = endNs.load(std::memory_order_acquire);
    if (e == 0) return 0;
    *start = startNs.load(std::memory_order_relaxed);
    *end = e;
    return 1;
  }

 private:
  enum : int { kHostStamps = 0, kDevice = 1, kUnknown = 2 };
  std::atomic<int> source_{kHostStamps};
  std::unique_ptr<DeviceTimer> device_;
};

}  // namespace ssc
