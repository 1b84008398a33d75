#include "perf/common/device_buffer.h"

#include <algorithm>
#include <cstring>
#include <utility>

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
// Host backend: sscMemAlloc returns host memory, so plain memcpy is a complete implementation.
// GPU backend: replace the bodies with hipMemcpy(dst, src, bytes, hipMemcpyHostToDevice /
// DeviceToHost) (cudaMemcpy on NVIDIA), mapping a failure to sscUnhandledDeviceError, and
// describeDevice with the device's PCI bus id and name; or dispatch on sscCommDevice() >= 0
// if one binary must serve both backends.

sscResult_t copyToDevice(void* deviceDst, const void* hostSrc, size_t bytes) {
  if (bytes != 0) std::memcpy(deviceDst, hostSrc, bytes);
  return sscSuccess;
}

sscResult_t copyFromDevice(void* hostDst, const void* deviceSrc, size_t bytes) {
  if (bytes != 0) std::memcpy(hostDst, deviceSrc, bytes);
  return sscSuccess;
}

std::string describeDevice(int device) {
  if (device < 0) return "[host] Starscream host backend";
  return "[gpu] device " + std::to_string(device);
}

}  // namespace ssc::perf
