// SPDX-License-Identifier: MIT
#include "src/ops/gemm/gpu_gemm_probe.h"

#if defined(STARSCREAM_HAVE_BLASLT)
#include <vector>

#include "src/core/errors.h"
#include "src/kernels/gpu/gemm_fused_kernel.h"

namespace ssc::gemm {

namespace {

sscResult_t check(hipError_t e, const char* what) {
  if (e == hipSuccess) return sscSuccess;
  return fail(sscUnhandledDeviceError, "gemm: probing the BLAS algorithm: {} failed: {}", what,
              hipGetErrorString(e));
}

// Bytes of a 256-byte-aligned region whose data starts `align` bytes in (so its address has
// exactly the call's alignment, which the heuristic was told), with room for `bytes`.
size_t region(size_t bytes) { return (bytes + 256 + 255) / 256 * 256; }
size_t skew(uint32_t align) { return align >= 256 ? 0 : align; }

}  // namespace

sscResult_t probeAlgorithm(hipblasLtHandle_t lt, hipblasLtMatmulDesc_t desc,
                           hipblasLtMatrixLayout_t a, hipblasLtMatrixLayout_t b,
                           hipblasLtMatrixLayout_t d, const hipblasLtMatmulAlgo_t& algo,
                           const ProbeShape& s, void* blasWorkspace, size_t blasWorkspaceBytes,
                           int sms, hipStream_t stream, uint64_t* unwritten) {
  // The probe waits for the stream, which a stream being captured into a graph cannot do (and
  // the capture would be lost): refuse, so the caller runs the shape once outside the graph.
  hipStreamCaptureStatus capture = hipStreamCaptureStatusNone;
  SSC_CHECK(check(hipStreamIsCapturing(stream, &capture), "hipStreamIsCapturing"));
  if (capture != hipStreamCaptureStatusNone)
    return fail(
        sscInvalidUsage,
        "gemm: a new GEMM shape ({} x {} x {}, rows x n x k) on a stream being "
        "captured into a graph: STARSCREAM_GEMM_PROBE checks its BLAS algorithm first, which "
        "waits for the stream; run the call once before capturing it",
        s.rows, s.n, s.k);
  if (s.pointers && s.batch > kPointerTableStride)
    return fail(sscInternalError, "gemm: probing a pointer-array batch of {} entries (at most {})",
                s.batch, kPointerTableStride);
  const size_t last = static_cast<size_t>(s.batch > 1 ? s.batch - 1 : 0);
  const size_t wBytes = static_cast<size_t>(s.n) * s.k * s.inBytes;
  const size_t xBytes = (last * s.aStride + s.rows) * s.k * s.inBytes;
  const size_t dBytes = (last * s.dStride + s.rows) * s.n * s.outBytes;
  // A pointer-array batch's table, laid out as gpu_gemm.cc's.
  constexpr size_t kTable = kPointerTableStride;
  const size_t tableBytes = s.pointers ? region(3 * kTable * sizeof(void*)) : 0;
  const size_t total = region(wBytes) + region(xBytes) + region(dBytes) + tableBytes + 256;
  char* base = nullptr;
  // Stream-ordered: a plain allocation or free may wait for the whole device, where another
  // stream of this process can hold a kernel waiting on the peers.
  SSC_CHECK(
      check(hipMallocAsync(reinterpret_cast<void**>(&base), total, stream), "hipMallocAsync"));
  char* w = base + skew(s.alignW);
  char* x = base + region(wBytes) + skew(s.alignX);
  char* y = base + region(wBytes) + region(xBytes) + skew(s.alignD);
  auto* count = reinterpret_cast<unsigned long long*>(base + total - 256);
  sscResult_t r =
      check(hipMemsetAsync(base, 0, total - 256 + sizeof(*count), stream), "hipMemsetAsync");
  if (r == sscSuccess) r = check(hipMemsetAsync(y, 0xFF, dBytes, stream), "hipMemsetAsync");
  // An algorithm the library refuses at launch (cuBLASLt did for one its heuristic had returned,
  // gpu_gemm.cc runPiece) is one more to skip, not an error of the call.
  bool refused = false;
  std::vector<void*> table;  // the host side of a pointer-array table, alive until the wait below
  void** devTable =
      reinterpret_cast<void**>(base + region(wBytes) + region(xBytes) + region(dBytes));
  if (r == sscSuccess && s.pointers) {
    table.assign(3 * kTable, nullptr);
    for (int i = 0; i < s.batch; ++i) {
      table[i] = w;
      table[kTable + i] = x + i * s.aStride * s.k * s.inBytes;
      table[2 * kTable + i] = y + i * s.dStride * s.n * s.outBytes;
    }
    r = check(hipMemcpyAsync(devTable, table.data(), table.size() * sizeof(void*),
                             hipMemcpyHostToDevice, stream),
              "hipMemcpyAsync");
  }
  if (r == sscSuccess) {
    const float alpha = 1.0f, beta = 0.0f;
    const void* aw = s.pointers ? static_cast<const void*>(devTable) : w;
    const void* bx = s.pointers ? static_cast<const void*>(devTable + kTable) : x;
    void* dy = s.pointers ? static_cast<void*>(devTable + 2 * kTable) : y;
    refused = hipblasLtMatmul(lt, desc, &alpha, aw, a, bx, b, &beta, dy, d, dy, d, &algo,
                              blasWorkspace, blasWorkspaceBytes, stream) != HIPBLAS_STATUS_SUCCESS;
  }
  const size_t rowBytes = static_cast<size_t>(s.n) * s.outBytes;
  if (r == sscSuccess && !refused)
    r = check(static_cast<hipError_t>(gpu::launchCountNonZero(
                  y, s.rows * rowBytes, s.dStride * rowBytes, s.batch, count, 4 * sms, stream)),
              "the count kernel");
  unsigned long long left = 0;
  if (r == sscSuccess && !refused)
    r = check(hipMemcpyAsync(&left, count, sizeof(left), hipMemcpyDeviceToHost, stream),
              "hipMemcpyAsync");
  const sscResult_t freed = check(hipFreeAsync(base, stream), "hipFreeAsync");
  const sscResult_t synced = check(hipStreamSynchronize(stream), "hipStreamSynchronize");
  SSC_CHECK(r);
  SSC_CHECK(freed);
  SSC_CHECK(synced);
  *unwritten = refused ? kProbeRefused : left;
  return sscSuccess;
}

}  // namespace ssc::gemm
#endif
