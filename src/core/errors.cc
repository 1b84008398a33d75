// SPDX-License-Identifier: MIT
#include "src/core/errors.h"

#include "src/core/log.h"

namespace ssc {
namespace {
thread_local std::string t_lastError;
thread_local std::string t_trace;
}  // namespace

sscResult_t setError(sscResult_t code, std::string message) {
  if (code != sscSuccess && code != sscInProgress) {
    SSC_LOG(kWarn, "{}: {}", resultName(code), message);
  }
  t_lastError = std::move(message);
  t_trace.clear();
  return code;
}

const std::string& lastError() { return t_lastError; }
void replaceLastError(std::string message) { t_lastError = std::move(message); }
void clearLastError() {
  t_lastError.clear();
  t_trace.clear();
}

const std::string& errorTrace() { return t_trace; }

void traceFailure(const char* file, int line, sscResult_t code) {
  // Bounded: a failure retried in a loop must not grow the string without end.
  if (t_trace.size() < 1024) {
    if (!t_trace.empty()) t_trace += " <- ";
    t_trace += fmt::format("{}:{}", baseName(file), line);
  }
  SSC_LOG(kTrace, "{}:{} -> {} ({})", baseName(file), line, static_cast<int>(code),
          resultName(code));
}

const char* resultName(sscResult_t code) {
  switch (code) {
    case sscSuccess: return "no error";
    case sscUnhandledDeviceError: return "unhandled device (HIP/CUDA) error";
    case sscSystemError: return "unhandled system error";
    case sscInternalError: return "internal error";
    case sscInvalidArgument: return "invalid argument";
    case sscInvalidUsage: return "invalid usage";
    case sscRemoteError: return "remote process exited or there was a network error";
    case sscInProgress: return "operation in progress";
    case sscTimeout: return "timed out waiting for a peer";
    default: return "unknown result code";
  }
}

}  // namespace ssc
