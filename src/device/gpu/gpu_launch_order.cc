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
  if (last_ != nullptr) SSC_GPU_RELEASE(hipEventDestroy(last_));
}

sscResult_t LaunchOrder::before(hipStream_t stream, bool capturing) {
  if (!any_ || stream == lastStream_ || capturing) return sscSuccess;
  SSC_GPU_CHECK(hipStreamWaitEvent(stream, last_, 0),
                "ordering a launch after the communicator's previous one (on another stream)");
  return sscSuccess;
}

sscResult_t LaunchOrder::after(hipStream_t stream, bool capturing) {
  if (capturing) return sscSuccess;
  if (last_ == nullptr)
    SSC_GPU_CHECK(hipEventCreateWithFlags(&last_, hipEventDisableTiming),
                  "creating the launch-order event");
  SSC_GPU_CHECK(hipEventRecord(last_, stream), "recording the communicator's last launch");
  lastStream_ = stream;
  any_ = true;
  return sscSuccess;
}

bool LaunchOrder::finished() {
  if (!any_) return true;
  const hipError_t r = hipEventQuery(last_);
  if (r == hipErrorNotReady) (void)hipGetLastError();  // not sticky, but keep the slot clean
  return r == hipSuccess;
}

sscResult_t LaunchOrder::drain() {
  if (!any_) return sscSuccess;
  SSC_GPU_CHECK(hipEventSynchronize(last_), "waiting for the communicator's work");
  return sscSuccess;
}

}  // namespace ssc::gpu
