// SPDX-License-Identifier: MIT
// Device services: the GPU runtime calls the layers above the backend need for their own device
// state (the ops of src/ops: their scratch, upload areas, side streams, events), behind the
// backend seam so that no file above src/device calls the runtime. A backend hands them out
// through Backend::services(); the host backend has none (its ops run on host memory and the
// communicator's own queue), so a null services pointer is how an op knows it runs on the host.
//
// Every call returns an sscResult_t; a failing one records its error through the one GPU error
// path (SSC_GPU_FAIL, src/platform/gpu_check.h): "<what> failed: <runtime text> (<call> at
// <place>)", where <what> is the caller's Doing. Streams are sscStream_t (the runtime's stream,
// null = the default one), events an opaque DeviceEvent.
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "starscream/starscream.h"

namespace ssc {

// What a service call is doing, for its failure message. The text is built only when the call
// fails: services sit on per-call and per-chunk paths, where formatting every time would cost.
// Holds a reference to a callable that lives until the end of the full expression: pass it
// straight into the call (SSC_DOING), never keep one.
class Doing {
 public:
  Doing(const char* text)  // NOLINT(google-explicit-constructor): plain text reads naturally
      : obj_(text), text_([](const void* o) { return std::string(static_cast<const char*>(o)); }) {}
  template <typename F, typename = std::enable_if_t<std::is_invocable_r_v<std::string, const F&>>>
  Doing(const F& f)  // NOLINT(google-explicit-constructor)
      : obj_(&f), text_([](const void* o) { return std::string((*static_cast<const F*>(o))()); }) {}
  // For teardown: a failure is returned but not recorded, so it neither logs nor replaces the
  // error that led to the teardown (a cleanup after a failed create keeps the create's error).
  static Doing quiet() { return Doing(); }
  bool isQuiet() const { return text_ == nullptr; }
  std::string text() const { return text_ != nullptr ? text_(obj_) : std::string(); }

 private:
  Doing() = default;
  const void* obj_ = nullptr;
  std::string (*text_)(const void*) = nullptr;
};

// A Doing formatted (fmt) only on failure: SSC_DOING("allocating {} bytes", n).
#define SSC_DOING(...) [&]() -> std::string { return fmt::format(__VA_ARGS__); }

struct DeviceEventOpaque;
using DeviceEvent = DeviceEventOpaque*;  // the runtime's event (hipEvent_t / cudaEvent_t)

enum class CopyKind { kHostToDevice, kDeviceToHost, kDeviceToDevice, kDefault };

// One stream memory operation: wait until *addr >= value (unsigned 32-bit), or write value.
struct StreamValueOp {
  uint32_t* addr;
  uint32_t value;
  bool write;
};

class DeviceServices {
 public:
  virtual ~DeviceServices() = default;

  // Memory. alloc/free: device memory of the calling thread's current device (free waits for
  // the whole device, as the runtime's does). allocAsync/freeAsync: stream-ordered. hostAlloc:
  // pinned host memory, `mapped` to be reached from the device through hostDevicePointer.
  virtual sscResult_t alloc(void** ptr, size_t bytes, Doing what) = 0;
  virtual sscResult_t free(void* ptr, Doing what) = 0;
  virtual sscResult_t allocAsync(void** ptr, size_t bytes, sscStream_t stream, Doing what) = 0;
  virtual sscResult_t freeAsync(void* ptr, sscStream_t stream, Doing what) = 0;
  virtual sscResult_t hostAlloc(void** ptr, size_t bytes, bool mapped, Doing what) = 0;
  virtual sscResult_t hostFree(void* ptr, Doing what) = 0;
  virtual sscResult_t hostDevicePointer(void** device, void* host, Doing what) = 0;

  // Copies and fills, queued on `stream`.
  virtual sscResult_t memsetAsync(void* ptr, int value, size_t bytes, sscStream_t stream,
                                  Doing what) = 0;
  virtual sscResult_t memcpyAsync(void* dst, const void* src, size_t bytes, CopyKind kind,
                                  sscStream_t stream, Doing what) = 0;
  // `height` rows of `width` bytes, rows `srcPitch` / `dstPitch` bytes apart.
  virtual sscResult_t memcpy2DAsync(void* dst, size_t dstPitch, const void* src, size_t srcPitch,
                                    size_t width, size_t height, CopyKind kind, sscStream_t stream,
                                    Doing what) = 0;

  // Streams: created non-blocking (never synchronizing with the default stream, which could
  // wait for another communicator's kernel that waits for a peer). streamQuery sets *done and
  // takes "not ready" as no error (nor does it leave it as the thread's runtime error).
  virtual sscResult_t streamCreate(sscStream_t* stream, Doing what) = 0;
  virtual sscResult_t streamDestroy(sscStream_t stream, Doing what) = 0;
  virtual sscResult_t streamSynchronize(sscStream_t stream, Doing what) = 0;
  virtual sscResult_t streamQuery(sscStream_t stream, bool* done, Doing what) = 0;
  virtual sscResult_t streamCapturing(sscStream_t stream, bool* capturing, Doing what) = 0;

  // Stream memory operations, in order as one submission where the driver batches them (under
  // MPS each submission costs the stream microseconds). *supported false (and no error): the
  // driver offers none, which the caller reports in its own terms.
  virtual sscResult_t streamValueOps(sscStream_t stream, const StreamValueOp* ops, int count,
                                     bool* supported, Doing what) = 0;

  // Events, without timing. eventQuery as streamQuery.
  virtual sscResult_t eventCreate(DeviceEvent* event, Doing what) = 0;
  virtual sscResult_t eventDestroy(DeviceEvent event, Doing what) = 0;
  virtual sscResult_t eventRecord(DeviceEvent event, sscStream_t stream, Doing what) = 0;
  virtual sscResult_t eventSynchronize(DeviceEvent event, Doing what) = 0;
  virtual sscResult_t eventQuery(DeviceEvent event, bool* done, Doing what) = 0;
  virtual sscResult_t streamWaitEvent(sscStream_t stream, DeviceEvent event, Doing what) = 0;

  // The device: make `device` the calling thread's current one (threads of the ops' own), the
  // number of its compute units (SMs / CUs) and the rate of its kernels' timer.
  virtual sscResult_t setDevice(int device, Doing what) = 0;
  virtual sscResult_t computeUnits(int device, int* out, Doing what) = 0;
  // Ticks per second of the clock kernels read for their bounded waits (sscGpuTimer); never
  // fails (a known default where the runtime does not say).
  virtual sscResult_t timerTicksPerSecond(int device, double* out) = 0;
  // Clears the calling thread's sticky runtime error after a failure the caller has handled
  // (a fallback taken), so that a later launch's check does not report it.
  virtual void clearRuntimeError() = 0;
};

}  // namespace ssc
