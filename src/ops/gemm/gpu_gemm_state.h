// SPDX-License-Identifier: MIT
// The GPU GEMM context's state (GpuGemmState): the vendor BLAS handle and workspace, the GEMM
// shapes described so far with the algorithm each was given (probed where STARSCREAM_GEMM_PROBE
// is on), the side stream and the fused variant's wait words. Used by gpu_gemm.cc, which runs
// the ops' schedules with it; its own file because describing a shape to cuBLASLt / hipBLASLt
// is a job of its own.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>

#include "src/api/api.h"
#include "src/core/log.h"
#include "src/ops/gemm/gemm_fused_kernel.h"
#include "src/ops/gemm/gemm_context.h"
#include "src/ops/gemm/gpu_gemm_internal.h"
#include "src/ops/gemm/gpu_gemm_probe.h"
#include "src/platform/gpu_runtime.h"

namespace ssc::gemm {

#if defined(STARSCREAM_HAVE_BLASLT)
constexpr size_t kBlasWorkspaceBytes = size_t{32} << 20;

inline sscResult_t blasCheck(hipblasStatus_t s, const char* what) {
  if (s == HIPBLAS_STATUS_SUCCESS) return sscSuccess;
  return fail(sscUnhandledDeviceError, "gemm: {} failed: {} ({})", what, sscBlasStatusString(s),
              static_cast<int>(s));
}

inline hipDataType blasType(sscDataType_t t) {
  return t == sscFloat32 ? HIP_R_32F : t == sscFloat16 ? HIP_R_16F : HIP_R_16BF;
}

// The largest power of two (<= 256) dividing every address a batch touches.
inline uint32_t alignmentOf(const void* p, size_t strideBytes) {
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
static_assert(3 * kPointerTableStride <= gpu::kFusedMaxStores,
              "a table is stored by one wait launch");
#endif

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
  // the end of each one's last GEMM where no flag orders it (the copy-engine form,
  // gpuStorePeerTable).
  void** tables = nullptr;
  hipEvent_t tableRead[2] = {nullptr, nullptr};

  // STARSCREAM_GEMM_PROBE said to vet each new shape's algorithm (sscGemmContext::probe).
  bool probe = false;

  // Teardown returns nothing: a descriptor that fails to free leaves nothing for the owner to do.
  static void destroyShape(Shape& s) {
    if (s.desc != nullptr) (void)hipblasLtMatmulDescDestroy(s.desc);
    for (auto* l : {s.a, s.b, s.d})
      if (l != nullptr) (void)hipblasLtMatrixLayoutDestroy(l);
  }

  ~GpuGemmState() {
    for (auto& [key, s] : shapes) destroyShape(s);
    if (lt != nullptr) (void)hipblasLtDestroy(lt);  // a destructor: no caller to report to
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
    const ShapeKey key{c.p.n,         rows,       c.p.k,    batch,     kPointerArray,
                       kPointerArray, c.weightKN, c.inType, c.outType, alignmentOf(c.w, 0),
                       alignX,        alignD};
    return shapeOf(c, g, key, stream, out);
  }

  // D_i = X_i W^T for every entry of the table at `table` (W, X and D arrays kPointerTableStride
  // apart, device pointers a kernel stored earlier on this stream).
  sscResult_t matmulTable(const Shape& s, void** table, hipStream_t stream) {
    const float alpha = 1.0f, beta = 0.0f;
    void** x = table + kPointerTableStride;
    void** d = table + 2 * kPointerTableStride;
    return blasCheck(hipblasLtMatmul(lt, s.desc, &alpha, table, s.a, x, s.b, &beta, d, s.d, d, s.d,
                                     &s.algo, blasWorkspace, kBlasWorkspaceBytes, stream),
                     "hipblasLtMatmul (pointer-array batch)");
  }

  sscResult_t matmul(const Call& c, const void* a, void* d, const GemmPiece& g,
                     hipStream_t stream) {
    const int64_t n = c.p.n, k = c.p.k;
    const size_t ib = typeBytes(c.inType), ob = typeBytes(c.outType);
    const void* bPtr = cbyte(a, g.aRow * k * ib);
    void* dPtr = byte(d, g.dRow * n * ob);
    const size_t bStride = g.aStride * k * ib, dStride = g.dStride * n * ob;
    const ShapeKey key{n,
                       g.rows,
                       k,
                       g.batch,
                       g.aStride,
                       g.dStride,
                       c.weightKN,
                       c.inType,
                       c.outType,
                       alignmentOf(c.w, 0),
                       alignmentOf(bPtr, bStride),
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
        return fail(
            sscUnhandledDeviceError,
            "gemm: none of the BLAS's {} algorithms for {} x {} x {} "
            "(rows x n x k) computed every output element in its probe (STARSCREAM_GEMM_PROBE, "
            "docs/gemm.md): the vendor library is not usable for this shape here",
            s.rejected, g.rows, n, k);
      return fail(sscUnhandledDeviceError,
                  "gemm: the BLAS has no algorithm for {} x {} x {} "
                  "(rows x n x k)",
                  g.rows, n, k);
    }
    const float alpha = 1.0f, beta = 0.0f;
    return blasCheck(
        hipblasLtMatmul(lt, s.desc, &alpha, c.w, s.a, bPtr, s.b, &beta, dPtr, s.d, dPtr, s.d,
                        &s.algo, blasWorkspace, kBlasWorkspaceBytes, stream),
        "hipblasLtMatmul");
  }

 private:
  sscResult_t describe(const Call& c, const GemmPiece& g, const ShapeKey& key, hipStream_t stream,
                       Shape* s) {
    const int64_t n = c.p.n, k = c.p.k;
    const hipblasOperation_t opA = c.weightKN ? HIPBLAS_OP_N : HIPBLAS_OP_T, opB = HIPBLAS_OP_N;
    SSC_CHECK(blasCheck(hipblasLtMatmulDescCreate(&s->desc, HIPBLAS_COMPUTE_32F, HIP_R_32F),
                        "hipblasLtMatmulDescCreate"));
    SSC_CHECK(blasCheck(
        hipblasLtMatmulDescSetAttribute(s->desc, HIPBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof(opA)),
        "set TRANSA"));
    SSC_CHECK(blasCheck(
        hipblasLtMatmulDescSetAttribute(s->desc, HIPBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof(opB)),
        "set TRANSB"));
    const hipDataType in = blasType(c.inType), out = blasType(c.outType);
    SSC_CHECK(blasCheck(c.weightKN ? hipblasLtMatrixLayoutCreate(&s->a, in, n, k, n)
                                   : hipblasLtMatrixLayoutCreate(&s->a, in, k, n, k),
                        "layout A"));
    SSC_CHECK(blasCheck(hipblasLtMatrixLayoutCreate(&s->b, in, k, g.rows, k), "layout B"));
    SSC_CHECK(blasCheck(hipblasLtMatrixLayoutCreate(&s->d, out, n, g.rows, n), "layout D"));
    const bool pointers = g.aStride == kPointerArray;
    if (pointers) {
#if defined(SSC_BLAS_POINTER_ARRAY)
      const int32_t batch = g.batch;
      const uint32_t mode = HIPBLASLT_BATCH_MODE_POINTER_ARRAY;
      for (hipblasLtMatrixLayout_t l : {s->a, s->b, s->d}) {
        SSC_CHECK(blasCheck(hipblasLtMatrixLayoutSetAttribute(
                                l, HIPBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof(batch)),
                            "set batch"));
        SSC_CHECK(blasCheck(hipblasLtMatrixLayoutSetAttribute(l, HIPBLASLT_MATRIX_LAYOUT_BATCH_MODE,
                                                              &mode, sizeof(mode)),
                            "set batch mode"));
      }
#else
      return sscSuccess;  // not found: the caller runs one GEMM per entry
#endif
    } else if (g.batch > 1) {
      const int32_t batch = g.batch;
      const int64_t strides[3] = {0, g.aStride * k, g.dStride * n};  // W is shared by the batch
      hipblasLtMatrixLayout_t layouts[3] = {s->a, s->b, s->d};
      for (int i = 0; i < 3; ++i) {
        SSC_CHECK(
            blasCheck(hipblasLtMatrixLayoutSetAttribute(
                          layouts[i], HIPBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof(batch)),
                      "set batch"));
        SSC_CHECK(blasCheck(hipblasLtMatrixLayoutSetAttribute(
                                layouts[i], HIPBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                &strides[i], sizeof(strides[i])),
                            "set batch stride"));
      }
    }
    hipblasLtMatmulPreference_t pref = nullptr;
    SSC_CHECK(blasCheck(hipblasLtMatmulPreferenceCreate(&pref), "hipblasLtMatmulPreferenceCreate"));
    uint64_t wsBytes = kBlasWorkspaceBytes;
    hipblasStatus_t st = hipblasLtMatmulPreferenceSetAttribute(
        pref, HIPBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsBytes, sizeof(wsBytes));
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
    // Only the heuristic's answer matters to the call: a preference that fails to free costs a
    // few bytes of host memory, not the GEMM.
    (void)hipblasLtMatmulPreferenceDestroy(pref);
    if (st != HIPBLAS_STATUS_SUCCESS) found = 0;
    ProbeShape ps;
    ps.n = n, ps.k = k, ps.rows = g.rows, ps.batch = g.batch, ps.aStride = g.aStride,
    ps.dStride = g.dStride;
    if (pointers)
      ps.aStride = ps.dStride = g.rows, ps.pointers = true;  // the probe's entries: contiguous
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
        SSC_LOG(kWarn,
                "gemm: the BLAS's algorithm {} of {} for {} x {} x {} (rows x n x k, batch {}) {} "
                "in its probe: skipped",
                i + 1, found, g.rows, n, k, g.batch,
                unwritten == kProbeRefused
                    ? std::string("did not launch")
                    : fmt::format("left {} output bytes unwritten", unwritten));
      }
    }
    return sscSuccess;
  }
#endif
};

}  // namespace ssc::gemm
