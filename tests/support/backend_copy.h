// SPDX-License-Identifier: MIT
// Copies between the program's host memory and a buffer from sscMemAlloc, whichever backend
// made it: device memory on a GPU backend, host memory on the host backend. Lets an mpirun test
// program pass the library's own buffers to collectives (a GPU kernel cannot touch a
// std::vector's memory) and run unchanged on both backends, under tools/emulate/partition-run.sh
// as under ctest. Built with STARSCREAM_HAVE_GPU (and the backend's SSC_GPU_DEFINE), copies go
// through the runtime with hipMemcpyDefault: unified addressing tells device memory from host
// memory (the host backend's, STARSCREAM_BACKEND=host on a GPU machine). Without a usable
// runtime the host backend is the only one and memcpy is complete (perf/common/device_buffer.cc
// does the same for the perf programs).
#pragma once

#include <cstddef>
#include <cstring>

#if defined(STARSCREAM_HAVE_GPU)
#include "src/platform/gpu_runtime.h"
#endif

namespace ssc::test {

// Copies `bytes` from src to dst, either of them from sscMemAlloc; returns once the copy has
// landed (the next collective, on any stream, reads it). False when the runtime failed.
inline bool copyBuffer(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return true;
#if defined(STARSCREAM_HAVE_GPU)
  static const bool runtime = [] {
    int n = 0;
    const bool ok = hipGetDeviceCount(&n) == hipSuccess && n > 0;
    if (!ok) (void)hipGetLastError();
    return ok;
  }();
  if (runtime)
    return hipMemcpy(dst, src, bytes, hipMemcpyDefault) == hipSuccess &&
           hipDeviceSynchronize() == hipSuccess;
#endif
  std::memcpy(dst, src, bytes);
  return true;
}

}  // namespace ssc::test
