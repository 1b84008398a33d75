// SPDX-License-Identifier: MIT
// The vendor BLAS (cuBLASLt on NVIDIA, hipBLASLt on AMD, named through gpu_runtime.h) as the GEMM
// ops (src/ops/gemm) use it: a handle, the descriptors of one GEMM shape with the heuristic's
// algorithms for it, and the matmul. Every BLAS call of the library is in gpu_blas.cc, so the ops
// make none of their own; which algorithm to trust (the probe) stays the ops' decision. Only
// where the build found the library (STARSCREAM_HAVE_BLASLT).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "src/device/services.h"
#include "src/platform/gpu_runtime.h"
#include "starscream/starscream.h"

#if defined(STARSCREAM_HAVE_BLASLT)
namespace ssc {

// One GEMM shape: D[rows][n] = X[rows][k] W^T (row-major), `batch` times. Row-major D is the
// column-major D^T = W X^T: the BLAS's "A" is W (k x n column-major, transposed; or n x k with
// weightKN), its "B" is X (k x rows), its D is n x rows.
struct BlasGemm {
  int64_t n = 0, k = 0, rows = 0;
  int batch = 1;
  // A strided batch (batch > 1, not pointers): X and D advance by these many rows per entry;
  // W is shared by the batch.
  int64_t xStride = 0, dStride = 0;
  bool pointers = false;  // a pointer-array batch: A, B and D are device tables of pointers
  bool weightKN = false;
  sscDataType_t inType = sscFloat16, outType = sscFloat16;
  // The smallest alignment (bytes, <= 256) of W's, X's and D's addresses: CUDA's heuristic must
  // be told where rows sit at less than 16 bytes.
  uint32_t alignW = 256, alignX = 256, alignD = 256;
  size_t workspaceBytes = 0;  // the most the algorithms may use
};

using BlasAlgo = hipblasLtMatmulAlgo_t;

// A described shape: its descriptors (freed by Blas::release).
struct BlasShape {
  hipblasLtMatmulDesc_t desc = nullptr;
  hipblasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
};

class Blas {
 public:
  Blas() = default;
  Blas(const Blas&) = delete;
  Blas& operator=(const Blas&) = delete;
  ~Blas();  // a destructor: a handle that fails to free has no caller to report to

  sscResult_t create();
  // Describes `g` into *shape and asks the heuristic for up to `wanted` algorithms, in its order,
  // into *algos (none: the BLAS has no algorithm for it; also a pointer-array batch in a build
  // whose BLAS has none, SSC_BLAS_POINTER_ARRAY). On failure the caller releases *shape.
  sscResult_t describe(const BlasGemm& g, int wanted, BlasShape* shape,
                       std::vector<BlasAlgo>* algos);
  // Teardown: a descriptor that fails to free leaves nothing for the owner to do.
  static void release(BlasShape* shape);
  // D = W X^T on `stream` with `algo` (for a pointer-array batch, w, x and d are the tables).
  // `what` names the call in a failure ("gemm: <what> failed: <status>"); quiet: not recorded
  // (an algorithm the caller only tries).
  sscResult_t matmul(const BlasShape& shape, const BlasAlgo& algo, const void* w, const void* x,
                     void* d, void* workspace, size_t workspaceBytes, sscStream_t stream,
                     Doing what);

 private:
  hipblasLtHandle_t lt_ = nullptr;
};

}  // namespace ssc
#endif
