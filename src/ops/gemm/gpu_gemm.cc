// The GPU backend's half of the fused GEMM-collectives: the chunks' GEMMs on the vendor BLAS
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
#include "src/platform/gpu_runtime.h"
#include "src/core/futex_wait.h"
#include "src/device/gpu/gpu_launch_order.h"
#include "src/kernels/gpu/gemm_fused_kernel.h"
#include "src/ops/gemm/gemm_context.h"
#include "src/ops/gemm/gpu_gemm_internal.h"
#include "src/ops/gemm/gpu_gemm_probe.h"
#include "src/core/log.h"

namespace ssc::gemm {

sscResult_t gpuCheck(hipError_t e, const char* what) {
  if (e == hipSuccess) return sscSuccess;
  return fail(sscUnhandledDeviceError, "gemm: {} failed: {}", what, hipGetErrorString(e));
}

namespace {

#if defined(STARSCREAM_HAVE_BLASLT)
constexpr size_t kBlasWorkspaceBytes = size_t{32} << 20;

sscResult_t blasCheck(hipblasStatus_t s, const char* what) {
  if (s == HIPBLAS_STATUS_SUCCESS) return sscSuccess;
  return fail(sscUnhandledDeviceError, "gemm: {} failed: {} ({})", what, sscBlasStatusString(s),
              static_cast<int>(s));
}

hipDataType blasType(sscDataType_t t) {
  return t == sscFloat32 ? HIP_R_32F : t == sscFloat16 ? HIP_R_16F : HIP_R_16BF;
}

// The largest power of two (<= 256) dividing every address a batch touches.
uint32_t alignmentOf(const void* p, size_t strideBytes) {
  const uint64_t bits = reinterpret_cast<uintptr_t>(p) | strideBytes | 256;
  return static_cast<uint32_t>(bits & (~bits + 1));
}

// One GEMM shape as the BLAS sees it, with its descriptors and the algorithm the heuristic chose.
using ShapeKey = std::tuple<int64_t, int64_t, int64_t, int, int64_t, int64_t, bool, int, int,
                            uint32_t, uint32_t, uint32_t>;
struct Shape {
  hipblasLtMatmulDesc_t desc = nullptr;
  hipblasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  hipblasLtMatmulAlgo_t algo{};
  bool found = false;
  int rejected = 0;  // the heuristic's algorithms whose probe left output unwritten
};
// How many of the heuristic's algorithms a probed shape may try (gpu_gemm_probe.h).
constexpr int kProbeCandidates = 8;
// ShapeKey's strides for a pointer-array batch (tableShape).
constexpr int64_t kPointerArray = -1;
static_assert(3 * kPointerTableStride <= gpu::kFusedMaxStores, "a table is stored by one wait launch");
#endif

}  // namespace

class GpuGemmState {
 public:
  // The context's own copies (zeroing the flags, reading them back at destroy): not the null
  // stream, which could wait behind another communicator's kernel. No op work runs here.
  hipStream_t side = nullptr;
  // The fused variant's wait timeouts: pinned host words {code, lane, seen, target, site}
  // (FusedErrorSink), as the kernels see them.
  volatile uint32_t* errHost = nullptr;
  uint32_t* errDevice = nullptr;
  uint64_t timeoutTicks = 0;
  const uint32_t* abort = nullptr;  // the communicator's abort word (Backend::deviceAbortWord)
  int sms = 1;
  CopyEngine* ce = nullptr;  // SSC_GEMM_COPY_ENGINE's state (gpu_gemm_ce.cc), on first use
#if defined(STARSCREAM_HAVE_BLASLT)
  hipblasLtHandle_t lt = nullptr;
  void* blasWorkspace = nullptr;
  std::map<ShapeKey, Shape> shapes;
  // The per-rank all-gather's pointer-array tables, [use % 2][kFusedMaxStores] (PeerBatch), and
  // the end of each one's last GEMM where no flag orders it (the copy-engine form, gpuStorePeerTable).
  void** tables = nullptr;
  hipEvent_t tableRead[2] = {nullptr, nullptr};

