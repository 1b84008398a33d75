// SPDX-License-Identifier: MIT
// The GPU backend's half of the KV cache: pools and scratch in device memory, the page lists a
// call needs uploaded through pinned staging, kernels (src/ops/attention/attention_kernel.cu) and
// the exchanges (the fused one of gpu_exchange.h, or the core's sscAllGather) queued on the
// caller's stream: create, append, the order of calls and the decode here, the prefill's rounds
// in gpu_prefill.cc. Nothing here waits for the device except the reuse of a staging buffer (an
// event of the previous upload).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "src/api/api.h"
#include "src/device/gpu/gpu_launch_order.h"
#include "src/platform/gpu_check.h"
#include "src/platform/gpu_runtime.h"
#include "src/ops/attention/attention_kernel.h"
#include "src/ops/attention/gpu_cache_state.h"
#include "src/ops/attention/decode_plan.h"
#include "src/ops/attention/peer_pools.h"
#include "src/ops/attention/prefill_plan.h"

namespace ssc::attn {

namespace {

// Tokens per append kernel (bounds the slot upload).
constexpr int kAppendChunk = 4096;
// Blocks of the partial kernel per (sequence, KV head): query heads of one KV head, 16 a block.
int headChunks(int numQHeads, int numKvHeads) {
  return (std::max(numQHeads / numKvHeads, 1) + gpu::kAttnMaxHeadsPerBlock - 1) /
         gpu::kAttnMaxHeadsPerBlock;
}

constexpr size_t kMaxSplitScratchFloats = size_t{8} << 20;  // 32 MiB

}  // namespace

sscResult_t gpuCreate(sscKvCache* c) {
  gpu::DeviceGuard onDevice(c->device);
  SSC_CHECK(allocBuffers(c));
  c->gpu = new GpuCacheState;
  SSC_CHECK(setupPeerPools(c));  // collective, the same branch on every rank
  const int nranks = c->comm->nranks;
  {
    std::vector<const void*> table{c->kPool, c->vPool};
    if (c->peers != nullptr) {
      for (int q = 0; q < nranks; ++q) table.push_back(c->peers->k(q));
      for (int q = 0; q < nranks; ++q) table.push_back(c->peers->v(q));
    }
    void* dev = nullptr;
    SSC_GPU_CHECK(hipMalloc(&dev, table.size() * sizeof(void*)),
                  "KV cache: allocating the table of {} pools", table.size());
    c->gpu->poolTable = static_cast<void**>(dev);
    // On a private stream: the null stream could wait for another communicator's kernel that
    // waits for a peer (as the exchange's zeroing, gpu_exchange.cc).
    hipStream_t copy = nullptr;
    SSC_GPU_CHECK(hipStreamCreateWithFlags(&copy, hipStreamNonBlocking),
                  "KV cache: creating a stream to copy the pool table");
    hipError_t e = hipMemcpyAsync(dev, table.data(), table.size() * sizeof(void*),
                                  hipMemcpyHostToDevice, copy);
    if (e == hipSuccess) e = hipStreamSynchronize(copy);
    const hipError_t destroyed = hipStreamDestroy(copy);
    if (e != hipSuccess) return SSC_GPU_FAIL(e, "KV cache: copying the pool table to the device");
    if (destroyed != hipSuccess)
      return SSC_GPU_FAIL(destroyed, "KV cache: destroying the stream that copied the pool table");
  }
  SSC_CHECK(c->gpu->slots.create(kAppendChunk * sizeof(int64_t)));
  // A call's spans: at most one per pool page of this rank (the batch's sequences are distinct
  // and their pages disjoint) plus, per sequence, the starts.
  c->gpu->maxSpanInts =
      static_cast<size_t>(c->config.maxBatch) + 1 + 3 * static_cast<size_t>(c->config.maxPages);
  SSC_CHECK(c->gpu->spans.create(c->gpu->maxSpanInts * sizeof(int32_t)));
  // A prefill round holds at most maxBatch * maxQHeads rows, i.e. that / numKvHeads rows
  // of one KV head whatever the call's head count (the bound at GQA ratio 1).
  // Reading the peers' pages in place, a round's spans may come from every rank's pool.
  c->gpu->prefillInts = prefillListsBound(
      static_cast<int64_t>(c->config.maxBatch) * c->config.maxQHeads / c->config.numKvHeads,
      c->config.maxSeqs, 1,
      static_cast<int64_t>(c->config.maxPages) * (c->peers != nullptr ? nranks : 1));
  SSC_CHECK(c->gpu->prefill.create(c->gpu->prefillInts * sizeof(int32_t)));
  int sms = 0;
  SSC_GPU_CHECK(hipDeviceGetAttribute(&sms, hipDeviceAttributeMultiprocessorCount, c->device),
                "KV cache: reading device {}'s multiprocessor count", c->device);
  c->gpu->multiprocessors = std::max(sms, 1);
  // The prefill's split depends on the SMs a rank has, and every rank must choose alike (the
  // choice decides which collectives run): the fewest any rank has (collective, bootstrap).
  if (nranks > 1) {
    std::vector<int> all(nranks, 0);
    all[c->comm->rank] = c->gpu->multiprocessors;
    SSC_CHECK(c->comm->bootstrap->allGather(all.data(), sizeof(int)));
    c->gpu->fewestMultiprocessors = *std::min_element(all.begin(), all.end());
  } else {
    c->gpu->fewestMultiprocessors = c->gpu->multiprocessors;
  }
  c->gpu->splitFloats =
      std::min(kMaxSplitScratchFloats, static_cast<size_t>(kDecodeMaxSplits) * c->config.maxBatch *
                                           c->config.maxQHeads * (c->config.headDim + 1));
  void* split = nullptr;
  SSC_GPU_CHECK(hipMalloc(&split, c->gpu->splitFloats * sizeof(float)),
                "KV cache: allocating {} bytes of split-K scratch",
                c->gpu->splitFloats * sizeof(float));
  c->gpu->splitPartials = static_cast<float*>(split);
  // Empty events are complete, but recording one first keeps hipEventSynchronize portable.
  for (Upload* u : {&c->gpu->slots, &c->gpu->spans, &c->gpu->prefill})
    SSC_GPU_CHECK(hipEventRecord(u->done, nullptr), "KV cache: recording an upload area's event");
  SSC_GPU_CHECK(hipEventCreateWithFlags(&c->gpu->lastDone, hipEventDisableTiming),
                "KV cache: creating the event of the last call");
  // One rank has nothing to exchange. Every rank takes the same branch (same configuration and
  // communicator), so the registration inside setup() is collective as it must be. AUTO takes
  // the fused exchange wherever the peers' scratch maps, the all-gather otherwise: the fused
  // exchange moves the same rows (or, with sharded output heads, 1/K of them) with no collective
  // launch and no barrier, where the all-gather path pays two collective launches with barriers
  // on both sides and a merge launch per step, so it does no more work at any size or rank count
  // (docs/attention.md, "The fused exchange"; attention_perf times both).
  if (c->comm->nranks > 1 && c->config.exchange != sscKvExchangeAllGather) {
    std::string why;
    SSC_CHECK(c->gpu->exchange.setup(c, &c->gpu->fused, &why));
    if (!c->gpu->fused && c->config.exchange == sscKvExchangeFused)
      return fail(sscInvalidUsage, "sscKvCacheCreate: config.exchange = sscKvExchangeFused, but {}",
                  why);
  }
  return sscSuccess;
}

void gpuDestroy(sscKvCache* c) {
  gpu::DeviceGuard onDevice(c->device);
  if (c->gpu != nullptr) {
    c->gpu->exchange.destroy(c);
    c->gpu->graphLists.clear();
    // Teardown returns nothing: a destroy or free that fails leaves nothing for the owner to do.
    if (c->gpu->sideStream != nullptr) (void)hipStreamDestroy(c->gpu->sideStream);
    if (c->gpu->lastDone != nullptr) (void)hipEventDestroy(c->gpu->lastDone);
    c->gpu->slots.destroy();
    c->gpu->spans.destroy();
    c->gpu->prefill.destroy();
    // As above: nothing to report a failed free to.
    if (c->gpu->splitPartials != nullptr) (void)hipFree(c->gpu->splitPartials);
    if (c->gpu->poolTable != nullptr) (void)hipFree(c->gpu->poolTable);
    delete c->gpu;
    c->gpu = nullptr;
  }
  freeBuffers(c);
}

sscResult_t gpuAppend(sscKvCache* c, int numTokens, const void* k, const void* v,
                      sscStream_t stream) {
  gpu::DeviceGuard onDevice(c->device);
  const sscKvCacheConfig_t& cfg = c->config;
  auto s = static_cast<hipStream_t>(stream);
  const size_t rowElems = static_cast<size_t>(cfg.numKvHeads) * cfg.headDim;
  std::vector<int64_t> dst;
  for (int first = 0; first < numTokens; first += kAppendChunk) {
    const int n = std::min(kAppendChunk, numTokens - first);
    dst.assign(n, -1);
    for (int i = 0; i < n; ++i) {
      const TokenSlot t = c->slots[first + i];
      if (t.page >= 0)
        dst[i] =
            (static_cast<int64_t>(t.page) * cfg.numKvHeads * cfg.pageSize + t.row) * cfg.headDim;
    }
    SSC_CHECK(c->gpu->slots.put(dst.data(), n * sizeof(int64_t), s));
    gpu::KvAppendParams p{};
    p.kPool = c->kPool;
    p.vPool = c->vPool;
    p.k = static_cast<const uint16_t*>(k) + first * rowElems;
    p.v = static_cast<const uint16_t*>(v) + first * rowElems;
    p.dstRow = static_cast<const int64_t*>(c->gpu->slots.device);
    p.numTokens = n;
    p.numKvHeads = cfg.numKvHeads;
    p.headDim = cfg.headDim;
    p.pageSize = cfg.pageSize;
    SSC_CHECK(gpu::launchKvAppend(p, s));
  }
  c->gpu->appendStream = s;
  c->gpu->haveAppendStream = true;
  return refreshGraphLists(c, s);
}

sscResult_t gpuTableChanged(sscKvCache* c) {
  GpuCacheState& g = *c->gpu;
  if (g.graphLists.empty() || !g.haveAppendStream) return sscSuccess;
  gpu::DeviceGuard onDevice(c->device);
  return refreshGraphLists(c, g.appendStream);
}

bool gpuGraphReadsBelow(const sscKvCache* c, int seq, int64_t position, int* window) {
  for (const auto& l : c->gpu->graphLists)
    if (std::find(l->seqs.begin(), l->seqs.end(), seq) != l->seqs.end() &&
        windowStart(c, seq, l->window) < position) {
      *window = l->window;
      return true;
    }
  return false;
}

namespace {

// Each sequence's first position under `window` (windowStart), as a decode's page lists take it.
std::vector<int64_t> windowStarts(const sscKvCache* c, const int32_t* seqIds, int batch,
                                  int window) {
  std::vector<int64_t> starts(batch);
  for (int b = 0; b < batch; ++b) starts[b] = windowStart(c, seqIds[b], window);
  return starts;
}

// This rank's page lists of the sequences from `starts` (flattenSpans), checked against the
// spans buffers' size; *longest: the most spans one sequence has (the split-K choice).
sscResult_t spanList(const sscKvCache* c, const int32_t* seqIds, const int64_t* starts, int batch,
                     std::vector<int32_t>* list, int32_t* longest) {
  flattenSpans(*c->table, seqIds, starts, batch, list);
  if (list->size() > c->gpu->maxSpanInts)
    return fail(sscInternalError, "KV cache: a decode's {} span ints exceed the {} reserved",
                list->size(), c->gpu->maxSpanInts);
  *longest = 0;
  for (int b = 0; b < batch; ++b) *longest = std::max(*longest, (*list)[b + 1] - (*list)[b]);
  return sscSuccess;
}

}  // namespace

sscResult_t refreshGraphLists(sscKvCache* c, hipStream_t stream) {
  std::vector<int32_t> list;
  for (auto& l : c->gpu->graphLists) {
    const int batch = static_cast<int>(l->seqs.size());
    std::vector<int64_t> starts = windowStarts(c, l->seqs.data(), batch, l->window);
    if (l->version == c->table->version() && starts == l->starts) continue;
    int32_t longest = 0;  // the split-K choice stays the capture's
    SSC_CHECK(spanList(c, l->seqs.data(), starts.data(), batch, &list, &longest));
    SSC_CHECK(l->spans.put(list.data(), list.size() * sizeof(int32_t), stream));
    l->version = c->table->version();
    l->starts = std::move(starts);
  }
  return sscSuccess;
}

namespace {

sscResult_t decodeOn(sscKvCache* c, const DecodeArgs& a, sscStream_t stream, bool capturing);

// Runs one call (decode or prefill) ordered after the cache's last one. A decode being captured
// into a graph (the API refuses a captured prefill) orders itself inside the graph: it cannot
// wait for an event recorded outside it, and its replays run where the caller launches them.
template <class F>
sscResult_t ordered(sscKvCache* c, sscStream_t stream, F&& run) {
  GpuCacheState& g = *c->gpu;
  gpu::DeviceGuard onDevice(c->device);
  const auto s = static_cast<hipStream_t>(stream);
  const bool capturing = gpu::streamCapturing(s);
  if (!capturing && g.haveLast && g.lastStream != s)
    SSC_GPU_CHECK(hipStreamWaitEvent(s, g.lastDone, 0),
                  "KV cache: ordering a call after the last one (on another stream)");
  const sscResult_t r = run(capturing);
  if (capturing) return r;
  // Recorded even after a failure: whatever was queued must finish before the next call reuses
  // the buffers. Where both fail, the call's own error is the one its caller sees.
  const hipError_t recorded = hipEventRecord(g.lastDone, s);
  if (recorded != hipSuccess)
    return r != sscSuccess ? r : SSC_GPU_FAIL(recorded, "KV cache: recording the end of a call");
  g.lastStream = s;
  g.haveLast = true;
  return r;
}

}  // namespace

sscResult_t gpuDecode(sscKvCache* c, const DecodeArgs& a, sscStream_t stream) {
  return ordered(c, stream, [&](bool capturing) { return decodeOn(c, a, stream, capturing); });
}

sscResult_t gpuPrefill(sscKvCache* c, const PrefillArgs& a, sscStream_t stream) {
  return ordered(c, stream, [&](bool) { return gpuPrefillRounds(c, a, stream); });
}

namespace {

// An eager decode's page lists into the cache's upload area, unless the last upload still holds
// them (the page table's version, the sequences and their window starts unchanged).
sscResult_t eagerList(sscKvCache* c, const DecodeArgs& a, hipStream_t s) {
  GpuCacheState& g = *c->gpu;
  std::vector<int64_t> starts = windowStarts(c, a.seqIds, a.batch, a.window);
  if (g.listValid && g.listVersion == c->table->version() && starts == g.listStarts &&
      std::equal(a.seqIds, a.seqIds + a.batch, g.listSeqs.begin(), g.listSeqs.end()))
    return sscSuccess;
  std::vector<int32_t> list;
  g.listValid = false;
  SSC_CHECK(spanList(c, a.seqIds, starts.data(), a.batch, &list, &g.listLongest));
  SSC_CHECK(g.spans.put(list.data(), list.size() * sizeof(int32_t), s));
  g.listVersion = c->table->version();
  g.listSeqs.assign(a.seqIds, a.seqIds + a.batch);
  g.listStarts = std::move(starts);
  g.listValid = true;
  return sscSuccess;
}

// The page lists of a decode being captured: those of an earlier capture of the same sequences
// and window, else a new GraphList filled now on the cache's side stream and waited for (the
// graph's first replay may come before any append refreshes it). Its split-K choice is fixed at
// the capture, from the lengths then (split z takes every splits-th span, so longer sequences
// stay correct, in fewer, longer blocks).
sscResult_t graphList(sscKvCache* c, const DecodeArgs& a, GraphList** out) {
  GpuCacheState& g = *c->gpu;
  for (auto& l : g.graphLists)
    if (l->window == a.window &&
        std::equal(a.seqIds, a.seqIds + a.batch, l->seqs.begin(), l->seqs.end())) {
      *out = l.get();
      return sscSuccess;
    }
  if (g.graphLists.size() >= kMaxGraphLists)
    return fail(sscInvalidUsage,
                "sscAttentionDecode: {} decodes of distinct sequences or windows were "
                "captured into graphs on this cache already (the most it keeps page lists for)",
                kMaxGraphLists);
  gpu::RelaxedCapture relaxed;  // allocations and a private stream's copy while capturing
  if (g.sideStream == nullptr)
    SSC_GPU_CHECK(hipStreamCreateWithFlags(&g.sideStream, hipStreamNonBlocking),
                  "KV cache: creating the stream of captured decodes' first uploads");
  auto l = std::make_unique<GraphList>();
  SSC_CHECK(l->spans.create(g.maxSpanInts * sizeof(int32_t)));
  // On the side stream, never the null stream: that one synchronizes with a blocking stream
  // being captured, which would invalidate the capture.
  SSC_GPU_CHECK(hipEventRecord(l->spans.done, g.sideStream),
                "KV cache: recording a captured decode's upload area's event");
  l->seqs.assign(a.seqIds, a.seqIds + a.batch);
  l->window = a.window;
  l->starts = windowStarts(c, a.seqIds, a.batch, a.window);
  std::vector<int32_t> list;
  SSC_CHECK(spanList(c, a.seqIds, l->starts.data(), a.batch, &list, &l->longest));
  SSC_CHECK(l->spans.put(list.data(), list.size() * sizeof(int32_t), g.sideStream));
  SSC_GPU_CHECK(hipStreamSynchronize(g.sideStream),
                "KV cache: waiting for a captured decode's page lists to upload");
  l->version = c->table->version();
  *out = l.get();
  g.graphLists.push_back(std::move(l));
  return sscSuccess;
}

sscResult_t decodeOn(sscKvCache* c, const DecodeArgs& a, sscStream_t stream, bool capturing) {
  const sscKvCacheConfig_t& cfg = c->config;
  sscComm* comm = c->comm;
  const int nranks = comm->nranks, rank = comm->rank, D = cfg.headDim, H = a.numQHeads;
  const int qHeads = a.qSharded ? H / nranks : H;
  auto s = static_cast<hipStream_t>(stream);

  GpuCacheState& g = *c->gpu;
  gpu::DeviceGuard onDevice(c->device);
  const bool fused = g.fused;
  if (fused) SSC_CHECK(g.exchange.begin("sscAttentionDecode"));

  // 1. Query slices all-gathered into [rank][batch][qHeads][D].
  const void* q = a.q;
  const gpu::AttnEpochWord* qEpoch = nullptr;
  size_t qParityBytes = 0;
  if (a.qSharded && nranks > 1 && fused) {
    SSC_CHECK(g.exchange.gatherQ(a.q,
                                 static_cast<size_t>(a.batch) * qHeads * D * dtypeSize(a.ioType),
                                 stream, &q, &qParityBytes, &qEpoch));
  } else if (a.qSharded && nranks > 1) {
    SSC_CHECK(sscAllGather(a.q, c->qGather, static_cast<size_t>(a.batch) * qHeads * D, a.ioType,
                           comm, stream));
    q = c->qGather;
  }

  // 2. This rank's spans of each sequence (an eager call's uploaded unless the last upload still
  // holds them; a captured call's its own, which every append keeps current), then the partial
  // kernel into this rank's block.
  const int32_t* dev = nullptr;
  int32_t longest = 0;
  if (capturing) {
    GraphList* l = nullptr;
    SSC_CHECK(graphList(c, a, &l));
    dev = static_cast<const int32_t*>(l->spans.device);
    longest = l->longest;
  } else {
    SSC_CHECK(eagerList(c, a, s));
    dev = static_cast<const int32_t*>(g.spans.device);
    longest = g.listLongest;
  }
  const size_t count = partialCount(c, a.batch, H);
  float* mine = c->partials + rank * count;
  gpu::AttnPartialParams pp{};
  pp.kPool = c->kPool;
  pp.vPool = c->vPool;
  pp.kvDtype = cfg.dtype;
  pp.q = q;
  pp.qEpoch = qEpoch;
  pp.qParityBytes = qParityBytes;
  pp.qDtype = a.ioType;
  pp.qHeadsPerRank = a.qSharded && nranks > 1 ? qHeads : H;
  pp.spanStart = dev;
  pp.spans = dev + a.batch + 1;
  pp.batch = a.batch;
  pp.numQHeads = H;
  pp.numKvHeads = cfg.numKvHeads;
  pp.headDim = D;
  pp.pageSize = cfg.pageSize;
  pp.scale = a.scale;
  const int64_t blocks =
      static_cast<int64_t>(a.batch) * cfg.numKvHeads * headChunks(H, cfg.numKvHeads);
  const int64_t splits =
      decodeSplits(blocks, longest, int64_t{gpu::attnPartialBlocksPerSm(pp)} * g.multiprocessors,
                   static_cast<int64_t>(g.splitFloats / count));
  pp.splits = static_cast<int>(std::max<int64_t>(splits, 1));
  pp.splitStride = count;
  pp.partials = pp.splits > 1 ? c->gpu->splitPartials : mine;
  // Where the kernel puts rows it finishes alone (a row group of one split): into the peers'
  // exchange scratch (fused) or straight into the caller's output (one rank); no launch follows
  // for them. Split rows are merged by the launches below.
  gpu::AttnPartialFinish& f = pp.finish;
  if (fused) {
    f.mode = gpu::kAttnFinishPush;
    g.exchange.pushTarget(a, &f.push);
  } else if (nranks == 1) {
    f.mode = gpu::kAttnFinishOutput;
    f.sinks = a.sinks;
    f.out = a.out;
    f.outDtype = a.ioType;
    f.lse = a.lse;
  }
  SSC_CHECK(gpu::launchAttnPartial(pp, s));
  const bool finished = pp.splits == 1;
  // Fused: the splits are merged inside the push, which stores the rows straight into the ranks
  // that return them; the merge there starts as they arrive (no collective call, no barrier).
  if (fused)
    return finished ? g.exchange.mergeArrived(c, a, stream)
                    : g.exchange.pushAndMerge(c, a, pp.partials, count, pp.splits, stream);
  gpu::AttnMergeParams mp{};
  mp.batch = a.batch;
  mp.numQHeads = H;
  mp.headDim = D;
  if (nranks == 1) {  // the splits merged with the sinks, straight into the output
    if (finished) return sscSuccess;
    mp.partials = c->gpu->splitPartials;
    mp.rankStride = count;
    mp.nranks = pp.splits;
    mp.firstHead = 0;
    mp.outHeads = H;
    mp.sinks = a.sinks;
    mp.out = a.out;
    mp.outDtype = a.ioType;
    mp.lse = a.lse;
    SSC_CHECK(gpu::launchAttnMerge(mp, s));
    return sscSuccess;
  }
  if (!finished) {  // the splits' partials into this rank's one, exactly as ranks merge
    mp.partials = c->gpu->splitPartials;
    mp.rankStride = count;
    mp.nranks = pp.splits;
    mp.firstHead = 0;
    mp.outHeads = H;
    mp.out = mine;
    mp.outDtype = sscFloat32;
    mp.packed = true;
    SSC_CHECK(gpu::launchAttnMerge(mp, s));
  }

  // 3. Every rank's partials (in place), then the merge of the heads this rank returns.
  SSC_CHECK(sscAllGather(mine, c->partials, count, sscFloat32, comm, stream));
  mp = gpu::AttnMergeParams{};
  mp.partials = c->partials;
  mp.rankStride = count;
  mp.nranks = nranks;
  mp.batch = a.batch;
  mp.numQHeads = H;
  mp.headDim = D;
  mp.outHeads = a.outSharded ? H / nranks : H;
  mp.firstHead = a.outSharded ? rank * mp.outHeads : 0;
  mp.sinks = a.sinks;
  mp.out = a.out;
  mp.outDtype = a.ioType;
  mp.lse = a.lse;
  SSC_CHECK(gpu::launchAttnMerge(mp, s));
  return sscSuccess;
}

}  // namespace

}  // namespace ssc::attn
