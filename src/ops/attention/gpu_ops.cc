// The GPU backend's half of the KV cache: pools and scratch in device memory, the page lists a
// call needs uploaded through pinned staging, kernels (src/kernels/gpu/attention_kernel.cu) and
// the exchanges (the fused one of gpu_exchange.h, or the core's sscAllGather) queued on the
// caller's stream. Nothing here waits for the device except the reuse of a staging buffer (an
// event of the previous upload).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "src/api/api.h"
#include "src/device/gpu/gpu_launch_order.h"
#include "src/platform/gpu_runtime.h"
#include "src/kernels/gpu/attention_kernel.h"
#include "src/kernels/gpu/attention_prefill_kernel.h"
#include "src/kernels/gpu/attention_prefill_rows.h"
#include "src/ops/attention/gpu_exchange.h"
#include "src/ops/attention/kv_cache.h"
#include "src/ops/attention/decode_plan.h"
#include "src/ops/attention/peer_pools.h"
#include "src/ops/attention/prefill_plan.h"

namespace ssc::attn {

namespace {

sscResult_t gpuCheck(hipError_t e, const char* what) {
  if (e == hipSuccess) return sscSuccess;
  return fail(sscUnhandledDeviceError, "KV cache: {} failed: {}", what, hipGetErrorString(e));
}

// A host-to-device upload area of fixed size: pinned staging plus a device buffer, and the
// event of the last copy out of the staging (the next upload waits for it before refilling).
// Sizes are fixed at create: growing would mean hipFree, which waits for the whole device,
// where another communicator's kernel may be waiting for a peer.
struct Upload {
  void* host = nullptr;
  void* device = nullptr;
  size_t bytes = 0;
  hipEvent_t done = nullptr;

