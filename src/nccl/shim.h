// SPDX-License-Identifier: MIT
// Shared by every file of the NCCL shim: the platform's own nccl.h or rccl.h (found and probed by
// NcclFeatures.cmake), the export macro, and the guard that keeps C++ exceptions from crossing
// the C ABI.
#pragma once

#include <exception>
#include <new>

#include "nccl_features.h"
#include SSC_NCCL_VENDOR_HEADER
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

ncclResult_t guardFailure(const char* fn, const std::exception* e, bool outOfMemory) noexcept;

// Runs an entry point's body; any exception becomes an error code with a message.
template <typename F>
ncclResult_t guarded(const char* fn, F&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc& e) {
    return guardFailure(fn, &e, true);
  } catch (const std::exception& e) {
    return guardFailure(fn, &e, false);
  } catch (...) {
    return guardFailure(fn, nullptr, false);
  }
}

}  // namespace ssc::nccl
