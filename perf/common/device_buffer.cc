// SPDX-License-Identifier: MIT
#include "perf/common/device_buffer.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <utility>

#if defined(STARSCREAM_HAVE_GPU)
#include "src/platform/gpu_runtime.h"
#endif

namespace ssc::perf {

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : ptr_(std::exchange(other.ptr_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    ptr_ = std::exchange(other.ptr_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() { reset(); }

sscResult_t DeviceBuffer::allocate(size_t bytes) {
  reset();
  bytes = std::max<size_t>(bytes, 1);
  void* ptr = nullptr;
  const sscResult_t result = sscMemAlloc(&ptr, bytes);
  if (result != sscSuccess) return result;
  ptr_ = ptr;
  bytes_ = bytes;
  return sscSuccess;
}

void DeviceBuffer::reset() {
  // Nothing useful can be done about a failing free while tearing down; the library records it.
  if (ptr_ != nullptr) (void)sscMemFree(ptr_);
  ptr_ = nullptr;
  bytes_ = 0;
}

// ---------------------------------------------------------------- GPU backend seam
// With the GPU backend built in (STARSCREAM_HAVE_GPU), copies go through the runtime with
// hipMemcpyDefault: unified addressing lets the runtime tell device memory (the GPU backend's
// sscMemAlloc) from host memory (the host backend's, e.g. STARSCREAM_BACKEND=host on a GPU
// machine), so one binary serves both backends. Without a usable runtime (no GPU) the host
// backend is the only one, and memcpy is complete.

namespace {

#if defined(STARSCREAM_HAVE_GPU)
bool runtimeUsable() {
  static const bool usable = [] {
    int n = 0;
    const bool ok = hipGetDeviceCount(&n) == hipSuccess && n > 0;
    if (!ok) (void)hipGetLastError();
    return ok;
  }();
  return usable;
}

sscResult_t runtimeCopy(void* dst, const void* src, size_t bytes, const char* what) {
  hipError_t e = hipMemcpy(dst, src, bytes, hipMemcpyDefault);
  // A copy from pageable host memory may return before its DMA reaches the device, and the
  // benchmark's stream is non-blocking, so nothing orders the next collective after it: wait for
  // the device, or the collective can read stale input (seen on the H200 as #wrong in place).
  if (e == hipSuccess) e = hipDeviceSynchronize();
  if (e == hipSuccess) return sscSuccess;
  std::fprintf(stderr, "%s of %zu bytes failed: %s\n", what, bytes, hipGetErrorString(e));
  return sscUnhandledDeviceError;
}
#endif

}  // namespace

sscResult_t copyToDevice(void* deviceDst, const void* hostSrc, size_t bytes) {
  if (bytes == 0) return sscSuccess;
#if defined(STARSCREAM_HAVE_GPU)
  if (runtimeUsable()) return runtimeCopy(deviceDst, hostSrc, bytes, "copy to device");
#endif
  std::memcpy(deviceDst, hostSrc, bytes);
  return sscSuccess;
}

sscResult_t copyFromDevice(void* hostDst, const void* deviceSrc, size_t bytes) {
  if (bytes == 0) return sscSuccess;
#if defined(STARSCREAM_HAVE_GPU)
  if (runtimeUsable()) return runtimeCopy(hostDst, deviceSrc, bytes, "copy from device");
#endif
  std::memcpy(hostDst, deviceSrc, bytes);
  return sscSuccess;
}

std::string describeDevice(int device) {
  if (device < 0) return "[host] Starscream host backend";
#if defined(STARSCREAM_HAVE_GPU)
  char bus[64] = {};
  hipDeviceProp_t prop;
  if (runtimeUsable() && hipDeviceGetPCIBusId(bus, sizeof(bus), device) == hipSuccess &&
      hipGetDeviceProperties(&prop, device) == hipSuccess)
    return std::string("[") + bus + "] " + prop.name;
#endif
  return "[gpu] device " + std::to_string(device);
}

}  // namespace ssc::perf
