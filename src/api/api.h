// SPDX-License-Identifier: MIT
// Shared by the C entry points: export macro, argument checks and the call guard that turns any
// stray C++ exception into sscInternalError so nothing unwinds across the C boundary.
#pragma once

#include <utility>

#include "src/comm/comm.h"
#include "src/core/errors.h"
#include "src/core/guard.h"
#include "src/kernels/host/reduce.h"
#include "starscream/starscream.h"

// The definitions of the public functions: C linkage and the public header's export macro (the
// library is built with hidden visibility, so only these are exported).
#define SSC_API extern "C" SSC_EXPORT

namespace ssc {

template <typename F>
sscResult_t guarded(const char* fn, F&& body) noexcept {
  return catchAll(std::forward<F>(body), [fn](Caught kind, const char* what) {
    if (kind == Caught::kOutOfMemory) return fail(sscSystemError, "{}: out of host memory", fn);
    if (kind == Caught::kException) return SSC_INTERNAL("{}: unexpected exception: {}", fn, what);
    return SSC_INTERNAL("{}: unexpected exception", fn);
  });
}

// comm is live, initialised and not failed.
sscResult_t checkComm(const char* fn, sscComm* comm, bool allowFailed = false);
sscResult_t checkDtype(const char* fn, sscDataType_t type);
// Builds the reduction the executors apply for `op` on comm (validates it).
sscResult_t resolveOp(const char* fn, sscComm* comm, sscRedOp_t op, sscDataType_t type,
                      ReduceSpec* out);
// count * elemSize * factor fits in size_t and in a signed 64-bit range.
sscResult_t checkCount(const char* fn, size_t count, size_t elemSize, size_t factor);
sscResult_t checkRank(const char* fn, const char* what, int rank, int nranks);
sscResult_t checkPtr(const char* fn, const char* what, const void* p, size_t count);
// The backend's kernels can touch [p, p + bytes) as given (Backend::checkAccessible): a GPU
// refuses pageable host memory before any kernel faults on it. Nothing to check without bytes.
sscResult_t checkAccessible(const char* fn, sscComm* comm, const char* what, const void* p,
                            size_t bytes);

}  // namespace ssc
