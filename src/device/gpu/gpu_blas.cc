// SPDX-License-Identifier: MIT
// The vendor BLAS calls of the GEMM ops (gpu_blas.h). A failing call is sscUnhandledDeviceError
// with the library's own status text; the messages keep the "gemm:" of their one user.
#include "src/device/gpu/gpu_blas.h"

#if defined(STARSCREAM_HAVE_BLASLT)
#include <string>

#include "src/core/errors.h"

namespace ssc {
namespace {

sscResult_t blasCheck(hipblasStatus_t s, const Doing& what) {
  if (s == HIPBLAS_STATUS_SUCCESS) return sscSuccess;
  if (what.isQuiet()) return sscUnhandledDeviceError;
  return fail(sscUnhandledDeviceError, "gemm: {} failed: {} ({})", what.text(),
              sscBlasStatusString(s), static_cast<int>(s));
}

hipDataType blasType(sscDataType_t t) {
  return t == sscFloat32 ? HIP_R_32F : t == sscFloat16 ? HIP_R_16F : HIP_R_16BF;
}

}  // namespace

// Teardown: a destroy that fails leaves nothing to undo (the BLAS library's statuses are not the
// runtime's, so SSC_GPU_RELEASE does not apply).
Blas::~Blas() {
  if (lt_ != nullptr) (void)hipblasLtDestroy(lt_);
}

sscResult_t Blas::create() { return blasCheck(hipblasLtCreate(&lt_), "hipblasLtCreate"); }

void Blas::release(BlasShape* s) {
  if (s->desc != nullptr) (void)hipblasLtMatmulDescDestroy(s->desc);
  for (auto* l : {s->a, s->b, s->d})
    if (l != nullptr) (void)hipblasLtMatrixLayoutDestroy(l);
  *s = BlasShape{};
}

sscResult_t Blas::describe(const BlasGemm& g, int wanted, BlasShape* s,
                           std::vector<BlasAlgo>* algos) {
  algos->clear();
  const int64_t n = g.n, k = g.k;
  const hipblasOperation_t opA = g.weightKN ? HIPBLAS_OP_N : HIPBLAS_OP_T, opB = HIPBLAS_OP_N;
  SSC_CHECK(blasCheck(hipblasLtMatmulDescCreate(&s->desc, HIPBLAS_COMPUTE_32F, HIP_R_32F),
                      "hipblasLtMatmulDescCreate"));
  SSC_CHECK(blasCheck(
      hipblasLtMatmulDescSetAttribute(s->desc, HIPBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof(opA)),
      "set TRANSA"));
  SSC_CHECK(blasCheck(
      hipblasLtMatmulDescSetAttribute(s->desc, HIPBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof(opB)),
      "set TRANSB"));
  const hipDataType in = blasType(g.inType), out = blasType(g.outType);
  SSC_CHECK(blasCheck(g.weightKN ? hipblasLtMatrixLayoutCreate(&s->a, in, n, k, n)
                                 : hipblasLtMatrixLayoutCreate(&s->a, in, k, n, k),
                      "layout A"));
  SSC_CHECK(blasCheck(hipblasLtMatrixLayoutCreate(&s->b, in, k, g.rows, k), "layout B"));
  SSC_CHECK(blasCheck(hipblasLtMatrixLayoutCreate(&s->d, out, n, g.rows, n), "layout D"));
  if (g.pointers) {
#if defined(SSC_BLAS_POINTER_ARRAY)
    const int32_t batch = g.batch;
    const uint32_t mode = HIPBLASLT_BATCH_MODE_POINTER_ARRAY;
    for (hipblasLtMatrixLayout_t l : {s->a, s->b, s->d}) {
      SSC_CHECK(blasCheck(hipblasLtMatrixLayoutSetAttribute(l, HIPBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                            &batch, sizeof(batch)),
                          "set batch"));
      SSC_CHECK(blasCheck(hipblasLtMatrixLayoutSetAttribute(l, HIPBLASLT_MATRIX_LAYOUT_BATCH_MODE,
                                                            &mode, sizeof(mode)),
                          "set batch mode"));
    }
#else
    return sscSuccess;  // no algorithm: the caller runs one GEMM per entry
#endif
  } else if (g.batch > 1) {
    const int32_t batch = g.batch;
    const int64_t strides[3] = {0, g.xStride * k, g.dStride * n};  // W is shared by the batch
    hipblasLtMatrixLayout_t layouts[3] = {s->a, s->b, s->d};
    for (int i = 0; i < 3; ++i) {
      SSC_CHECK(
          blasCheck(hipblasLtMatrixLayoutSetAttribute(
                        layouts[i], HIPBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof(batch)),
                    "set batch"));
      SSC_CHECK(blasCheck(hipblasLtMatrixLayoutSetAttribute(
                              layouts[i], HIPBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &strides[i],
                              sizeof(strides[i])),
                          "set batch stride"));
    }
  }
  hipblasLtMatmulPreference_t pref = nullptr;
  SSC_CHECK(blasCheck(hipblasLtMatmulPreferenceCreate(&pref), "hipblasLtMatmulPreferenceCreate"));
  uint64_t wsBytes = g.workspaceBytes;
  hipblasStatus_t st = hipblasLtMatmulPreferenceSetAttribute(
      pref, HIPBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsBytes, sizeof(wsBytes));
#if defined(SSC_GPU_IS_CUDA)
  // Odd K or N put rows at 2-byte boundaries: tell the heuristic, or it picks a kernel that
  // assumes 16-byte rows and fails at launch.
  const cublasLtMatmulPreferenceAttributes_t which[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  const uint32_t values[4] = {g.alignW, g.alignX, g.alignD, g.alignD};
  for (int i = 0; i < 4 && st == HIPBLAS_STATUS_SUCCESS; ++i)
    st = cublasLtMatmulPreferenceSetAttribute(pref, which[i], &values[i], sizeof(values[i]));
#endif
  std::vector<hipblasLtMatmulHeuristicResult_t> results(wanted > 0 ? wanted : 1);
  int found = 0;
  if (st == HIPBLAS_STATUS_SUCCESS)
    st = hipblasLtMatmulAlgoGetHeuristic(lt_, s->desc, s->a, s->b, s->d, s->d, pref,
                                         static_cast<int>(results.size()), results.data(), &found);
  // Only the heuristic's answer matters to the call: a preference that fails to free costs a
  // few bytes of host memory, not the GEMM.
  (void)hipblasLtMatmulPreferenceDestroy(pref);
  if (st != HIPBLAS_STATUS_SUCCESS) found = 0;
  for (int i = 0; i < found; ++i) algos->push_back(results[i].algo);
  return sscSuccess;
}

sscResult_t Blas::matmul(const BlasShape& s, const BlasAlgo& algo, const void* w, const void* x,
                         void* d, void* workspace, size_t workspaceBytes, sscStream_t stream,
                         Doing what) {
  const float alpha = 1.0f, beta = 0.0f;
  return blasCheck(
      hipblasLtMatmul(lt_, s.desc, &alpha, w, s.a, x, s.b, &beta, d, s.d, d, s.d, &algo, workspace,
                      workspaceBytes, static_cast<hipStream_t>(stream)),
      what);
}

}  // namespace ssc
#endif
