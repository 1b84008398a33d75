// The host backend's half of the fused GEMM-collectives: each chunk's GEMMs on the calling
// thread (hostGemm, fp32 accumulation), then the core's collective on the same communicator and
// stream. Nothing overlaps here: the host backend is how CI runs the plans (chunking, row
// ranges, the pad buffer of ranks that own fewer rows) end to end against a reference.
#include <cstring>

#include "src/api/api.h"
#include "src/device/backend.h"
#include "src/ops/gemm/gemm_context.h"

namespace ssc::gemm {

namespace {

size_t typeBytes(sscDataType_t t) { return t == sscFloat32 ? 4 : 2; }

const char* cbyte(const void* p, size_t off) { return static_cast<const char*>(p) + off; }
char* byte(void* p, size_t off) { return static_cast<char*>(p) + off; }

void runPieces(const Call& c, int j, const void* a, void* d) {
  const size_t ib = typeBytes(c.inType), ob = typeBytes(c.outType);
  const int64_t n = c.p.n, k = c.p.k;
  for (const GemmPiece& g : chunkPieces(c.p, c.plan, j))
    for (int b = 0; b < g.batch; ++b)
      hostGemm(cbyte(a, (g.aRow + b * g.aStride) * k * ib), c.w,
               byte(d, (g.dRow + b * g.dStride) * n * ob), g.rows, n, k, c.inType, c.outType,
               c.weightKN, n);
}

}  // namespace

sscResult_t hostRun(sscGemmContext* g, const Call& c, sscStream_t stream) {
  Backend* be = g->backend;
  SSC_CHECK(be->streamSynchronize(stream));  // x and w may come from queued work
  const Problem& p = c.p;
  const Plan& pl = c.plan;
  const size_t ib = typeBytes(c.inType), ob = typeBytes(c.outType);
  const RowRange own = rowShard(p.m, p.nranks, c.rank);
  if (p.m == 0 || p.n == 0) return sscSuccess;
  if (p.k == 0) {  // an empty sum: zeros, and no rank needs anything from another
    const int64_t rows = p.op == Op::kReduceScatter ? own.count : p.m;
    if (rows > 0) std::memset(c.y, 0, rows * p.n * ob);
    return sscSuccess;
  }
  if (pl.direct) {
    hostGemm(c.x, c.w, c.y, p.m, p.n, p.k, c.inType, c.outType, c.weightKN, p.n);
    if (c.xGathered != nullptr && c.xGathered != c.x) std::memcpy(c.xGathered, c.x, p.m * p.k * ib);
    return sscSuccess;
  }
  sscComm* comm = g->comm;
  char* pad = static_cast<char*>(g->workspace) + pl.slots * pl.slotBytes;
  // The GPU half's schedule, run in its list order (a valid serial order); streams and events
  // mean nothing here.
  for (const Step& st : schedule(p, pl, c.rank, c.xGathered != nullptr)) {
    if (st.kind == StepKind::kRecord || st.kind == StepKind::kWait) continue;
    const int j = st.chunk;
    const ChunkRows cr = chunkRows(pl, j);
    void* slot = static_cast<char*>(g->workspace) + (j % pl.slots) * pl.slotBytes;
    const int64_t mine = ownChunkRows(p, pl, j, c.rank);
    const bool padded = mine < cr.rows;
    const bool rs = p.op == Op::kReduceScatter;
    switch (st.kind) {
      case StepKind::kGemm:
        if (rs) runPieces(c, j, c.x, slot);
        else runPieces(c, j, slot, c.y);
        break;
      case StepKind::kColl:
        if (rs) {
          void* dst = padded ? pad : byte(c.y, cr.begin * p.n * ob);
          SSC_CHECK(sscReduceScatter(slot, dst, cr.rows * p.n, c.outType, sscSum, comm, stream));
        } else {
          const void* src = padded ? pad : cbyte(c.x, cr.begin * p.k * ib);
          SSC_CHECK(sscAllGather(src, slot, cr.rows * p.k, c.inType, comm, stream));
        }
        SSC_CHECK(be->streamSynchronize(stream));
        break;
      case StepKind::kPadIn:  // the rows this rank owns of the chunk; the rest stays as it is
        if (mine > 0) std::memcpy(pad, cbyte(c.x, cr.begin * p.k * ib), mine * p.k * ib);
        break;
      case StepKind::kGatherOut:  // the GEMM pieces' rows: slot row -> row of X
        for (const GemmPiece& g : chunkPieces(p, pl, j))
          for (int b = 0; b < g.batch; ++b)
            std::memcpy(byte(c.xGathered, (g.dRow + b * g.dStride) * p.k * ib),
                        cbyte(slot, (g.aRow + b * g.aStride) * p.k * ib), g.rows * p.k * ib);
        break;
      case StepKind::kPadOut:
        if (mine > 0) std::memcpy(byte(c.y, cr.begin * p.n * ob), pad, mine * p.n * ob);
        break;
      default:
        break;
    }
  }
  return sscSuccess;
}

}  // namespace ssc::gemm
