// SPDX-License-Identifier: MIT
// The GEMM-collectives' algorithm, for both halves (gemm_engine.h): a call's steps in
// schedule()'s order (gemm_plan.cc; tests/ops/gemm checks its guarantees: a chunk's collective
// after its GEMM, or the reverse, and a slot refilled only after the work that read it), the
// collectives through the core's sscReduceScatter / sscAllGather on the same communicator and
// stream.
#include <algorithm>
#include <cstdint>

#include "src/api/api.h"
#include "src/core/errors.h"
#include "src/ops/gemm/gemm_engine.h"

namespace ssc::gemm {

namespace {

void* scratchOf(sscGemmContext* g, const Plan& pl) {
  return pl.scratchBytes == 0
             ? nullptr
             : static_cast<char*>(g->workspace) + pl.slots * pl.slotBytes + pl.padBytes;
}

// The op without its bias.
sscResult_t runOp(sscGemmContext* g, const Call& c, GemmEngine& e, sscStream_t s) {
  const Problem& p = c.p;
  const Plan& pl = c.plan;
  const size_t ib = typeBytes(c.inType), ob = typeBytes(c.outType);
  if (p.m == 0 || p.n == 0) return sscSuccess;
  if (p.k == 0) {  // an empty sum: zeros, and no rank needs anything from another
    const int64_t rows = heldRows(c);
    if (rows > 0)
      SSC_CHECK(
          e.zero(c.y, rows * p.n * ob, s, SSC_DOING("gemm: zeroing {} rows of y (k = 0)", rows)));
    return sscSuccess;
  }
  if (pl.direct) {
    if (c.xGathered != nullptr && c.xGathered != c.x)
      SSC_CHECK(
          e.copy(c.xGathered, c.x, p.m * p.k * ib, s, "gemm: copying x into the gathered output"));
    GemmPiece all;
    all.rows = p.m;
    return e.gemm(c, c.x, c.y, all, s);
  }
  if (pl.variant == sscGemmFused) return e.fused(c, s);
  sscComm* comm = g->comm;
  char* pad = static_cast<char*>(g->workspace) + pl.slots * pl.slotBytes;
  const bool rs = p.op == Op::kReduceScatter;
  for (const Step& st : schedule(p, pl, c.rank, c.xGathered != nullptr)) {
    const int j = st.chunk;
    const ChunkRows cr = chunkRows(pl, j);
    void* slot = static_cast<char*>(g->workspace) + (j % pl.slots) * pl.slotBytes;
    const int64_t mine = ownChunkRows(p, pl, j, c.rank);
    const bool padded = mine < cr.rows;
    switch (st.kind) {
      case StepKind::kGemm:
        SSC_CHECK(rs ? runChunkGemms(g, c, e, j, c.x, slot, s)
                     : runChunkGemms(g, c, e, j, slot, c.y, s));
        break;
      case StepKind::kColl:
        // Where ranks share compute units, the core's kernel would wait for a late peer on the
        // units its GEMM needs: the barrier waits for every rank first.
        if (g->barrier && !g->fusedPeers.empty()) SSC_CHECK(e.arrivalBarrier(s));
        if (rs) {
          void* dst = padded ? pad : byte(c.y, cr.begin * p.n * ob);
          SSC_CHECK(sscReduceScatter(slot, dst, cr.rows * p.n, c.outType, sscSum, comm, s));
        } else {
          const void* src = padded ? pad : cbyte(c.x, cr.begin * p.k * ib);
          SSC_CHECK(sscAllGather(src, slot, cr.rows * p.k, c.inType, comm, s));
        }
        SSC_CHECK(e.collectiveQueued(s));
        break;
      case StepKind::kPadIn:  // the rows this rank owns of the chunk; the rest stays as it is
        if (mine > 0)
          SSC_CHECK(e.copy(pad, cbyte(c.x, cr.begin * p.k * ib), mine * p.k * ib, s,
                           SSC_DOING("gemm: copying chunk {}'s rows of x into the pad", j)));
        break;
      case StepKind::kGatherOut:  // the GEMM pieces' rows: slot row -> row of X, ranks as 2D copies
        for (const GemmPiece& piece : chunkPieces(p, pl, j)) {
          const size_t rowBytes = p.k * ib;
          SSC_CHECK(e.copy2D(
              byte(c.xGathered, piece.dRow * rowBytes),
              std::max<size_t>(piece.dStride, piece.rows) * rowBytes,
              cbyte(slot, piece.aRow * rowBytes),
              std::max<size_t>(piece.aStride, piece.rows) * rowBytes, piece.rows * rowBytes,
              piece.batch, s,
              SSC_DOING("gemm: copying chunk {}'s gathered rows of x out of its slot", j)));
        }
        break;
      case StepKind::kPadOut:
        if (mine > 0)
          SSC_CHECK(e.copy(byte(c.y, cr.begin * p.n * ob), pad, mine * p.n * ob, s,
                           SSC_DOING("gemm: copying chunk {}'s rows of y out of the pad", j)));
        break;
    }
  }
  return sscSuccess;
}

}  // namespace

sscResult_t runPiece(sscGemmContext* g, const Call& c, GemmEngine& e, const void* a, void* d,
                     const GemmPiece& piece, bool scratch, sscStream_t s) {
  void* buf = scratch ? scratchOf(g, c.plan) : nullptr;
  if (piece.batch <= 1 || buf == nullptr) return e.gemm(c, a, d, piece, s);
  // Rows that are not 16-byte multiples (odd K or N) run as the batch: one such one-GEMM form
  // (301 x 257 x 129, fp16 -> fp32, K = 8) was refused by cuBLASLt at launch ("not supported")
  // although its heuristic had returned an algorithm, and the model shapes the scratch is for
  // have 16-byte rows.
  const size_t aRow = c.p.k * typeBytes(c.inType), dRow = c.p.n * typeBytes(c.outType);
  if (aRow % 16 != 0 || dRow % 16 != 0 || reinterpret_cast<uintptr_t>(buf) % 256 != 0)
    return e.gemm(c, a, d, piece, s);
  const bool stridedA = piece.aStride != piece.rows;
  const size_t need = static_cast<size_t>(piece.rows * piece.batch) * (stridedA ? aRow : dRow);
  if (need > c.plan.scratchBytes)
    return SSC_INTERNAL("gemm: a piece of {} x {} rows needs {} bytes of scratch, its plan has {}",
                        piece.batch, piece.rows, need, c.plan.scratchBytes);
  GemmPiece one;
  one.rows = piece.rows * piece.batch;
  if (stridedA) {  // A strided, D contiguous: A's rows into the scratch first
    SSC_CHECK(e.copy2D(buf, piece.rows * aRow, cbyte(a, piece.aRow * aRow), piece.aStride * aRow,
                       piece.rows * aRow, piece.batch, s,
                       SSC_DOING("gemm: gathering {} strided blocks of {} rows into the scratch",
                                 piece.batch, piece.rows)));
    one.dRow = piece.dRow;
    return e.gemm(c, buf, d, one, s);
  }
  one.aRow = piece.aRow;  // A contiguous, D strided: one GEMM into the scratch, then its rows out
  SSC_CHECK(e.gemm(c, a, buf, one, s));
  return e.copy2D(byte(d, piece.dRow * dRow), piece.dStride * dRow, buf, piece.rows * dRow,
                  piece.rows * dRow, piece.batch, s,
                  SSC_DOING("gemm: scattering {} blocks of {} rows out of the scratch", piece.batch,
                            piece.rows));
}

sscResult_t runChunkGemms(sscGemmContext* g, const Call& c, GemmEngine& e, int j, const void* a,
                          void* d, sscStream_t s) {
  for (const GemmPiece& piece : chunkPieces(c.p, c.plan, j))
    SSC_CHECK(runPiece(g, c, e, a, d, piece, true, s));
  return sscSuccess;
}

sscResult_t runCall(sscGemmContext* g, const Call& c, GemmEngine& e, sscStream_t s) {
  SSC_CHECK(runOp(g, c, e, s));
  const int64_t rows = heldRows(c);
  if (c.bias == nullptr || rows == 0 || c.p.n == 0) return sscSuccess;
  // A pass of its own over y for now: the vendor BLAS's bias epilogue would save it on the GPU,
  // but the reduce-scatter's sum happens after the GEMM, and the epilogue needs the heuristic run
  // again with it (docs/gemm.md, Left).
  return e.addBias(c, rows, s);
}

}  // namespace ssc::gemm
