// The GPU backend's half of the fused GEMM-collectives: the chunks' GEMMs on the vendor BLAS
// (cuBLASLt / hipBLASLt through src/platform/gpu_runtime.h), the collectives through the
// core's sscReduceScatter / sscAllGather (zero-copy on registered and plain buffers where the
// core can) or the fused kernels, everything on the caller's stream in schedule()'s order
// (gemm_plan.h says why a vendor GEMM never runs beside a waiting kernel). Nothing here waits
// for the device on the host but the probe of a new GEMM shape's algorithm (gpu_gemm_probe.h),
// once per shape and only where STARSCREAM_GEMM_PROBE is on.
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
#include "src/ops/gemm/gpu_gemm_probe.h"
#include "src/core/log.h"

namespace ssc::gemm {

namespace {

sscResult_t gpuCheck(hipError_t e, const char* what) {
  if (e == hipSuccess) return sscSuccess;
  return fail(sscUnhandledDeviceError, "gemm: {} failed: {}", what, hipGetErrorString(e));
}

size_t typeBytes(sscDataType_t t) { return t == sscFloat32 ? 4 : 2; }
const char* cbyte(const void* p, size_t off) { return static_cast<const char*>(p) + off; }
char* byte(void* p, size_t off) { return static_cast<char*>(p) + off; }

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
#if defined(STARSCREAM_HAVE_BLASLT)
  hipblasLtHandle_t lt = nullptr;
  void* blasWorkspace = nullptr;
  std::map<ShapeKey, Shape> shapes;

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
  sscResult_t matmul(const Call& c, const void* a, void* d, const GemmPiece& g, hipStream_t stream) {
    const int64_t n = c.p.n, k = c.p.k;
    const size_t ib = typeBytes(c.inType), ob = typeBytes(c.outType);
    const void* bPtr = cbyte(a, g.aRow * k * ib);
    void* dPtr = byte(d, g.dRow * n * ob);
    const size_t bStride = g.aStride * k * ib, dStride = g.dStride * n * ob;
    const ShapeKey key{n, g.rows, k, g.batch, g.aStride, g.dStride, c.weightKN, c.inType,
                       c.outType, alignmentOf(c.w, 0), alignmentOf(bPtr, bStride),
                       alignmentOf(dPtr, dStride)};
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
    const Shape& s = it->second;
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
    if (g.batch > 1) {
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
        SSC_LOG(kInfo, "gemm: the BLAS's algorithm {} of {} for {} x {} x {} (rows x n x k, batch {}) {} "
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
  return sscSuccess;
#endif
}

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
  if (g->workspace != nullptr) (void)g->backend->memFree(g->workspace);  // on the context's device
  g->workspace = nullptr;
  GpuGemmState* s = g->gpu;
  if (s == nullptr) return;
  if (s->side != nullptr) (void)hipStreamDestroy(s->side);
  if (s->errHost != nullptr) (void)hipHostFree(const_cast<uint32_t*>(s->errHost));
#if defined(STARSCREAM_HAVE_BLASLT)
  if (s->blasWorkspace != nullptr) (void)hipFree(s->blasWorkspace);
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

// The fused waits, as FusedErrorSink::site names them in a timeout's report. The lanes of the
// gates are readers (q = lane % nranks, two earlier uses at most), of the others producers.
enum FusedSite : uint32_t { kSiteRsGate = 1, kSiteRsReady, kSiteAgGate, kSiteAgRows };

sscResult_t earlierTimeout(const GpuGemmState* gs, int nranks) {
  if (gs->errHost[0] == 0) return sscSuccess;
  const uint32_t lane = gs->errHost[1], seen = gs->errHost[2], want = gs->errHost[3];
  const char* what = "a fused wait";
  switch (gs->errHost[4]) {
    case kSiteRsGate: what = "GEMM + reduce-scatter, before refilling a slot: the done flag of reader"; break;
    case kSiteRsReady: what = "GEMM + reduce-scatter, before the sum: the ready flag of producer"; break;
    case kSiteAgGate: what = "all-gather + GEMM, before the push: the done flag of reader"; break;
    case kSiteAgRows: what = "all-gather + GEMM, before the GEMM: the rows flag of producer"; break;
    default: break;
  }
  return fail(sscTimeout, "gemm: an earlier fused call's wait passed STARSCREAM_TIMEOUT ({} rank {}: "
              "holds use {}, the wait needs {}): a peer is missing or hung; the context's results "
              "since then are not valid (destroy it)", what, lane % nranks, seen, want);
}

gpu::FusedErrorSink sinkAt(const GpuGemmState* gs, FusedSite site) {
  return gpu::FusedErrorSink{gs->errDevice, gs->timeoutTicks, gs->abort, site};
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
sscResult_t runFused(sscGemmContext* g, const Call& c, hipStream_t s) {
  GpuGemmState* gs = g->gpu;
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
    SSC_CHECK(launched(gpu::launchFusedWait(flags, targets, n, nullptr, 0, sinkAt(gs, kSiteRsGate), s),
                       "fused wait"));
    for (const GemmPiece& piece : chunkPieces(p, pl, j))
      SSC_CHECK(runPiece(gs, c, c.x, mySlot, piece, scratchOf(g, pl), s));
    uint32_t* myReady = fusedReady(g, me, slot);
    for (int q = 0; q < K; ++q) {
      flags[q] = fusedReady(g, q, slot);
      targets[q] = use;
      doneAt[q] = fusedDone(g, q, slot, me);
      srcs[q] = cbyte(g->fusedPeers[q], slot * pl.slotBytes + me * cr.rows * p.n * ob);
    }
    SSC_CHECK(launched(gpu::launchFusedWait(flags, targets, K, myReady, use, sinkAt(gs, kSiteRsReady), s),
                       "fused wait"));
    const int64_t mine = ownChunkRows(p, pl, j, me);
    if (mine > 0)
      SSC_CHECK(launched(gpu::launchFusedReduce(byte(c.y, cr.begin * p.n * ob), srcs, K,
                                                static_cast<size_t>(mine * p.n), static_cast<int>(ob),
                                                c.outType == sscBfloat16, 4 * gs->sms, s), "fused reduce"));
    SSC_CHECK(launched(gpu::launchFusedSignal(doneAt, K, use, s), "fused signal"));
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
sscResult_t runFusedAllGather(sscGemmContext* g, const Call& c, hipStream_t s) {
  GpuGemmState* gs = g->gpu;
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
    if (!pl.agPerRank || q == me) dsts[nd++] = byte(g->fusedPeers[q], slotOff + me * pl.block * p.k * ib);
  SSC_CHECK(launched(gpu::launchFusedPush(gate, gateAt, n, sinkAt(gs, kSiteAgGate), c.x, dsts, nd,
                                          own.count * p.k * ib, 4 * gs->sms, s), "fused push"));
  uint32_t* from[gpu::kFusedMaxRanks];
  const uint32_t* mine[gpu::kFusedMaxRanks];
  uint32_t at[gpu::kFusedMaxRanks];
  for (int q = 0; q < K; ++q) {
    from[q] = fusedFrom(g, q, fi, me);
    mine[q] = fusedFrom(g, me, fi, q);
    at[q] = use;
  }
  const void* local = cbyte(g->workspace, slotOff);
  if (!pl.agPerRank) {
    SSC_CHECK(launched(gpu::launchFusedSignalWait(from, K, use, mine, at, K, sinkAt(gs, kSiteAgRows), s),
                       "fused wait"));
    GemmPiece all;
    all.rows = p.m;
    SSC_CHECK(gs->matmul(c, local, c.y, all, s));
    if (c.xGathered != nullptr)  // the slot's rows are X's rows (x in place inside it: same bytes)
      SSC_CHECK(gpuCheck(hipMemcpyAsync(c.xGathered, local, p.m * p.k * ib, hipMemcpyDeviceToDevice, s),
                         "hipMemcpyAsync"));
  } else {
    SSC_CHECK(launched(gpu::launchFusedSignal(from, K, use, s), "fused signal"));
    if (own.count > 0) {  // my rows first, straight from x: no wait
      GemmPiece g0;
      g0.rows = own.count;
      g0.dRow = own.first;
      SSC_CHECK(gs->matmul(c, c.x, c.y, g0, s));
    }
    SSC_CHECK(launched(gpu::launchFusedWait(mine, at, K, nullptr, 0, sinkAt(gs, kSiteAgRows), s), "fused wait"));
    for (int i = 1; i < K; ++i) {  // rotated, so the ranks do not all read one peer's slot at once
      const int q = (me + i) % K;
      const RowRange r = rowShard(p.m, K, q);
      if (r.count == 0) continue;
      GemmPiece gq;
      gq.rows = r.count;
      gq.aRow = gq.dRow = r.first;
      SSC_CHECK(gs->matmul(c, cbyte(g->fusedPeers[q], slotOff), c.y, gq, s));
    }
  }
  uint32_t* doneAt[gpu::kFusedMaxRanks];
  for (int q = 0; q < K; ++q) doneAt[q] = fusedDone(g, q, fi, me);
  return launched(gpu::launchFusedSignal(doneAt, K, use, s), "fused signal");
}

}  // namespace
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
  if (pl.variant == SSC_GEMM_FUSED)
    return p.op == Op::kAllGather ? runFusedAllGather(g, c, s) : runFused(g, c, s);
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
