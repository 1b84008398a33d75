// SPDX-License-Identifier: MIT
#include <string>

#include "src/core/env.h"
#include "src/core/log.h"
#include "src/device/backend.h"

namespace ssc {

#if !defined(STARSCREAM_HAVE_GPU)
// Builds without a GPU backend have only the host backend.
Backend* gpuBackendIfAvailable() { return nullptr; }
#else
Backend* gpuBackendIfAvailable();  // src/device/gpu/gpu_backend.cc
#endif

Backend* processBackend() {
  static Backend* chosen = [] {
    std::string want = env::getString("STARSCREAM_BACKEND");
    if (want == "host") return hostBackend();
    Backend* gpu = gpuBackendIfAvailable();
    if (gpu != nullptr) return gpu;
    if (want == "gpu")
      SSC_LOG(kWarn,
              "STARSCREAM_BACKEND=gpu but no GPU backend is built in or no device is "
              "visible; using the host backend");
    return hostBackend();
  }();
  return chosen;
}

}  // namespace ssc
