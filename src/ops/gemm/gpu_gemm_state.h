// SPDX-License-Identifier: MIT
// The GPU GEMM context's state (GpuGemmState): the vendor BLAS handle and workspace, the GEMM
// shapes described so far with the algorithm each was given (probed where STARSCREAM_GEMM_PROBE
// is on), the side stream and the fused variant's wait words. Used by gpu_gemm.cc, which runs
// the ops' schedules with it; its own file because choosing a shape's algorithm is a job of its
// own. The BLAS calls themselves are src/device/gpu/gpu_blas.cc's, the runtime's the backend's
// device services.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "src/api/api.h"
#include "src/core/log.h"
#include "src/ops/gemm/gemm_fused_kernel.h"
#include "src/ops/gemm/gemm_context.h"
#include "src/ops/gemm/gpu_gemm_internal.h"
#include "src/ops/gemm/gpu_gemm_probe.h"
#include "src/device/gpu/gpu_blas.h"

namespace ssc::gemm {

#if defined(STARSCREAM_HAVE_BLASLT)
constexpr size_t kBlasWorkspaceBytes = size_t{32} << 20;

// The largest power of two (<= 256) dividing every address a batch touches.
inline uint32_t alignmentOf(const void* p, size_t strideBytes) {
  const uint64_t bits = reinterpret_cast<uintptr_t>(p) | strideBytes | 256;
  return static_cast<uint32_t>(bits & (~bits + 1));
}

// One GEMM shape as the BLAS sees it, with its descriptors and the algorithm the heuristic chose.
using ShapeKey = std::tuple<int64_t, int64_t, int64_t, int, int64_t, int64_t, bool, int, int,
                            uint32_t, uint32_t, uint32_t>;
struct Shape {
  BlasShape blas;  // the descriptors (src/device/gpu/gpu_blas.h)
  BlasAlgo algo{};
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
  DeviceServices* dev = nullptr;  // the backend's (sscGemmContext::dev)
  // The context's own copies (zeroing the flags, reading them back at destroy): not the null
  // stream, which could wait behind another communicator's kernel. No op work runs here.
  sscStream_t side = nullptr;
  // The fused variant's wait timeouts: pinned host words {code, lane, seen, target, site}
  // (FusedErrorSink), as the kernels see them.
  volatile uint32_t* errHost = nullptr;
  uint32_t* errDevice = nullptr;
  uint64_t timeoutTicks = 0;
  const uint32_t* abort = nullptr;  // the communicator's abort word (Backend::deviceAbortWord)
  int sms = 1;
  CopyEngine* ce = nullptr;  // SSC_GEMM_COPY_ENGINE's state (gpu_gemm_ce.cc), on first use
#if defined(STARSCREAM_HAVE_BLASLT)
  Blas blas;  // the vendor BLAS's handle (gpu_blas.h: every BLAS call is there)
  void* blasWorkspace = nullptr;
  std::map<ShapeKey, Shape> shapes;
  // The per-rank all-gather's pointer-array tables, [use % 2][kFusedMaxStores] (PeerBatch), and
  // the end of each one's last GEMM where no flag orders it (the copy-engine form,
  // gpuStorePeerTable).
  void** tables = nullptr;
  DeviceEvent tableRead[2] = {nullptr, nullptr};

  // STARSCREAM_GEMM_PROBE said to vet each new shape's algorithm (sscGemmContext::probe).
  bool probe = false;

  ~GpuGemmState() {
    for (auto& [key, s] : shapes) Blas::release(&s.blas);  // `blas` itself after them
  }

  // D[rows][n] (row-major, ld n) = A[rows][k] W^T, batched. Row-major D is the column-major
  // D^T = W X^T: the BLAS's "A" is W (k x n column-major, transposed; or n x k with
  // SSC_GEMM_WEIGHT_KN), its "B" is X (k x rows), its D is n x rows.
  // The shape's descriptors and algorithm, described (and probed) at its first use.
  sscResult_t shapeOf(const Call& c, const GemmPiece& g, const ShapeKey& key, sscStream_t stream,
                      const Shape** out) {
    auto it = shapes.find(key);
    if (it == shapes.end()) {
      Shape s;
      const sscResult_t r = describe(c, g, key, stream, &s);
      if (r != sscSuccess) {
        Blas::release(&s.blas);
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
                         sscStream_t stream, const Shape** out) {
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
  sscResult_t matmulTable(const Shape& s, void** table, sscStream_t stream) {
    void** x = table + kPointerTableStride;
    void** d = table + 2 * kPointerTableStride;
    return blas.matmul(s.blas, s.algo, table, x, d, blasWorkspace, kBlasWorkspaceBytes, stream,
                       "hipblasLtMatmul (pointer-array batch)");
  }

  sscResult_t matmul(const Call& c, const void* a, void* d, const GemmPiece& g,
                     sscStream_t stream) {
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
    return blas.matmul(s.blas, s.algo, c.w, bPtr, dPtr, blasWorkspace, kBlasWorkspaceBytes, stream,
                       "hipblasLtMatmul");
  }

 private:
  sscResult_t describe(const Call& c, const GemmPiece& g, const ShapeKey& key, sscStream_t stream,
                       Shape* s) {
    const int64_t n = c.p.n, k = c.p.k;
    const bool pointers = g.aStride == kPointerArray;
    BlasGemm bg;
    bg.n = n, bg.k = k, bg.rows = g.rows, bg.batch = g.batch, bg.pointers = pointers;
    if (!pointers) bg.xStride = g.aStride, bg.dStride = g.dStride;
    bg.weightKN = c.weightKN, bg.inType = c.inType, bg.outType = c.outType;
    bg.alignW = std::get<9>(key), bg.alignX = std::get<10>(key), bg.alignD = std::get<11>(key);
    bg.workspaceBytes = kBlasWorkspaceBytes;
    // Probing: the heuristic's first results in its order, the first that computes every
    // element wins (gpu_gemm_probe.h says why).
    std::vector<BlasAlgo> algos;
    SSC_CHECK(blas.describe(bg, probe ? kProbeCandidates : 1, &s->blas, &algos));
    const int found = static_cast<int>(algos.size());
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
        SSC_CHECK(probeAlgorithm(dev, blas, s->blas, algos[i], ps, blasWorkspace,
                                 kBlasWorkspaceBytes, sms, stream, &unwritten));
      if (unwritten == 0) {
        s->found = true;
        s->algo = algos[i];
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
