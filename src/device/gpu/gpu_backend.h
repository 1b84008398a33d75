// SPDX-License-Identifier: MIT
// The GPU backend (HIP on AMD, CUDA on NVIDIA through gpu_runtime.h): device memory from the
// runtime, streams are the runtime's (sscStream_t = hipStream_t / cudaStream_t, NULL = the
// default stream), connections are IPC-mapped FIFOs (gpu_connections.h) and every Work is one
// kernel launch of the plan executor (src/kernels/gpu/plan_kernel.cu).
#pragma once

#include "src/device/backend.h"

namespace ssc {

// The process's GPU backend when the runtime sees at least one device; nullptr otherwise (no
// device, no driver), so CPU-only machines fall back to the host backend.
Backend* gpuBackendIfAvailable();

}  // namespace ssc
