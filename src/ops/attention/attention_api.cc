// SPDX-License-Identifier: MIT
// C entry points of the sharded KV cache and attention (starscream_ops.h): validate every
// argument (the same on every rank, so every rank reaches the same verdict before any
// collective starts), then hand over to the backend's half (host_ops.cc or gpu_ops.cc).
#include <mutex>
#include <set>
#include <unordered_set>

#include "src/api/api.h"
#include "src/core/env.h"
#include "src/core/futex_wait.h"
#include "src/core/log.h"
#include "src/ops/attention/kv_cache.h"
#include "src/ops/attention/peer_pools.h"
#include "src/ops/attention/prefill_plan.h"

using namespace ssc;
using namespace ssc::attn;

namespace {

// Caches created and not yet destroyed, so a stale handle is an error, not a crash.
std::mutex g_cachesMu;
std::set<sscKvCache*> g_caches;

sscResult_t checkCache(const char* fn, sscKvCache* c) {
  if (c == nullptr) return fail(sscInvalidArgument, "{}: cache is NULL", fn);
  std::lock_guard<std::mutex> g(g_cachesMu);
  if (g_caches.count(c) == 0)
    return fail(sscInvalidUsage,
                "{}: cache {} is not a live KV cache (destroyed or never "
                "created)",
                fn, static_cast<void*>(c));
  return sscSuccess;
}

// Append and prefill compute their slots and page lists on the host from the page table as it is
// at the call, then upload them: a graph's replays would repeat the captured ones (an append
// rewriting its captured slots, a prefill missing every token appended since). A silently stale
// answer is worse than none, so such a call on a stream being captured is refused before it
// changes anything. A decode can be captured on the GPU backends: its page lists live in a
// buffer of its own that every later append refreshes (gpu_ops.cc, GraphList), and the fused
// exchange counts calls on the device.
sscResult_t checkNotCapturing(const char* fn, const sscKvCache* c, sscStream_t stream) {
  if (!c->backend->streamCapturing(stream)) return sscSuccess;
  return fail(sscInvalidUsage,
              "{}: the stream is being captured into a graph, and this call cannot "
              "be: it builds its page lists (an append its rows) on the host from the cache as it "
              "is then, so a replay would reuse the captured ones. Run it outside the graph (a "
              "decode can be captured).",
              fn);
}

// A trim below what a captured decode's replays read (its window start, which only grows) would
// free pages its page lists still name: refused, nothing changed.
sscResult_t checkTrimAgainstGraphs(const char* fn, const sscKvCache* c, int seq, int64_t position) {
  if (!c->onGpu) return sscSuccess;
  int window = 0;
  if (!gpuGraphReadsBelow(c, seq, position, &window)) return sscSuccess;
  return fail(sscInvalidUsage,
              "{}: sequence {} is read by a decode captured into a graph with window {} "
              "(0: whole), whose replays would read below position {}; trim at most to its window "
              "start, or destroy the cache",
              fn, seq, window, position);
}

sscResult_t checkSeq(const char* fn, const sscKvCache* c, int seq, const char* what) {
  if (seq < 0 || seq >= c->config.maxSeqs)
    return fail(sscInvalidArgument, "{}: {} = {} is not a sequence id (0 .. {})", fn, what, seq,
                c->config.maxSeqs - 1);
  return sscSuccess;
}

sscResult_t checkConfig(const char* fn, const sscKvCacheConfig_t* cfg) {
  if (cfg == nullptr) return fail(sscInvalidArgument, "{}: config is NULL", fn);
  if (cfg->size != sizeof(sscKvCacheConfig_t) || cfg->magic != SSC_KV_CACHE_CONFIG_MAGIC)
    return fail(sscInvalidArgument,
                "{}: config was not initialised with "
                "SSC_KV_CACHE_CONFIG_INITIALIZER (size {}, magic {:#x})",
                fn, cfg->size, cfg->magic);
  auto positive = [&](int v, const char* name) -> sscResult_t {
    if (v < 1) return fail(sscInvalidArgument, "{}: config.{} = {} must be >= 1", fn, name, v);
    return sscSuccess;
  };
  SSC_CHECK(positive(cfg->numKvHeads, "numKvHeads"));
  if (cfg->headDim != 64 && cfg->headDim != 128)
    return fail(sscInvalidArgument, "{}: config.headDim = {} (supported: 64, 128)", fn,
                cfg->headDim);
  SSC_CHECK(positive(cfg->pageSize, "pageSize"));
  SSC_CHECK(positive(cfg->maxPages, "maxPages"));
  SSC_CHECK(positive(cfg->maxSeqs, "maxSeqs"));
  SSC_CHECK(positive(cfg->maxBatch, "maxBatch"));
  SSC_CHECK(positive(cfg->maxQHeads, "maxQHeads"));
  if (cfg->maxQHeads % cfg->numKvHeads != 0)
    return fail(sscInvalidArgument,
                "{}: config.maxQHeads = {} is not a multiple of "
                "numKvHeads = {}",
                fn, cfg->maxQHeads, cfg->numKvHeads);
  if (cfg->dtype != sscBfloat16 && cfg->dtype != sscFloat16)
    return fail(sscInvalidArgument,
                "{}: config.dtype = {} (supported: sscBfloat16, "
                "sscFloat16)",
                fn, static_cast<int>(cfg->dtype));
  // Compared as int: a caller's C code may store any int in an enum field.
  const int interleave = static_cast<int>(cfg->interleave),
            exchange = static_cast<int>(cfg->exchange);
  if (interleave < sscKvPageRoundRobin || interleave > sscKvSequenceOwner)
    return fail(sscInvalidArgument, "{}: config.interleave = {} is not an sscKvInterleave_t", fn,
                interleave);
  if (cfg->interleave == sscKvContiguous) SSC_CHECK(positive(cfg->blockPages, "blockPages"));
  if (exchange < sscKvExchangeAuto || exchange > sscKvExchangeFused)
    return fail(sscInvalidArgument, "{}: config.exchange = {} is not an sscKvExchange_t", fn,
                exchange);
  // Pool rows are indexed with 64-bit arithmetic, but the page table stores int32 pages.
  const uint64_t poolElems =
      static_cast<uint64_t>(cfg->maxPages) * cfg->numKvHeads * cfg->pageSize * cfg->headDim;
  if (poolElems > (1ull << 62) / 2)
    return fail(sscInvalidArgument,
                "{}: a pool of {} pages x {} heads x {} tokens x {} is too "
                "large",
                fn, cfg->maxPages, cfg->numKvHeads, cfg->pageSize, cfg->headDim);
  return sscSuccess;
}

void freeCache(sscKvCache* c) {
  if (c->peers != nullptr) {  // deregistered before the pools go
    c->peers->destroy(c);
    delete c->peers;
    c->peers = nullptr;
  }
  if (c->onGpu)
    gpuDestroy(c);  // frees the buffers too, on the cache's device
  else
    freeBuffers(c);
  c->magic = 0;
  delete c;
}

sscResult_t createCache(const char* fn, sscComm* comm, const sscKvCacheConfig_t* cfg,
                        sscKvCache_t* out) {
  if (out == nullptr) return fail(sscInvalidArgument, "{}: cache is NULL", fn);
  *out = nullptr;
  SSC_CHECK(checkConfig(fn, cfg));
  // The cache's own settings, read once, now; malformed values refuse it as they refuse init.
  const env::Snapshot settings = env::Snapshot::take();
  SSC_CHECK(env::validate(settings));
  // The host backend's ranks cannot map each other's scratch: only the all-gather exchange.
  if (cfg->exchange == sscKvExchangeFused && comm->nranks > 1 &&
      comm->backend->services() == nullptr)
    return fail(sscInvalidUsage,
                "{}: config.exchange = sscKvExchangeFused needs a GPU backend "
                "(the host backend exchanges through sscAllGather: use sscKvExchangeAuto)",
                fn);
  auto* c = new sscKvCache;
  c->comm = comm;
  c->backend = comm->backend;
  c->device = comm->device;
  c->config = *cfg;
  c->dev = comm->backend->services();
  c->onGpu = c->dev != nullptr;
  c->waits = WaitLimits::from(settings);
  Placement pl;
  pl.nranks = comm->nranks;
  pl.pageSize = cfg->pageSize;
  pl.mode = static_cast<Interleave>(cfg->interleave);
  pl.blockPages = cfg->interleave == sscKvContiguous ? cfg->blockPages : 1;
  c->table = std::make_unique<PageTable>(pl, comm->rank, cfg->maxSeqs, cfg->maxPages);
  const std::string& mode = comm->config.attnPrefill;  // read and compared at comm init
  c->prefillMode = static_cast<int>(mode == "kv"         ? PrefillMode::kKvSide
                                    : mode == "partials" ? PrefillMode::kPartials
                                                         : PrefillMode::kAuto);
  sscResult_t r = c->onGpu ? gpuCreate(c) : allocBuffers(c);
  if (r == sscSuccess && !c->onGpu) r = setupPeerPools(c);  // gpuCreate sets them up itself
  if (r != sscSuccess) {
    freeCache(c);
    return r;
  }
  {
    std::lock_guard<std::mutex> g(g_cachesMu);
    g_caches.insert(c);
  }
  *out = c;
  return sscSuccess;
}

// The checks decode and prefill share: the I/O type, the query heads against the cache's
// heads, and (sharded) heads that split evenly over the ranks.
sscResult_t checkHeads(const char* fn, const sscKvCache* c, sscDataType_t ioType, int numQHeads,
                       bool sharded) {
  const sscKvCacheConfig_t& cfg = c->config;
  if (ioType != sscFloat32 && ioType != sscFloat16 && ioType != sscBfloat16)
    return fail(sscInvalidArgument,
                "{}: ioDtype = {} (supported: sscFloat32, sscFloat16, "
                "sscBfloat16)",
                fn, static_cast<int>(ioType));
  if (numQHeads < 1 || numQHeads > cfg.maxQHeads || numQHeads % cfg.numKvHeads != 0)
    return fail(sscInvalidArgument,
                "{}: numQHeads = {} must be a multiple of numKvHeads = "
                "{} and at most maxQHeads = {}",
                fn, numQHeads, cfg.numKvHeads, cfg.maxQHeads);
  if (sharded && numQHeads % c->comm->nranks != 0)
    return fail(sscInvalidArgument,
                "{}: sharded heads need numQHeads ({}) to be a multiple "
                "of the rank count ({})",
                fn, numQHeads, c->comm->nranks);
  return sscSuccess;
}

// A trimmed sequence (sscKvCacheTrimSequence) no longer holds its tokens before the trim, so an
// attention window that starts below it would read pages that other sequences may own by now.
sscResult_t checkTrim(const char* fn, const sscKvCache* c, int seq, int64_t start, int window) {
  const int64_t from = c->table->trimmedFrom(seq);
  if (start >= from) return sscSuccess;
  return fail(sscInvalidUsage,
              "{}: sequence {} was trimmed before position {} "
              "(sscKvCacheTrimSequence) but window = {} attends from position {}",
              fn, seq, from, window, start);
}

sscResult_t decode(const char* fn, sscKvCache* c, const DecodeArgs& a, sscStream_t stream) {
  const sscKvCacheConfig_t& cfg = c->config;
  SSC_CHECK(checkHeads(fn, c, a.ioType, a.numQHeads, a.qSharded || a.outSharded));
  if (a.batch < 0 || a.batch > cfg.maxBatch)
    return fail(sscInvalidArgument, "{}: batch = {} (0 .. maxBatch = {})", fn, a.batch,
                cfg.maxBatch);
  if (a.window < 0) return fail(sscInvalidArgument, "{}: window = {} is negative", fn, a.window);
  if (a.batch == 0) return sscSuccess;
  if (a.seqIds == nullptr) return fail(sscInvalidArgument, "{}: seqIds is NULL", fn);
  if (a.q == nullptr) return fail(sscInvalidArgument, "{}: q is NULL", fn);
  if (a.out == nullptr) return fail(sscInvalidArgument, "{}: out is NULL", fn);
  std::unordered_set<int> seen;
  for (int b = 0; b < a.batch; ++b) {
    SSC_CHECK(checkSeq(fn, c, a.seqIds[b], "a seqIds entry"));
    if (!seen.insert(a.seqIds[b]).second)
      return fail(sscInvalidArgument, "{}: sequence {} appears twice in seqIds", fn, a.seqIds[b]);
    SSC_CHECK(checkTrim(fn, c, a.seqIds[b], windowStart(c, a.seqIds[b], a.window), a.window));
  }
  return c->onGpu ? gpuDecode(c, a, stream) : hostDecode(c, a, stream);
}

sscResult_t prefill(const char* fn, sscKvCache* c, PrefillArgs& a, sscStream_t stream) {
  const sscKvCacheConfig_t& cfg = c->config;
  SSC_CHECK(checkHeads(fn, c, a.ioType, a.numQHeads, a.outSharded));
  if (a.batch < 0 || a.batch > cfg.maxSeqs)
    return fail(sscInvalidArgument, "{}: batch = {} (0 .. maxSeqs = {})", fn, a.batch, cfg.maxSeqs);
  if (a.window < 0) return fail(sscInvalidArgument, "{}: window = {} is negative", fn, a.window);
  if (a.batch == 0) return sscSuccess;
  if (a.seqIds == nullptr) return fail(sscInvalidArgument, "{}: seqIds is NULL", fn);
  if (a.cuSeqlens == nullptr) return fail(sscInvalidArgument, "{}: cuSeqlens is NULL", fn);
  if (a.cuSeqlens[0] != 0)
    return fail(sscInvalidArgument, "{}: cuSeqlens[0] = {} (must be 0)", fn, a.cuSeqlens[0]);
  std::unordered_set<int> seen;
  a.lengths.resize(a.batch);
  for (int b = 0; b < a.batch; ++b) {
    SSC_CHECK(checkSeq(fn, c, a.seqIds[b], "a seqIds entry"));
    if (!seen.insert(a.seqIds[b]).second)
      return fail(sscInvalidArgument, "{}: sequence {} appears twice in seqIds", fn, a.seqIds[b]);
    const int64_t n = static_cast<int64_t>(a.cuSeqlens[b + 1]) - a.cuSeqlens[b];
    if (n < 0)
      return fail(sscInvalidArgument, "{}: cuSeqlens decreases at {} ({} then {})", fn, b + 1,
                  a.cuSeqlens[b], a.cuSeqlens[b + 1]);
    a.lengths[b] = c->table->length(a.seqIds[b]);
    if (n > a.lengths[b])
      return fail(sscInvalidArgument,
                  "{}: sequence {} has {} new tokens in cuSeqlens but only "
                  "{} cached (append the chunk's K/V first)",
                  fn, a.seqIds[b], n, a.lengths[b]);
    // The chunk's first token reaches back the furthest.
    if (n > 0)
      SSC_CHECK(
          checkTrim(fn, c, a.seqIds[b], prefillWindowStart(a.lengths[b] - n, a.window), a.window));
  }
  if (a.cuSeqlens[a.batch] == 0) return sscSuccess;
  if (a.q == nullptr) return fail(sscInvalidArgument, "{}: q is NULL", fn);
  if (a.out == nullptr) return fail(sscInvalidArgument, "{}: out is NULL", fn);
  a.chunkTokens = prefillChunkTokens(c, a.numQHeads);
  return c->onGpu ? gpuPrefill(c, a, stream) : hostPrefill(c, a, stream);
}

}  // namespace

