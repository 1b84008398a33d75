// SPDX-License-Identifier: MIT
// The plan kernel's FIFO signals and bounded waits, over its KernelArgs (plan_kernel.h): shared by
// the step runner (plan_kernel.cu) and the one-copy handshake (p2p_handshake.cuh). Device
// compilers only.
#pragma once

#include <cstdint>

#include "src/kernels/gpu/device_common.h"
#include "src/kernels/gpu/plan_kernel.h"
#include "src/platform/gpu_runtime.h"

namespace ssc::gpu {
namespace {

// FIFO signals (tails, heads) at the narrowest scope that covers every peer: device scope when
// all ranks share this GPU (MPS partitions meet in its L2), system scope otherwise (other GPUs,
// host-staged connections). A system-scope release waits for the writes to be visible to the
// host and other GPUs, which no peer on this GPU needs.
__device__ __forceinline__ uint64_t acquireSignal(const KernelArgs& a, const uint64_t* p) {
  return a.deviceScope ? sscLoadAcquireGpu(p) : sscLoadAcquireSys(p);
}
// fence: a full fence first, at the same scope (the tail, after the slot's size word).
__device__ __forceinline__ void releaseSignal(const KernelArgs& a, uint64_t* p, uint64_t v,
                                              bool fence) {
  if (a.deviceScope) {
    if (fence) __threadfence();
    sscStoreReleaseGpu(p, v);
  } else {
    if (fence) __threadfence_system();
    sscStoreReleaseSys(p, v);
  }
}

__device__ __forceinline__ ErrorSink errorSink(const KernelArgs& a) {
  return ErrorSink{a.errorDevice, a.errorHost, a.abortHost};
}

__device__ __forceinline__ void recordError(const KernelArgs& a, uint32_t code, int peer,
                                            int channel, uint64_t detail) {
  recordError(errorSink(a), code, peer, channel, detail);
}

// Polls until done() (thread 0 only). False when the wait timed out, the communicator was
// aborted or another block failed.
template <class Done>
__device__ bool boundedWait(const KernelArgs& a, Done done, int peer, int channel) {
  return boundedWait(errorSink(a), a.timeoutTicks, kKernelTimeout, done, peer, channel);
}

}  // namespace
}  // namespace ssc::gpu
