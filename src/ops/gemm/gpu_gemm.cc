// SPDX-License-Identifier: MIT
// The GPU backend's half of the fused GEMM-collectives (the context's state, BLAS shapes
// included, is gpu_gemm_state.h): its engine for the op's one algorithm (gemm_engine.h,
// gemm_run.cc), which queues every step on the caller's stream: the GEMMs on the vendor BLAS
// (cuBLASLt / hipBLASLt through src/device/gpu/gpu_blas.h), copies and fills through the device
// services (gemm_plan.h says why a vendor GEMM never runs beside a waiting kernel); the fused
// variants are gpu_gemm_fused.cc (waiting kernels) and gpu_gemm_ce.cc (SSC_GEMM_COPY_ENGINE).
// Nothing here waits for the device on the host but the probe of a new GEMM shape's algorithm
// (gpu_gemm_probe.h), once per shape and only where STARSCREAM_GEMM_PROBE is on.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>

#include "src/api/api.h"
#include "src/device/backend.h"
#include "src/core/futex_wait.h"
#include "src/device/gpu/gpu_launch_order.h"
#include "src/ops/gemm/gemm_fused_kernel.h"
#include "src/ops/gemm/gemm_context.h"
#include "src/ops/gemm/gemm_engine.h"
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
  DeviceServices* dev = g->dev;
  s->dev = dev;
  SSC_CHECK(dev->streamCreate(&s->side, "gemm: creating the context's side stream"));
  // The fused variant's flags start at zero (no chunk published, none read) before any peer can
  // map them (the first fused call), on the side stream: the null stream could wait behind
  // another communicator's kernel.
  SSC_CHECK(dev->memsetAsync(static_cast<char*>(g->workspace) + g->workspaceBytes, 0,
                             kFusedFlagBytes, s->side, "gemm: zeroing the fused variant's flags"));
  SSC_CHECK(dev->streamSynchronize(s->side, "gemm: waiting for the flags' zeroing"));
  void* err = nullptr;
  SSC_CHECK(dev->hostAlloc(&err, 64, true,
                           "gemm: allocating the mapped words of the fused waits' timeouts"));
  s->errHost = static_cast<volatile uint32_t*>(err);
  for (int i = 0; i < 16; ++i) s->errHost[i] = 0;
  SSC_CHECK(dev->hostDevicePointer(reinterpret_cast<void**>(&s->errDevice), err,
                                   "gemm: mapping the timeout words for the device"));
  double perSecond = 0;
  SSC_CHECK(dev->timerTicksPerSecond(g->device, &perSecond));
  const double seconds = g->waits.timeoutSeconds, ticks = seconds * perSecond;
  if (seconds > 0 && std::isfinite(ticks) && ticks < 9.0e18)
    s->timeoutTicks = static_cast<uint64_t>(ticks);
  s->abort = g->comm->backend->deviceAbortWord(g->comm);
  // Quiet: a failure takes the fallback below, and a later launch's check must not report it.
  if (dev->computeUnits(g->device, &s->sms, Doing::quiet()) != sscSuccess) {
    dev->clearRuntimeError();
    s->sms = 1;
  }
  s->probe = g->probe;
  SSC_CHECK(s->blas.create());
  SSC_CHECK(
      dev->alloc(&s->blasWorkspace, kBlasWorkspaceBytes,
                 SSC_DOING("gemm: allocating {} bytes of BLAS workspace", kBlasWorkspaceBytes)));
  SSC_CHECK(dev->alloc(reinterpret_cast<void**>(&s->tables),
                       2 * gpu::kFusedMaxStores * sizeof(void*),
                       "gemm: allocating the pointer-array tables"));
  for (DeviceEvent& e : s->tableRead)
    SSC_CHECK(dev->eventCreate(&e, "gemm: creating a pointer-array table's event"));
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
  // On the side stream: the null stream could wait behind another communicator's kernel. Quiet:
  // the caller only asks whether the flags could be read.
  return s != nullptr &&
         s->dev->memcpyAsync(out, static_cast<char*>(g->workspace) + g->workspaceBytes, bytes,
                             CopyKind::kDeviceToHost, s->side, Doing::quiet()) == sscSuccess &&
         s->dev->streamSynchronize(s->side, Doing::quiet()) == sscSuccess;
}

void gpuDestroy(sscGemmContext* g) {
  gpu::DeviceGuard onDevice(g->device);
  if (g->gpu != nullptr) ceDestroy(g->gpu->ce);  // its watchdog reads the workspace's flags
  if (g->workspace != nullptr) (void)g->backend->memFree(g->workspace);  // on the context's device
  g->workspace = nullptr;
  GpuGemmState* s = g->gpu;
  if (s == nullptr) return;
  // Teardown returns nothing: a destroy or free that fails leaves nothing for the owner to do.
  DeviceServices* dev = s->dev;
  if (s->side != nullptr) (void)dev->streamDestroy(s->side, Doing::quiet());
  if (s->errHost != nullptr) (void)dev->hostFree(const_cast<uint32_t*>(s->errHost), Doing::quiet());
#if defined(STARSCREAM_HAVE_BLASLT)
  // As above: nothing to report a failed free to.
  if (s->blasWorkspace != nullptr) (void)dev->free(s->blasWorkspace, Doing::quiet());
  if (s->tables != nullptr) (void)dev->free(s->tables, Doing::quiet());
  for (DeviceEvent e : s->tableRead)
    if (e != nullptr) (void)dev->eventDestroy(e, Doing::quiet());
#endif
  delete s;
  g->gpu = nullptr;
}