SSC_API sscResult_t sscKvCacheCreate(sscComm_t comm, const sscKvCacheConfig_t* config,
                                     sscKvCache_t* cache) {
  return guarded("sscKvCacheCreate", [&] {
    CommUse use(comm);
    SSC_CHECK(checkComm("sscKvCacheCreate", comm));
    return createCache("sscKvCacheCreate", comm, config, cache);
  });
}

SSC_API sscResult_t sscKvCacheDestroy(sscKvCache_t cache) {
  return guarded("sscKvCacheDestroy", [&] {
    if (cache == nullptr) return sscSuccess;
    {
      std::lock_guard<std::mutex> g(g_cachesMu);
      if (g_caches.erase(cache) == 0)
        return fail(sscInvalidUsage,
                    "sscKvCacheDestroy: cache {} is not a live KV cache "
                    "(destroyed twice?)",
                    static_cast<void*>(cache));
    }
    freeCache(cache);
    return sscSuccess;
  });
}

SSC_API sscResult_t sscKvCacheAppend(sscKvCache_t cache, int numTokens, const int32_t* seqIds,
                                     const void* k, const void* v, sscStream_t stream) {
  const char* fn = "sscKvCacheAppend";
  return guarded(fn, [&] {
    SSC_CHECK(checkCache(fn, cache));
    CommUse use(cache->comm);
    SSC_CHECK(checkComm(fn, cache->comm));
    if (numTokens < 0)
      return fail(sscInvalidArgument, "{}: numTokens = {} is negative", fn, numTokens);
    SSC_CHECK(checkNotCapturing(fn, cache, stream));
    if (numTokens == 0) return sscSuccess;
    if (seqIds == nullptr) return fail(sscInvalidArgument, "{}: seqIds is NULL", fn);
    if (k == nullptr || v == nullptr)
      return fail(sscInvalidArgument, "{}: {} is NULL", fn, k == nullptr ? "k" : "v");
    // The GPU kernel moves 16-byte vectors (a row is 128 or 256 bytes). Checked before the
    // page table changes, so a refused call changes nothing.
    if (cache->onGpu && (reinterpret_cast<uintptr_t>(k) | reinterpret_cast<uintptr_t>(v)) % 16 != 0)
      return fail(sscInvalidArgument, "{}: k and v must be 16-byte aligned on the GPU backend", fn);
    SSC_CHECK(cache->table->append(fn, seqIds, numTokens, &cache->slots));
    if (cache->peers != nullptr) cache->peers->append(seqIds, numTokens);
    return cache->onGpu ? gpuAppend(cache, numTokens, k, v, stream)
                        : hostAppend(cache, numTokens, k, v, stream);
  });
}

