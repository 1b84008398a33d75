// SPDX-License-Identifier: MIT
// The GPU half's entry points in a build without a GPU backend (listed by CMakeLists.txt only
// then): every backend's services() is null there, so the GEMM context never takes the GPU half and
// these are never reached. They keep the API file free of build conditions.
#include "src/core/errors.h"
#include "src/ops/gemm/gemm_context.h"

namespace ssc::gemm {
sscResult_t gpuCreate(sscGemmContext*) {
  return fail(sscInternalError, "gemm: GPU backend not built");
}
void gpuDestroy(sscGemmContext*) {}
sscResult_t gpuRun(sscGemmContext*, const Call&, sscStream_t) {
  return fail(sscInternalError, "gemm: GPU backend not built");
}
bool gpuFusedFlags(sscGemmContext*, uint32_t*, size_t) { return false; }
}  // namespace ssc::gemm
