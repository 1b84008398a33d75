// SPDX-License-Identifier: MIT
// Device-side pieces both executors share (the FIFO plan kernel and the symmetric kernels):
// recording a kernel error for the host, bounded waits, and a traced call's clock stamps.
// Device compilers only.
#pragma once

#include <cstdint>

#include "src/platform/gpu_runtime.h"
#include "src/kernels/gpu/kernel_timing.h"
#include "src/kernels/gpu/plan_kernel.h"

namespace ssc::gpu {

// Where a kernel reports failure: a device word every wait polls (so one failing block stops the
// others) and a host-mapped copy the backend's watcher thread reads. The host-mapped abort word
// goes the other way: the host sets it when the communicator is aborted, so that waits on a peer
// that will never come end now rather than after STARSCREAM_TIMEOUT.
struct ErrorSink {
  uint32_t* device;
  uint32_t* host;         // {code, peer, channel, detail}
  const uint32_t* abort;  // host-mapped, non-zero once aborted
};

// The host writes the abort word while the kernel runs, so the load must reach host memory each
// time rather than a cached copy: a system-scope atomic on AMD (as RCCL reads its abort flag), a
// volatile load on NVIDIA, where mapped host memory is not cached by the GPU (as NCCL's).
__device__ __forceinline__ uint32_t loadAbortWord(const uint32_t* p) {
#if defined(SSC_GPU_IS_HIP)
  return __hip_atomic_load(p, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);
#else
  return *reinterpret_cast<const volatile uint32_t*>(p);
#endif
}

// First error wins. The detail words are written before the code, with a system fence between,
// so a host that sees the code sees its details.
__device__ inline void recordError(ErrorSink e, uint32_t code, int peer, int channel,
                                   uint64_t detail) {
  if (atomicCAS(e.device, 0u, code) == 0u) {
    volatile uint32_t* h = e.host;
    h[1] = static_cast<uint32_t>(peer);
    h[2] = static_cast<uint32_t>(channel);
    h[3] = static_cast<uint32_t>(detail);
    __threadfence_system();
    h[0] = code;
  }
}

// A one-copy point-to-point mismatch (kKernelP2pMismatch): the words plan_kernel.h describes.
__device__ inline void recordP2pMismatch(ErrorSink e, int peer, uint32_t kind, uint32_t index,
                                         uint64_t sent, uint64_t expected) {
  if (atomicCAS(e.device, 0u, kKernelP2pMismatch) == 0u) {
    volatile uint32_t* h = e.host;
    h[1] = static_cast<uint32_t>(peer);
    h[2] = kind;
    h[3] = index;
    h[4] = static_cast<uint32_t>(sent);
    h[5] = static_cast<uint32_t>(sent >> 32);
    h[6] = static_cast<uint32_t>(expected);
    h[7] = static_cast<uint32_t>(expected >> 32);
    __threadfence_system();
    h[0] = kKernelP2pMismatch;
  }
}

// Polls until done(). False when the wait timed out (recorded as `timeoutCode` against `peer`),
// the communicator was aborted (recorded as kKernelAborted against `peer`, so the host reports an
// abort rather than a timeout or a mismatch), or another block/thread recorded an error. The error
// word, the abort word and the timer are read every 256 polls only: they cost a load each (the
// abort word one across the host link), and the common case is a short wait.
template <class Done>
__device__ bool boundedWait(ErrorSink e, uint64_t timeoutTicks, uint32_t timeoutCode, Done done,
                            int peer, int channel) {
  uint64_t start = 0;
  for (uint32_t iter = 1;; ++iter) {
    if (done()) return true;
    if ((iter & 255u) == 0) {
      if (*reinterpret_cast<volatile uint32_t*>(e.device) != 0) return false;
      if (loadAbortWord(e.abort) != 0) {
        recordError(e, kKernelAborted, peer, channel, 0);
        return false;
      }
      const uint64_t now = sscGpuTimer();
      if (start == 0)
        start = now;
      else if (timeoutTicks != 0 && now - start > timeoutTicks) {
        recordError(e, timeoutCode, peer, channel, 0);
        return false;
      }
    }
  }
}

// A traced call's stamps (kernel_timing.h), declared first thing in a kernel: the constructor
// writes the start (block 0, one thread, in launches marked kStampStart), the destructor, which
// runs at every return, folds the block's end into the slot and counts the block out (in launches
// marked kStampEnd). The destructor's bar.sync needs every thread of the block to leave the
// kernel together: in the kernels that declare one, every return follows a block-wide vote
// (__syncthreads_and, or a flag in shared memory read after a bar.sync). KernelClock<false> is
// none at all, for a kernel instantiated apart for traced calls (symPushKernel).
template <bool kTimed = true>
class KernelClock {
 public:
  __device__ __forceinline__ explicit KernelClock(const KernelTiming& t) : t_(t) {
    if constexpr (kTimed) {
      if (t_.slot != nullptr && (t_.marks & kStampStart) != 0 && blockIdx.x == 0 &&
          threadIdx.x == 0)
        *reinterpret_cast<volatile uint64_t*>(&t_.slot->start) =
            packStamp(t_.gen, sscGpuTimer(), t_.base);
    }
  }
  __device__ __forceinline__ ~KernelClock() {
    if constexpr (kTimed) {
      if (t_.slot == nullptr || (t_.marks & kStampEnd) == 0) return;
      __syncthreads();  // the block's work is done
      if (threadIdx.x != 0) return;
      // Two reductions whose answers are not used, so the thread issues them and leaves: the
      // block's end into the maximum, then the block's share of the count. No fence: the stamp
      // times the blocks' instructions, not when their stores become visible, and a fence, like
      // an atomic that answers, would hold every block for a round trip to memory. Nothing orders
      // the two words' arrival either; the host reads the end from a copy made after the one that
      // showed the count complete (gpu_timing.cc).
      atomicMax(reinterpret_cast<unsigned long long*>(&t_.slot->end),
                static_cast<unsigned long long>(packStamp(t_.gen, sscGpuTimer(), t_.base)));
      atomicAdd(reinterpret_cast<unsigned long long*>(&t_.slot->done),
                static_cast<unsigned long long>(doneShare(blockIdx.x, gridDim.x)));
    }
  }
  KernelClock(const KernelClock&) = delete;
  KernelClock& operator=(const KernelClock&) = delete;

 private:
  const KernelTiming& t_;
};

}  // namespace ssc::gpu