  // STARSCREAM_GEMM_PROBE said to vet each new shape's algorithm (sscGemmContext::probe).
  bool probe = false;

  static void destroyShape(Shape& s) {
    if (s.desc != nullptr) (void)hipblasLtMatmulDescDestroy(s.desc);
    for (auto* l : {s.a, s.b, s.d})
      if (l != nullptr) (void)hipblasLtMatrixLayoutDestroy(l);
  }

  ~GpuGemmState() {
    for (auto& [key, s] : shapes) destroyShape(s);
    if (lt != nullptr) (void)hipblasLtDestroy(lt);
  }

  // D[rows][n] (row-major, ld n) = A[rows][k] W^T, batched. Row-major D is the column-major
  // D^T = W X^T: the BLAS's "A" is W (k x n column-major, transposed; or n x k with
  // SSC_GEMM_WEIGHT_KN), its "B" is X (k x rows), its D is n x rows.
  // The shape's descriptors and algorithm, described (and probed) at its first use.
  sscResult_t shapeOf(const Call& c, const GemmPiece& g, const ShapeKey& key, hipStream_t stream,
                      const Shape** out) {
    auto it = shapes.find(key);
    if (it == shapes.end()) {
      Shape s;
      const sscResult_t r = describe(c, g, key, stream, &s);
      if (r != sscSuccess) {
        destroyShape(s);
        return r;
      }
      it = shapes.emplace(key, s).first;
    }
    *out = &it->second;
    return sscSuccess;
  }

  // The pointer-array batch of `batch` GEMMs of `rows` rows each (gpu_gemm_internal.h,
  // PeerBatch): its shape and algorithm, described and probed now, before the launch that
  // stores its table; the Shape's `found` is false where the BLAS has none (the caller then
  // runs one GEMM per entry).
  sscResult_t tableShape(const Call& c, int64_t rows, int batch, uint32_t alignX, uint32_t alignD,
                         hipStream_t stream, const Shape** out) {
    GemmPiece g;
    g.rows = rows;
    g.batch = batch;
    g.aStride = g.dStride = kPointerArray;
    const ShapeKey key{c.p.n, rows, c.p.k, batch, kPointerArray, kPointerArray, c.weightKN, c.inType,
                       c.outType, alignmentOf(c.w, 0), alignX, alignD};
    return shapeOf(c, g, key, stream, out);
  }

  // D_i = X_i W^T for every entry of the table at `table` (W, X and D arrays kPointerTableStride
  // apart, device pointers a kernel stored earlier on this stream).
  sscResult_t matmulTable(const Shape& s, void** table, hipStream_t stream) {
    const float alpha = 1.0f, beta = 0.0f;
    void** x = table + kPointerTableStride;
    void** d = table + 2 * kPointerTableStride;
    return blasCheck(hipblasLtMatmul(lt, s.desc, &alpha, table, s.a, x, s.b, &beta, d, s.d, d, s.d, &s.algo,
                                     blasWorkspace, kBlasWorkspaceBytes, stream),
                     "hipblasLtMatmul (pointer-array batch)");
  }

