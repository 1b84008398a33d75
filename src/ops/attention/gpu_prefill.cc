// SPDX-License-Identifier: MIT
// A prefill on the GPU backend (prefill_plan.h decides each round's split): the lists of a
// round uploaded, the prefill kernel (src/ops/attention/attention_prefill_kernel.cu), then the
// partials' exchange and merge, or (KV side) this rank's finished heads gathered.
#include <vector>

#include "src/ops/attention/attention_kernel.h"
#include "src/ops/attention/attention_prefill_kernel.h"
#include "src/ops/attention/attention_prefill_rows.h"
#include "src/ops/attention/gpu_cache_state.h"
#include "src/ops/attention/peer_pools.h"
#include "src/ops/attention/prefill_plan.h"

namespace ssc::attn {

namespace {

static_assert(gpu::kPrefillSpanInts == PrefillLists::kSpanInts,
              "the kernel walks the plan's spans");
static_assert(kMaxPoolRanks <= gpu::kAttnPrefillMaxPools,
              "a KV-side launch names every rank's pools");

// Output on every rank, after each rank put its H / K heads of a round's rows into its slot
// of qGather ([rank][token][hk][D], io type) and their LSEs into splitPartials: all-gather the
// slots (bf16/fp16 rows, not fp32 partials) and permute them into [token][head].
sscResult_t gatherHeads(sscKvCache* c, const PrefillArgs& a, int64_t tokens, int hk, void* out,
                        float* lse, hipStream_t s) {
  sscComm* comm = c->comm;
  const int nranks = comm->nranks, D = c->config.headDim;
  const size_t ioBytes = dtypeSize(a.ioType), slice = static_cast<size_t>(tokens) * hk;
  char* gathered = static_cast<char*>(c->qGather);
  SSC_CHECK(sscAllGather(gathered + comm->rank * slice * D * ioBytes, gathered, slice * D, a.ioType,
                         comm, s));
  gpu::AttnHeadPermuteParams hp{
      gathered, out, nranks, static_cast<int>(tokens), hk, static_cast<int>(D * ioBytes)};
  SSC_CHECK(gpu::launchAttnHeadPermute(hp, s));
  if (lse == nullptr) return sscSuccess;
  float* lses = c->gpu->splitPartials;
  SSC_CHECK(sscAllGather(lses + comm->rank * slice, lses, slice, sscFloat32, comm, s));
  hp = {lses, lse, nranks, static_cast<int>(tokens), hk, 4};
  SSC_CHECK(gpu::launchAttnHeadPermute(hp, s));
  return sscSuccess;
}

// A prefill: the call's tokens in rounds that fit the exchange scratch. Per round, either
// (partials) this rank's causal partials of every (token, head) row over its pages, then the
// decode's exchange and merge with rows = tokens x heads (a round is one "batch" of
// round.tokens rows of H heads); or (KV side, prefill_plan.h) this rank's heads over every
// rank's pages read in place, finished here, then only the finished rows gathered.
}  // namespace

sscResult_t gpuPrefillRounds(sscKvCache* c, const PrefillArgs& a, sscStream_t stream) {
  const sscKvCacheConfig_t& cfg = c->config;
  sscComm* comm = c->comm;
  const int nranks = comm->nranks, rank = comm->rank, D = cfg.headDim, H = a.numQHeads;
  const int outHeads = a.outSharded ? H / nranks : H;
  const size_t ioBytes = dtypeSize(a.ioType);
  auto s = static_cast<hipStream_t>(stream);
  GpuCacheState& g = *c->gpu;
  const bool fused = g.fused;
  std::vector<PrefillChunk> chunks;
  planPrefillChunks(a.cuSeqlens, a.lengths.data(), a.batch, a.chunkTokens, &chunks);
  // Gathering heads (output on every rank): qGather holds a round's rows x headDim x 4 bytes,
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
    const PrefillSplit split =
        choosePrefillSplit(static_cast<PrefillMode>(c->prefillMode),
                           c->peers != nullptr && (a.outSharded || headsGather), nranks, rank, H,
                           cfg.numKvHeads, ch.tokens, warpSlots);
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
    pp.numKvHeads = cfg.numKvHeads;
    pp.kvHeadFirst = split.kvFirst;
    pp.kvHeads = split.kvHeads;
    pp.rowHeads = split.width;
    pp.headOffset = split.offset;
    pp.headDim = D;
    pp.pageSize = cfg.pageSize;
    pp.scale = a.scale;
    pp.window = a.window;
    pp.partials = mine;
    SSC_CHECK(gpu::launchAttnPrefill(pp, s));
    void* out =
        static_cast<char*>(a.out) + static_cast<size_t>(ch.firstToken) * outHeads * D * ioBytes;
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
      SSC_CHECK(gpu::launchAttnMerge(mp, s));
      if (!a.outSharded) SSC_CHECK(gatherHeads(c, a, ch.tokens, hk, out, lse, s));
      continue;
    }
    if (fused && viaHeads) {
      // Every rank merges its H / K heads (the push moves each row once, to its head's owner),
      // then the merged heads are all-gathered (bf16/fp16 rows, not fp32 partials: K x 2 to
      // 4 x fewer bytes than pushing every partial row to every rank) and put in place.
      SSC_CHECK(g.exchange.begin("sscAttentionPrefill"));
      DecodeArgs da{nullptr, a.ioType, H,       static_cast<int>(ch.tokens),
                    nullptr, a.scale,  a.sinks, 0,
                    false,   true,     myOut,   myLse};
      SSC_CHECK(g.exchange.pushAndMerge(c, da, mine, count, 1, stream));
      SSC_CHECK(gatherHeads(c, a, ch.tokens, hk, out, lse, s));
      continue;
    }
    if (fused) {
      SSC_CHECK(g.exchange.begin("sscAttentionPrefill"));
      DecodeArgs da{nullptr, a.ioType,     H,       static_cast<int>(ch.tokens),
                    nullptr, a.scale,      a.sinks, 0,
                    false,   a.outSharded, out,     lse};
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
    SSC_CHECK(gpu::launchAttnMerge(mp, s));
  }
  // With sharded output heads no gather followed the reads: a peer must not reuse a page this
  // rank may still be reading (a release, then an append into it on that peer's stream).
  if (readsPeers && a.outSharded) SSC_CHECK(c->peers->barrier(c, stream));
  return sscSuccess;
}

}  // namespace ssc::attn