SSC_API sscResult_t sscKvCacheReleaseSequence(sscKvCache_t cache, int seqId) {
  const char* fn = "sscKvCacheReleaseSequence";
  return guarded(fn, [&] {
    SSC_CHECK(checkCache(fn, cache));
    SSC_CHECK(checkSeq(fn, cache, seqId, "seqId"));
    cache->table->release(seqId);
    if (cache->peers != nullptr) cache->peers->release(seqId);
    return cache->onGpu ? gpuTableChanged(cache) : sscSuccess;
  });
}

SSC_API sscResult_t sscKvCacheTrimSequence(sscKvCache_t cache, int seqId, int position) {
  const char* fn = "sscKvCacheTrimSequence";
  return guarded(fn, [&] {
    SSC_CHECK(checkCache(fn, cache));
    SSC_CHECK(checkSeq(fn, cache, seqId, "seqId"));
    const int64_t length = cache->table->length(seqId);
    if (position < 0 || position > length)
      return fail(sscInvalidArgument,
                  "{}: position = {} is outside sequence {} (0 .. its "
                  "length {})",
                  fn, position, seqId, length);
    SSC_CHECK(checkTrimAgainstGraphs(fn, cache, seqId, position));
    cache->table->trim(seqId, position);
    if (cache->peers != nullptr) cache->peers->trim(seqId, position);
    return cache->onGpu ? gpuTableChanged(cache) : sscSuccess;
  });
}

