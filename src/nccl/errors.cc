// SPDX-License-Identifier: MIT
#include "src/nccl/errors.h"

#include <unistd.h>

#include <cctype>
#include <mutex>
#include <string_view>

#include "src/nccl/core_link.h"

namespace ssc::nccl {
namespace {

// Starscream's messages start with the ssc entry point that failed ("sscAllReduce: ...") or,
// inside a group, with "sscGroupEnd: ". The caller called an nccl* function, so the ssc name
// would only confuse: drop it and put the nccl name in front instead.
std::string_view withoutSscPrefix(std::string_view message) {
  if (message.substr(0, 3) != "ssc") return message;
  size_t colon = message.find(": ");
  if (colon == std::string_view::npos || colon > 40) return message;
  for (size_t i = 3; i < colon; ++i)
    if (!std::isalnum(static_cast<unsigned char>(message[i]))) return message;
  return message.substr(colon + 2);
}
}  // namespace

ncclResult_t setError(ncclResult_t code, std::string message) {
  if (code != ncclSuccess && code != ncclInProgress)
    NCCL_SHIM_LOG(kWarn, "NCCL shim: {}: {}", resultString(code), message);
  recordError(message);
  return code;
}

void recordError(const std::string& message) {
  if (core() != nullptr) core()->setLastError(message.c_str());
}

const char* lastError() {
  return core() != nullptr ? sscGetLastError(nullptr) : coreMismatchMessage();
}

ncclResult_t coreMismatch() {
  static std::once_flag once;
  std::call_once(once, [] {
    // The library's logger is the one piece missing, so straight to stderr, whatever
    // STARSCREAM_DEBUG says: every call fails from here on.
    const std::string line = fmt::format("{}\n", coreMismatchMessage());
    (void)!::write(STDERR_FILENO, line.data(), line.size());
  });
  return ncclInternalError;
}

ncclResult_t guardFailure(const char* fn, Caught kind, const char* what) noexcept {
  try {
    if (kind == Caught::kOutOfMemory) return fail(ncclSystemError, "{}: out of host memory", fn);
    return fail(ncclInternalError, "{}: unexpected exception: {}", fn,
                what != nullptr ? what : "(not a std::exception)");
  } catch (...) {
    return kind == Caught::kOutOfMemory ? ncclSystemError : ncclInternalError;
  }
}

ncclResult_t toNccl(sscResult_t result) {
  switch (result) {
    case sscSuccess: return ncclSuccess;
    case sscUnhandledDeviceError: return ncclUnhandledCudaError;
    case sscSystemError: return ncclSystemError;
    case sscInternalError: return ncclInternalError;
    case sscInvalidArgument: return ncclInvalidArgument;
    case sscInvalidUsage: return ncclInvalidUsage;
#if SSC_NCCL_HAS_ncclRemoteError
    case sscRemoteError: return ncclRemoteError;
    case sscTimeout: return ncclRemoteError;
#else
    case sscRemoteError: return ncclSystemError;
    case sscTimeout: return ncclSystemError;
#endif
#if SSC_NCCL_HAS_ncclInProgress
    case sscInProgress: return ncclInProgress;
#endif
    default: return ncclInternalError;
  }
}

ncclResult_t fromSsc(const char* fn, sscResult_t result, sscComm_t comm) {
  const ncclResult_t code = toNccl(result);
  std::string_view why = withoutSscPrefix(sscGetLastError(comm));
  if (result == sscTimeout) return fail(code, "{}: {} (STARSCREAM_TIMEOUT passed)", fn, why);
  return setError(code, fmt::format("{}: {}", fn, why));
}

const char* resultString(ncclResult_t result) {
  switch (static_cast<int>(result)) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError:
      return "unhandled device (CUDA/HIP) error (run with STARSCREAM_DEBUG=WARN for details)";
    case ncclSystemError:
      return "unhandled system error (run with STARSCREAM_DEBUG=WARN for details)";
    case ncclInternalError:
      return "internal error - please report this issue to the Starscream developers";
    case ncclInvalidArgument:
      return "invalid argument (run with STARSCREAM_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with STARSCREAM_DEBUG=WARN for details)";
    case 6: return "remote process exited or there was a network error";  // ncclRemoteError
    case 7: return "NCCL operation in progress";                          // ncclInProgress
    default: return "unknown result code";
  }
}

ncclResult_t typeSize(const char* fn, ncclDataType_t type, size_t* bytes) {
  *bytes = 0;
  switch (static_cast<int>(type)) {
    case ncclInt8:
    case ncclUint8: *bytes = 1; break;
    case ncclFloat16: *bytes = 2; break;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32: *bytes = 4; break;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64: *bytes = 8; break;
#if SSC_NCCL_HAS_ncclBfloat16
    case ncclBfloat16: *bytes = 2; break;
#endif
#if SSC_NCCL_HAS_ncclFloat8e4m3 && SSC_NCCL_HAS_ncclFloat8e5m2
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
#if SSC_NCCL_IS_RCCL
      // RCCL's fp8 on gfx942 (MI300) is the FNUZ encoding; Starscream reduces OCP e4m3fn/e5m2.
      // Same size, different numbers: refuse rather than return wrong sums.
      return fail(ncclInvalidUsage,
                  "{}: fp8 datatype {} is not supported in RCCL builds "
                  "(Starscream implements OCP FP8, RCCL on MI300 uses the FNUZ encoding)",
                  fn, static_cast<int>(type));
#else
      *bytes = 1;
      break;
#endif
#endif
    default:
      return fail(ncclInvalidArgument, "{}: unknown datatype {}", fn, static_cast<int>(type));
  }
  return ncclSuccess;
}

}  // namespace ssc::nccl
