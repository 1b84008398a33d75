// SPDX-License-Identifier: MIT
// The host backend's engine of the fused GEMM-collectives (gemm_engine.h): each step on the
// calling thread (the reference GEMM hostGemm, fp32 accumulation; plain copies), after waiting
// for the stream where a collective or the caller's queued work must land first. Nothing
// overlaps here: the host backend is how CI runs the op's algorithm (chunking, row ranges, the
// pad buffer of ranks that own fewer rows, the scratch of strided batches) end to end against a
// reference. The fused variants' flag protocol runs here in one serial order per rank.
#include <algorithm>
#include <atomic>
#include <cstring>

#include "src/api/api.h"
#include "src/comm/comm.h"
#include "src/core/futex_wait.h"
#include "src/kernels/host/reduce.h"
#include "src/device/backend.h"
#include "src/ops/gemm/gemm_context.h"
#include "src/ops/gemm/gemm_engine.h"

namespace ssc::gemm {

namespace {

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

// One GEMM of `rows` rows: A from row aRow, D from row dRow.
GemmPiece rowsAt(int64_t aRow, int64_t dRow, int64_t rows) {
  GemmPiece g;
  g.aRow = aRow;
  g.dRow = dRow;
  g.rows = rows;
  return g;
}

std::atomic_ref<uint32_t> word(uint32_t* p) { return std::atomic_ref<uint32_t>(*p); }
bool reached(uint32_t v, uint32_t target) { return static_cast<int32_t>(v - target) >= 0; }

// The fused variant on the host backend: the same flags and slots as the GPU half
// (gpu_gemm_fused.cc), in one serial order per rank. Each rank publishes chunk j before it waits
// for anyone's chunk j, and waits for a slot's readers only two chunks later, so no rank waits in a
// cycle. The call returns without waiting for its slots' readers: the next call's first chunk, or
// destroy, waits for them.
sscResult_t hostRunFused(sscGemmContext* g, const Call& c, GemmEngine& e) {
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
    SSC_CHECK(runChunkGemms(g, c, e, j, c.x, mySlot, nullptr));
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

// The fused all-gather + GEMM on the host backend: the GPU half's steps (gpu_gemm_fused.cc,
// kernelRunFusedAllGather) in one serial order per rank. A rank stores its rows (push: into every
// rank's slot; per rank: into its own) and announces them before it waits for anyone's, and
// waits for a slot's readers only before it writes the slot again, so no rank waits in a cycle.
sscResult_t hostRunFusedAllGather(sscGemmContext* g, const Call& c, GemmEngine& e) {
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
    SSC_CHECK(e.gemm(c, c.x, c.y, rowsAt(0, own.first, own.count), nullptr));
  for (int i = 0; i < K; ++i) {
    const int q = (me + i) % K;
    SSC_CHECK(shmWait(
        bell(me),
        [&] { return reached(word(fusedFrom(g, me, fi, q)).load(std::memory_order_acquire), use); },
        abort, "wait for the rows of X of", q, g->waits));
    const RowRange r = rowShard(p.m, K, q);
    if (pl.agPerRank && q != me && r.count > 0)  // the peer's rows, read in place from its slot
      SSC_CHECK(e.gemm(c, cbyte(g->fusedPeers[q], slotOff), c.y, rowsAt(r.first, r.first, r.count),
                       nullptr));
  }
  const char* local = cbyte(g->workspace, slotOff);
  if (!pl.agPerRank) {
    SSC_CHECK(e.gemm(c, local, c.y, rowsAt(0, 0, p.m), nullptr));
    if (c.xGathered != nullptr) std::memmove(c.xGathered, local, p.m * p.k * ib);
  }
  for (int q = 0; q < K; ++q) {
    word(fusedDone(g, q, fi, me)).store(use, std::memory_order_release);
    shmNotify(bell(q));
  }
  return sscSuccess;
}

// The host engine: every step done when its call returns, so the stream argument is only
// waited for where the core's collective ran on it.
class HostEngine final : public GemmEngine {
 public:
  explicit HostEngine(sscGemmContext* g) : g_(g) {}

  sscResult_t gemm(const Call& c, const void* a, void* d, const GemmPiece& piece,
                   sscStream_t) override {
    const int64_t n = c.p.n, k = c.p.k;
    const size_t ib = typeBytes(c.inType), ob = typeBytes(c.outType);
    for (int b = 0; b < piece.batch; ++b)
      hostGemm(cbyte(a, (piece.aRow + b * piece.aStride) * k * ib), c.w,
               byte(d, (piece.dRow + b * piece.dStride) * n * ob), piece.rows, n, k, c.inType,
               c.outType, c.weightKN, n);
    return sscSuccess;
  }
  sscResult_t zero(void* p, size_t bytes, sscStream_t, Doing) override {
    std::memset(p, 0, bytes);
    return sscSuccess;
  }
  sscResult_t copy(void* dst, const void* src, size_t bytes, sscStream_t, Doing) override {
    std::memcpy(dst, src, bytes);
    return sscSuccess;
  }
  sscResult_t copy2D(void* dst, size_t dstPitch, const void* src, size_t srcPitch, size_t width,
                     size_t height, sscStream_t, Doing) override {
    for (size_t r = 0; r < height; ++r)
      std::memcpy(byte(dst, r * dstPitch), cbyte(src, r * srcPitch), width);
    return sscSuccess;
  }
  // The context holds no collective here: its barrier is for ranks that share compute units
  // with a GEMM (sscGemmCreate turns it on only with the GPU half).
  sscResult_t arrivalBarrier(sscStream_t) override {
    return SSC_INTERNAL("gemm: the arrival barrier was asked for on the host backend");
  }
  // The collective ran on the stream's progress thread; the next step reads its output here.
  sscResult_t collectiveQueued(sscStream_t s) override { return g_->backend->streamSynchronize(s); }
  sscResult_t fused(const Call& c, sscStream_t) override {
    return c.p.op == Op::kAllGather ? hostRunFusedAllGather(g_, c, *this)
                                    : hostRunFused(g_, c, *this);
  }
  sscResult_t addBias(const Call& c, int64_t rows, sscStream_t) override {
    const int64_t n = c.p.n;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < n; ++j) {
        const size_t i = static_cast<size_t>(r * n + j);
        storeAs(c.y, i, c.outType,
                loadAs(c.y, i, c.outType) + loadAs(c.bias, static_cast<size_t>(j), c.outType));
      }
    return sscSuccess;
  }

 private:
  sscGemmContext* g_;
};

}  // namespace

sscResult_t hostRun(sscGemmContext* g, const Call& c, sscStream_t stream) {
  SSC_CHECK(g->backend->streamSynchronize(stream));  // x and w may come from queued work
  HostEngine e(g);
  return runCall(g, c, e, stream);
}

}  // namespace ssc::gemm
