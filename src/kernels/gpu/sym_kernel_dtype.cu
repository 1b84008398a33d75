// SPDX-License-Identifier: MIT
// One data type's symmetric-executor kernels (bulk and LL, every reduction kind and rank-count
// variant). CMake compiles this file once per sscDataType_t value with SSC_SYM_DTYPE set
// (cmake/GpuBackend.cmake), so the instantiations spread over the cores of a parallel build.
#include "src/kernels/gpu/sym_launch.cuh"

#ifndef SSC_SYM_DTYPE
#error "compile with -DSSC_SYM_DTYPE=<sscDataType_t value> (cmake/GpuBackend.cmake does)"
#endif

namespace ssc::gpu {

template <int kDtype>
int symLaunchForDtype(const SymArgs& args, int blocks, void* stream, bool ll) {
  using Tr = typename TraitsOf<kDtype>::T;
  hipStream_t s = static_cast<hipStream_t>(stream);
  return ll ? launchFor<LLLauncher, kLLThreads, Tr>(args, blocks, s)
            : launchFor<BulkLauncher, kSymThreads, Tr>(args, blocks, s);
}

// This translation unit's one instantiation; sym_kernel.cu calls it through the declaration.
template int symLaunchForDtype<SSC_SYM_DTYPE>(const SymArgs& args, int blocks, void* stream,
                                              bool ll);

}  // namespace ssc::gpu
