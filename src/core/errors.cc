#include "src/core/errors.h"

#include "src/core/log.h"

namespace ssc {
namespace {
thread_local std::string t_lastError;
}

sscResult_t setError(sscResult_t code, std::string message) {
  if (code != sscSuccess && code != sscInProgress) {
    SSC_LOG(kWarn, "{}: {}", resultName(code), message);
  }
  t_lastError = std::move(message);
  return code;
}

const std::string& lastError() { return t_lastError; }
void clearLastError() { t_lastError.clear(); }

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
