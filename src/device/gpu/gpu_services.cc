// SPDX-License-Identifier: MIT
// The GPU device services: each one runtime call, its failure recorded through the one GPU error
// path (gpuFail, as SSC_GPU_CHECK) in the caller's words, or returned unrecorded for a quiet
// (teardown) call.
#include "src/device/gpu/gpu_services.h"

#include <cstddef>

#include "src/platform/gpu_check.h"
#include "src/platform/gpu_runtime.h"

namespace ssc {
namespace {

sscResult_t checked(hipError_t e, const char* call, const Doing& what, int line) {
  if (e == hipSuccess) return sscSuccess;
  if (what.isQuiet()) return sscUnhandledDeviceError;
  return gpuFail(__FILE__, line, call, e, what.text());
}
// The call's text names the runtime function in the message, as SSC_GPU_CHECK's does.
#define SSC_SERVICE(call, what) checked((call), #call, (what), __LINE__)

// A query: not ready is no error, and is cleared from the thread's runtime error so that a later
// launch's check does not report it.
sscResult_t queried(hipError_t e, const char* call, const Doing& what, int line, bool* done) {
  *done = e == hipSuccess;
  if (e == hipSuccess) return sscSuccess;
  (void)hipGetLastError();
  if (e == hipErrorNotReady) return sscSuccess;
  return checked(e, call, what, line);
}

hipStream_t rt(sscStream_t s) { return static_cast<hipStream_t>(s); }
hipEvent_t rt(DeviceEvent e) { return reinterpret_cast<hipEvent_t>(e); }

decltype(hipMemcpyDefault) rt(CopyKind k) {  // hipMemcpyKind, whichever runtime
  switch (k) {
    case CopyKind::kHostToDevice: return hipMemcpyHostToDevice;
    case CopyKind::kDeviceToHost: return hipMemcpyDeviceToHost;
    case CopyKind::kDeviceToDevice: return hipMemcpyDeviceToDevice;
    case CopyKind::kDefault: break;
  }
  return hipMemcpyDefault;
}

// StreamValueOp is the runtime header's SscStreamValueOp under a name of the seam's own.
static_assert(sizeof(StreamValueOp) == sizeof(SscStreamValueOp) &&
              offsetof(StreamValueOp, addr) == offsetof(SscStreamValueOp, addr) &&
              offsetof(StreamValueOp, value) == offsetof(SscStreamValueOp, value) &&
              offsetof(StreamValueOp, write) == offsetof(SscStreamValueOp, write));

class GpuServices final : public DeviceServices {
 public:
  sscResult_t alloc(void** ptr, size_t bytes, Doing what) override {
    return SSC_SERVICE(hipMalloc(ptr, bytes), what);
  }
  sscResult_t free(void* ptr, Doing what) override { return SSC_SERVICE(hipFree(ptr), what); }
  sscResult_t allocAsync(void** ptr, size_t bytes, sscStream_t stream, Doing what) override {
    return SSC_SERVICE(hipMallocAsync(ptr, bytes, rt(stream)), what);
  }
  sscResult_t freeAsync(void* ptr, sscStream_t stream, Doing what) override {
    return SSC_SERVICE(hipFreeAsync(ptr, rt(stream)), what);
  }
  sscResult_t hostAlloc(void** ptr, size_t bytes, bool mapped, Doing what) override {
    return SSC_SERVICE(hipHostMalloc(ptr, bytes, mapped ? hipHostMallocMapped : 0), what);
  }
  sscResult_t hostFree(void* ptr, Doing what) override {
    return SSC_SERVICE(hipHostFree(ptr), what);
  }
  sscResult_t hostDevicePointer(void** device, void* host, Doing what) override {
    return SSC_SERVICE(hipHostGetDevicePointer(device, host, 0), what);
  }

