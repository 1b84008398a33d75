// SPDX-License-Identifier: MIT
// What every launch of a communicator goes through on the GPU backend (NCCL does the same with
// its strong stream): the communicator's device is made current, and its operations execute in
// the order they were issued, whatever streams the caller used. Kernels of one communicator
// share FIFO counters, barrier epochs, LL rounds, scratch and staging buffers, so two of them
// running at once (say an all-reduce on stream A and an all-gather on stream B) would corrupt
// each other; ordering them also makes "wait for this communicator's work" a wait on one event,
// never a device-wide synchronize (which would also wait for other communicators' kernels that
// may wait on peers: a deadlock).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "src/platform/gpu_runtime.h"
#include "starscream/starscream.h"

namespace ssc::gpu {

// Makes `device` current for the guard's lifetime and restores the caller's device after (a
// no-op when it already is current or device < 0).
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

// Lets this thread call the runtime's "unsafe during capture" functions (allocations, copies on
// a private stream) while another stream is being captured into a CUDA/HIP graph, as NCCL does
// for its own setup work. Restores the thread's mode after.
class RelaxedCapture {
 public:
  RelaxedCapture();
  ~RelaxedCapture();
  RelaxedCapture(const RelaxedCapture&) = delete;
  RelaxedCapture& operator=(const RelaxedCapture&) = delete;

 private:
  hipStreamCaptureMode mode_;
};

// True when `stream` is being captured into a graph.
bool streamCapturing(hipStream_t stream);
// Runs `release` (on a runtime thread: it must not call the runtime) once the graph `stream` is
// being captured into and its executable graphs are destroyed and their launches done. False
// where it cannot (then `release` never runs).
bool retainUntilGraphDestroyed(hipStream_t stream, std::function<void()> release);

// The communicator's launch order. Not thread-safe: the backend calls it under the
// communicator's enqueue lock.
class LaunchOrder {
 public:
  LaunchOrder() = default;
  ~LaunchOrder();
  LaunchOrder(const LaunchOrder&) = delete;
  LaunchOrder& operator=(const LaunchOrder&) = delete;

  // Before queuing work on `stream`: when the communicator's previous launch went to another
  // stream, `stream` waits for it (a device-side wait bound now to work already queued, so it
  // can never close a cycle). `capturing`: streamCapturing(stream), asked once per launch.
  sscResult_t before(hipStream_t stream, bool capturing);
  // After queuing work on `stream`: records it as the point later launches wait for, and as a
  // ticket finishedThrough can test. Work captured into a graph runs when the graph is launched,
  // which the caller orders; it is neither waited for nor counted.
  sscResult_t after(hipStream_t stream, bool capturing);
  // Blocks until everything this communicator queued so far (outside graphs) has finished.
  sscResult_t drain();
  // The launches recorded so far (a ticket), and whether the first `ticket` of them have all
  // finished, without waiting (an error reads as not finished). The launches run in the order
  // they were recorded, so the last of them finishing is all of them finishing.
  uint64_t issued() const { return issued_; }
  bool finishedThrough(uint64_t ticket);
  bool finished() { return finishedThrough(issued_); }

 private:
  // Whether the launch recorded as `done` has finished; a not-ready answer is cleared from the
  // thread's runtime error (not sticky, but later checks must not see it).
  static bool done(hipEvent_t done);
  // Recycles the events of finished launches, oldest first, keeping the newest (before() waits
  // on it).
  void prune();

  struct Launch {
    uint64_t seq;
    hipEvent_t done;
  };
  std::deque<Launch> launches_;    // recorded, not yet seen finished (the newest always kept)
  std::vector<hipEvent_t> spare_;  // events of finished launches, to record again
  uint64_t issued_ = 0;            // launches recorded so far
  uint64_t finishedBelow_ = 0;     // every launch with seq < this has finished
  hipStream_t lastStream_ = nullptr;
};

}  // namespace ssc::gpu
