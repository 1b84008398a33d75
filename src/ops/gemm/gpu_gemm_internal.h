// SPDX-License-Identifier: MIT
// What the GPU half's files share (gpu_gemm.cc, gpu_gemm_fused.cc, gpu_gemm_ce.cc): one GEMM piece
// on the context's vendor BLAS, and the copy-engine form's state behind the GpuGemmState. Built
// only with a GPU backend; nothing outside src/ops/gemm includes it.
#pragma once

#include <vector>

#include "src/ops/gemm/gemm_fused_kernel.h"
#include "src/ops/gemm/gemm_context.h"
#include "src/platform/gpu_runtime.h"

namespace ssc::gemm {

// gpu_gemm.cc: a GEMM piece of call c from A rows of `a` into D rows of `d` on stream s (the
// BLAS's algorithm vetted once per shape where STARSCREAM_GEMM_PROBE is on). With `scratch`, a
// strided batch runs as one 2D copy and one GEMM through the plan's scratch (runPiece).
sscResult_t gpuPiece(sscGemmContext* g, const Call& c, const void* a, void* d,
                     const GemmPiece& piece, bool scratch, hipStream_t s);
// The context's SMs as the runtime reports them (the MPS share under a cap).
int gpuSms(sscGemmContext* g);
// What the waiting kernels need to bound and report a wait (GpuGemmState): the pinned words a
// timed-out wait fills {code, lane, seen, target, site}, their device address, the bound in GPU
// timer ticks (0: none) and the communicator's abort word.
struct FusedWaitState {
  volatile uint32_t* errHost;
  uint32_t* errDevice;
  uint64_t timeoutTicks;
  const uint32_t* abort;
};
FusedWaitState gpuFusedWaitState(sscGemmContext* g);

// gpu_gemm_fused.cc: the per-rank all-gather's GEMMs, which both of its forms run: this rank's
// rows straight from x into their rows of y, and each peer's rows read in place from its slot
// (at slotOff in its mapped workspace) into theirs.
sscResult_t gemmOwnRows(sscGemmContext* g, const Call& c, hipStream_t s);
// The push form's GEMM: ONE over the gathered X in the local slot (at slotOff), and the slot
// copied to xGathered where asked.
sscResult_t gemmGatheredSlot(sscGemmContext* g, const Call& c, size_t slotOff, hipStream_t s);
// The peers' rows (peerGemms, gemm_plan.h): `prepare` before the launch that waits for the
// peers' rows (it may probe a new shape, which waits for the stream), then that launch stores
// batch->store (PeerBatch) where batch->ready, then `run` after it. use: the call's use number
// (the table's slot, rewritten two uses later, after this call's done flags).
struct PeerBatch;
sscResult_t gemmPeersPrepare(sscGemmContext* g, const Call& c, size_t slotOff, uint32_t use,
                             hipStream_t s, PeerBatch* batch);
sscResult_t gemmPeersInPlace(sscGemmContext* g, const Call& c, const PeerBatch& batch,
                             size_t slotOff, hipStream_t s);
// gpu_gemm.cc: the peers with full blocks as ONE pointer-array batch of the vendor BLAS, whose
// table (W, X, D pointers) a kernel stores on the stream before the GEMM (from its launch
// arguments, so no host buffer must outlive the call): `ready` where the
// build has pointer-array batches (SSC_BLAS_POINTER_ARRAY) and the BLAS an algorithm for it
// (vetted by the probe like any shape); else the peers run one GEMM each.
struct PeerBatch {
  PeerGemms peers;  // peerGemms(c.p, c.rank), once a call
  bool ready = false;
  gpu::PointerStore store;      // what the wait launch stores (dst: the table)
  const void* shape = nullptr;  // gpu_gemm.cc's Shape
  void** table = nullptr;
  int slot = 0;  // the table's: use % 2
};
// b->peers set, b->peers.batch true; fills the rest of *b.
sscResult_t gpuPreparePeerBatch(sscGemmContext* g, const Call& c, size_t slotOff, uint32_t use,
                                hipStream_t s, PeerBatch* b);
sscResult_t gpuRunPeerBatch(sscGemmContext* g, const PeerBatch& b, hipStream_t s);
// The copy-engine form's store of b's table on stream s (one launch), after the last GEMM that
// read the same table slot wherever it ran (an event: no flag of that form orders it).
sscResult_t gpuStorePeerTable(sscGemmContext* g, const PeerBatch& b, hipStream_t s);
// gpu_gemm_fused.cc: the arrival barrier (STARSCREAM_GEMM_BARRIER) on stream s: after this
// rank's earlier work, its arrive count into every rank's flags; the stream goes on once every
// rank's is here (one waiting warp). A wait past STARSCREAM_TIMEOUT fails the context's next call.
sscResult_t kernelArrivalBarrier(sscGemmContext* g, hipStream_t s);
// gpu_gemm_fused.cc: the fused forms ordered by waiting kernels.
sscResult_t kernelRunFusedReduceScatter(sscGemmContext* g, const Call& c, hipStream_t s);
sscResult_t kernelRunFusedAllGather(sscGemmContext* g, const Call& c, hipStream_t s);

// gpu_gemm_ce.cc: SSC_GEMM_COPY_ENGINE's fused forms, and their state (a stream for the copies,
// events, the watchdog that releases a stream wait stuck past STARSCREAM_TIMEOUT), created on
// the context's first such call and freed with the context.
class CopyEngine;
CopyEngine** gpuCopyEngine(sscGemmContext* g);  // gpu_gemm.cc: its slot in the GpuGemmState
sscResult_t ceRunFusedReduceScatter(sscGemmContext* g, const Call& c, hipStream_t s);
sscResult_t ceRunFusedAllGather(sscGemmContext* g, const Call& c, hipStream_t s);
// sscTimeout naming what a stream wait waited for when the watchdog released one (the results
// since are not valid), else sscSuccess. ce may be null.
sscResult_t ceEarlierTimeout(const CopyEngine* ce);
void ceDestroy(CopyEngine* ce);

}  // namespace ssc::gemm
