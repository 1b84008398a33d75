// SPDX-License-Identifier: MIT
#include "src/device/gpu/gpu_launch_order.h"

#include "src/core/errors.h"
#include "src/platform/gpu_check.h"

namespace ssc::gpu {

DeviceGuard::DeviceGuard(int device) {
  int current = -1;
  if (device < 0 || hipGetDevice(&current) != hipSuccess || current == device) return;
  if (hipSetDevice(device) == hipSuccess) previous_ = current;
}

DeviceGuard::~DeviceGuard() {
  if (previous_ >= 0) SSC_GPU_RELEASE(hipSetDevice(previous_));
}

// A constructor and a destructor cannot report: were the exchange to fail, a call the capture
// forbids would fail on its own, with its own error.
RelaxedCapture::RelaxedCapture() : mode_(hipStreamCaptureModeRelaxed) {
  (void)hipThreadExchangeStreamCaptureMode(&mode_);
}

RelaxedCapture::~RelaxedCapture() { (void)hipThreadExchangeStreamCaptureMode(&mode_); }

bool streamCapturing(hipStream_t stream) {
  hipStreamCaptureStatus status = hipStreamCaptureStatusNone;
  if (hipStreamIsCapturing(stream, &status) != hipSuccess) {
    (void)hipGetLastError();  // e.g. the legacy stream while another thread captures
    return false;
  }
  return status != hipStreamCaptureStatusNone;
}

bool retainUntilGraphDestroyed(hipStream_t stream, std::function<void()> release) {
  auto* fn = new std::function<void()>(std::move(release));
  const auto destroy = [](void* p) {
    auto* f = static_cast<std::function<void()>*>(p);
    (*f)();
    delete f;
  };
  if (sscRetainUntilGraphDestroyed(stream, fn, destroy)) return true;
  delete fn;
  return false;
}

LaunchOrder::~LaunchOrder() {
  for (const Launch& l : launches_) SSC_GPU_RELEASE(hipEventDestroy(l.done));
  for (hipEvent_t e : spare_) SSC_GPU_RELEASE(hipEventDestroy(e));
}

sscResult_t LaunchOrder::before(hipStream_t stream, bool capturing) {
  if (launches_.empty() || stream == lastStream_ || capturing) return sscSuccess;
  SSC_GPU_CHECK(hipStreamWaitEvent(stream, launches_.back().done, 0),
                "ordering a launch after the communicator's previous one (on another stream)");
  return sscSuccess;
}

sscResult_t LaunchOrder::after(hipStream_t stream, bool capturing) {
  if (capturing) return sscSuccess;
  prune();
  hipEvent_t e = nullptr;
  if (!spare_.empty()) {
    e = spare_.back();
    spare_.pop_back();
  } else {
    SSC_GPU_CHECK(hipEventCreateWithFlags(&e, hipEventDisableTiming),
                  "creating a launch-order event");
  }
  const hipError_t r = hipEventRecord(e, stream);
  if (r != hipSuccess) {
    spare_.push_back(e);
    return SSC_GPU_FAIL(r, "recording the communicator's launch");
  }
  launches_.push_back(Launch{issued_++, e});
  lastStream_ = stream;
  return sscSuccess;
}

bool LaunchOrder::done(hipEvent_t e) {
  const hipError_t r = hipEventQuery(e);
  if (r == hipErrorNotReady) (void)hipGetLastError();  // not sticky, but keep the slot clean
  return r == hipSuccess;
}

void LaunchOrder::prune() {
  while (launches_.size() > 1 && done(launches_.front().done)) {
    finishedBelow_ = launches_.front().seq + 1;
    spare_.push_back(launches_.front().done);
    launches_.pop_front();
  }
}

bool LaunchOrder::finishedThrough(uint64_t ticket) {
  if (ticket <= finishedBelow_) return true;
  if (ticket > issued_ || launches_.empty()) return false;
  // Launch ticket - 1 is in launches_: everything below finishedBelow_ left it, and the rest
  // stays until seen finished.
  const Launch& l = launches_[ticket - 1 - launches_.front().seq];
  if (!done(l.done)) return false;
  finishedBelow_ = ticket;
  return true;
}

sscResult_t LaunchOrder::drain() {
  if (launches_.empty()) return sscSuccess;
  SSC_GPU_CHECK(hipEventSynchronize(launches_.back().done), "waiting for the communicator's work");
  finishedBelow_ = issued_;
  return sscSuccess;
}

}  // namespace ssc::gpu
