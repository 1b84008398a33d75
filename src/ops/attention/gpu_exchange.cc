// SPDX-License-Identifier: MIT
// The fused decode exchange's host side (gpu_exchange.h). Nothing here waits for the device:
// setup and destroy run at cache create and destroy; a call only fills kernel parameters.
#include "src/ops/attention/gpu_exchange.h"

#include <algorithm>
#include <cstring>

#include "src/api/api.h"
#include "src/device/gpu/gpu_launch_order.h"
#include "src/platform/gpu_check.h"
#include "src/platform/gpu_runtime.h"
#include "src/ops/attention/attention_exchange.h"

namespace ssc::attn {

sscResult_t FusedExchange::setup(sscKvCache* c, bool* enabled, std::string* why) {
  *enabled = false;
  sscComm* comm = c->comm;
  rank_ = comm->rank;
  if (comm->nranks > gpu::kAttnExchangeMaxPeers) {
    *why = fmt::format("{} ranks (at most {})", comm->nranks, gpu::kAttnExchangeMaxPeers);
    return sscSuccess;
  }
  if (comm->topo.nnodes != 1) {
    *why = "the communicator spans nodes (peers' memory cannot be mapped)";
    return sscSuccess;
  }
  layout_.nranks = comm->nranks;
  layout_.maxBatch = c->config.maxBatch;
  layout_.maxQHeads = c->config.maxQHeads;
  layout_.headDim = c->config.headDim;
  const size_t bytes = layout_.totalBytes();
  SSC_CHECK(c->backend->memAlloc(&scratch_, bytes));
  void* word = nullptr;
  SSC_GPU_CHECK(hipMalloc(&word, sizeof(gpu::AttnEpochWord)),
                "KV cache exchange: allocating its call counter");
  epoch_ = static_cast<gpu::AttnEpochWord*>(word);
  // Zeroed before any peer can see it: epochs start at 1, so no stale flag matches; the counter
  // too. On a private stream: a device-wide synchronize could wait for another communicator's
  // kernel that waits for a peer (see Upload in gpu_ops.cc).
  hipStream_t zero = nullptr;
  SSC_GPU_CHECK(hipStreamCreateWithFlags(&zero, hipStreamNonBlocking),
                "KV cache exchange: creating a stream to zero its scratch");
  hipError_t ze = hipMemsetAsync(scratch_, 0, bytes, zero);
  if (ze == hipSuccess) ze = hipMemsetAsync(epoch_, 0, sizeof(gpu::AttnEpochWord), zero);
  if (ze == hipSuccess) ze = hipStreamSynchronize(zero);
  const hipError_t destroyed = hipStreamDestroy(zero);
  if (ze != hipSuccess)
    return SSC_GPU_FAIL(ze, "KV cache exchange: zeroing its {} bytes of scratch", bytes);
  if (destroyed != hipSuccess)
    return SSC_GPU_FAIL(destroyed, "KV cache exchange: destroying the stream that zeroed it");
  SSC_CHECK(sscCommRegister(comm, scratch_, bytes, &regHandle_));
  comm->registrations.withMapped(scratch_, 0, true, [&](const char*, const Registration& reg) {
    for (void* p : reg.peerBases) peers_.push_back(static_cast<char*>(p));
  });
  if (peers_.empty()) {
    *why = "the backend could not map the peers' exchange scratch";
    return sscSuccess;
  }
  peers_[rank_] = static_cast<char*>(scratch_);
  // Device-scope flags when every rank runs on this GPU (MPS partitions), as the symmetric
  // executor decides (src/device/gpu/gpu_census.cc); AMD keeps system scope there too.
  deviceScope_ = 1;
  for (int q = 0; q < comm->nranks; ++q)
    if (comm->topo.ranks[q].gpu != comm->topo.ranks[rank_].gpu) deviceScope_ = 0;
#if defined(SSC_GPU_IS_HIP)
  deviceScope_ = 0;
#endif
  word = nullptr;
  SSC_GPU_CHECK(hipHostMalloc(&word, sizeof(uint32_t), hipHostMallocMapped),
                "KV cache exchange: allocating its mapped timeout word");
  timedOutHost_ = static_cast<uint32_t*>(word);
  *timedOutHost_ = 0;
  void* dev = nullptr;
  SSC_GPU_CHECK(hipHostGetDevicePointer(&dev, word, 0),
                "KV cache exchange: mapping its timeout word for the device");
  timedOutDevice_ = static_cast<uint32_t*>(dev);
  const double seconds = c->waits.timeoutSeconds;  // fixed when the cache was created
  const double ticks = seconds * sscGpuTimerTicksPerSecond(c->device);
  if (seconds > 0 && ticks < 9.0e18) timeoutTicks_ = static_cast<uint64_t>(ticks);
  // An sscCommAbort ends the exchange's waits at once, as it ends the collectives'.
  abort_ = c->backend->deviceAbortWord(comm);
  *enabled = true;
  return sscSuccess;
}

void FusedExchange::destroy(sscKvCache* c) {
  if (regHandle_ != nullptr && commIsLive(c->comm)) (void)sscCommDeregister(c->comm, regHandle_);
  regHandle_ = nullptr;
  if (scratch_ != nullptr) (void)c->backend->memFree(scratch_);
  scratch_ = nullptr;
  // destroy returns nothing: a free that fails leaves nothing for the cache's owner to do.
  if (epoch_ != nullptr) (void)hipFree(epoch_);
  epoch_ = nullptr;
  if (timedOutHost_ != nullptr) (void)hipHostFree(timedOutHost_);  // as hipFree above
  timedOutHost_ = nullptr;
}

sscResult_t FusedExchange::begin(const char* fn) const {
  if (*reinterpret_cast<volatile uint32_t*>(timedOutHost_) != 0)
    return fail(sscTimeout,
                "{}: an earlier decode on this cache waited for a peer's rows past "
                "STARSCREAM_TIMEOUT (a rank skipped a call?); the cache's exchange is out of "
                "step: destroy it",
                fn);
  return sscSuccess;
}

sscResult_t FusedExchange::gatherQ(const void* q, size_t sliceBytes, void* stream,
                                   const void** gathered, size_t* parityBytes,
                                   const gpu::AttnEpochWord** epoch) {
  gpu::AttnQPushParams p{};
  p.q = q;
  p.bytes = sliceBytes;
  const QChunks ch = qChunks(sliceBytes);
  p.chunks = ch.chunks;
  p.chunkBytes = ch.chunkBytes;
  p.nranks = layout_.nranks;
  p.rank = rank_;
  for (int r = 0; r < layout_.nranks; ++r) p.peerBase[r] = peers_[r];
  p.qOffset = layout_.qOffsetBytes(0);
  p.qParityBytes = layout_.qParityBytes();
  p.qFlagOffset = layout_.qFlagOffsetBytes(0, 0, 0);
  p.qFlagStride = layout_.qFlagOffsetBytes(0, 1 % layout_.nranks, 0) - p.qFlagOffset;
  p.qFlagParityBytes = layout_.qFlagOffsetBytes(1, 0, 0) - p.qFlagOffset;
  p.epoch = epoch_;
  p.wait = {timedOutDevice_, timeoutTicks_, deviceScope_, abort_};
  *gathered = static_cast<char*>(scratch_) + p.qOffset;
  *parityBytes = p.qParityBytes;
  *epoch = epoch_;
  SSC_CHECK(gpu::launchAttnQPush(p, stream));
  return sscSuccess;
}

void FusedExchange::pushTarget(const DecodeArgs& a, gpu::AttnPushTarget* t) const {
  const int n = layout_.nranks;
  *t = gpu::AttnPushTarget{};
  t->nranks = n;
  t->rank = rank_;
  t->outSharded = a.outSharded ? 1 : 0;
  for (int r = 0; r < n; ++r)
    t->peerRows[r] = reinterpret_cast<float*>(peers_[r]) + layout_.rowOffset(0, 0, 0);
  t->parityFloats = layout_.rowOffset(1, 0, 0) - layout_.rowOffset(0, 0, 0);
  t->senderStride = layout_.rowOffset(0, 1 % n, 0) - layout_.rowOffset(0, 0, 0);
  t->rowFloats = layout_.rowFloats();
  t->epoch = epoch_;
  t->deviceScope = deviceScope_;
}

// The merge on arrival of this call's slots (its kernel parameters).
gpu::AttnRecvMergeParams FusedExchange::mergeParams(const sscKvCache* c,
                                                    const DecodeArgs& a) const {
  const int n = layout_.nranks, H = a.numQHeads;
  gpu::AttnRecvMergeParams m{};
  m.rows = static_cast<const float*>(scratch_) + layout_.rowOffset(0, 0, 0);
  m.parityFloats = layout_.rowOffset(1, 0, 0) - layout_.rowOffset(0, 0, 0);
  m.senderStride = layout_.rowOffset(0, 1 % n, 0) - layout_.rowOffset(0, 0, 0);
  m.rowFloats = layout_.rowFloats();
  m.nranks = n;
  m.batch = a.batch;
  m.numQHeads = H;
  m.outHeads = a.outSharded ? H / n : H;
  m.firstHead = a.outSharded ? rank_ * m.outHeads : 0;
  m.headDim = c->config.headDim;
  m.sinks = a.sinks;
  m.out = a.out;
  m.outDtype = a.ioType;
  m.lse = a.lse;
  m.epoch = epoch_;
  m.wait = {timedOutDevice_, timeoutTicks_, deviceScope_, abort_};
  return m;
}

sscResult_t FusedExchange::pushAndMerge(const sscKvCache* c, const DecodeArgs& a,
                                        const float* partials, size_t splitStride, int splits,
                                        void* stream) {
  gpu::AttnPushParams p{};
  p.partials = partials;
  p.splitStride = splitStride;
  p.splits = splits;
  p.batch = a.batch;
  p.numQHeads = a.numQHeads;
  p.headDim = c->config.headDim;
  pushTarget(a, &p.target);
  SSC_CHECK(gpu::launchAttnPushMerge(p, mergeParams(c, a), stream));
  return sscSuccess;
}

sscResult_t FusedExchange::mergeArrived(const sscKvCache* c, const DecodeArgs& a, void* stream) {
  SSC_CHECK(gpu::launchAttnRecvMerge(mergeParams(c, a), stream));
  return sscSuccess;
}

}  // namespace ssc::attn
