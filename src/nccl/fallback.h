// SPDX-License-Identifier: MIT
// The optional vendor fallback. With STARSCREAM_NCCL_FALLBACK=<path of libnccl.so.2 or
// librccl.so.1>, a process that Starscream cannot serve forwards every nccl* call to that
// library, loaded with dlopen(RTLD_NOW | RTLD_LOCAL) so it never enters the global namespace.
//
// The rule (docs/nccl-shim.md, "Fallback"): Starscream cannot serve a process whose Starscream
// backend is the host backend (no GPU backend built in, or STARSCREAM_BACKEND=host), because
// such a program hands it device buffers the CPU cannot touch. Then the vendor library creates
// every communicator, whole, and serves every call on it; a call never mixes the two libraries
// on one communicator. Otherwise Starscream serves everything and what it cannot do returns
// ncclInvalidUsage. The decision is made once per process; unique ids carry it (kVendorIdTag)
// so that ranks that disagree fail at init with a message instead of hanging.
#pragma once

#include "src/nccl/errors.h"

namespace ssc::nccl {

// True when this process forwards every call to the vendor library.
bool vendorMode();

// The vendor library's `name`, or NULL (not loaded, or it lacks the symbol).
void* vendorSymbol(const char* name);

// The error for a forwarded call whose vendor function is missing or could not be loaded.
ncclResult_t vendorMissing(const char* fn);

// The last byte of a 128-byte unique id: 0 in Starscream's ids (and in NCCL's, which use far
// fewer bytes); set to this in ids made by the vendor library through the shim.
constexpr int kIdTagByte = NCCL_UNIQUE_ID_BYTES - 1;
constexpr char kVendorIdTag = 'V';

template <typename Fn, typename... Args>
ncclResult_t forwardToVendor(const char* fn, Fn f, Args... args) {
  if (f == nullptr) return vendorMissing(fn);
  return f(args...);
}

}  // namespace ssc::nccl

// In vendor mode, returns the vendor library's answer to this call. Used first thing in every
// entry point whose arguments the vendor can take unchanged.
#define SSC_NCCL_FORWARD(name, ...)                                                      \
  do {                                                                                   \
    if (::ssc::nccl::vendorMode()) {                                                     \
      static const auto vendor_fn_ =                                                     \
          reinterpret_cast<decltype(&::name)>(::ssc::nccl::vendorSymbol(#name));         \
      return ::ssc::nccl::forwardToVendor(#name, vendor_fn_ __VA_OPT__(, ) __VA_ARGS__); \
    }                                                                                    \
  } while (0)