  sscResult_t create(size_t n) {
    bytes = n;
    SSC_CHECK(gpuCheck(hipHostMalloc(&host, n, 0), "hipHostMalloc"));
    SSC_CHECK(gpuCheck(hipMalloc(&device, n), "hipMalloc"));
    return gpuCheck(hipEventCreateWithFlags(&done, hipEventDisableTiming), "hipEventCreate");
  }
  void destroy() {
    if (done != nullptr) (void)hipEventDestroy(done);
    if (device != nullptr) (void)hipFree(device);
    if (host != nullptr) (void)hipHostFree(host);
  }
  // Copies n <= bytes bytes from src to `device`, in stream order.
  sscResult_t put(const void* src, size_t n, hipStream_t stream) {
    SSC_CHECK(gpuCheck(hipEventSynchronize(done), "hipEventSynchronize"));
    std::memcpy(host, src, n);
    SSC_CHECK(gpuCheck(hipMemcpyAsync(device, host, n, hipMemcpyHostToDevice, stream),
                       "hipMemcpyAsync"));
    return gpuCheck(hipEventRecord(done, stream), "hipEventRecord");
  }
};

// Tokens per append kernel (bounds the slot upload).
constexpr int kAppendChunk = 4096;
// Blocks of the partial kernel per (sequence, KV head): query heads of one KV head, 16 a block.
int headChunks(int numQHeads, int numKvHeads) {
  return (std::max(numQHeads / numKvHeads, 1) + gpu::kAttnMaxHeadsPerBlock - 1) / gpu::kAttnMaxHeadsPerBlock;
}

constexpr size_t kMaxSplitScratchFloats = size_t{8} << 20;  // 32 MiB

static_assert(gpu::kPrefillSpanInts == PrefillLists::kSpanInts, "the kernel walks the plan's spans");
static_assert(kMaxPoolRanks <= gpu::kAttnPrefillMaxPools, "a KV-side launch names every rank's pools");

}  // namespace

class GpuCacheState {
 public:
  Upload slots;  // int64 [kAppendChunk]: each token's destination row, or -1
  Upload spans;  // int32 [max_batch + 1] span starts, then [spans][3]
  Upload prefill;  // int32: one prefill round's lists (prefill_plan.h), at most prefillInts
  size_t prefillInts = 0;
  // The prefill kernel's pool tables (AttnPrefillParams::pools), one allocation: this rank's
  // K and V pools (partials), then every rank's K pools and V pools as mapped here (KV side,
  // when the peers' pools are mapped).
  void** poolTable = nullptr;
  size_t maxSpanInts = 0;
  int multiprocessors = 1;
  int fewestMultiprocessors = 1;  // over the communicator's ranks
  float* splitPartials = nullptr;  // [split][batch][heads][head_dim + 1]
  size_t splitFloats = 0;
  // The page lists of the last decode, still in spans.device: reused while the page table's
  // version, the sequences and their window starts are unchanged (repeated decodes over the
  // same cache, e.g. one per layer sharing it, skip the host walk and the upload).
  bool listValid = false;
  uint64_t listVersion = 0;
  std::vector<int32_t> listSeqs;
  std::vector<int64_t> listStarts;
  int32_t listLongest = 0;
  // The fused exchange (SSC_KV_EXCHANGE_FUSED, or AUTO where the peers' scratch maps).
  bool fused = false;
  FusedExchange exchange;
  // The end of the last decode, and its stream: the cache's buffers (partials, the exchange
  // scratch's parities, the query gather) are reused call after call, so a decode on another
  // stream first waits for the last one, as calls on one stream do by stream order.
  hipEvent_t lastDone = nullptr;
  hipStream_t lastStream = nullptr;
  bool haveLast = false;
};

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
    SSC_CHECK(gpuCheck(hipMalloc(&dev, table.size() * sizeof(void*)), "hipMalloc"));
    c->gpu->poolTable = static_cast<void**>(dev);
    // On a private stream: the null stream could wait for another communicator's kernel that
    // waits for a peer (as the exchange's zeroing, gpu_exchange.cc).
    hipStream_t copy = nullptr;
    SSC_CHECK(gpuCheck(hipStreamCreateWithFlags(&copy, hipStreamNonBlocking), "hipStreamCreate"));
    hipError_t e = hipMemcpyAsync(dev, table.data(), table.size() * sizeof(void*), hipMemcpyHostToDevice, copy);
    if (e == hipSuccess) e = hipStreamSynchronize(copy);
    (void)hipStreamDestroy(copy);
    SSC_CHECK(gpuCheck(e, "hipMemcpyAsync(the pool table)"));
  }
  SSC_CHECK(c->gpu->slots.create(kAppendChunk * sizeof(int64_t)));
  // A call's spans: at most one per pool page of this rank (the batch's sequences are distinct
  // and their pages disjoint) plus, per sequence, the starts.
  c->gpu->maxSpanInts = static_cast<size_t>(c->config.max_batch) + 1 + 3 * static_cast<size_t>(c->config.max_pages);
  SSC_CHECK(c->gpu->spans.create(c->gpu->maxSpanInts * sizeof(int32_t)));
  // A prefill round holds at most max_batch * max_q_heads rows, i.e. that / num_kv_heads rows
  // of one KV head whatever the call's head count (the bound at GQA ratio 1).
  // Reading the peers' pages in place, a round's spans may come from every rank's pool.
  c->gpu->prefillInts = prefillListsBound(
      static_cast<int64_t>(c->config.max_batch) * c->config.max_q_heads / c->config.num_kv_heads,
      c->config.max_seqs, 1, static_cast<int64_t>(c->config.max_pages) * (c->peers != nullptr ? nranks : 1));
  SSC_CHECK(c->gpu->prefill.create(c->gpu->prefillInts * sizeof(int32_t)));
  int sms = 0;
  SSC_CHECK(gpuCheck(hipDeviceGetAttribute(&sms, hipDeviceAttributeMultiprocessorCount, c->device),
                     "hipDeviceGetAttribute(multiprocessors)"));
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
  c->gpu->splitFloats = std::min(kMaxSplitScratchFloats,
                                 static_cast<size_t>(kDecodeMaxSplits) * c->config.max_batch *
                                     c->config.max_q_heads * (c->config.head_dim + 1));
  void* split = nullptr;
  SSC_CHECK(gpuCheck(hipMalloc(&split, c->gpu->splitFloats * sizeof(float)), "hipMalloc"));
  c->gpu->splitPartials = static_cast<float*>(split);
  // Empty events are complete, but recording one first keeps hipEventSynchronize portable.
  SSC_CHECK(gpuCheck(hipEventRecord(c->gpu->slots.done, nullptr), "hipEventRecord"));
  SSC_CHECK(gpuCheck(hipEventRecord(c->gpu->spans.done, nullptr), "hipEventRecord"));
  SSC_CHECK(gpuCheck(hipEventRecord(c->gpu->prefill.done, nullptr), "hipEventRecord"));
  SSC_CHECK(gpuCheck(hipEventCreateWithFlags(&c->gpu->lastDone, hipEventDisableTiming), "hipEventCreate"));
  // One rank has nothing to exchange. Every rank takes the same branch (same configuration and
  // communicator), so the registration inside setup() is collective as it must be. AUTO takes
  // the fused exchange wherever the peers' scratch maps (measured faster at every size on the
  // H200, perf/RESULTS.md session 5), the all-gather otherwise.
  if (c->comm->nranks > 1 && c->config.exchange != SSC_KV_EXCHANGE_ALLGATHER) {
    std::string why;
    SSC_CHECK(c->gpu->exchange.setup(c, &c->gpu->fused, &why));
    if (!c->gpu->fused && c->config.exchange == SSC_KV_EXCHANGE_FUSED)
      return fail(sscInvalidUsage, "sscKvCacheCreate: config.exchange = SSC_KV_EXCHANGE_FUSED, but {}", why);
  }
  return sscSuccess;
}