SSC_API sscResult_t sscKvCacheSequenceLength(sscKvCache_t cache, int seqId, int* length) {
  const char* fn = "sscKvCacheSequenceLength";
  return guarded(fn, [&] {
    SSC_CHECK(checkCache(fn, cache));
    SSC_CHECK(checkSeq(fn, cache, seqId, "seqId"));
    if (length == nullptr) return fail(sscInvalidArgument, "{}: length is NULL", fn);
    *length = static_cast<int>(cache->table->length(seqId));
    return sscSuccess;
  });
}

SSC_API sscResult_t sscKvCacheTokenOwner(sscKvCache_t cache, int seqId, int position, int* rank) {
  const char* fn = "sscKvCacheTokenOwner";
  return guarded(fn, [&] {
    SSC_CHECK(checkCache(fn, cache));
    SSC_CHECK(checkSeq(fn, cache, seqId, "seqId"));
    if (position < 0)
      return fail(sscInvalidArgument, "{}: position = {} is negative", fn, position);
    if (rank == nullptr) return fail(sscInvalidArgument, "{}: rank is NULL", fn);
    *rank = cache->table->placement().tokenOwner(seqId, position);
    return sscSuccess;
  });
}

SSC_API sscResult_t sscAttentionDecode(sscKvCache_t cache, const void* q, sscDataType_t ioDtype,
                                       int numQHeads, int batch, const int32_t* seqIds, float scale,
                                       const float* sinks, int window, int flags, void* out,
                                       float* lse, sscStream_t stream) {
  const char* fn = "sscAttentionDecode";
  return guarded(fn, [&] {
    SSC_CHECK(checkCache(fn, cache));
    CommUse use(cache->comm);
    SSC_CHECK(checkComm(fn, cache->comm));
    if ((flags & ~(SSC_ATTN_Q_SHARDED_HEADS | SSC_ATTN_OUT_SHARDED_HEADS)) != 0)
      return fail(sscInvalidArgument, "{}: unknown flags {:#x}", fn, flags);
    if (!cache->onGpu && cache->backend->streamCapturing(stream))
      return fail(sscInvalidUsage,
                  "{}: the stream is being captured into a graph, which only the GPU "
                  "backends can replay; run it outside the graph",
                  fn);
    DecodeArgs a{q,
                 ioDtype,
                 numQHeads,
                 batch,
                 seqIds,
                 scale,
                 sinks,
                 window,
                 (flags & SSC_ATTN_Q_SHARDED_HEADS) != 0,
                 (flags & SSC_ATTN_OUT_SHARDED_HEADS) != 0,
                 out,
                 lse};
    return decode(fn, cache, a, stream);
  });
}

