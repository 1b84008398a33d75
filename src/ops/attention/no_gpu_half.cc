// SPDX-License-Identifier: MIT
// The GPU half's entry points in a build without a GPU backend (listed by CMakeLists.txt only
// then): every backend's services() is null there, so the KV cache never takes the GPU half and
// these are never reached. They keep the API file free of build conditions.
#include "src/core/errors.h"
#include "src/ops/attention/kv_cache.h"

namespace ssc::attn {
sscResult_t gpuCreate(sscKvCache*) {
  return fail(sscInternalError, "KV cache: GPU backend not built");
}
void gpuDestroy(sscKvCache*) {}
sscResult_t gpuAppend(sscKvCache*, int, const void*, const void*, sscStream_t) {
  return fail(sscInternalError, "KV cache: GPU backend not built");
}
sscResult_t gpuDecode(sscKvCache*, const DecodeArgs&, sscStream_t) {
  return fail(sscInternalError, "KV cache: GPU backend not built");
}
sscResult_t gpuTableChanged(sscKvCache*) {
  return fail(sscInternalError, "KV cache: GPU backend not built");
}
bool gpuGraphReadsBelow(const sscKvCache*, int, int64_t, int*) { return false; }
sscResult_t gpuPrefill(sscKvCache*, const PrefillArgs&, sscStream_t) {
  return fail(sscInternalError, "KV cache: GPU backend not built");
}
}  // namespace ssc::attn
