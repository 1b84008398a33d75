// SPDX-License-Identifier: MIT
// The GPU half's check of a vendor BLAS algorithm before the GEMM ops trust it (gpu_gemm.cc):
// under an MPS SM cap cuBLASLt (on an H200) returned algorithms that leave whole tiles or batch
// entries of the output unwritten and report success (one process at a 20 % cap, m = 1000,
// n = 96, k = 200: 488 of 1000 rows never written, no communication involved; `gpu_gemm_test`
// at K = 5 under tools/emulate/partition-run.sh with STARSCREAM_GEMM_PROBE=off shows it).
// STARSCREAM_GEMM_PROBE (docs/environment.md) says when the ops probe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "src/device/gpu/gpu_blas.h"
#include "src/device/services.h"
#include "starscream/starscream.h"

#if defined(STARSCREAM_HAVE_BLASLT)
namespace ssc::gemm {

// One GEMM shape as the call runs it (gpu_gemm.cc's ShapeKey): D[rows][n] = X[rows][k] W^T,
// `batch` times with X and D advanced by aStride and dStride rows.
struct ProbeShape {
  int64_t n = 0, k = 0, rows = 0;
  int batch = 1;
  int64_t aStride = 0, dStride = 0;
  size_t inBytes = 2, outBytes = 2;
  uint32_t alignW = 256, alignX = 256, alignD = 256;  // the call's pointer alignments (<= 256)
  // A pointer-array batch (gpu_gemm.cc tableShape): the probe lays its entries out as a strided
  // batch (aStride, dStride) and hands the BLAS a table of their addresses.
  bool pointers = false;
};

// A pointer-array batch's table (gpu_gemm.cc, and the probe's own): its three arrays (W, X, D)
// start this many pointers apart (128 bytes: each array as aligned as the table), so a batch has
// at most this many entries (kFusedMaxRanks - 1 peers fit).
constexpr int kPointerTableStride = 16;

// *unwritten when the library refused to launch the algorithm.
constexpr uint64_t kProbeRefused = ~uint64_t{0};

// Runs `algo` once on `stream` over zero inputs of this shape, laid out and aligned as the call's
// (stream-ordered allocations of its own), into a D whose bytes start at 0xFF, waits for the
// stream, and returns in *unwritten the output bytes the GEMM should have set to zero but did not
// (0: the algorithm computed every element; kProbeRefused: it did not launch). The caller's stream
// holds only work whose peers' part is already queued (the ops probe before a GEMM, in their one
// ordered list), so the wait cannot stall a peer.
sscResult_t probeAlgorithm(DeviceServices* dev, Blas& blas, const BlasShape& blasShape,
                           const BlasAlgo& algo, const ProbeShape& shape, void* blasWorkspace,
                           size_t blasWorkspaceBytes, int sms, sscStream_t stream,
                           uint64_t* unwritten);

}  // namespace ssc::gemm
#endif