SSC_API sscResult_t sscAttentionPrefill(sscKvCache_t cache, const void* q, sscDataType_t ioDtype,
                                        int numQHeads, int batch, const int32_t* seqIds,
                                        const int32_t* cuSeqlens, float scale, const float* sinks,
                                        int window, int flags, void* out, float* lse,
                                        sscStream_t stream) {
  const char* fn = "sscAttentionPrefill";
  return guarded(fn, [&] {
    SSC_CHECK(checkCache(fn, cache));
    CommUse use(cache->comm);
    SSC_CHECK(checkComm(fn, cache->comm));
    if ((flags & SSC_ATTN_Q_SHARDED_HEADS) != 0)
      return fail(sscInvalidArgument,
                  "{}: SSC_ATTN_Q_SHARDED_HEADS is not taken: a prefill's "
                  "queries are replicated (every rank passes all of them)",
                  fn);
    if ((flags & ~SSC_ATTN_OUT_SHARDED_HEADS) != 0)
      return fail(sscInvalidArgument, "{}: unknown flags {:#x}", fn, flags);
    SSC_CHECK(checkNotCapturing(fn, cache, stream));
    PrefillArgs a{q,         ioDtype, numQHeads, batch,  seqIds,
                  cuSeqlens, scale,   sinks,     window, (flags & SSC_ATTN_OUT_SHARDED_HEADS) != 0,
                  out,       lse,     {},        1};
    return prefill(fn, cache, a, stream);
  });
}

