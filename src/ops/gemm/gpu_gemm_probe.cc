// SPDX-License-Identifier: MIT
#include "src/ops/gemm/gpu_gemm_probe.h"

#if defined(STARSCREAM_HAVE_BLASLT)
#include <vector>

#include "src/core/errors.h"
#include "src/ops/gemm/gemm_fused_kernel.h"
#include "src/device/services.h"

namespace ssc::gemm {

namespace {

// Bytes of a 256-byte-aligned region whose data starts `align` bytes in (so its address has
// exactly the call's alignment, which the heuristic was told), with room for `bytes`.
size_t region(size_t bytes) { return (bytes + 256 + 255) / 256 * 256; }
size_t skew(uint32_t align) { return align >= 256 ? 0 : align; }

}  // namespace

sscResult_t probeAlgorithm(DeviceServices* dev, Blas& blas, const BlasShape& blasShape,
                           const BlasAlgo& algo, const ProbeShape& s, void* blasWorkspace,
                           size_t blasWorkspaceBytes, int sms, sscStream_t stream,
                           uint64_t* unwritten) {
  // The probe waits for the stream, which a stream being captured into a graph cannot do (and
  // the capture would be lost): refuse, so the caller runs the shape once outside the graph.
  bool capturing = false;
  SSC_CHECK(dev->streamCapturing(
      stream, &capturing,
      "gemm: probing a BLAS algorithm: asking whether the stream is being captured"));
  if (capturing)
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
  SSC_CHECK(dev->allocAsync(
      reinterpret_cast<void**>(&base), total, stream,
      SSC_DOING("gemm: probing a BLAS algorithm for {} x {} x {}: allocating {} bytes", s.rows, s.n,
                s.k, total)));
  char* w = base + skew(s.alignW);
  char* x = base + region(wBytes) + skew(s.alignX);
  char* y = base + region(wBytes) + region(xBytes) + skew(s.alignD);
  auto* count = reinterpret_cast<unsigned long long*>(base + total - 256);
  // An algorithm the library refuses at launch (cuBLASLt did for one its heuristic had returned,
  // gemm_run.cc runPiece) is one more to skip, not an error of the call.
  bool refused = false;
  std::vector<void*> table;  // the host side of a pointer-array table, alive until the wait below
  void** devTable =
      reinterpret_cast<void**>(base + region(wBytes) + region(xBytes) + region(dBytes));
  unsigned long long left = 0;
  // The probe's work on the stream; whatever it queued is freed and waited for below either way.
  const sscResult_t r = [&]() -> sscResult_t {
    SSC_CHECK(dev->memsetAsync(base, 0, total - 256 + sizeof(*count), stream,
                               "gemm: probing a BLAS algorithm: zeroing its inputs"));
    SSC_CHECK(dev->memsetAsync(
        y, 0xFF, dBytes, stream,
        SSC_DOING("gemm: probing a BLAS algorithm: marking its {} output bytes", dBytes)));
    if (s.pointers) {
      table.assign(3 * kTable, nullptr);
      for (int i = 0; i < s.batch; ++i) {
        table[i] = w;
        table[kTable + i] = x + i * s.aStride * s.k * s.inBytes;
        table[2 * kTable + i] = y + i * s.dStride * s.n * s.outBytes;
      }
      SSC_CHECK(dev->memcpyAsync(
          devTable, table.data(), table.size() * sizeof(void*), CopyKind::kHostToDevice, stream,
          "gemm: probing a BLAS algorithm: copying its pointer-array table"));
    }
    const void* aw = s.pointers ? static_cast<const void*>(devTable) : w;
    const void* bx = s.pointers ? static_cast<const void*>(devTable + kTable) : x;
    void* dy = s.pointers ? static_cast<void*>(devTable + 2 * kTable) : y;
    // Quiet: a refusal is this probe's answer, not a failure to record.
    refused = blas.matmul(blasShape, algo, aw, bx, dy, blasWorkspace, blasWorkspaceBytes, stream,
                          Doing::quiet()) != sscSuccess;
    if (refused) {
      // Skipped, not an error of the call: whatever its refused launch left in the runtime's
      // last error must not be reported by the next launch's check.
      dev->clearRuntimeError();
      return sscSuccess;
    }
    const size_t rowBytes = static_cast<size_t>(s.n) * s.outBytes;
    SSC_CHECK(gpu::launchCountNonZero(y, s.rows * rowBytes, s.dStride * rowBytes, s.batch, count,
                                      4 * sms, stream));
    SSC_CHECK(dev->memcpyAsync(&left, count, sizeof(left), CopyKind::kDeviceToHost, stream,
                               "gemm: probing a BLAS algorithm: reading back its count"));
    return sscSuccess;
  }();
  // The first failure is the one to report (a later one may follow from it): the later calls
  // record theirs only where none came before.
  const sscResult_t freed = dev->freeAsync(
      base, stream,
      r != sscSuccess
          ? Doing::quiet()
          : Doing(SSC_DOING("gemm: probing a BLAS algorithm: freeing its {} bytes", total)));
  const sscResult_t synced = dev->streamSynchronize(
      stream, r != sscSuccess || freed != sscSuccess
                  ? Doing::quiet()
                  : Doing("gemm: probing a BLAS algorithm: waiting for the stream"));
  SSC_CHECK(r);
  SSC_CHECK(freed);
  SSC_CHECK(synced);
  *unwritten = refused ? kProbeRefused : left;
  return sscSuccess;
}

}  // namespace ssc::gemm
#endif
