// SPDX-License-Identifier: MIT
// The barrier protocol of the zero-copy kernels (sym_kernel.h): release/acquire flags per
// (rank, block) in each rank's control segment, numbered on the device, a grid barrier for middle
// barriers, and the call hash every barrier checks so ranks running different calls fail instead
// of mixing data.
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
  if (deviceScope)
    sscStoreReleaseGpu(p, v);
  else
    sscStoreReleaseSys(p, v);
}

__device__ __forceinline__ SymBarrierSlot* slotOf(const SymArgs& a, int rank, int block) {
  return reinterpret_cast<SymBarrierSlot*>(a.ctrl[rank] + SymCtrlLayout::kBarriers) + block;
}

__device__ __forceinline__ uint64_t* ownWord(const SymArgs& a, uint64_t offset) {
  return reinterpret_cast<uint64_t*>(a.ctrl[a.rank] + offset);
}

// The number of barriers block blockIdx.x of this rank has passed on this communicator before
// this launch: its own slot's epoch (sym_kernel.h). Every thread calls it at the start of the
// launch, before the first peerBarrier (whose bar.sync orders these reads before thread 0's
// first store to the slot).
__device__ __forceinline__ uint64_t barrierBase(const SymArgs& a) {
  return sscLoadVolatile(&slotOf(a, a.rank, blockIdx.x)->epoch);
}

// All blocks of this launch have finished their earlier steps (middle barriers only). A
// sense-reversing grid barrier: each block reads the generation, then arrives; the last to
// arrive resets the arrival counter and bumps the generation, which releases the others. Nothing
// is carried between launches (the counter is 0 whenever no grid sync is in progress), so the
// host tracks nothing and a replayed graph is right whatever ran in between.
__device__ bool gridSync(const SymArgs& a) {
  __syncthreads();
  int ok = 1;
  if (threadIdx.x == 0) {
    auto* arrive = reinterpret_cast<unsigned long long*>(ownWord(a, SymCtrlLayout::kGridArrive));
    uint64_t* generation = ownWord(a, SymCtrlLayout::kGridGeneration);
    const uint64_t gen = sscLoadVolatile(generation);
    __threadfence();  // the block's work (bar.sync above) and the read before the arrival
    if (atomicAdd(arrive, 1ull) + 1 == gridDim.x) {
      atomicExch(arrive, 0ull);
      __threadfence();  // the reset before the release: the next sync's arrivals count from 0
      atomicAdd(reinterpret_cast<unsigned long long*>(generation), 1ull);
    } else {
      ok = boundedWait(
          sinkOf(a), a.timeoutTicks, kKernelTimeout,
          [&] { return sscLoadVolatile(generation) != gen; }, -1, 0);
    }
    __threadfence();
  }
  return __syncthreads_and(ok) != 0;
}

// Block blockIdx.x meets block blockIdx.x of every peer at barrier number `epoch`
// (barrierBase() + k at the launch's k-th barrier, k from 1).
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
    ok = boundedWait(
        sinkOf(a), a.timeoutTicks, kKernelTimeout,
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
