// SPDX-License-Identifier: MIT
// SSC_GPU_CHECK: the runtime (HIP/CUDA) member of the error macro family (src/core/errors.h).
// Host code only. A failing runtime call returns sscUnhandledDeviceError with what was being done,
// the runtime's own text and the call's place, and leaves that place in the error trace:
//   SSC_GPU_CHECK(hipMalloc(&p, n), "allocating {} bytes of scratch", n);
// -> "allocating 4096 bytes of scratch failed: out of memory (hipMalloc at gpu_backend.cc:136)".
#pragma once

#include <string>

#include "src/core/errors.h"
#include "src/core/log.h"
#include "src/platform/gpu_runtime.h"

namespace ssc {

inline sscResult_t gpuFail(const char* file, int line, const char* call, hipError_t e,
                           const std::string& what) {
  std::string name = call;
  name = name.substr(0, name.find('('));  // "hipMalloc(&p, n)" -> "hipMalloc"
  if (!name.empty()) name += " ";
  const sscResult_t r = fail(sscUnhandledDeviceError, "{} failed: {} ({}at {}:{})", what,
                             hipGetErrorString(e), name, baseName(file), line);
  traceFailure(file, line, r);  // after fail(): recording a new error starts a new trace
  return r;
}

}  // namespace ssc

// For a chain of runtime calls that share one error variable: `return SSC_GPU_FAIL(e, "...")`.
#define SSC_GPU_FAIL(err, ...) \
  ::ssc::gpuFail(__FILE__, __LINE__, "", (err), fmt::format(__VA_ARGS__))

#define SSC_GPU_CHECK(call, ...)                                                                \
  do {                                                                                          \
    const hipError_t ssc_gpu_err_ = (call);                                                     \
    if (ssc_gpu_err_ != hipSuccess)                                                             \
      return ::ssc::gpuFail(__FILE__, __LINE__, #call, ssc_gpu_err_, fmt::format(__VA_ARGS__)); \
  } while (0)

// For teardown (destructors, the unwinding of a half-done setup): a free, destroy or unmap that
// fails there leaves nothing the caller could undo or report (a destructor has no result, and at
// process exit the context may already be gone), so the failure is logged at INFO with its place
// and the runtime's last-error slot is cleared, so that the next unrelated call does not report it.
#define SSC_GPU_RELEASE(call)                                                                   \
  do {                                                                                          \
    const hipError_t ssc_gpu_err_ = (call);                                                     \
    if (ssc_gpu_err_ != hipSuccess) {                                                           \
      (void)hipGetLastError();                                                                  \
      SSC_LOG(kInfo, "teardown: {} failed: {} ({}:{})", #call, hipGetErrorString(ssc_gpu_err_), \
              ::ssc::baseName(__FILE__), __LINE__);                                             \
    }                                                                                           \
  } while (0)
