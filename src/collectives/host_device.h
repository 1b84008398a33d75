// SPDX-License-Identifier: MIT
// SSC_HOST_DEVICE: a function both executors call, the host one compiled by g++ and the GPU one
// by nvcc or hipcc, so that plan arithmetic is written once (p2p_wire.h, step_semantics.h). The
// headers that use it include nothing of a GPU runtime, so CI tests them on the host.
#pragma once

#if defined(__CUDACC__) || defined(__HIPCC__)
// Not __forceinline__: HIP defines that in its runtime headers, which this header must not need.
#define SSC_HOST_DEVICE __host__ __device__ inline
#else
#define SSC_HOST_DEVICE inline
#endif