  sscResult_t matmul(const Call& c, const void* a, void* d, const GemmPiece& g, hipStream_t stream) {
    const int64_t n = c.p.n, k = c.p.k;
    const size_t ib = typeBytes(c.inType), ob = typeBytes(c.outType);
    const void* bPtr = cbyte(a, g.aRow * k * ib);
    void* dPtr = byte(d, g.dRow * n * ob);
    const size_t bStride = g.aStride * k * ib, dStride = g.dStride * n * ob;
    const ShapeKey key{n, g.rows, k, g.batch, g.aStride, g.dStride, c.weightKN, c.inType,
                       c.outType, alignmentOf(c.w, 0), alignmentOf(bPtr, bStride),
                       alignmentOf(dPtr, dStride)};
    const Shape* found = nullptr;
    SSC_CHECK(shapeOf(c, g, key, stream, &found));
    const Shape& s = *found;
    if (!s.found) {
      // No batched algorithm for this shape (or none that computed every element in its probe):
      // one GEMM per rank.
      if (g.batch > 1) {
        for (int i = 0; i < g.batch; ++i) {
          GemmPiece one = g;
          one.batch = 1;
          one.aRow = g.aRow + i * g.aStride;
          one.dRow = g.dRow + i * g.dStride;
          one.aStride = one.dStride = 0;
          SSC_CHECK(matmul(c, a, d, one, stream));
        }
        return sscSuccess;
      }
      if (s.rejected > 0)
        return fail(sscUnhandledDeviceError, "gemm: none of the BLAS's {} algorithms for {} x {} x {} "
                    "(rows x n x k) computed every output element in its probe (STARSCREAM_GEMM_PROBE, "
                    "docs/gemm.md): the vendor library is not usable for this shape here", s.rejected,
                    g.rows, n, k);
      return fail(sscUnhandledDeviceError, "gemm: the BLAS has no algorithm for {} x {} x {} "
                  "(rows x n x k)", g.rows, n, k);
    }
    const float alpha = 1.0f, beta = 0.0f;
    return blasCheck(hipblasLtMatmul(lt, s.desc, &alpha, c.w, s.a, bPtr, s.b, &beta, dPtr, s.d,
                                     dPtr, s.d, &s.algo, blasWorkspace, kBlasWorkspaceBytes, stream),
                     "hipblasLtMatmul");
  }

