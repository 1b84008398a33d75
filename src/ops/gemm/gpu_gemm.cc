// SPDX-License-Identifier: MIT
// The GPU backend's half of the fused GEMM-collectives (the context's state, BLAS shapes
// included, is gpu_gemm_state.h): the chunks' GEMMs on the vendor BLAS
// (cuBLASLt / hipBLASLt through src/platform/gpu_runtime.h), the collectives through the
// core's sscReduceScatter / sscAllGather (zero-copy on registered and plain buffers where the
// core can), everything on the caller's stream in schedule()'s order (gemm_plan.h says why a
// vendor GEMM never runs beside a waiting kernel); the fused variants are gpu_gemm_fused.cc
// (waiting kernels) and gpu_gemm_ce.cc (SSC_GEMM_COPY_ENGINE). Nothing here waits for the
// device on the host but the probe of a new GEMM shape's algorithm (gpu_gemm_probe.h), once per
// shape and only where STARSCREAM_GEMM_PROBE is on.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>

#include "src/api/api.h"
#include "src/device/backend.h"
#include "src/platform/gpu_check.h"
#include "src/platform/gpu_runtime.h"
#include "src/core/futex_wait.h"
#include "src/device/gpu/gpu_launch_order.h"
#include "src/ops/gemm/gemm_fused_kernel.h"
#include "src/ops/gemm/gemm_context.h"
#include "src/ops/gemm/gpu_gemm_internal.h"
#include "src/ops/gemm/gpu_gemm_probe.h"
#include "src/ops/gemm/gpu_gemm_state.h"
#include "src/core/log.h"

