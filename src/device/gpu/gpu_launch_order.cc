#include "src/device/gpu/gpu_launch_order.h"

#include "src/core/errors.h"

namespace ssc::gpu {

DeviceGuard::DeviceGuard(int device) {
  int current = -1;
  if (device < 0 || hipGetDevice(&current) != hipSuccess || current == device) return;
  if (hipSetDevice(device) == hipSuccess) previous_ = current;
}

DeviceGuard::~DeviceGuard() {
  if (previous_ >= 0) (void)hipSetDevice(previous_);
}

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

LaunchOrder::~LaunchOrder() {
  if (last_ != nullptr) (void)hipEventDestroy(last_);
}

sscResult_t LaunchOrder::before(hipStream_t stream, bool capturing) {
  if (!any_ || stream == lastStream_ || capturing) return sscSuccess;
  const hipError_t e = hipStreamWaitEvent(stream, last_, 0);
  if (e != hipSuccess)
    return fail(sscUnhandledDeviceError, "ordering a launch after the communicator's previous one "
                "(on another stream) failed: {}", hipGetErrorString(e));
  return sscSuccess;
}

sscResult_t LaunchOrder::after(hipStream_t stream, bool capturing) {
  if (capturing) return sscSuccess;
  hipError_t e = hipSuccess;
  if (last_ == nullptr) e = hipEventCreateWithFlags(&last_, hipEventDisableTiming);
  if (e == hipSuccess) e = hipEventRecord(last_, stream);
  if (e != hipSuccess)
    return fail(sscUnhandledDeviceError, "recording the communicator's last launch failed: {}",
                hipGetErrorString(e));
  lastStream_ = stream;
  any_ = true;
  return sscSuccess;
}

sscResult_t LaunchOrder::drain() {
  if (!any_) return sscSuccess;
  const hipError_t e = hipEventSynchronize(last_);
  if (e != hipSuccess)
    return fail(sscUnhandledDeviceError, "waiting for the communicator's work failed: {}",
                hipGetErrorString(e));
  return sscSuccess;
}

}  // namespace ssc::gpu