 private:
  sscResult_t describe(const Call& c, const GemmPiece& g, const ShapeKey& key, hipStream_t stream, Shape* s) {
    const int64_t n = c.p.n, k = c.p.k;
    const hipblasOperation_t opA = c.weightKN ? HIPBLAS_OP_N : HIPBLAS_OP_T, opB = HIPBLAS_OP_N;
    SSC_CHECK(blasCheck(hipblasLtMatmulDescCreate(&s->desc, HIPBLAS_COMPUTE_32F, HIP_R_32F), "hipblasLtMatmulDescCreate"));
    SSC_CHECK(blasCheck(hipblasLtMatmulDescSetAttribute(s->desc, HIPBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof(opA)), "set TRANSA"));
    SSC_CHECK(blasCheck(hipblasLtMatmulDescSetAttribute(s->desc, HIPBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof(opB)), "set TRANSB"));
    const hipDataType in = blasType(c.inType), out = blasType(c.outType);
    SSC_CHECK(blasCheck(c.weightKN ? hipblasLtMatrixLayoutCreate(&s->a, in, n, k, n)
                                   : hipblasLtMatrixLayoutCreate(&s->a, in, k, n, k), "layout A"));
    SSC_CHECK(blasCheck(hipblasLtMatrixLayoutCreate(&s->b, in, k, g.rows, k), "layout B"));
    SSC_CHECK(blasCheck(hipblasLtMatrixLayoutCreate(&s->d, out, n, g.rows, n), "layout D"));
    const bool pointers = g.aStride == kPointerArray;
    if (pointers) {
#if defined(SSC_BLAS_POINTER_ARRAY)
      const int32_t batch = g.batch;
      const uint32_t mode = HIPBLASLT_BATCH_MODE_POINTER_ARRAY;
      for (hipblasLtMatrixLayout_t l : {s->a, s->b, s->d}) {
        SSC_CHECK(blasCheck(hipblasLtMatrixLayoutSetAttribute(l, HIPBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof(batch)), "set batch"));
        SSC_CHECK(blasCheck(hipblasLtMatrixLayoutSetAttribute(l, HIPBLASLT_MATRIX_LAYOUT_BATCH_MODE, &mode, sizeof(mode)), "set batch mode"));
      }
#else
      return sscSuccess;  // not found: the caller runs one GEMM per entry
#endif
    } else if (g.batch > 1) {
      const int32_t batch = g.batch;
      const int64_t strides[3] = {0, g.aStride * k, g.dStride * n};  // W is shared by the batch
      hipblasLtMatrixLayout_t layouts[3] = {s->a, s->b, s->d};
      for (int i = 0; i < 3; ++i) {
        SSC_CHECK(blasCheck(hipblasLtMatrixLayoutSetAttribute(layouts[i], HIPBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof(batch)), "set batch"));
        SSC_CHECK(blasCheck(hipblasLtMatrixLayoutSetAttribute(layouts[i], HIPBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &strides[i], sizeof(strides[i])), "set batch stride"));
      }
    }
    hipblasLtMatmulPreference_t pref = nullptr;
    SSC_CHECK(blasCheck(hipblasLtMatmulPreferenceCreate(&pref), "hipblasLtMatmulPreferenceCreate"));
    uint64_t wsBytes = kBlasWorkspaceBytes;
    hipblasStatus_t st = hipblasLtMatmulPreferenceSetAttribute(pref, HIPBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsBytes, sizeof(wsBytes));
#if defined(SSC_GPU_IS_CUDA)
    // Odd K or N put rows at 2-byte boundaries: tell the heuristic, or it picks a kernel that
    // assumes 16-byte rows and fails at launch.
    const uint32_t al[3] = {std::get<9>(key), std::get<10>(key), std::get<11>(key)};
    const cublasLtMatmulPreferenceAttributes_t which[4] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    const uint32_t values[4] = {al[0], al[1], al[2], al[2]};
    for (int i = 0; i < 4 && st == HIPBLAS_STATUS_SUCCESS; ++i)
      st = cublasLtMatmulPreferenceSetAttribute(pref, which[i], &values[i], sizeof(values[i]));
#else
    (void)key;
#endif
    // Probing: the heuristic's first results in its order, the first that computes every
    // element wins (gpu_gemm_probe.h says why).
    hipblasLtMatmulHeuristicResult_t results[kProbeCandidates]{};
    int found = 0;
    if (st == HIPBLAS_STATUS_SUCCESS)
      st = hipblasLtMatmulAlgoGetHeuristic(lt, s->desc, s->a, s->b, s->d, s->d, pref,
                                           probe ? kProbeCandidates : 1, results, &found);
    (void)hipblasLtMatmulPreferenceDestroy(pref);
    if (st != HIPBLAS_STATUS_SUCCESS) found = 0;
    ProbeShape ps;
    ps.n = n, ps.k = k, ps.rows = g.rows, ps.batch = g.batch, ps.aStride = g.aStride, ps.dStride = g.dStride;
    if (pointers) ps.aStride = ps.dStride = g.rows, ps.pointers = true;  // the probe's entries: contiguous
    ps.inBytes = typeBytes(c.inType), ps.outBytes = typeBytes(c.outType);
    ps.alignW = std::get<9>(key), ps.alignX = std::get<10>(key), ps.alignD = std::get<11>(key);
    for (int i = 0; i < found && !s->found; ++i) {
      uint64_t unwritten = 0;
      if (probe)
        SSC_CHECK(probeAlgorithm(lt, s->desc, s->a, s->b, s->d, results[i].algo, ps, blasWorkspace,
                                 kBlasWorkspaceBytes, sms, stream, &unwritten));
      if (unwritten == 0) {
        s->found = true;
        s->algo = results[i].algo;
      } else {
        ++s->rejected;
        // A warning: a defect of the vendor's worked around, at most a few lines per shape (and
        // a rank that skips runs more GEMMs than its peers before their collective).
        SSC_LOG(kWarn, "gemm: the BLAS's algorithm {} of {} for {} x {} x {} (rows x n x k, batch {}) {} "
                "in its probe: skipped", i + 1, found, g.rows, n, k, g.batch,
                unwritten == kProbeRefused ? std::string("did not launch")
                                           : fmt::format("left {} output bytes unwritten", unwritten));
      }
    }
    return sscSuccess;
  }
#endif
};

sscResult_t gpuCreate(sscGemmContext* g) {
  gpu::DeviceGuard onDevice(g->device);
#if !defined(STARSCREAM_HAVE_BLASLT)
  return fail(sscInvalidUsage, "sscGemmCreate: this build of Starscream has no vendor BLAS "
              "(hipBLASLt was not found when it was configured), which the GEMM ops need on the GPU");
#else
  // Left uninitialised: rows past m in a slot or the pad only ever feed rows nobody keeps, and a
  // hipMemset on the null stream could wait behind another communicator's kernel.
  SSC_CHECK(g->backend->memAlloc(&g->workspace, g->workspaceBytes + kFusedFlagBytes));
  auto* s = new GpuGemmState;
  g->gpu = s;
  SSC_CHECK(gpuCheck(hipStreamCreateWithFlags(&s->side, hipStreamNonBlocking), "hipStreamCreateWithFlags"));
  // The fused variant's flags start at zero (no chunk published, none read) before any peer can
  // map them (the first fused call), on the side stream: the null stream could wait behind
  // another communicator's kernel.
  SSC_CHECK(gpuCheck(hipMemsetAsync(static_cast<char*>(g->workspace) + g->workspaceBytes, 0,
                                    kFusedFlagBytes, s->side), "hipMemsetAsync"));
  SSC_CHECK(gpuCheck(hipStreamSynchronize(s->side), "hipStreamSynchronize"));
  void* err = nullptr;
  SSC_CHECK(gpuCheck(hipHostMalloc(&err, 64, hipHostMallocMapped), "hipHostMalloc"));
  s->errHost = static_cast<volatile uint32_t*>(err);
  for (int i = 0; i < 16; ++i) s->errHost[i] = 0;
  SSC_CHECK(gpuCheck(hipHostGetDevicePointer(reinterpret_cast<void**>(&s->errDevice), err, 0),
                     "hipHostGetDevicePointer"));
  const double seconds = shmTimeoutSeconds(), ticks = seconds * sscGpuTimerTicksPerSecond(g->device);
  if (seconds > 0 && std::isfinite(ticks) && ticks < 9.0e18) s->timeoutTicks = static_cast<uint64_t>(ticks);
  s->abort = g->comm->backend->deviceAbortWord(g->comm);
  if (hipDeviceGetAttribute(&s->sms, hipDeviceAttributeMultiprocessorCount, g->device) != hipSuccess) s->sms = 1;
  s->probe = g->probe;
  SSC_CHECK(blasCheck(hipblasLtCreate(&s->lt), "hipblasLtCreate"));
  SSC_CHECK(gpuCheck(hipMalloc(&s->blasWorkspace, kBlasWorkspaceBytes), "hipMalloc"));
  SSC_CHECK(gpuCheck(hipMalloc(reinterpret_cast<void**>(&s->tables), 2 * gpu::kFusedMaxStores * sizeof(void*)),
                     "hipMalloc"));
  for (hipEvent_t& e : s->tableRead)
    SSC_CHECK(gpuCheck(hipEventCreateWithFlags(&e, hipEventDisableTiming), "hipEventCreateWithFlags"));
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
  if (s->side != nullptr) (void)hipStreamDestroy(s->side);
  if (s->errHost != nullptr) (void)hipHostFree(const_cast<uint32_t*>(s->errHost));
#if defined(STARSCREAM_HAVE_BLASLT)
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

sscResult_t launched(int e, const char* what) { return gpuCheck(static_cast<hipError_t>(e), what); }

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
    SSC_CHECK(gpuCheck(hipMemcpy2DAsync(scratch, g.rows * row, cbyte(a, g.aRow * row), g.aStride * row,
                                        g.rows * row, g.batch, hipMemcpyDeviceToDevice, on),
                       "hipMemcpy2DAsync"));
    one.dRow = g.dRow;
    return gs->matmul(c, scratch, d, one, on);
  }
  one.aRow = g.aRow;  // A contiguous, D strided: one GEMM into the scratch, then its rows out
  SSC_CHECK(gs->matmul(c, a, scratch, one, on));
  const size_t row = c.p.n * typeBytes(c.outType);
  return gpuCheck(hipMemcpy2DAsync(byte(d, g.dRow * row), g.dStride * row, scratch, g.rows * row,
                                   g.rows * row, g.batch, hipMemcpyDeviceToDevice, on),
                  "hipMemcpy2DAsync");
}

