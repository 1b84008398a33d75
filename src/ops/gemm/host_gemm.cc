// SPDX-License-Identifier: MIT
// The host backend's half of the fused GEMM-collectives: each chunk's GEMMs on the calling
// thread (hostGemm, fp32 accumulation), then the core's collective on the same communicator and
// stream. Nothing overlaps here: the host backend is how CI runs the plans (chunking, row
// ranges, the pad buffer of ranks that own fewer rows) end to end against a reference.
#include <algorithm>
#include <atomic>
#include <cstring>

#include "src/api/api.h"
#include "src/comm/comm.h"
#include "src/core/futex_wait.h"
#include "src/kernels/host/reduce.h"
#include "src/device/backend.h"
#include "src/ops/gemm/gemm_context.h"

namespace ssc::gemm {

namespace {

// A chunk's GEMM pieces. A strided batch goes through the plan's scratch as the GPU half does it
// (gpu_gemm.cc runPiece: the strided side copied, one GEMM), so CI runs the scratch's place in
// the workspace and its sizes; without a scratch, one GEMM per batch entry.
sscResult_t runPieces(sscGemmContext* ctx, const Call& c, int j, const void* a, void* d) {
  const size_t ib = typeBytes(c.inType), ob = typeBytes(c.outType);
  const int64_t n = c.p.n, k = c.p.k;
  const Plan& pl = c.plan;
  char* scratch = pl.scratchBytes == 0
                      ? nullptr
                      : static_cast<char*>(ctx->workspace) + pl.slots * pl.slotBytes + pl.padBytes;
  for (const GemmPiece& g : chunkPieces(c.p, pl, j)) {
    if (g.batch > 1 && scratch != nullptr) {
      const int64_t rows = g.rows * g.batch;
      if (static_cast<size_t>(rows) * (g.aStride != g.rows ? k * ib : n * ob) > pl.scratchBytes)
        return SSC_INTERNAL("gemm: chunk {} needs more scratch than its plan has ({} bytes)", j,
                            pl.scratchBytes);
      if (g.aStride != g.rows) {  // x rows of each block -> scratch, one GEMM into the slot
        for (int b = 0; b < g.batch; ++b)
          std::memcpy(scratch + b * g.rows * k * ib, cbyte(a, (g.aRow + b * g.aStride) * k * ib),
                      g.rows * k * ib);
        hostGemm(scratch, c.w, byte(d, g.dRow * n * ob), rows, n, k, c.inType, c.outType,
                 c.weightKN, n);
      } else {  // one GEMM into the scratch, then its rows to each block of y
        hostGemm(cbyte(a, g.aRow * k * ib), c.w, scratch, rows, n, k, c.inType, c.outType,
                 c.weightKN, n);
        for (int b = 0; b < g.batch; ++b)
          std::memcpy(byte(d, (g.dRow + b * g.dStride) * n * ob), scratch + b * g.rows * n * ob,
                      g.rows * n * ob);
      }
      continue;
    }
    for (int b = 0; b < g.batch; ++b)
      hostGemm(cbyte(a, (g.aRow + b * g.aStride) * k * ib), c.w,
               byte(d, (g.dRow + b * g.dStride) * n * ob), g.rows, n, k, c.inType, c.outType,
               c.weightKN, n);
  }
  return sscSuccess;
}

float loadAs(const void* base, size_t i, sscDataType_t t) {
  if (t == sscFloat32) return static_cast<const float*>(base)[i];
  const uint16_t v = static_cast<const uint16_t*>(base)[i];
  return t == sscFloat16 ? halfToFloat(v) : bf16ToFloat(v);
}

void storeAs(void* base, size_t i, sscDataType_t t, float x) {
  if (t == sscFloat32)
    static_cast<float*>(base)[i] = x;
  else
    static_cast<uint16_t*>(base)[i] = t == sscFloat16 ? floatToHalf(x) : floatToBf16(x);
}

std::atomic_ref<uint32_t> word(uint32_t* p) { return std::atomic_ref<uint32_t>(*p); }
bool reached(uint32_t v, uint32_t target) { return static_cast<int32_t>(v - target) >= 0; }

// The fused variant on the host backend: the same flags and slots as the GPU half (gpu_gemm.cc),
// in one serial order per rank. Each rank publishes chunk j before it waits for anyone's chunk
// j, and waits for a slot's readers only two chunks later, so no rank waits in a cycle. The
// call returns without waiting for its slots' readers: the next call's first chunk, or destroy,
// waits for them.
sscResult_t hostRunFused(sscGemmContext* g, const Call& c) {
  const Problem& p = c.p;
  const Plan& pl = c.plan;
  const size_t ob = typeBytes(c.outType);
  const int me = c.rank, K = p.nranks;
  const std::atomic<bool>* abort = &g->comm->abortFlag;
  auto bell = [&](int q) { return reinterpret_cast<std::atomic<uint32_t>*>(fusedBell(g, q)); };
  for (int j = 0; j < pl.chunks; ++j) {
    const uint32_t use = ++g->fusedUses;
    const int slot = static_cast<int>(use % pl.slots);
    const ChunkRows cr = chunkRows(pl, j);
    char* mySlot = static_cast<char*>(g->workspace) + slot * pl.slotBytes;
    // Every owner has read this slot's previous use; on the first chunk also the other slot's
    // (the last call's plan may have laid its slots over this one), as on the GPU.
    for (int back = 0; back < (j == 0 ? pl.slots : 1); ++back) {
      const uint32_t prev = use - pl.slots + back;
      for (int q = 0; q < K; ++q)
        SSC_CHECK(shmWait(
            bell(me),
            [&] {
              return reached(word(fusedDone(g, me, static_cast<int>(prev % pl.slots), q))
                                 .load(std::memory_order_acquire),
                             prev);
            },
            abort, "reuse a GEMM slot read by", q, g->waits));
    }
    SSC_CHECK(runPieces(g, c, j, c.x, mySlot));
    // SSC_GEMM_COPY_ENGINE: the GPU half's stream waits read local words only, so each producer
    // writes its readyFrom word in every owner instead of its own ready word; the same here.
    const int fi = static_cast<int>(use % 2);
    if (c.copyEngine) {
      for (int q = 0; q < K; ++q) {
        word(fusedReadyFrom(g, q, fi, me)).store(use, std::memory_order_release);
        shmNotify(bell(q));
      }
    } else {
      word(fusedReady(g, me, slot)).store(use, std::memory_order_release);
      shmNotify(bell(me));
    }
    for (int q = 0; q < K; ++q)
      SSC_CHECK(shmWait(
          c.copyEngine ? bell(me) : bell(q),
          [&] {
            return reached(
                word(c.copyEngine ? fusedReadyFrom(g, me, fi, q) : fusedReady(g, q, slot))
                    .load(std::memory_order_acquire),
                use);
          },
          abort, "wait for the GEMM chunk of", q, g->waits));
    const int64_t mine = ownChunkRows(p, pl, j, me);
    const size_t elems = static_cast<size_t>(mine * p.n);
    char* dst = byte(c.y, cr.begin * p.n * ob);
    for (size_t i = 0; i < elems; ++i) {
      float acc = 0.0f;
      for (int q = 0; q < K; ++q)
        acc += loadAs(cbyte(g->fusedPeers[q], slot * pl.slotBytes + me * cr.rows * p.n * ob), i,
                      c.outType);
      storeAs(dst, i, c.outType, acc);
    }
    for (int q = 0; q < K; ++q) {
      word(fusedDone(g, q, slot, me)).store(use, std::memory_order_release);
      shmNotify(bell(q));
    }
  }
  return sscSuccess;
}

// The fused all-gather + GEMM on the host backend: the GPU half's steps (gpu_gemm.cc,
// runFusedAllGather) in one serial order per rank. A rank stores its rows (push: into every
// rank's slot; per rank: into its own) and announces them before it waits for anyone's, and
// waits for a slot's readers only before it writes the slot again, so no rank waits in a cycle.
sscResult_t hostRunFusedAllGather(sscGemmContext* g, const Call& c) {
  const Problem& p = c.p;
  const Plan& pl = c.plan;
  const size_t ib = typeBytes(c.inType);
  const int me = c.rank, K = p.nranks;
  const std::atomic<bool>* abort = &g->comm->abortFlag;
  auto bell = [&](int q) { return reinterpret_cast<std::atomic<uint32_t>*>(fusedBell(g, q)); };
  const uint32_t use = ++g->fusedUses;
  const int fi = static_cast<int>(use % 2);
  const size_t slotOff = (use % pl.slots) * pl.slotBytes;
  const RowRange own = rowShard(p.m, K, me);
  for (uint32_t back = 2; back >= 1; --back)
    for (int q = 0; q < K; ++q)
      SSC_CHECK(shmWait(
          bell(me),
          [&] {
            return reached(word(fusedDone(g, me, static_cast<int>((use - back) % 2), q))
                               .load(std::memory_order_acquire),
                           use - back);
          },
          abort, "reuse a GEMM slot read by", q, g->waits));
  for (int q = 0; q < K; ++q)
    if ((!pl.agPerRank || q == me) && own.count > 0)
      std::memcpy(byte(g->fusedPeers[q], slotOff + me * pl.block * p.k * ib), c.x,
                  own.count * p.k * ib);
  for (int q = 0; q < K; ++q) {
    word(fusedFrom(g, q, fi, me)).store(use, std::memory_order_release);
    shmNotify(bell(q));
  }
  if (pl.agPerRank && own.count > 0)  // my rows first, from x
    hostGemm(c.x, c.w, byte(c.y, own.first * p.n * typeBytes(c.outType)), own.count, p.n, p.k,
             c.inType, c.outType, c.weightKN, p.n);
  for (int i = 0; i < K; ++i) {
    const int q = (me + i) % K;
    SSC_CHECK(shmWait(
        bell(me),
        [&] { return reached(word(fusedFrom(g, me, fi, q)).load(std::memory_order_acquire), use); },
        abort, "wait for the rows of X of", q, g->waits));
    const RowRange r = rowShard(p.m, K, q);
    if (pl.agPerRank && q != me && r.count > 0)  // the peer's rows, read in place from its slot
      hostGemm(cbyte(g->fusedPeers[q], slotOff + r.first * p.k * ib), c.w,
               byte(c.y, r.first * p.n * typeBytes(c.outType)), r.count, p.n, p.k, c.inType,
               c.outType, c.weightKN, p.n);
  }
  const char* local = cbyte(g->workspace, slotOff);
  if (!pl.agPerRank) {
    hostGemm(local, c.w, c.y, p.m, p.n, p.k, c.inType, c.outType, c.weightKN, p.n);
    if (c.xGathered != nullptr) std::memmove(c.xGathered, local, p.m * p.k * ib);
  }
  for (int q = 0; q < K; ++q) {
    word(fusedDone(g, q, fi, me)).store(use, std::memory_order_release);
    shmNotify(bell(q));
  }
  return sscSuccess;
}

// The op without its bias.
sscResult_t runOp(sscGemmContext* g, const Call& c, sscStream_t stream) {
  Backend* be = g->backend;
  const Problem& p = c.p;
  const Plan& pl = c.plan;
  const size_t ib = typeBytes(c.inType), ob = typeBytes(c.outType);
  if (p.m == 0 || p.n == 0) return sscSuccess;
  if (p.k == 0) {  // an empty sum: zeros, and no rank needs anything from another
    const int64_t rows = heldRows(c);
    if (rows > 0) std::memset(c.y, 0, rows * p.n * ob);
    return sscSuccess;
  }
  if (pl.direct) {
    hostGemm(c.x, c.w, c.y, p.m, p.n, p.k, c.inType, c.outType, c.weightKN, p.n);
    if (c.xGathered != nullptr && c.xGathered != c.x) std::memcpy(c.xGathered, c.x, p.m * p.k * ib);
    return sscSuccess;
  }
  if (pl.variant == sscGemmFused)
    return p.op == Op::kAllGather ? hostRunFusedAllGather(g, c) : hostRunFused(g, c);
  sscComm* comm = g->comm;
  char* pad = static_cast<char*>(g->workspace) + pl.slots * pl.slotBytes;
  // The GPU half's schedule, in its order.
  for (const Step& st : schedule(p, pl, c.rank, c.xGathered != nullptr)) {
    const int j = st.chunk;
    const ChunkRows cr = chunkRows(pl, j);
    void* slot = static_cast<char*>(g->workspace) + (j % pl.slots) * pl.slotBytes;
    const int64_t mine = ownChunkRows(p, pl, j, c.rank);
    const bool padded = mine < cr.rows;
    const bool rs = p.op == Op::kReduceScatter;
    switch (st.kind) {
      case StepKind::kGemm:
        SSC_CHECK(rs ? runPieces(g, c, j, c.x, slot) : runPieces(g, c, j, slot, c.y));
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
      default: break;
    }
  }
  return sscSuccess;
}

// y[r][j] += bias[j] over the rows of y this rank holds, in fp32, rounded to y's type (as the
// GPU half's launchAddBias).
void addBias(const Call& c) {
  const int64_t rows = heldRows(c), n = c.p.n;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j) {
      const size_t i = static_cast<size_t>(r * n + j);
      storeAs(c.y, i, c.outType,
              loadAs(c.y, i, c.outType) + loadAs(c.bias, static_cast<size_t>(j), c.outType));
    }
}

}  // namespace

sscResult_t hostRun(sscGemmContext* g, const Call& c, sscStream_t stream) {
  SSC_CHECK(g->backend->streamSynchronize(stream));  // x and w may come from queued work
  SSC_CHECK(runOp(g, c, stream));
  if (c.bias != nullptr && c.p.n > 0) addBias(c);
  return sscSuccess;
}

}  // namespace ssc::gemm