namespace ssc::gemm {

sscResult_t gpuCreate(sscGemmContext* g) {
  gpu::DeviceGuard onDevice(g->device);
#if !defined(STARSCREAM_HAVE_BLASLT)
  return fail(
      sscInvalidUsage,
      "sscGemmCreate: this build of Starscream has no vendor BLAS "
      "(hipBLASLt was not found when it was configured), which the GEMM ops need on the GPU");
#else
  // Left uninitialised: rows past m in a slot or the pad only ever feed rows nobody keeps, and a
  // hipMemset on the null stream could wait behind another communicator's kernel.
  SSC_CHECK(g->backend->memAlloc(&g->workspace, g->workspaceBytes + kFusedFlagBytes));
  auto* s = new GpuGemmState;
  g->gpu = s;
  SSC_GPU_CHECK(hipStreamCreateWithFlags(&s->side, hipStreamNonBlocking),
                "gemm: creating the context's side stream");
  // The fused variant's flags start at zero (no chunk published, none read) before any peer can
  // map them (the first fused call), on the side stream: the null stream could wait behind
  // another communicator's kernel.
  SSC_GPU_CHECK(hipMemsetAsync(static_cast<char*>(g->workspace) + g->workspaceBytes, 0,
                               kFusedFlagBytes, s->side),
                "gemm: zeroing the fused variant's flags");
  SSC_GPU_CHECK(hipStreamSynchronize(s->side), "gemm: waiting for the flags' zeroing");
  void* err = nullptr;
  SSC_GPU_CHECK(hipHostMalloc(&err, 64, hipHostMallocMapped),
                "gemm: allocating the mapped words of the fused waits' timeouts");
  s->errHost = static_cast<volatile uint32_t*>(err);
  for (int i = 0; i < 16; ++i) s->errHost[i] = 0;
  SSC_GPU_CHECK(hipHostGetDevicePointer(reinterpret_cast<void**>(&s->errDevice), err, 0),
                "gemm: mapping the timeout words for the device");
  const double seconds = g->waits.timeoutSeconds,
               ticks = seconds * sscGpuTimerTicksPerSecond(g->device);
  if (seconds > 0 && std::isfinite(ticks) && ticks < 9.0e18)
    s->timeoutTicks = static_cast<uint64_t>(ticks);
  s->abort = g->comm->backend->deviceAbortWord(g->comm);
  if (hipDeviceGetAttribute(&s->sms, hipDeviceAttributeMultiprocessorCount, g->device) !=
      hipSuccess) {
    (void)hipGetLastError();  // the fallback below; a later launch's check must not report it
    s->sms = 1;
  }
  s->probe = g->probe;
  SSC_CHECK(blasCheck(hipblasLtCreate(&s->lt), "hipblasLtCreate"));
  SSC_GPU_CHECK(hipMalloc(&s->blasWorkspace, kBlasWorkspaceBytes),
                "gemm: allocating {} bytes of BLAS workspace", kBlasWorkspaceBytes);
  SSC_GPU_CHECK(
      hipMalloc(reinterpret_cast<void**>(&s->tables), 2 * gpu::kFusedMaxStores * sizeof(void*)),
      "gemm: allocating the pointer-array tables");
  for (hipEvent_t& e : s->tableRead)
    SSC_GPU_CHECK(hipEventCreateWithFlags(&e, hipEventDisableTiming),
                  "gemm: creating a pointer-array table's event");
  return sscSuccess;
#endif
}

int gpuSms(sscGemmContext* g) { return g->gpu->sms; }
FusedWaitState gpuFusedWaitState(sscGemmContext* g) {
  const GpuGemmState* s = g->gpu;
  return FusedWaitState{s->errHost, s->errDevice, s->timeoutTicks, s->abort};
}
CopyEngine** gpuCopyEngine(sscGemmContext* g) { return &g->gpu->ce; }

bool gpuFusedFlags(sscGemmContext* g, uint32_t* out, size_t bytes) {
  gpu::DeviceGuard onDevice(g->device);
  GpuGemmState* s = g->gpu;
  // On the side stream: the null stream could wait behind another communicator's kernel.
  return s != nullptr &&
         hipMemcpyAsync(out, static_cast<char*>(g->workspace) + g->workspaceBytes, bytes,
                        hipMemcpyDeviceToHost, s->side) == hipSuccess &&
         hipStreamSynchronize(s->side) == hipSuccess;
}

void gpuDestroy(sscGemmContext* g) {
  gpu::DeviceGuard onDevice(g->device);
  if (g->gpu != nullptr) ceDestroy(g->gpu->ce);  // its watchdog reads the workspace's flags
  if (g->workspace != nullptr) (void)g->backend->memFree(g->workspace);  // on the context's device
  g->workspace = nullptr;
  GpuGemmState* s = g->gpu;
  if (s == nullptr) return;
  // Teardown returns nothing: a destroy or free that fails leaves nothing for the owner to do.
  if (s->side != nullptr) (void)hipStreamDestroy(s->side);
  if (s->errHost != nullptr) (void)hipHostFree(const_cast<uint32_t*>(s->errHost));
#if defined(STARSCREAM_HAVE_BLASLT)
  // As above: nothing to report a failed free to.
  if (s->blasWorkspace != nullptr) (void)hipFree(s->blasWorkspace);
  if (s->tables != nullptr) (void)hipFree(s->tables);
  for (hipEvent_t e : s->tableRead)
    if (e != nullptr) (void)hipEventDestroy(e);
#endif
  delete s;
  g->gpu = nullptr;
}

#if defined(STARSCREAM_HAVE_BLASLT)
namespace {

// One GEMM piece of a chunk. A strided batch (one side strided over the ranks' blocks: the
// reduce-scatter's x rows, the all-gather's y rows) reads W once per rank; with the plan's
// scratch it becomes one 2D copy and ONE GEMM that reads W once (Plan::scratchBytes).
sscResult_t runPiece(GpuGemmState* gs, const Call& c, const void* a, void* d, const GemmPiece& g,
                     void* scratch, hipStream_t on) {
  if (g.batch <= 1 || scratch == nullptr) return gs->matmul(c, a, d, g, on);
  // Rows that are not 16-byte multiples (odd K or N): the batch, as before the scratch. On the
  // H200 the one-GEMM form of such a piece (301 x 257 x 129, fp16 -> fp32, K = 8) was refused by
  // cuBLASLt at launch ("not supported") although its heuristic had returned an algorithm; the
  // model shapes this path is for have 16-byte rows.
  const size_t aRow = c.p.k * typeBytes(c.inType), dRow = c.p.n * typeBytes(c.outType);
  if (aRow % 16 != 0 || dRow % 16 != 0 || reinterpret_cast<uintptr_t>(scratch) % 256 != 0)
    return gs->matmul(c, a, d, g, on);
  GemmPiece one;
  one.rows = g.rows * g.batch;
  if (g.aStride != g.rows) {  // A strided, D contiguous: A's rows into the scratch first
    const size_t row = c.p.k * typeBytes(c.inType);
    SSC_GPU_CHECK(hipMemcpy2DAsync(scratch, g.rows * row, cbyte(a, g.aRow * row), g.aStride * row,
                                   g.rows * row, g.batch, hipMemcpyDeviceToDevice, on),
                  "gemm: gathering {} strided blocks of {} rows into the scratch", g.batch, g.rows);
    one.dRow = g.dRow;
    return gs->matmul(c, scratch, d, one, on);
  }
  one.aRow = g.aRow;  // A contiguous, D strided: one GEMM into the scratch, then its rows out
  SSC_CHECK(gs->matmul(c, a, scratch, one, on));
  const size_t row = c.p.n * typeBytes(c.outType);
  SSC_GPU_CHECK(hipMemcpy2DAsync(byte(d, g.dRow * row), g.dStride * row, scratch, g.rows * row,
                                 g.rows * row, g.batch, hipMemcpyDeviceToDevice, on),
                "gemm: scattering {} blocks of {} rows out of the scratch", g.batch, g.rows);
  return sscSuccess;
}

void* scratchOf(sscGemmContext* g, const Plan& pl) {
  return pl.scratchBytes == 0
             ? nullptr
             : static_cast<char*>(g->workspace) + pl.slots * pl.slotBytes + pl.padBytes;
}

}  // namespace

sscResult_t gpuPiece(sscGemmContext* g, const Call& c, const void* a, void* d,
                     const GemmPiece& piece, bool scratch, hipStream_t s) {
  return runPiece(g->gpu, c, a, d, piece, scratch ? scratchOf(g, c.plan) : nullptr, s);
}

sscResult_t gpuPreparePeerBatch(sscGemmContext* g, const Call& c, size_t slotOff, uint32_t use,
                                hipStream_t s, PeerBatch* b) {
#if defined(SSC_BLAS_POINTER_ARRAY)
  const std::vector<int>& peers = b->peers.batched;
  const int batch = static_cast<int>(peers.size());
  if (batch < 2 || batch > kPointerTableStride) return sscSuccess;
  GpuGemmState* gs = g->gpu;
  const size_t ib = typeBytes(c.inType), ob = typeBytes(c.outType);
  void** table = gs->tables + (use % 2) * gpu::kFusedMaxStores;
  uint32_t alignX = 256, alignD = 256;
  b->store.dst = table;
  b->store.count = 2 * kPointerTableStride + batch;
  for (int i = 0; i < batch; ++i) {
    const int q = peers[static_cast<size_t>(i)];
    const RowRange r = rowShard(c.p.m, c.p.nranks, q);
    const void* x = cbyte(g->fusedPeers[static_cast<size_t>(q)], slotOff + r.first * c.p.k * ib);
    void* y = byte(c.y, r.first * c.p.n * ob);
    alignX = std::min(alignX, alignmentOf(x, 0));
    alignD = std::min(alignD, alignmentOf(y, 0));
    b->store.v[i] = c.w;
    b->store.v[kPointerTableStride + i] = x;
    b->store.v[2 * kPointerTableStride + i] = y;
  }
  const Shape* shape = nullptr;
  SSC_CHECK(gs->tableShape(c, blockRows(c.p.m, c.p.nranks), batch, alignX, alignD, s, &shape));
  if (!shape->found) return sscSuccess;  // one GEMM per peer
  b->shape = shape;
  b->table = table;
  b->slot = static_cast<int>(use % 2);
  b->ready = true;
#else
  (void)g, (void)c, (void)slotOff, (void)use, (void)s, (void)b;
#endif
  return sscSuccess;
}

sscResult_t gpuRunPeerBatch(sscGemmContext* g, const PeerBatch& b, hipStream_t s) {
#if defined(SSC_BLAS_POINTER_ARRAY)
  GpuGemmState* gs = g->gpu;
  SSC_CHECK(gs->matmulTable(*static_cast<const Shape*>(b.shape), b.table, s));
  // Fused forms never run under stream capture (gemm_api.cc), so the event is a plain one.
  SSC_GPU_CHECK(hipEventRecord(gs->tableRead[b.slot], s),
                "gemm: recording the end of a pointer-array batch");
  return sscSuccess;
#else
  (void)g, (void)b, (void)s;
  return fail(sscInternalError, "gemm: a pointer-array batch in a build without one");
#endif
}

sscResult_t gpuStorePeerTable(sscGemmContext* g, const PeerBatch& b, hipStream_t s) {
  SSC_GPU_CHECK(hipStreamWaitEvent(s, g->gpu->tableRead[b.slot], 0),
                "gemm: ordering a pointer table's store after its last reader");
  SSC_CHECK(gpu::launchFusedSignalWait(nullptr, 0, 0, nullptr, nullptr, 0, gpu::FusedErrorSink{}, s,
                                       &b.store));
  return sscSuccess;
}
#endif

#if defined(STARSCREAM_HAVE_BLASLT)
namespace {

// The op without its bias, everything it writes into y ordered before the caller's stream's
// next work (the schedule ends on the caller's stream; the fused variants end there too).
sscResult_t runOp(sscGemmContext* g, const Call& c, sscStream_t stream) {
  GpuGemmState* gs = g->gpu;
  const Problem& p = c.p;
  const Plan& pl = c.plan;
  const auto s = static_cast<hipStream_t>(stream);
  const size_t ib = typeBytes(c.inType), ob = typeBytes(c.outType);
  if (p.m == 0 || p.n == 0) return sscSuccess;
  if (p.k == 0) {  // an empty sum: zeros, and no rank needs anything from another
    const int64_t rows = heldRows(c);
    if (rows > 0)
      SSC_GPU_CHECK(hipMemsetAsync(c.y, 0, rows * p.n * ob, s),
                    "gemm: zeroing {} rows of y (k = 0)", rows);
    return sscSuccess;
  }
  if (pl.direct) {
    GemmPiece all;
    all.rows = p.m;
    if (c.xGathered != nullptr && c.xGathered != c.x)
      SSC_GPU_CHECK(hipMemcpyAsync(c.xGathered, c.x, p.m * p.k * ib, hipMemcpyDeviceToDevice, s),
                    "gemm: copying x into the gathered output");
    return gs->matmul(c, c.x, c.y, all, s);
  }
  // Never under stream capture (gemm_api.cc plans no fused form there).
  if (pl.variant == sscGemmFused && c.copyEngine)
    return p.op == Op::kAllGather ? ceRunFusedAllGather(g, c, s) : ceRunFusedReduceScatter(g, c, s);
  if (pl.variant == sscGemmFused)
    return p.op == Op::kAllGather ? kernelRunFusedAllGather(g, c, s)
                                  : kernelRunFusedReduceScatter(g, c, s);
  sscComm* comm = g->comm;
  char* pad = static_cast<char*>(g->workspace) + pl.slots * pl.slotBytes;
  const bool rs = p.op == Op::kReduceScatter;
  // The order comes from schedule() (gemm_plan.cc), whose guarantees tests/ops/gemm checks: a
  // chunk's collective after its GEMM (or the reverse), a slot refilled only after the work that
  // read it.
  for (const Step& st : schedule(p, pl, c.rank, c.xGathered != nullptr)) {
    const int j = st.chunk;
    const ChunkRows cr = chunkRows(pl, j);
    void* slot = static_cast<char*>(g->workspace) + (j % pl.slots) * pl.slotBytes;
    const int64_t mine = ownChunkRows(p, pl, j, c.rank);
    const bool padded = mine < cr.rows;
    switch (st.kind) {
      case StepKind::kGemm:
        for (const GemmPiece& piece : chunkPieces(p, pl, j))
          SSC_CHECK(rs ? runPiece(gs, c, c.x, slot, piece, scratchOf(g, pl), s)
                       : runPiece(gs, c, slot, c.y, piece, scratchOf(g, pl), s));
        break;
      case StepKind::kColl:
        // Where ranks share SMs, the core's kernel (16 blocks a rank) would wait for a late peer
        // on the SMs its GEMM needs: a one-warp barrier waits for every rank first.
        if (g->barrier && !g->fusedPeers.empty()) SSC_CHECK(kernelArrivalBarrier(g, s));
        if (rs) {
          void* dst = padded ? pad : byte(c.y, cr.begin * p.n * ob);
          SSC_CHECK(sscReduceScatter(slot, dst, cr.rows * p.n, c.outType, sscSum, comm, stream));
        } else {
          const void* src = padded ? pad : cbyte(c.x, cr.begin * p.k * ib);
          SSC_CHECK(sscAllGather(src, slot, cr.rows * p.k, c.inType, comm, stream));
        }
        break;
      case StepKind::kPadIn:
        if (mine > 0)
          SSC_GPU_CHECK(hipMemcpyAsync(pad, cbyte(c.x, cr.begin * p.k * ib), mine * p.k * ib,
                                       hipMemcpyDeviceToDevice, s),
                        "gemm: copying chunk {}'s rows of x into the pad", j);
        break;
      case StepKind::kGatherOut:  // the GEMM pieces' rows: slot row -> row of X, ranks as 2D copies
        for (const GemmPiece& g : chunkPieces(p, pl, j)) {
          const size_t rowBytes = p.k * ib;
          SSC_GPU_CHECK(hipMemcpy2DAsync(byte(c.xGathered, g.dRow * rowBytes),
                                         std::max<size_t>(g.dStride, g.rows) * rowBytes,
                                         cbyte(slot, g.aRow * rowBytes),
                                         std::max<size_t>(g.aStride, g.rows) * rowBytes,
                                         g.rows * rowBytes, g.batch, hipMemcpyDeviceToDevice, s),
                        "gemm: copying chunk {}'s gathered rows of x out of its slot", j);
        }
        break;
      case StepKind::kPadOut:
        if (mine > 0)
          SSC_GPU_CHECK(hipMemcpyAsync(byte(c.y, cr.begin * p.n * ob), pad, mine * p.n * ob,
                                       hipMemcpyDeviceToDevice, s),
                        "gemm: copying chunk {}'s rows of y out of the pad", j);
        break;
    }
  }
  return sscSuccess;
}

}  // namespace
#endif

sscResult_t gpuRun(sscGemmContext* g, const Call& c, sscStream_t stream) {
#if !defined(STARSCREAM_HAVE_BLASLT)
  (void)g, (void)c, (void)stream;
  return fail(sscInvalidUsage, "gemm: built without a vendor BLAS");
#else
  gpu::DeviceGuard onDevice(g->device);
  SSC_CHECK(ceEarlierTimeout(g->gpu->ce));  // a released stream wait: nothing since is valid
  SSC_CHECK(runOp(g, c, stream));
  const int64_t rows = heldRows(c);
  if (c.bias == nullptr || rows == 0 || c.p.n == 0) return sscSuccess;
  // A pass of its own over y for now: cuBLASLt / hipBLASLt's bias epilogue would save it, but
  // the reduce-scatter's sum happens after the GEMM, and the epilogue needs the heuristic run
  // again with it (docs/gemm.md, Left).
  SSC_CHECK(gpu::launchAddBias(c.y, c.bias, rows, c.p.n, static_cast<int>(typeBytes(c.outType)),
                               c.outType == sscBfloat16, stream));
  return sscSuccess;
#endif
}

}  // namespace ssc::gemm
