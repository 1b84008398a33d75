// SPDX-License-Identifier: MIT
// The fused decode exchange (attention_exchange.h): no collective call, no barrier. A sender
// stores its data into the receivers' mapped scratch and then, per row (partials) or per chunk
// (queries), a flag holding the call's epoch with a release store; a receiver polls the flags it
// needs (relaxed polls with a pause, then an acquire) and reads the data after them. Rows are
// pushed by blocks that never wait for a peer: the partial kernel's, or the first blocks (by
// start ticket) of the push-and-merge kernel, whose later blocks wait; a waiting block runs
// only once every pushing block of its rank runs or ran, so a grid that is not all resident
// cannot deadlock: every row a receiver waits for is pushed by a block that depends on nothing
// remote. Buffer reuse is safe by the epoch parity argument in attention_exchange_layout.h.
#include "src/ops/attention/attention_exchange.h"
#include "src/ops/attention/attention_exchange_layout.h"

#include <cstdint>

#include "src/platform/gpu_check.h"
#include "src/platform/gpu_runtime.h"
#include "src/ops/attention/attention_device.cuh"
#include "src/ops/attention/attention_finish.cuh"
#include "starscream/starscream.h"

namespace ssc::gpu {
namespace {

// Polls *f until it holds `epoch`. False when the wait passed the timeout (recorded in the
// host-mapped word), another wait already did, or the communicator was aborted.
__device__ bool waitFlag(const uint64_t* f, uint64_t epoch, const AttnWaitCtl& w) {
  uint64_t start = 0;
  for (uint32_t it = 1;; ++it) {
    // Relaxed polls with a pause, then one acquire: acquire loads back to back from the
    // waiting blocks of K ranks compete with the ranks still computing (the step with
    // replicated queries at 128K batch 16: 373-377 -> 326-336 us on the H200).
    if (sscLoadVolatile(f) != epoch) {
      sscPollPause();
    } else {
      const uint64_t v = w.deviceScope ? sscLoadAcquireGpu(f) : sscLoadAcquireSys(f);
      if (v == epoch) return true;
    }
    if ((it & 255u) == 0) {
      volatile uint32_t* t = w.timedOut;
      if (*t != 0) return false;
      // An aborted communicator ends the wait at once, as it ends the collectives' waits.
      if (w.abort != nullptr && *reinterpret_cast<const volatile uint32_t*>(w.abort) != 0)
        return false;
      const uint64_t now = sscGpuTimer();
      if (start == 0) {
        start = now;
      } else if (w.timeoutTicks != 0 && now - start > w.timeoutTicks) {
        *t = 1;
        __threadfence_system();
        return false;
      }
    }
  }
}

// Block i: chunk i of this rank's query slice into every rank's query area, one flag per
// (receiver, chunk), then the chunk i of every sender awaited here (so when the kernel ends,
// this rank holds every slice).
__global__ void attnQPushKernel(const SSC_GRID_CONSTANT AttnQPushParams p) {
  // Launched as a programmatic dependent (sscLaunchDependent): nothing before this wait.
  sscGridDependencyWait();
  const uint64_t epoch = callEpoch(p.epoch);
  const size_t qOffset = p.qOffset + attn::parityOf(epoch) * p.qParityBytes;
  const size_t lo = static_cast<size_t>(blockIdx.x) * p.chunkBytes;
  const size_t hi = lo + p.chunkBytes < p.bytes ? lo + p.chunkBytes : p.bytes;
  const char* src = static_cast<const char*>(p.q);
  const bool vec = ((reinterpret_cast<uintptr_t>(src + lo) | (hi - lo)) & 15u) == 0;
  for (int r = 0; r < p.nranks; ++r) {
    char* dst = p.peerBase[r] + qOffset + static_cast<size_t>(p.rank) * p.bytes;
    if (vec) {
      for (size_t i = lo + 16 * threadIdx.x; i < hi; i += 16 * blockDim.x)
        *reinterpret_cast<uint4*>(dst + i) = *reinterpret_cast<const uint4*>(src + i);
    } else {  // elements are 2 or 4 bytes: 2-byte pieces are always aligned
      for (size_t i = lo + 2 * threadIdx.x; i < hi; i += 2 * blockDim.x)
        *reinterpret_cast<uint16_t*>(dst + i) = *reinterpret_cast<const uint16_t*>(src + i);
    }
  }
  __syncthreads();  // the release below then covers every thread's stores (cumulativity)
  const int t = static_cast<int>(threadIdx.x);
  int ok = 1;
  if (t < p.nranks) {
    const size_t flag = p.qFlagOffset + attn::parityOf(epoch) * p.qFlagParityBytes +
                        static_cast<size_t>(blockIdx.x) * 8;
    releaseFlag(reinterpret_cast<uint64_t*>(p.peerBase[t] + flag + p.rank * p.qFlagStride), epoch,
                p.wait.deviceScope);
    ok = waitFlag(reinterpret_cast<const uint64_t*>(p.peerBase[p.rank] + flag + t * p.qFlagStride),
                  epoch, p.wait);
  }
  (void)__syncthreads_and(ok);
}

// The call's epoch, read once by each block of the call's last kernel (thread 0; others read
// it from *shared after a barrier). Once every block of the grid has read it, the last reader
// stores it as the counter's `done` (AttnEpochWord), for the next call's kernels, and resets
// the ticket count. *ticket: the block's place in the order blocks started (atomic), so that a
// block may wait for blocks with smaller tickets: they are running or done.
__device__ __forceinline__ void takeCall(AttnEpochWord* w, uint64_t* epoch, uint32_t* ticket) {
  if (threadIdx.x == 0) {
    const uint32_t blocks = gridDim.x * gridDim.y;
    *ticket = atomicAdd(&w->tickets, 1u);
    const uint64_t e = callEpoch(w);
    *epoch = e;
    __threadfence();                                 // the read above before the count below
    if (atomicAdd(&w->readers, 1u) == blocks - 1) {  // every block took its ticket and read e
      w->readers = 0;
      w->tickets = 0;
      *reinterpret_cast<volatile uint64_t*>(&w->done) = e;
    }
  }
  __syncthreads();
}

// Slot (b, j) of this rank's rows area, one thread per element: waits for the row of every
// sender (thread s polls sender s), then merges them with the sink as attnMergeKernel does. A
// timed-out wait writes NaN.
__device__ void mergeSlot(const AttnRecvMergeParams& p, int b, int j, uint64_t epoch, float* weight,
                          float* red) {
  const int t = static_cast<int>(threadIdx.x), h = p.firstHead + j, D = p.headDim;
  const size_t row = attn::rowSlot(b, p.outHeads, j);
  const size_t slot = attn::parityOf(epoch) * p.parityFloats + row * p.rowFloats;
  int ok = 1;
  if (t < p.nranks)
    ok = waitFlag(reinterpret_cast<const uint64_t*>(p.rows + t * p.senderStride + slot +
                                                    attn::flagFloatOf(D)),
                  epoch, p.wait);
  ok = __syncthreads_and(ok);
  __threadfence();  // the rows' loads below stay after the pollers' acquires
  const size_t o = row * D;
  if (!ok) {
    for (int e = t; e < D; e += blockDim.x)
      storeIo(p.out, o + e, p.outDtype, __int_as_float(0x7fc00000));
    if (t == 0 && p.lse != nullptr) p.lse[row] = __int_as_float(0x7fc00000);
    return;
  }
  const float lse = mergeRows(p.rows + slot, p.senderStride, p.nranks, D,
                              p.sinks != nullptr ? p.sinks[h] : negInf(), weight, red,
                              [&](int e, float v) { storeIo(p.out, o + e, p.outDtype, v); });
  if (t == 0 && p.lse != nullptr) p.lse[row] = lse;
}

// Block (b, slot j): mergeSlot. The call's last kernel where the partial kernel pushed its rows
// itself (one split a row group).
__global__ void attnRecvMergeKernel(const SSC_GRID_CONSTANT AttnRecvMergeParams p) {
  // Launched as a programmatic dependent (sscLaunchDependent): nothing before this wait.
  sscGridDependencyWait();
  extern __shared__ float weight[];  // [nranks]
  __shared__ float red[128];
  __shared__ uint64_t epoch;
  __shared__ uint32_t ticket;
  takeCall(p.epoch, &epoch, &ticket);
  mergeSlot(p, blockIdx.x, blockIdx.y, epoch, weight, red);
}

// The push and the merge on arrival in one launch (the call's last kernel where the partial
// kernel left split partials): the first batch x numQHeads blocks to start (by ticket) each
// merge one row's split-K partials, exactly as attnMergeKernel does, and store the row into the
// rows area of every rank that returns its head, then one flag per receiver; the blocks after
// them each take one slot of this rank's rows (mergeSlot). A block waits only once every push
// block of its rank has started, and push blocks never wait, so every row a rank waits for is
// pushed whatever the number of resident blocks. Saves the launch between a push kernel and a
// merge kernel (3.6-4.5 us as dependents under 8 MPS clients on the H200).
__global__ void attnPushMergeKernel(const SSC_GRID_CONSTANT AttnPushParams p,
                                    const SSC_GRID_CONSTANT AttnRecvMergeParams m) {
  // Launched as a programmatic dependent (sscLaunchDependent): nothing before this wait.
  sscGridDependencyWait();
  extern __shared__ float weight[];  // [max(splits, nranks)]
  __shared__ float red[128];
  __shared__ uint64_t epoch;
  __shared__ uint32_t ticket;
  takeCall(m.epoch, &epoch, &ticket);
  const uint32_t pushes = static_cast<uint32_t>(p.batch) * p.numQHeads;
  if (ticket < pushes) {
    const int b = static_cast<int>(ticket) / p.numQHeads,
              h = static_cast<int>(ticket) % p.numQHeads;
    const size_t at = (static_cast<size_t>(b) * p.numQHeads + h) * (p.headDim + 1);
    pushMergedRowAt(p.target, p.numQHeads, b, h, p.partials + at, p.splitStride, p.splits,
                    p.headDim, weight, red, epoch);
  } else {
    const int slot = static_cast<int>(ticket - pushes);
    mergeSlot(m, slot / m.outHeads, slot % m.outHeads, epoch, weight, red);
  }
}

}  // namespace

// The decode's kernels follow one another in the stream: each is a programmatic dependent of the
// one before (sscLaunchDependent), so its launch overlaps that kernel.
sscResult_t launchAttnQPush(const AttnQPushParams& p, void* stream) {
  void* args[] = {const_cast<AttnQPushParams*>(&p)};
  SSC_GPU_CHECK(sscLaunchDependent(reinterpret_cast<const void*>(&attnQPushKernel), dim3(p.chunks),
                                   dim3(256), args, 0, static_cast<hipStream_t>(stream)),
                "launching the exchange's query push kernel ({} chunks of {} bytes, {} ranks)",
                p.chunks, p.chunkBytes, p.nranks);
  return sscSuccess;
}

sscResult_t launchAttnPushMerge(const AttnPushParams& p, const AttnRecvMergeParams& m,
                                void* stream) {
  void* args[] = {const_cast<AttnPushParams*>(&p), const_cast<AttnRecvMergeParams*>(&m)};
  const int blocks = p.batch * p.numQHeads + m.batch * m.outHeads;
  const size_t weights =
      static_cast<size_t>(p.splits > m.nranks ? p.splits : m.nranks) * sizeof(float);
  SSC_GPU_CHECK(
      sscLaunchDependent(reinterpret_cast<const void*>(&attnPushMergeKernel), dim3(blocks),
                         dim3(p.headDim), args, weights, static_cast<hipStream_t>(stream)),
      "launching the exchange's push and merge kernel ({} blocks, {} splits, {} ranks)", blocks,
      p.splits, m.nranks);
  return sscSuccess;
}

sscResult_t launchAttnRecvMerge(const AttnRecvMergeParams& p, void* stream) {
  void* args[] = {const_cast<AttnRecvMergeParams*>(&p)};
  SSC_GPU_CHECK(sscLaunchDependent(reinterpret_cast<const void*>(&attnRecvMergeKernel),
                                   dim3(p.batch, p.outHeads), dim3(p.headDim), args,
                                   p.nranks * sizeof(float), static_cast<hipStream_t>(stream)),
                "launching the exchange's merge kernel (batch {}, {} heads, {} ranks)", p.batch,
                p.outHeads, p.nranks);
  return sscSuccess;
}

}  // namespace ssc::gpu