  sscResult_t memsetAsync(void* ptr, int value, size_t bytes, sscStream_t stream,
                          Doing what) override {
    return SSC_SERVICE(hipMemsetAsync(ptr, value, bytes, rt(stream)), what);
  }
  sscResult_t memcpyAsync(void* dst, const void* src, size_t bytes, CopyKind kind,
                          sscStream_t stream, Doing what) override {
    return SSC_SERVICE(hipMemcpyAsync(dst, src, bytes, rt(kind), rt(stream)), what);
  }
  sscResult_t memcpy2DAsync(void* dst, size_t dstPitch, const void* src, size_t srcPitch,
                            size_t width, size_t height, CopyKind kind, sscStream_t stream,
                            Doing what) override {
    return SSC_SERVICE(
        hipMemcpy2DAsync(dst, dstPitch, src, srcPitch, width, height, rt(kind), rt(stream)), what);
  }

  sscResult_t streamCreate(sscStream_t* stream, Doing what) override {
    hipStream_t s = nullptr;
    const sscResult_t r = SSC_SERVICE(hipStreamCreateWithFlags(&s, hipStreamNonBlocking), what);
    if (r == sscSuccess) *stream = s;
    return r;
  }
  sscResult_t streamDestroy(sscStream_t stream, Doing what) override {
    return SSC_SERVICE(hipStreamDestroy(rt(stream)), what);
  }
  sscResult_t streamSynchronize(sscStream_t stream, Doing what) override {
    return SSC_SERVICE(hipStreamSynchronize(rt(stream)), what);
  }
  sscResult_t streamQuery(sscStream_t stream, bool* done, Doing what) override {
    return queried(hipStreamQuery(rt(stream)), "hipStreamQuery", what, __LINE__, done);
  }
  sscResult_t streamCapturing(sscStream_t stream, bool* capturing, Doing what) override {
    hipStreamCaptureStatus status = hipStreamCaptureStatusNone;
    const sscResult_t r = SSC_SERVICE(hipStreamIsCapturing(rt(stream), &status), what);
    *capturing = r == sscSuccess && status != hipStreamCaptureStatusNone;
    return r;
  }

  sscResult_t streamValueOps(sscStream_t stream, const StreamValueOp* ops, int count,
                             bool* supported, Doing what) override {
    const hipError_t e =
        sscStreamBatchValue32(rt(stream), reinterpret_cast<const SscStreamValueOp*>(ops), count);
    *supported = e != hipErrorNotSupported;
    return *supported ? SSC_SERVICE(e, what) : sscSuccess;
  }

  sscResult_t eventCreate(DeviceEvent* event, Doing what) override {
    hipEvent_t e = nullptr;
    const sscResult_t r = SSC_SERVICE(hipEventCreateWithFlags(&e, hipEventDisableTiming), what);
    if (r == sscSuccess) *event = reinterpret_cast<DeviceEvent>(e);
    return r;
  }
  sscResult_t eventDestroy(DeviceEvent event, Doing what) override {
    return SSC_SERVICE(hipEventDestroy(rt(event)), what);
  }
  sscResult_t eventRecord(DeviceEvent event, sscStream_t stream, Doing what) override {
    return SSC_SERVICE(hipEventRecord(rt(event), rt(stream)), what);
  }
  sscResult_t eventSynchronize(DeviceEvent event, Doing what) override {
    return SSC_SERVICE(hipEventSynchronize(rt(event)), what);
  }
  sscResult_t eventQuery(DeviceEvent event, bool* done, Doing what) override {
    return queried(hipEventQuery(rt(event)), "hipEventQuery", what, __LINE__, done);
  }
  sscResult_t streamWaitEvent(sscStream_t stream, DeviceEvent event, Doing what) override {
    return SSC_SERVICE(hipStreamWaitEvent(rt(stream), rt(event), 0), what);
  }

  sscResult_t setDevice(int device, Doing what) override {
    return SSC_SERVICE(hipSetDevice(device), what);
  }
  sscResult_t computeUnits(int device, int* out, Doing what) override {
    return SSC_SERVICE(hipDeviceGetAttribute(out, hipDeviceAttributeMultiprocessorCount, device),
                       what);
  }
  sscResult_t timerTicksPerSecond(int device, double* out) override {
    *out = sscGpuTimerTicksPerSecond(device);
    return sscSuccess;
  }
  // Reading the runtime's error slot clears it.
  void clearRuntimeError() override { (void)hipGetLastError(); }
};

}  // namespace

DeviceServices* gpuServices() {
  static GpuServices services;  // stateless: never destroyed before a caller's last use matters
  return &services;
}

}  // namespace ssc
