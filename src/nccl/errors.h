// SPDX-License-Identifier: MIT
// Error reporting of the shim: the thread's last error (what ncclGetLastError returns: the
// library's own slot, so sscGetLastError says the same), the mapping of Starscream results onto
// NCCL's, and NCCL's result strings.
#pragma once

#include <fmt/format.h>

#include <string>

#include "src/nccl/shim.h"

namespace ssc::nccl {

// Records `message` as this thread's last error (logged at WARN unless `code` is a success or
// ncclInProgress) and returns `code`.
ncclResult_t setError(ncclResult_t code, std::string message);
// Records `message` as this thread's last error without logging it: setError's store, and how a
// caller puts back a message that an intermediate failure replaced.
void recordError(const std::string& message);

template <typename... Args>
ncclResult_t fail(ncclResult_t code, fmt::format_string<Args...> format, Args&&... args) {
  return setError(code, fmt::format(format, std::forward<Args>(args)...));
}

// This thread's last error message ("" if none): sscGetLastError(NULL). Never cleared by a
// successful call: NCCL documents that ncclGetLastError may describe an earlier failure.
const char* lastError();

// The NCCL result for a Starscream one. sscTimeout (a peer missing or hung past
// STARSCREAM_TIMEOUT) has no NCCL twin and becomes ncclRemoteError, whose documented meaning
// ("remote process exited or there was a network error") it falls under.
ncclResult_t toNccl(sscResult_t result);

// Converts a failed Starscream call into the NCCL result and records Starscream's message under
// the NCCL function's name (a restatement: a group that failed with Starscream's message reports
// the NCCL name too). `comm` (may be NULL) supplies an asynchronous failure's message.
ncclResult_t fromSsc(const char* fn, sscResult_t result, sscComm_t comm);

// ncclGetErrorString's table: NCCL's meanings, Starscream's debug variable.
const char* resultString(ncclResult_t result);

// Checks the datatype and returns its size in bytes (0 and an error for an unknown type).
ncclResult_t typeSize(const char* fn, ncclDataType_t type, size_t* bytes);

}  // namespace ssc::nccl

// Propagates a failing ncclResult_t to the caller.
#define NCCL_SHIM_CHECK(expr)                                 \
  do {                                                        \
    ncclResult_t nccl_shim_res_ = (expr);                     \
    if (nccl_shim_res_ != ncclSuccess) return nccl_shim_res_; \
  } while (0)
