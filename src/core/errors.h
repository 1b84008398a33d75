// Internal error reporting: every failure path returns an sscResult_t and records a message in a
// thread-local "last error" that sscGetLastError() hands back. Nothing throws across the C API.
#pragma once

#include <fmt/format.h>

#include <string>

#include "starscream/starscream.h"

namespace ssc {

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

const char* resultName(sscResult_t code);

}  // namespace ssc

// Propagates a failing sscResult_t from an expression to the caller.
#define SSC_CHECK(expr)                              \
  do {                                               \
    sscResult_t ssc_check_res_ = (expr);             \
    if (ssc_check_res_ != sscSuccess) return ssc_check_res_; \
  } while (0)
