// SPDX-License-Identifier: MIT
// Device memory for the perf tests, and the only code that moves bytes between it and the host.
//
// Buffers come from sscMemAlloc, the memory the library can use in place (zero copy). On the host
// backend that is host memory, so the copies below are memcpy. The GPU backend replaces exactly
// the three functions in the "GPU backend seam" section (in device_buffer.cc) with the runtime's
// copies and device query; nothing else in perf/ touches device memory or includes a GPU header.
#pragma once

#include <cstddef>
#include <string>

#include "starscream/starscream.h"

namespace ssc::perf {

// Owns one sscMemAlloc allocation; move-only.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  ~DeviceBuffer();

  // Allocates `bytes` (at least 1, so that no collective is handed a null pointer for a zero
  // count). Replaces any previous allocation.
  sscResult_t allocate(size_t bytes);
  void reset();

  char* data() const { return static_cast<char*>(ptr_); }
  size_t size() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// ---------------------------------------------------------------- GPU backend seam
// Synchronous copies: when they return, the bytes are in place and the source may be reused.
// Return sscUnhandledDeviceError (with the runtime's message on stderr) when the runtime fails.

// Host memory -> device memory (a buffer from DeviceBuffer, possibly at an offset).
sscResult_t copyToDevice(void* deviceDst, const void* hostSrc, size_t bytes);
// Device memory -> host memory.
sscResult_t copyFromDevice(void* hostDst, const void* deviceSrc, size_t bytes);
// What the "Using devices" line says after "device N": for the host backend (device -1)
// "[host] Starscream host backend"; for a GPU, "[PCI bus id] device name".
std::string describeDevice(int device);

}  // namespace ssc::perf