namespace ssc::attn {

sscResult_t allocBuffers(sscKvCache* c) {
  const sscKvCacheConfig_t& cfg = c->config;
  const size_t poolBytes = static_cast<size_t>(cfg.maxPages) * cfg.numKvHeads * cfg.pageSize *
                           cfg.headDim * c->kvElemBytes;
  const size_t rows = static_cast<size_t>(c->comm->nranks) * cfg.maxBatch * cfg.maxQHeads;
  Backend* b = c->backend;
  SSC_CHECK(b->memAlloc(&c->kPool, poolBytes));
  SSC_CHECK(b->memAlloc(&c->vPool, poolBytes));
  SSC_CHECK(b->memAlloc(&c->qGather, rows * cfg.headDim * 4));  // up to fp32 queries
  void* partials = nullptr;
  SSC_CHECK(b->memAlloc(&partials, rows * (cfg.headDim + 1) * sizeof(float)));
  c->partials = static_cast<float*>(partials);
  return sscSuccess;
}

sscResult_t setupPeerPools(sscKvCache* c) {
  if (static_cast<PrefillMode>(c->prefillMode) == PrefillMode::kPartials || c->comm->nranks < 2)
    return sscSuccess;
  auto* peers = new PeerPools;
  c->peers = peers;  // freeCache deregisters whatever setup registered, also after a failure
  std::string why;
  SSC_CHECK(peers->setup(c, kMaxPoolRanks, &why));
  if (!peers->enabled()) {
    SSC_LOG(kInfo, "sscKvCacheCreate: prefill reads only this rank's pages ({})", why);
    peers->destroy(c);
    delete peers;
    c->peers = nullptr;
  }
  return sscSuccess;
}

void freeBuffers(sscKvCache* c) {
  for (void* p : {c->kPool, c->vPool, c->qGather, static_cast<void*>(c->partials)})
    if (p != nullptr) (void)c->backend->memFree(p);
  c->kPool = c->vPool = c->qGather = nullptr;
  c->partials = nullptr;
}

}  // namespace ssc::attn
