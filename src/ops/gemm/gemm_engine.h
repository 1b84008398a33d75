// SPDX-License-Identifier: MIT
// The GEMM-collectives' algorithm is written once (gemm_run.cc: the empty and direct cases, the
// schedule of a chunked call, the scratch rule of a strided batch, the bias); a GemmEngine is
// what a backend's half gives it to run on: a GEMM piece, copies and fills, a chunk's collective
// ordered for the next step, the fused variant, the bias pass. The host half (host_gemm.cc) does
// each on the calling thread with the reference GEMM; the GPU half (gpu_gemm.cc) queues each on
// the caller's stream with the vendor BLAS. CI runs the algorithm through the host engine, so
// what it tests is what the GPU runs.
//
// The fused variants are each half's own executor of one flag protocol (ready, done, from and
// arrive words in the peers' workspaces, gemm_context.h): the host one waits on the calling
// thread, the GPU ones in kernels or stream memory operations. They are engines' work, as the
// plan executors are of the collectives' FIFO protocol.
#pragma once

#include <cstddef>
#include <cstdint>

#include "src/device/services.h"
#include "src/ops/gemm/gemm_context.h"
#include "src/ops/gemm/gemm_plan.h"
#include "starscream/starscream.h"

namespace ssc::gemm {

class GemmEngine {
 public:
  virtual ~GemmEngine() = default;
  // One GEMM piece of call c: for each of piece.batch entries i, rows piece.aRow + i * aStride of
  // `a` (k wide) times W into rows piece.dRow + i * dStride of `d` (n wide).
  virtual sscResult_t gemm(const Call& c, const void* a, void* d, const GemmPiece& piece,
                           sscStream_t s) = 0;
  virtual sscResult_t zero(void* p, size_t bytes, sscStream_t s, Doing what) = 0;
  virtual sscResult_t copy(void* dst, const void* src, size_t bytes, sscStream_t s, Doing what) = 0;
  // `height` rows of `width` bytes, rows `srcPitch` / `dstPitch` bytes apart.
  virtual sscResult_t copy2D(void* dst, size_t dstPitch, const void* src, size_t srcPitch,
                             size_t width, size_t height, sscStream_t s, Doing what) = 0;
  // Before a chunk's collective where the context holds it until every rank has arrived
  // (sscGemmContext::barrier), and after it is queued: the next step may then read its output.
  virtual sscResult_t arrivalBarrier(sscStream_t s) = 0;
  virtual sscResult_t collectiveQueued(sscStream_t s) = 0;
  // The fused variant of call c (its plan's variant is sscGemmFused).
  virtual sscResult_t fused(const Call& c, sscStream_t s) = 0;
  // y[r][j] += bias[j] for r < rows, in fp32, rounded to y's type.
  virtual sscResult_t addBias(const Call& c, int64_t rows, sscStream_t s) = 0;
};

// Call c on engine e, in order on stream s: the op, then the bias over the rows of y this rank
// holds.
sscResult_t runCall(sscGemmContext* g, const Call& c, GemmEngine& e, sscStream_t s);
// Chunk j's GEMM pieces (chunkPieces): A rows from a, D rows into d, each strided batch through
// the plan's scratch where it can (runPiece).
sscResult_t runChunkGemms(sscGemmContext* g, const Call& c, GemmEngine& e, int j, const void* a,
                          void* d, sscStream_t s);
// One GEMM piece. With `scratch` (and the plan has one), a strided batch (one side strided over
// the ranks' blocks: the reduce-scatter's x rows, the all-gather's y rows) becomes one 2D copy and
// ONE GEMM that reads W once, instead of one GEMM per rank (Plan::scratchBytes).
sscResult_t runPiece(sscGemmContext* g, const Call& c, GemmEngine& e, const void* a, void* d,
                     const GemmPiece& piece, bool scratch, sscStream_t s);

}  // namespace ssc::gemm