void gpuDestroy(sscKvCache* c) {
  gpu::DeviceGuard onDevice(c->device);
  if (c->gpu != nullptr) {
    c->gpu->exchange.destroy(c);
    if (c->gpu->lastDone != nullptr) (void)hipEventDestroy(c->gpu->lastDone);
    c->gpu->slots.destroy();
    c->gpu->spans.destroy();
    c->gpu->prefill.destroy();
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
  const size_t rowElems = static_cast<size_t>(cfg.num_kv_heads) * cfg.head_dim;
  std::vector<int64_t> dst;
  for (int first = 0; first < numTokens; first += kAppendChunk) {
    const int n = std::min(kAppendChunk, numTokens - first);
    dst.assign(n, -1);
    for (int i = 0; i < n; ++i) {
      const TokenSlot t = c->slots[first + i];
      if (t.page >= 0)
        dst[i] = (static_cast<int64_t>(t.page) * cfg.num_kv_heads * cfg.page_size + t.row) * cfg.head_dim;
    }
    SSC_CHECK(c->gpu->slots.put(dst.data(), n * sizeof(int64_t), s));
    gpu::KvAppendParams p{};
    p.kPool = c->kPool;
    p.vPool = c->vPool;
    p.k = static_cast<const uint16_t*>(k) + first * rowElems;
    p.v = static_cast<const uint16_t*>(v) + first * rowElems;
    p.dstRow = static_cast<const int64_t*>(c->gpu->slots.device);
    p.numTokens = n;
    p.numKvHeads = cfg.num_kv_heads;
    p.headDim = cfg.head_dim;
    p.pageSize = cfg.page_size;
    SSC_CHECK(gpuCheck(static_cast<hipError_t>(gpu::launchKvAppend(p, s)), "the KV append kernel launch"));
  }
  return sscSuccess;
}

namespace {

sscResult_t decodeOn(sscKvCache* c, const DecodeArgs& a, sscStream_t stream, bool capturing);
sscResult_t prefillOn(sscKvCache* c, const PrefillArgs& a, sscStream_t stream, bool capturing);

// Runs one call (decode or prefill) ordered after the cache's last one.
template <class F>
sscResult_t ordered(sscKvCache* c, sscStream_t stream, F&& run) {
  GpuCacheState& g = *c->gpu;
  gpu::DeviceGuard onDevice(c->device);
  const auto s = static_cast<hipStream_t>(stream);
  // A captured call (a CUDA/HIP graph) orders itself inside the graph, and cannot wait on an
  // event recorded outside it; its replays run whenever the caller launches them.
  const bool capturing = c->comm->backend->streamCapturing(stream);
  if (!capturing && g.haveLast && g.lastStream != s)
    SSC_CHECK(gpuCheck(hipStreamWaitEvent(s, g.lastDone, 0), "hipStreamWaitEvent"));
  const sscResult_t r = run(capturing);
  if (capturing) return r;
  // Recorded even after a failure: whatever was queued must finish before the next call reuses
  // the buffers.
  SSC_CHECK(gpuCheck(hipEventRecord(g.lastDone, s), "hipEventRecord"));
  g.lastStream = s;
  g.haveLast = true;
  return r;
}

}  // namespace

sscResult_t gpuDecode(sscKvCache* c, const DecodeArgs& a, sscStream_t stream) {
  return ordered(c, stream, [&](bool capturing) { return decodeOn(c, a, stream, capturing); });
}

sscResult_t gpuPrefill(sscKvCache* c, const PrefillArgs& a, sscStream_t stream) {
  return ordered(c, stream, [&](bool capturing) { return prefillOn(c, a, stream, capturing); });
}

namespace {

sscResult_t decodeOn(sscKvCache* c, const DecodeArgs& a, sscStream_t stream, bool capturing) {
  const sscKvCacheConfig_t& cfg = c->config;
  sscComm* comm = c->comm;
  const int nranks = comm->nranks, rank = comm->rank, D = cfg.head_dim, H = a.numQHeads;
  const int qHeads = a.qSharded ? H / nranks : H;
  auto s = static_cast<hipStream_t>(stream);

  GpuCacheState& g = *c->gpu;
  gpu::DeviceGuard onDevice(c->device);
  // The fused exchange's call epochs come from the host, so a graph's replays would repeat them:
  // a captured decode takes the all-gather (the core's captured collectives are replay-safe).
  // Every rank captures alike (as the core's collectives already assume), so all take it.
  const bool fused = g.fused && !capturing;
  if (fused) SSC_CHECK(g.exchange.begin("sscAttentionDecode"));

  // 1. Query slices all-gathered into [rank][batch][qHeads][D].
  const void* q = a.q;
  if (a.qSharded && nranks > 1 && fused) {
    SSC_CHECK(g.exchange.gatherQ(a.q, static_cast<size_t>(a.batch) * qHeads * D * dtypeSize(a.ioType),
                                 stream, &q));
  } else if (a.qSharded && nranks > 1) {
    SSC_CHECK(sscAllGather(a.q, c->qGather, static_cast<size_t>(a.batch) * qHeads * D, a.ioType,
                           comm, stream));
    q = c->qGather;
  }

  // 2. This rank's spans of each sequence (uploaded unless the last upload still holds them),
  // then the partial kernel into this rank's block.
  std::vector<int64_t> starts(a.batch);
  for (int b = 0; b < a.batch; ++b) starts[b] = windowStart(c, a.seqIds[b], a.window);
  if (!g.listValid || g.listVersion != c->table->version() || starts != g.listStarts ||
      !std::equal(a.seqIds, a.seqIds + a.batch, g.listSeqs.begin(), g.listSeqs.end())) {
    std::vector<int32_t> list;
    flattenSpans(*c->table, a.seqIds, starts.data(), a.batch, &list);
    if (list.size() > g.maxSpanInts)
      return fail(sscInternalError, "sscAttentionDecode: {} span ints exceed the {} reserved",
                  list.size(), g.maxSpanInts);
    g.listValid = false;
    SSC_CHECK(g.spans.put(list.data(), list.size() * sizeof(int32_t), s));
    g.listLongest = 0;
    for (int b = 0; b < a.batch; ++b) g.listLongest = std::max(g.listLongest, list[b + 1] - list[b]);
    g.listVersion = c->table->version();
    g.listSeqs.assign(a.seqIds, a.seqIds + a.batch);
    g.listStarts = starts;
    g.listValid = true;
  }
  const size_t count = partialCount(c, a.batch, H);
  float* mine = c->partials + rank * count;
  const auto* dev = static_cast<const int32_t*>(g.spans.device);
  gpu::AttnPartialParams pp{};
  pp.kPool = c->kPool;
  pp.vPool = c->vPool;
  pp.kvDtype = cfg.dtype;
  pp.q = q;
  pp.qDtype = a.ioType;
  pp.qHeadsPerRank = a.qSharded && nranks > 1 ? qHeads : H;
  pp.spanStart = dev;
  pp.spans = dev + a.batch + 1;
  pp.batch = a.batch;
  pp.numQHeads = H;
  pp.numKvHeads = cfg.num_kv_heads;
  pp.headDim = D;
  pp.pageSize = cfg.page_size;
  pp.scale = a.scale;
  const int64_t blocks = static_cast<int64_t>(a.batch) * cfg.num_kv_heads * headChunks(H, cfg.num_kv_heads);
  const int64_t splits = decodeSplits(blocks, g.listLongest,
                                    int64_t{gpu::attnPartialBlocksPerSm(pp)} * g.multiprocessors,
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
  SSC_CHECK(gpuCheck(static_cast<hipError_t>(gpu::launchAttnPartial(pp, s)), "the partial attention kernel launch"));
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
    return gpuCheck(static_cast<hipError_t>(gpu::launchAttnMerge(mp, s)), "the merge kernel launch");
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
    SSC_CHECK(gpuCheck(static_cast<hipError_t>(gpu::launchAttnMerge(mp, s)), "the split merge kernel launch"));
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
  return gpuCheck(static_cast<hipError_t>(gpu::launchAttnMerge(mp, s)), "the merge kernel launch");
}

// Output on every rank, after each rank put its H / K heads of a round's rows into its slot
// of qGather ([rank][token][hk][D], io type) and their LSEs into splitPartials: all-gather the
// slots (bf16/fp16 rows, not fp32 partials) and permute them into [token][head].
sscResult_t gatherHeads(sscKvCache* c, const PrefillArgs& a, int64_t tokens, int hk, void* out,
                        float* lse, hipStream_t s) {
  sscComm* comm = c->comm;
  const int nranks = comm->nranks, D = c->config.head_dim;
  const size_t ioBytes = dtypeSize(a.ioType), slice = static_cast<size_t>(tokens) * hk;
  char* gathered = static_cast<char*>(c->qGather);
  SSC_CHECK(sscAllGather(gathered + comm->rank * slice * D * ioBytes, gathered, slice * D, a.ioType,
                         comm, s));
  gpu::AttnHeadPermuteParams hp{gathered, out, nranks, static_cast<int>(tokens), hk,
                                static_cast<int>(D * ioBytes)};
  SSC_CHECK(gpuCheck(static_cast<hipError_t>(gpu::launchAttnHeadPermute(hp, s)), "the head permute launch"));
  if (lse == nullptr) return sscSuccess;
  float* lses = c->gpu->splitPartials;
  SSC_CHECK(sscAllGather(lses + comm->rank * slice, lses, slice, sscFloat32, comm, s));
  hp = {lses, lse, nranks, static_cast<int>(tokens), hk, 4};
  return gpuCheck(static_cast<hipError_t>(gpu::launchAttnHeadPermute(hp, s)), "the head permute launch");
}

// A prefill: the call's tokens in rounds that fit the exchange scratch. Per round, either
// (partials) this rank's causal partials of every (token, head) row over its pages, then the
// decode's exchange and merge with rows = tokens x heads (a round is one "batch" of
// round.tokens rows of H heads); or (KV side, prefill_plan.h) this rank's heads over every
// rank's pages read in place, finished here, then only the finished rows gathered.
sscResult_t prefillOn(sscKvCache* c, const PrefillArgs& a, sscStream_t stream, bool capturing) {
  const sscKvCacheConfig_t& cfg = c->config;
  sscComm* comm = c->comm;
  const int nranks = comm->nranks, rank = comm->rank, D = cfg.head_dim, H = a.numQHeads;
  const int outHeads = a.outSharded ? H / nranks : H;
  const size_t ioBytes = dtypeSize(a.ioType);
  auto s = static_cast<hipStream_t>(stream);
  GpuCacheState& g = *c->gpu;
  const bool fused = g.fused && !capturing;  // as a decode: epochs come from the host
  std::vector<PrefillChunk> chunks;
  planPrefillChunks(a.cuSeqlens, a.lengths.data(), a.batch, a.chunkTokens, &chunks);
  // Gathering heads (output on every rank): qGather holds a round's rows x head_dim x 4 bytes,
  // splitPartials must hold its LSEs.
  const bool headsGather = !a.outSharded && nranks > 1 && H % nranks == 0 &&
                           static_cast<size_t>(a.chunkTokens) * H <= g.splitFloats;
  // Output on every rank through the fused exchange: merge by heads, then gather them.
  const bool viaHeads = fused && headsGather;
  // KV side: tiles of 16 rows this rank runs at once (3 blocks of 4 warps an SM, prefill kernel).
  const int64_t warpSlots = int64_t{12} * g.fewestMultiprocessors;
  std::vector<const PageTable*> tables{c->table.get()};
  PrefillLists lists;
  bool readsPeers = false;
  for (const PrefillChunk& ch : chunks) {
    const PrefillSplit split = choosePrefillSplit(
        static_cast<PrefillMode>(c->prefillMode), c->peers != nullptr && (a.outSharded || headsGather),
        nranks, rank, H, cfg.num_kv_heads, ch.tokens, warpSlots);
    tables.assign(1, c->table.get());
    if (split.kvSide) {
      // The peers' appends of this call's tokens before the first read of their pages (every
      // rank decides alike: the same arguments and the fewest SMs of any rank).
      if (!readsPeers) SSC_CHECK(c->peers->barrier(c, stream));
      readsPeers = true;
      tables.clear();
      for (int q = 0; q < nranks; ++q) tables.push_back(&c->peers->table(q));
    }
    buildPrefillLists(tables, a.seqIds, ch, split.width, a.window, &lists);
    if (lists.flat.size() > g.prefillInts)
      return fail(sscInternalError, "sscAttentionPrefill: {} list ints exceed the {} reserved",
                  lists.flat.size(), g.prefillInts);
    SSC_CHECK(g.prefill.put(lists.flat.data(), lists.flat.size() * sizeof(int32_t), s));
    const auto* dev = static_cast<const int32_t*>(g.prefill.device);
    const size_t count = static_cast<size_t>(ch.tokens) * H * (D + 1);
    float* mine = c->partials + rank * count;
    gpu::AttnPrefillParams pp{};
    pp.pools = const_cast<const void* const*>(g.poolTable) + (split.kvSide ? 2 : 0);
    pp.numPools = split.kvSide ? nranks : 1;
    pp.kvDtype = cfg.dtype;
    pp.q = static_cast<const char*>(a.q) + static_cast<size_t>(ch.firstToken) * H * D * ioBytes;
    pp.qDtype = a.ioType;
    pp.pieces = dev;
    pp.spans = dev + lists.spansAt();
    pp.tiles = dev + lists.tilesAt();
    pp.numTiles = lists.numTiles;
    pp.numQHeads = H;
    pp.numKvHeads = cfg.num_kv_heads;
    pp.kvHeadFirst = split.kvFirst;
    pp.kvHeads = split.kvHeads;
    pp.rowHeads = split.width;
    pp.headOffset = split.offset;
    pp.headDim = D;
    pp.pageSize = cfg.page_size;
    pp.scale = a.scale;
    pp.window = a.window;
    pp.partials = mine;
    SSC_CHECK(gpuCheck(static_cast<hipError_t>(gpu::launchAttnPrefill(pp, s)), "the prefill kernel launch"));
    void* out = static_cast<char*>(a.out) + static_cast<size_t>(ch.firstToken) * outHeads * D * ioBytes;
    float* lse = a.lse != nullptr ? a.lse + static_cast<size_t>(ch.firstToken) * outHeads : nullptr;
    const int hk = H / nranks;
    const size_t slice = static_cast<size_t>(ch.tokens) * hk;  // rows of one rank's heads
    void* myOut = static_cast<char*>(c->qGather) + rank * slice * D * ioBytes;
    float* myLse = lse != nullptr ? g.splitPartials + rank * slice : nullptr;
    if (split.kvSide) {
      // This rank's rows saw every key: a merge of one "rank" applies the sinks and converts
      // them, straight into the output (sharded heads) or into this rank's slot for the gather.
      gpu::AttnMergeParams mp{};
      mp.partials = mine;
      mp.rankStride = count;
      mp.nranks = 1;
      mp.batch = static_cast<int>(ch.tokens);
      mp.numQHeads = H;
      mp.headDim = D;
      mp.firstHead = split.firstHead;
      mp.outHeads = split.heads;
      mp.sinks = a.sinks;
      mp.out = a.outSharded ? out : myOut;
      mp.outDtype = a.ioType;
      mp.lse = a.outSharded ? lse : myLse;
      SSC_CHECK(gpuCheck(static_cast<hipError_t>(gpu::launchAttnMerge(mp, s)), "the merge kernel launch"));
      if (!a.outSharded) SSC_CHECK(gatherHeads(c, a, ch.tokens, hk, out, lse, s));
      continue;
    }
    if (fused && viaHeads) {
      // Every rank merges its H / K heads (the push moves each row once, to its head's owner),
      // then the merged heads are all-gathered (bf16/fp16 rows, not fp32 partials: K x 2 to
      // 4 x fewer bytes than pushing every partial row to every rank) and put in place.
      SSC_CHECK(g.exchange.begin("sscAttentionPrefill"));
      DecodeArgs da{nullptr, a.ioType, H, static_cast<int>(ch.tokens), nullptr, a.scale, a.sinks, 0,
                    false, true, myOut, myLse};
      SSC_CHECK(g.exchange.pushAndMerge(c, da, mine, count, 1, stream));
      SSC_CHECK(gatherHeads(c, a, ch.tokens, hk, out, lse, s));
      continue;
    }
    if (fused) {
      SSC_CHECK(g.exchange.begin("sscAttentionPrefill"));
      DecodeArgs da{nullptr, a.ioType, H, static_cast<int>(ch.tokens), nullptr, a.scale, a.sinks, 0,
                    false, a.outSharded, out, lse};
      SSC_CHECK(g.exchange.pushAndMerge(c, da, mine, count, 1, stream));
      continue;
    }
    if (nranks > 1) SSC_CHECK(sscAllGather(mine, c->partials, count, sscFloat32, comm, stream));
    gpu::AttnMergeParams mp{};
    mp.partials = c->partials;
    mp.rankStride = count;
    mp.nranks = nranks;
    mp.batch = static_cast<int>(ch.tokens);
    mp.numQHeads = H;
    mp.headDim = D;
    mp.outHeads = outHeads;
    mp.firstHead = a.outSharded ? rank * outHeads : 0;
    mp.sinks = a.sinks;
    mp.out = out;
    mp.outDtype = a.ioType;
    mp.lse = lse;
    SSC_CHECK(gpuCheck(static_cast<hipError_t>(gpu::launchAttnMerge(mp, s)), "the merge kernel launch"));
  }
  // With sharded output heads no gather followed the reads: a peer must not reuse a page this
  // rank may still be reading (a release, then an append into it on that peer's stream).
  if (readsPeers && a.outSharded) SSC_CHECK(c->peers->barrier(c, stream));
  return sscSuccess;
}

}  // namespace

}  // namespace ssc::attn
