// SPDX-License-Identifier: MIT
// The fused forms whose ranks order themselves with waiting kernels (docs/gemm.md
// "How a call runs"): the GEMM + reduce-scatter that sums each owner's rows out of every rank's
// slot, and the all-gather + GEMM in its push and per-rank forms. Every step on the caller's
// stream (gemm_plan.h says why nothing runs beside a waiting kernel). SSC_GEMM_COPY_ENGINE's
// forms, with stream memory operations instead of the waiting kernels, are gpu_gemm_ce.cc.
#include "src/api/api.h"
#include "src/core/log.h"
#include "src/ops/gemm/gemm_fused_kernel.h"
#include "src/ops/gemm/gpu_gemm_internal.h"
#include "src/platform/gpu_check.h"

namespace ssc::gemm {

#if defined(STARSCREAM_HAVE_BLASLT)
namespace {

// The fused waits, as FusedErrorSink::site names them in a timeout's report. The lanes of the
// gates are readers (q = lane % nranks, two earlier uses at most), of the others producers.
enum FusedSite : uint32_t { kSiteRsGate = 1, kSiteRsReady, kSiteAgGate, kSiteAgRows, kSiteArrive };

sscResult_t earlierTimeout(const FusedWaitState& gs, int nranks) {
  if (gs.errHost[0] == 0) return sscSuccess;
  const uint32_t lane = gs.errHost[1], seen = gs.errHost[2], want = gs.errHost[3];
  const char* what = "a fused wait";
  switch (gs.errHost[4]) {
    case kSiteRsGate:
      what = "GEMM + reduce-scatter, before refilling a slot: the done flag of reader";
      break;
    case kSiteRsReady:
      what = "GEMM + reduce-scatter, before the sum: the ready flag of producer";
      break;
    case kSiteAgGate: what = "all-gather + GEMM, before the push: the done flag of reader"; break;
    case kSiteAgRows: what = "all-gather + GEMM, before the GEMM: the rows flag of producer"; break;
    case kSiteArrive:
      what =
          "the arrival barrier before a collective (STARSCREAM_GEMM_BARRIER): the arrive flag of";
      break;
    default: break;
  }
  return fail(sscTimeout,
              "gemm: an earlier call's wait passed STARSCREAM_TIMEOUT ({} rank {}: "
              "holds use {}, the wait needs {}): a peer is missing or hung; the context's results "
              "since then are not valid (destroy it)",
              what, lane % nranks, seen, want);
}

gpu::FusedErrorSink sinkAt(const FusedWaitState& gs, FusedSite site) {
  return gpu::FusedErrorSink{gs.errDevice, gs.timeoutTicks, gs.abort, site};
}

}  // namespace

// One warp: this rank's arrive count into every rank's flags (its own included, so lane q is rank
// q), then a wait for every rank's count here. While a late peer's GEMM runs, an early rank now
// waits with one warp instead of the core collective's 16 blocks. (Stream memory operations
// would hold no SM at all, but such a barrier cost about twice this one's 14-16 us a call at 8 MPS
// partitions of an H200: docs/gemm.md, "The arrival barrier".)
sscResult_t kernelArrivalBarrier(sscGemmContext* g, hipStream_t s) {
  const FusedWaitState gs = gpuFusedWaitState(g);
  const int me = g->comm->rank, K = g->comm->nranks;
  SSC_CHECK(earlierTimeout(gs, K));
  const uint32_t use = ++g->arriveUses;
  uint32_t* signals[gpu::kFusedMaxRanks];
  const uint32_t* flags[gpu::kFusedMaxRanks];
  uint32_t at[gpu::kFusedMaxRanks];
  for (int q = 0; q < K; ++q) {
    signals[q] = fusedArrive(g, q, me);
    flags[q] = fusedArrive(g, me, q);
    at[q] = use;
  }
  SSC_CHECK(gpu::launchFusedSignalWait(signals, K, use, flags, at, K, sinkAt(gs, kSiteArrive), s));
  return sscSuccess;
}

sscResult_t gemmOwnRows(sscGemmContext* g, const Call& c, hipStream_t s) {
  const RowRange own = rowShard(c.p.m, c.p.nranks, c.rank);
  if (own.count == 0) return sscSuccess;
  GemmPiece g0;
  g0.rows = own.count;
  g0.dRow = own.first;
  return gpuPiece(g, c, c.x, c.y, g0, false, s);
}

sscResult_t gemmGatheredSlot(sscGemmContext* g, const Call& c, size_t slotOff, hipStream_t s) {
  const void* local = cbyte(g->workspace, slotOff);
  GemmPiece all;
  all.rows = c.p.m;
  SSC_CHECK(gpuPiece(g, c, local, c.y, all, false, s));
  if (c.xGathered == nullptr) return sscSuccess;
  // The slot's rows are X's rows (x in place inside it: the same bytes).
  SSC_GPU_CHECK(hipMemcpyAsync(c.xGathered, local, c.p.m * c.p.k * typeBytes(c.inType),
                               hipMemcpyDeviceToDevice, s),
                "gemm: copying the gathered x out of the slot");
  return sscSuccess;
}

sscResult_t gemmPeersPrepare(sscGemmContext* g, const Call& c, size_t slotOff, uint32_t use,
                             hipStream_t s, PeerBatch* batch) {
  *batch = PeerBatch{};
  batch->peers = peerGemms(c.p, c.rank);
  return batch->peers.batch ? gpuPreparePeerBatch(g, c, slotOff, use, s, batch) : sscSuccess;
}

sscResult_t gemmPeersInPlace(sscGemmContext* g, const Call& c, const PeerBatch& batch,
                             size_t slotOff, hipStream_t s) {
  auto one = [&](int q) {  // peer q's rows, one GEMM
    const RowRange r = rowShard(c.p.m, c.p.nranks, q);
    GemmPiece gq;
    gq.rows = r.count;
    gq.aRow = gq.dRow = r.first;
    return gpuPiece(g, c, cbyte(g->fusedPeers[static_cast<size_t>(q)], slotOff), c.y, gq, false, s);
  };
  // Both lists rotated, so the ranks do not all read one peer's slot at once.
  if (batch.ready)
    SSC_CHECK(gpuRunPeerBatch(g, batch, s));
  else
    for (int q : batch.peers.batched) SSC_CHECK(one(q));
  for (int q : batch.peers.single) SSC_CHECK(one(q));
  return sscSuccess;
}

// The fused GEMM + reduce-scatter (gemm_plan.h), all on the caller's stream. Per chunk: wait
// until every owner has read what this rank's slot held before (done flags), the chunk's GEMM
// pieces into the local slot; publish it (ready flag) and wait for every rank's in one launch
// (at small M every kernel boundary shows), sum this rank's rows out of the K slots in place
// (peer mappings) into y, tell each producer (done flag in its workspace). More chunks bound
// the workspace a call needs; they do not overlap within a rank (gemm_plan.h says why), only
// across ranks (the two slots let a fast rank run one chunk ahead). Nothing waits at the end
// for the owners to finish reading: the next call's first wait covers both slots (its plan may
// lay the slots out differently), and destroy waits too.

sscResult_t kernelRunFusedReduceScatter(sscGemmContext* g, const Call& c, hipStream_t s) {
  const FusedWaitState gs = gpuFusedWaitState(g);
  const Problem& p = c.p;
  const Plan& pl = c.plan;
  const size_t ob = typeBytes(c.outType);
  const int me = c.rank, K = p.nranks;
  SSC_CHECK(earlierTimeout(gs, K));
  const uint32_t* flags[gpu::kFusedMaxWaits];
  uint32_t targets[gpu::kFusedMaxWaits];
  uint32_t* doneAt[gpu::kFusedMaxRanks];
  const void* srcs[gpu::kFusedMaxRanks];
  for (int j = 0; j < pl.chunks; ++j) {
    const uint32_t use = ++g->fusedUses;
    const int slot = static_cast<int>(use % pl.slots);
    const ChunkRows cr = chunkRows(pl, j);
    void* mySlot = static_cast<char*>(g->workspace) + slot * pl.slotBytes;
    // Before the GEMM: every owner read this slot's previous use; on the first chunk also the
    // other slot's (the last call's plan may have laid its slots over this one).
    int n = 0;
    for (int back = 0; back < (j == 0 ? pl.slots : 1); ++back) {
      const uint32_t prev = use - pl.slots + back;  // the earlier use of slot (use + back) % slots
      for (int q = 0; q < K; ++q, ++n) {
        flags[n] = fusedDone(g, me, static_cast<int>(prev % pl.slots), q);
        targets[n] = prev;
      }
    }
    SSC_CHECK(gpu::launchFusedWait(flags, targets, n, nullptr, 0, sinkAt(gs, kSiteRsGate), s));
    for (const GemmPiece& piece : chunkPieces(p, pl, j))
      SSC_CHECK(gpuPiece(g, c, c.x, mySlot, piece, true, s));
    uint32_t* myReady = fusedReady(g, me, slot);
    for (int q = 0; q < K; ++q) {
      flags[q] = fusedReady(g, q, slot);
      targets[q] = use;
      doneAt[q] = fusedDone(g, q, slot, me);
      srcs[q] = cbyte(g->fusedPeers[q], slot * pl.slotBytes + me * cr.rows * p.n * ob);
    }
    SSC_CHECK(gpu::launchFusedWait(flags, targets, K, myReady, use, sinkAt(gs, kSiteRsReady), s));
    const int64_t mine = ownChunkRows(p, pl, j, me);
    if (mine > 0)
      SSC_CHECK(gpu::launchFusedReduce(byte(c.y, cr.begin * p.n * ob), srcs, K,
                                       static_cast<size_t>(mine * p.n), static_cast<int>(ob),
                                       c.outType == sscBfloat16, 4 * gpuSms(g), s));
    SSC_CHECK(gpu::launchFusedSignal(doneAt, K, use, s));
    g->lastDoneIndex = slot;
  }
  return sscSuccess;
}

// The fused all-gather + GEMM (gemm_plan.h), all on the caller's stream: no collective call.
//   push:     [wait the slot's readers, then store my rows into every rank's slot] ->
//             [from flags in every rank, wait for every rank's] -> one GEMM over my slot -> done
//   per rank: [wait the slot's readers, then copy my rows into my slot] -> from flags ->
//             GEMM of my rows from x -> [wait every rank's from] -> one GEMM per peer, reading
//             its slot in place -> done
// The flags' index is use % 2 whatever the slot count (so destroy's wait reads the same words);
// the gate waits for the readers of both earlier uses, as a slot may overlap either (an earlier
// call's plan may differ, the reduce-scatter shares the workspace).
sscResult_t kernelRunFusedAllGather(sscGemmContext* g, const Call& c, hipStream_t s) {
  const FusedWaitState gs = gpuFusedWaitState(g);
  const Problem& p = c.p;
  const Plan& pl = c.plan;
  const size_t ib = typeBytes(c.inType);
  const int me = c.rank, K = p.nranks;
  SSC_CHECK(earlierTimeout(gs, K));
  const uint32_t use = ++g->fusedUses;
  const int fi = static_cast<int>(use % 2);
  const size_t slotOff = (use % pl.slots) * pl.slotBytes;
  const RowRange own = rowShard(p.m, K, me);
  const uint32_t* gate[gpu::kFusedMaxWaits];
  uint32_t gateAt[gpu::kFusedMaxWaits];
  int n = 0;
  for (uint32_t back = 2; back >= 1; --back)
    for (int q = 0; q < K; ++q, ++n) {
      gate[n] = fusedDone(g, me, static_cast<int>((use - back) % 2), q);
      gateAt[n] = use - back;
    }
  void* dsts[gpu::kFusedMaxRanks];
  int nd = 0;
  for (int q = 0; q < K; ++q)
    if (!pl.agPerRank || q == me)
      dsts[nd++] = byte(g->fusedPeers[q], slotOff + me * pl.block * p.k * ib);
  // The gate in one warp of its own launch, not in every block of the push: an early rank's
  // push would otherwise spin on up to all of its SMs until the slowest reader's GEMM of the
  // previous call ends, and where ranks share SMs (MPS partitions) that starves the very GEMM
  // it waits for (the per-rank form ran 2x slower at M = 16384 that way; the arrival barrier,
  // docs/gemm.md, is the same lesson).
  SSC_CHECK(gpu::launchFusedWait(gate, gateAt, n, nullptr, 0, sinkAt(gs, kSiteAgGate), s));
  SSC_CHECK(gpu::launchFusedPush(c.x, dsts, nd, own.count * p.k * ib, 4 * gpuSms(g), s));
  uint32_t* from[gpu::kFusedMaxRanks];
  const uint32_t* mine[gpu::kFusedMaxRanks];
  uint32_t at[gpu::kFusedMaxRanks];
  for (int q = 0; q < K; ++q) {
    from[q] = fusedFrom(g, q, fi, me);
    mine[q] = fusedFrom(g, me, fi, q);
    at[q] = use;
  }
  if (!pl.agPerRank) {
    SSC_CHECK(gpu::launchFusedSignalWait(from, K, use, mine, at, K, sinkAt(gs, kSiteAgRows), s));
    SSC_CHECK(gemmGatheredSlot(g, c, slotOff, s));
  } else {
    SSC_CHECK(gpu::launchFusedSignal(from, K, use, s));
    SSC_CHECK(gemmOwnRows(g, c, s));  // my rows first, straight from x: no wait
    // The peers' batch table is stored by the wait launch. Its slot (use % 2) was last read by
    // the GEMM of use - 2, which ended before this rank's done of use - 2, which the push's gate
    // above waited for.
    PeerBatch batch;
    SSC_CHECK(gemmPeersPrepare(g, c, slotOff, use, s, &batch));
    SSC_CHECK(gpu::launchFusedWait(mine, at, K, nullptr, 0, sinkAt(gs, kSiteAgRows), s,
                                   batch.ready ? &batch.store : nullptr));
    SSC_CHECK(gemmPeersInPlace(g, c, batch, slotOff, s));
  }
  uint32_t* doneAt[gpu::kFusedMaxRanks];
  for (int q = 0; q < K; ++q) doneAt[q] = fusedDone(g, q, fi, me);
  g->lastDoneIndex = fi;
  SSC_CHECK(gpu::launchFusedSignal(doneAt, K, use, s));
  return sscSuccess;
}

#endif

}  // namespace ssc::gemm
