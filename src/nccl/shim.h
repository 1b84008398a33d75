// SPDX-License-Identifier: MIT
// Shared by every file of the NCCL shim: the platform's own nccl.h or rccl.h (found and probed by
// NcclFeatures.cmake), the export macro, and the guard that keeps C++ exceptions from crossing
// the C ABI.
#pragma once

#include <utility>

#include "nccl_features.h"
#include SSC_NCCL_VENDOR_HEADER
#include "src/core/guard.h"
#include "src/nccl/core_link.h"
#include "starscream/starscream.h"

namespace ssc::nccl {

// The stream type in the vendor's prototypes.
#if SSC_NCCL_IS_RCCL
using VendorStream = hipStream_t;
#else
using VendorStream = cudaStream_t;
#endif

}  // namespace ssc::nccl

// Declares an exported entry point the way NCCL's own NCCL_API does: nccl<F> is a weak
// definition and pnccl<F> an alias of it, so a profiling library may define nccl<F> itself and
// still reach the implementation through pnccl<F>. Follow it with the definition of nccl<F>.
#define NCCL_SHIM_API(ret, func, ...)                                             \
  extern "C" __attribute__((visibility("default"))) __attribute__((alias(#func))) \
  ret p##func(__VA_ARGS__);                                                       \
  extern "C" __attribute__((visibility("default"))) __attribute__((weak)) ret func(__VA_ARGS__)

namespace ssc::nccl {

// errors.cc: the result (and message) of an exception caught in `fn`; the answer of every call
// when libstarscream.so does not serve the shim's internal interface (said once on stderr).
ncclResult_t guardFailure(const char* fn, Caught kind, const char* what) noexcept;
ncclResult_t coreMismatch();

// Runs an entry point's body; any exception becomes an error code with a message (the library's
// exception barrier, src/core/guard.h, with NCCL's result codes).
template <typename F>
ncclResult_t guarded(const char* fn, F&& body) noexcept {
  if (!coreLinked()) return coreMismatch();
  return catchAll(std::forward<F>(body),
                  [fn](Caught kind, const char* what) { return guardFailure(fn, kind, what); });
}

}  // namespace ssc::nccl
