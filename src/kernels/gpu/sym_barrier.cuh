// The barrier protocol of the zero-copy kernels: release/acquire flags per (rank, block) in each
// rank's control segment, a grid-wide counter for middle barriers, and the call hash every
// barrier checks so ranks running different calls fail instead of mixing data.
// Device code of the symmetric executor, included only by sym_kernel.cu (hence the unnamed
// namespace: one copy of each function per launch file).
#pragma once

#include <cstdint>

#include "src/platform/gpu_runtime.h"
#include "src/kernels/gpu/device_common.h"
#include "src/kernels/gpu/sym_kernel.h"

namespace ssc::gpu {
namespace {

__device__ __forceinline__ ErrorSink sinkOf(const SymArgs& a) {
  return ErrorSink{a.errorDevice, a.errorHost, a.abortHost};
}

__device__ __forceinline__ uint64_t loadAcquire(const uint64_t* p, bool deviceScope) {
  return deviceScope ? sscLoadAcquireGpu(p) : sscLoadAcquireSys(p);
}

__device__ __forceinline__ void storeRelease(uint64_t* p, uint64_t v, bool deviceScope) {
  if (deviceScope) sscStoreReleaseGpu(p, v);
  else sscStoreReleaseSys(p, v);
}

__device__ __forceinline__ SymBarrierSlot* slotOf(const SymArgs& a, int rank, int block) {
  return reinterpret_cast<SymBarrierSlot*>(a.ctrl[rank] + SymCtrlLayout::kBarriers) + block;
}

// All blocks of this launch have finished their earlier steps (middle barriers only). The host
// tracks the counter, so `target` is exact even though launches differ in grid size.
__device__ bool gridSync(const SymArgs& a, uint64_t target) {
  __syncthreads();
  int ok = 1;
  if (threadIdx.x == 0) {
    uint64_t* ctr = reinterpret_cast<uint64_t*>(a.ctrl[a.rank] + SymCtrlLayout::kGridCounter);
    __threadfence();
    atomicAdd(reinterpret_cast<unsigned long long*>(ctr), 1ull);
    ok = boundedWait(sinkOf(a), a.timeoutTicks, kKernelTimeout,
                     [&] { return sscLoadVolatile(ctr) >= target; }, -1, 0);
    __threadfence();
  }
  return __syncthreads_and(ok) != 0;
}

// Block blockIdx.x meets block blockIdx.x of every peer at barrier number `epoch`.
__device__ bool peerBarrier(const SymArgs& a, uint64_t epoch) {
  const bool dev = a.deviceScope != 0;
  // bar.sync first: the release below then covers every thread's earlier stores (cumulativity).
  __syncthreads();
  if (threadIdx.x == 0) {
    SymBarrierSlot* mine = slotOf(a, a.rank, blockIdx.x);
    reinterpret_cast<volatile uint32_t*>(mine->hash)[epoch & 1] = a.callHash;
    storeRelease(&mine->epoch, epoch, dev);
  }
  int ok = 1;
  const int q = static_cast<int>(threadIdx.x);
  if (q < a.nranks && q != a.rank) {  // one thread per peer: all n - 1 polls run at once
    const SymBarrierSlot* ps = slotOf(a, q, blockIdx.x);
    uint64_t seen = 0;
    ok = boundedWait(sinkOf(a), a.timeoutTicks, kKernelTimeout,
                     [&] { return (seen = loadAcquire(&ps->epoch, dev)) >= epoch; }, q,
                     static_cast<int>(blockIdx.x));
    if (ok && seen == epoch) {
      const uint32_t h = reinterpret_cast<const volatile uint32_t*>(ps->hash)[epoch & 1];
      if (h != a.callHash) {
        recordError(sinkOf(a), kKernelCallMismatch, q, static_cast<int>(blockIdx.x), h);
        ok = 0;
      }
    }
  }
  // The acquiring threads' bar.sync makes the peers' released writes visible to the whole block.
  return __syncthreads_and(ok) != 0;
}

}  // namespace
}  // namespace ssc::gpu
