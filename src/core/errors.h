// SPDX-License-Identifier: MIT
// Internal error reporting: every failure path returns an sscResult_t and records a message in a
// thread-local "last error" that sscGetLastError() hands back. Nothing throws across the C API.
#pragma once

#include <fmt/format.h>

#include <string>

#include "starscream/starscream.h"

namespace ssc {

// The file name of a path (__FILE__ carries the build's absolute path).
constexpr const char* baseName(const char* path) {
  const char* base = path;
  for (const char* p = path; *p != 0; ++p)
    if (*p == '/') base = p + 1;
  return base;
}

// Records `message` as this thread's last error and logs it at WARN. Returns `code` so call
// sites read `return setError(sscInvalidArgument, "...")`.
sscResult_t setError(sscResult_t code, std::string message);

template <typename... Args>
sscResult_t fail(sscResult_t code, fmt::format_string<Args...> format, Args&&... args) {
  return setError(code, fmt::format(format, std::forward<Args>(args)...));
}

// This thread's last error message ("" if none).
const std::string& lastError();
void clearLastError();
// Replaces this thread's last error message without logging: for a caller above the C API (the
// NCCL shim, through src/api/ssc_internal.h) that reports a failure in its own words and logs it
// itself. The trace is left as it is.
void replaceLastError(std::string message);

// The way this thread's last error travelled up, innermost first ("comm.cc:180 <- comm_api.cc:
// 92"), as NCCL's "file:line -> code" lines: every SSC_CHECK a failure passes through adds its
// place, and each place is logged at TRACE (STARSCREAM_DEBUG=TRACE). Reset by the next setError.
const std::string& errorTrace();
void traceFailure(const char* file, int line, sscResult_t code);

// fail() for a broken invariant: sscInternalError, with the place it was found in the message so
// a bug report carries it.
template <typename... Args>
sscResult_t failInternal(const char* file, int line, fmt::format_string<Args...> format,
                         Args&&... args) {
  return setError(sscInternalError, fmt::format("{} (internal error at {}:{})",
                                                fmt::format(format, std::forward<Args>(args)...),
                                                baseName(file), line));
}

const char* resultName(sscResult_t code);

}  // namespace ssc

// The error macro family. SSC_CHECK propagates a failing sscResult_t to the caller and leaves
// its place in the trace; SSC_INTERNAL fails with sscInternalError naming the place. Runtime
// (HIP/CUDA) calls have SSC_GPU_CHECK in src/platform/gpu_check.h, built on the same trace.
#define SSC_CHECK(expr)                                        \
  do {                                                         \
    sscResult_t ssc_check_res_ = (expr);                       \
    if (ssc_check_res_ != sscSuccess) {                        \
      ::ssc::traceFailure(__FILE__, __LINE__, ssc_check_res_); \
      return ssc_check_res_;                                   \
    }                                                          \
  } while (0)

#define SSC_INTERNAL(...) ::ssc::failInternal(__FILE__, __LINE__, __VA_ARGS__)