#if defined(STARSCREAM_HAVE_BLASLT)
namespace {

// The GPU engine (gemm_engine.h): every step queued on the caller's stream, in order; nothing
// waits on the host.
class GpuEngine final : public GemmEngine {
 public:
  explicit GpuEngine(sscGemmContext* g) : g_(g), dev_(g->dev) {}

  sscResult_t gemm(const Call& c, const void* a, void* d, const GemmPiece& piece,
                   sscStream_t s) override {
    return g_->gpu->matmul(c, a, d, piece, s);
  }
  sscResult_t zero(void* p, size_t bytes, sscStream_t s, Doing what) override {
    return dev_->memsetAsync(p, 0, bytes, s, what);
  }
  sscResult_t copy(void* dst, const void* src, size_t bytes, sscStream_t s, Doing what) override {
    return dev_->memcpyAsync(dst, src, bytes, CopyKind::kDeviceToDevice, s, what);
  }
  sscResult_t copy2D(void* dst, size_t dstPitch, const void* src, size_t srcPitch, size_t width,
                     size_t height, sscStream_t s, Doing what) override {
    return dev_->memcpy2DAsync(dst, dstPitch, src, srcPitch, width, height,
                               CopyKind::kDeviceToDevice, s, what);
  }
  sscResult_t arrivalBarrier(sscStream_t s) override { return kernelArrivalBarrier(g_, s); }
  sscResult_t collectiveQueued(sscStream_t) override { return sscSuccess; }  // stream order
  // Never under stream capture (gemm_api.cc plans no fused form there).
  sscResult_t fused(const Call& c, sscStream_t s) override {
    if (c.copyEngine)
      return c.p.op == Op::kAllGather ? ceRunFusedAllGather(g_, c, s)
                                      : ceRunFusedReduceScatter(g_, c, s);
    return c.p.op == Op::kAllGather ? kernelRunFusedAllGather(g_, c, s)
                                    : kernelRunFusedReduceScatter(g_, c, s);
  }
  sscResult_t addBias(const Call& c, int64_t rows, sscStream_t s) override {
    return gpu::launchAddBias(c.y, c.bias, rows, c.p.n, static_cast<int>(typeBytes(c.outType)),
                              c.outType == sscBfloat16, s);
  }

 private:
  sscGemmContext* g_;
  DeviceServices* dev_;
};

}  // namespace

sscResult_t gpuPiece(sscGemmContext* g, const Call& c, const void* a, void* d,
                     const GemmPiece& piece, bool scratch, sscStream_t s) {
  GpuEngine e(g);
  return runPiece(g, c, e, a, d, piece, scratch, s);
}

sscResult_t gpuPreparePeerBatch(sscGemmContext* g, const Call& c, size_t slotOff, uint32_t use,
                                sscStream_t s, PeerBatch* b) {
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

sscResult_t gpuRunPeerBatch(sscGemmContext* g, const PeerBatch& b, sscStream_t s) {
#if defined(SSC_BLAS_POINTER_ARRAY)
  GpuGemmState* gs = g->gpu;
  SSC_CHECK(gs->matmulTable(*static_cast<const Shape*>(b.shape), b.table, s));
  // Fused forms never run under stream capture (gemm_api.cc), so the event is a plain one.
  SSC_CHECK(gs->dev->eventRecord(gs->tableRead[b.slot], s,
                                 "gemm: recording the end of a pointer-array batch"));
  return sscSuccess;
#else
  (void)g, (void)b, (void)s;
  return fail(sscInternalError, "gemm: a pointer-array batch in a build without one");
#endif
}

sscResult_t gpuStorePeerTable(sscGemmContext* g, const PeerBatch& b, sscStream_t s) {
  SSC_CHECK(
      g->dev->streamWaitEvent(s, g->gpu->tableRead[b.slot],
                              "gemm: ordering a pointer table's store after its last reader"));
  SSC_CHECK(gpu::launchFusedSignalWait(nullptr, 0, 0, nullptr, nullptr, 0, gpu::FusedErrorSink{}, s,
                                       &b.store));
  return sscSuccess;
}
#endif

sscResult_t gpuRun(sscGemmContext* g, const Call& c, sscStream_t stream) {
#if !defined(STARSCREAM_HAVE_BLASLT)
  (void)g, (void)c, (void)stream;
  return fail(sscInvalidUsage, "gemm: built without a vendor BLAS");
#else
  gpu::DeviceGuard onDevice(g->device);
  SSC_CHECK(ceEarlierTimeout(g->gpu->ce));  // a released stream wait: nothing since is valid
  // Everything it writes into y is ordered before the caller's stream's next work: the
  // schedule ends on the caller's stream, and so do the fused variants.
  GpuEngine e(g);
  return runCall(g, c, e, stream);
#endif
}

}  // namespace ssc::gemm