void* scratchOf(sscGemmContext* g, const Plan& pl) {
  return pl.scratchBytes == 0 ? nullptr
                              : static_cast<char*>(g->workspace) + pl.slots * pl.slotBytes + pl.padBytes;
}

}  // namespace

sscResult_t gpuPiece(sscGemmContext* g, const Call& c, const void* a, void* d, const GemmPiece& piece,
                     bool scratch, hipStream_t s) {
  return runPiece(g->gpu, c, a, d, piece, scratch ? scratchOf(g, c.plan) : nullptr, s);
}

sscResult_t gpuPreparePeerBatch(sscGemmContext* g, const Call& c, size_t slotOff, uint32_t use, hipStream_t s,
                                PeerBatch* b) {
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
  return gpuCheck(hipEventRecord(gs->tableRead[b.slot], s), "hipEventRecord");
#else
  (void)g, (void)b, (void)s;
  return fail(sscInternalError, "gemm: a pointer-array batch in a build without one");
#endif
}

sscResult_t gpuStorePeerTable(sscGemmContext* g, const PeerBatch& b, hipStream_t s) {
  SSC_CHECK(gpuCheck(hipStreamWaitEvent(s, g->gpu->tableRead[b.slot], 0), "hipStreamWaitEvent"));
  return gpuCheck(static_cast<hipError_t>(gpu::launchFusedSignalWait(nullptr, 0, 0, nullptr, nullptr, 0,
                                                                     gpu::FusedErrorSink{}, s, &b.store)),
                  "the pointer table's store");
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
    return rows == 0 ? sscSuccess : gpuCheck(hipMemsetAsync(c.y, 0, rows * p.n * ob, s), "hipMemsetAsync");
  }
  if (pl.direct) {
    GemmPiece all;
    all.rows = p.m;
    if (c.xGathered != nullptr && c.xGathered != c.x)
      SSC_CHECK(gpuCheck(hipMemcpyAsync(c.xGathered, c.x, p.m * p.k * ib, hipMemcpyDeviceToDevice, s),
                         "hipMemcpyAsync"));
    return gs->matmul(c, c.x, c.y, all, s);
  }
  // Never under stream capture (gemm_api.cc plans no fused form there).
  if (pl.variant == sscGemmFused && c.copyEngine)
    return p.op == Op::kAllGather ? ceRunFusedAllGather(g, c, s) : ceRunFusedReduceScatter(g, c, s);
  if (pl.variant == sscGemmFused)
    return p.op == Op::kAllGather ? kernelRunFusedAllGather(g, c, s) : kernelRunFusedReduceScatter(g, c, s);
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
          SSC_CHECK(gpuCheck(hipMemcpyAsync(pad, cbyte(c.x, cr.begin * p.k * ib), mine * p.k * ib,
                                            hipMemcpyDeviceToDevice, s), "hipMemcpyAsync"));
        break;
      case StepKind::kGatherOut:  // the GEMM pieces' rows: slot row -> row of X, ranks as 2D copies
        for (const GemmPiece& g : chunkPieces(p, pl, j)) {
          const size_t rowBytes = p.k * ib;
          SSC_CHECK(gpuCheck(hipMemcpy2DAsync(byte(c.xGathered, g.dRow * rowBytes),
                                              std::max<size_t>(g.dStride, g.rows) * rowBytes,
                                              cbyte(slot, g.aRow * rowBytes),
                                              std::max<size_t>(g.aStride, g.rows) * rowBytes,
                                              g.rows * rowBytes, g.batch, hipMemcpyDeviceToDevice, s),
                             "hipMemcpy2DAsync"));
        }
        break;
      case StepKind::kPadOut:
        if (mine > 0)
          SSC_CHECK(gpuCheck(hipMemcpyAsync(byte(c.y, cr.begin * p.n * ob), pad, mine * p.n * ob,
                                            hipMemcpyDeviceToDevice, s), "hipMemcpyAsync"));
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
  return launched(gpu::launchAddBias(c.y, c.bias, rows, c.p.n, static_cast<int>(typeBytes(c.outType)),
                                     c.outType == sscBfloat16, stream), "the bias kernel");
#endif
}

}  // namespace ssc::gemm
