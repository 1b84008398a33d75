// SPDX-License-Identifier: MIT
// The sharded KV cache object behind sscKvCache_t, and the backend-specific halves of its
// operations: the host backend's (host_ops.cc, CPU in fp32) and the GPU backend's (gpu_ops.cc,
// kernels in src/ops/attention/attention_kernel.cu).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "src/core/futex_wait.h"
#include "src/ops/attention/paging.h"
#include "starscream/starscream_ops.h"

struct sscComm;

namespace ssc {
class Backend;
}

namespace ssc::attn {

class GpuCacheState;  // gpu_ops.cc: upload buffers, events
class PeerPools;      // peer_pools.h: the peers' pools and page tables (prefill's KV side)

// A decode call's arguments, validated (attention_api.cc).
struct DecodeArgs {
  const void* q;
  sscDataType_t ioType;
  int numQHeads;
  int batch;
  const int32_t* seqIds;
  float scale;
  const float* sinks;
  int window;
  bool qSharded;
  bool outSharded;
  void* out;
  float* lse;
};

// A prefill call's arguments, validated (attention_api.cc). lengths[b]: sequence seqIds[b]'s
// current length; chunkTokens: tokens per exchange round (the scratch holds that many rows).
struct PrefillArgs {
  const void* q;
  sscDataType_t ioType;
  int numQHeads;
  int batch;
  const int32_t* seqIds;
  const int32_t* cuSeqlens;
  float scale;
  const float* sinks;
  int window;
  bool outSharded;
  void* out;
  float* lse;
  std::vector<int64_t> lengths;
  int64_t chunkTokens;
};

}  // namespace ssc::attn

struct sscKvCache {
  static constexpr uint64_t kMagic = 0x5353434b56434348ull;
  uint64_t magic = kMagic;
  sscComm* comm = nullptr;
  // Kept apart from comm so destroy frees with the right backend and device even if the
  // communicator went first.
  ssc::Backend* backend = nullptr;
  int device = -1;
  sscKvCacheConfig_t config{};
  bool onGpu = false;  // the communicator's backend is a GPU backend
  std::unique_ptr<ssc::attn::PageTable> table;
  size_t kvElemBytes = 2;
  // Pools, [page][kv head][row][headDim] of config.dtype, from the backend's memAlloc.
  void* kPool = nullptr;
  void* vPool = nullptr;
  // Exchange scratch (backend memory): the gathered query slices, [nranks][maxBatch *
  // maxQHeads * headDim] elements of up to 4 bytes, and the partials, [nranks][maxBatch]
  // [maxQHeads][headDim + 1] floats (a call uses the leading batch * heads of each block).
  void* qGather = nullptr;
  float* partials = nullptr;
  ssc::attn::GpuCacheState* gpu = nullptr;
  // The peers' pools mapped here and their page tables mirrored (null unless the prefill may
  // read them in place: STARSCREAM_ATTN_PREFILL not "partials", one node, several ranks).
  ssc::attn::PeerPools* peers = nullptr;
  int prefillMode = 0;  // ssc::attn::PrefillMode, from STARSCREAM_ATTN_PREFILL at create
  // How long the fused exchange's waits on the peers may take: STARSCREAM_TIMEOUT as
  // sscKvCacheCreate found it (read then, once, like every setting of the cache).
  ssc::WaitLimits waits;
  std::vector<ssc::attn::TokenSlot> slots;  // reused by appends
};

namespace ssc::attn {

// Tokens a prefill exchanges per round: the scratch holds maxBatch * maxQHeads rows.
inline int64_t prefillChunkTokens(const sscKvCache* c, int heads) {
  const int64_t rows = static_cast<int64_t>(c->config.maxBatch) * c->config.maxQHeads;
  return rows / heads > 0 ? rows / heads : 1;
}
// Floats in one rank's block of partials for this call: batch x heads x (headDim + 1).
inline size_t partialCount(const sscKvCache* c, int batch, int heads) {
  return static_cast<size_t>(batch) * heads * (c->config.headDim + 1);
}
// First position sequence `seq` attends to under `window` (0: all).
inline int64_t windowStart(const sscKvCache* c, int seq, int window) {
  const int64_t length = c->table->length(seq);
  return window > 0 && length > window ? length - window : 0;
}

// Allocates / frees the pools and the exchange scratch with the cache's backend (the GPU half
// calls them with the cache's device current).
sscResult_t allocBuffers(sscKvCache* c);
// After allocBuffers, collective: maps the peers' pools (c->peers) unless the prefill mode is
// partials or they cannot be mapped (then c->peers stays null; logged at INFO).
sscResult_t setupPeerPools(sscKvCache* c);
// Ranks whose pools a cache can map (the prefill kernel's pool table is per rank).
constexpr int kMaxPoolRanks = 64;
void freeBuffers(sscKvCache* c);

// Host backend: stores this rank's tokens (c->slots filled by the page table) / runs a decode.
sscResult_t hostAppend(sscKvCache* c, int numTokens, const void* k, const void* v,
                       sscStream_t stream);
sscResult_t hostDecode(sscKvCache* c, const DecodeArgs& a, sscStream_t stream);
sscResult_t hostPrefill(sscKvCache* c, const PrefillArgs& a, sscStream_t stream);

// GPU backend (built only with one: the API reports sscInternalError otherwise).
sscResult_t gpuCreate(sscKvCache* c);
void gpuDestroy(sscKvCache* c);
sscResult_t gpuAppend(sscKvCache* c, int numTokens, const void* k, const void* v,
                      sscStream_t stream);
sscResult_t gpuDecode(sscKvCache* c, const DecodeArgs& a, sscStream_t stream);
// After a release or a trim (calls without a stream): captured decodes' page lists refreshed on
// the stream of the last append.
sscResult_t gpuTableChanged(sscKvCache* c);
// Whether a decode captured into a graph reads sequence `seq` from a window start below
// `position` (*window: that decode's window).
bool gpuGraphReadsBelow(const sscKvCache* c, int seq, int64_t position, int* window);
sscResult_t gpuPrefill(sscKvCache* c, const PrefillArgs& a, sscStream_t stream);

}  // namespace ssc::attn
