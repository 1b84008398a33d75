// SPDX-License-Identifier: MIT
#include "src/ops/gemm/gemm_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "src/kernels/host/reduce.h"

namespace ssc::gemm {

int64_t blockRows(int64_t m, int nranks) {
  return nranks < 1 || m <= 0 ? 0 : (m + nranks - 1) / nranks;
}

RowRange rowShard(int64_t m, int nranks, int rank) {
  const int64_t c = blockRows(m, nranks);
  RowRange r;
  r.first = std::min(m, c * rank);
  r.count = std::min(m, c * (rank + 1)) - r.first;
  return r;
}

namespace {

double mib(size_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

}  // namespace

PeerGemms peerGemms(const Problem& p, int rank) {
  PeerGemms out;
  const int64_t block = blockRows(p.m, p.nranks);
  for (int i = 1; i < p.nranks; ++i) {
    const int q = (rank + i) % p.nranks;
    const int64_t rows = rowShard(p.m, p.nranks, q).count;
    if (rows == block && rows > 0)
      out.batched.push_back(q);
    else if (rows > 0)
      out.single.push_back(q);
  }
  const double entryFlops =
      2.0 * static_cast<double>(block) * static_cast<double>(p.n) * static_cast<double>(p.k);
  out.batch =
      out.batched.size() >= 2 && (block < kPeerBatchMaxRows || entryFlops < kPeerBatchMaxFlops);
  return out;
}

bool GemmRates::valid() const {
  return gemmTflops > 0 && memGBps > 0 && copyGBps > 0 && launchUs > 0 && syncUs > 0 &&
         collFixedUs > 0 && collGBps > 0;
}

double estimateGemmLaunchUs(const GemmRates& r, double rows, double n, double k, double entries,
                            size_t inBytes, size_t outBytes) {
  if (rows <= 0 || n <= 0 || entries <= 0) return 0.0;
  const double flops = 2.0 * rows * n * k * entries;
  const double bytes = entries * ((rows * k + n * k) * static_cast<double>(inBytes) +
                                  rows * n * static_cast<double>(outBytes));
  return r.launchUs + std::max(flops / (r.gemmTflops * 1e6), bytes / (r.memGBps * 1e3));
}

// The variants of one call, step by step as gpu_gemm.cc and gpu_gemm_fused.cc issue them, each
// step costed at the rates (all on the caller's stream, so the steps add up):
//  - unfused: [the arrival barrier] -> the core's collective (its fixed cost, then its whole
//    buffer at its rate) -> the GEMM of m rows (reduce-scatter: before the collective);
//  - fused reduce-scatter, one chunk: wait for the slot's readers -> the same GEMM into the slot
//    -> publish and wait for every rank -> the owners' sum (one kernel: the same bytes the
//    collective moves, without its fixed cost) -> the done flags (one kernel);
//  - per-rank all-gather: wait for the slot's readers -> copy this rank's rows into its own slot
//    -> publish -> the GEMM of its own rows -> wait for every rank -> the peers' GEMMs, each
//    reading W again (one pointer-array batch where peerGemms batches them: one launch, W read
//    once per entry; else one launch each) -> the done flags;
//  - push all-gather: wait for the slot's readers -> store this rank's rows into every slot (the
//    collective's bytes) -> publish and wait -> ONE GEMM of m rows -> the done flags.
// What the fused forms save is the collective's fixed cost (and the barrier), and for the
// per-rank all-gather its bytes but this rank's copy; what they add is their waits and launches
// and, per peer, one more read of W: a GEMM of `block` rows is memory-bound on W where its rows
// are few, so at small m the per-rank form pays up to (nranks - 1) reads of W, at large m
// (compute-bound blocks) almost nothing. Every rank computes rank 0's estimate, so they agree.
VariantEstimates estimateVariants(const Problem& p, const GemmRates& r) {
  VariantEstimates e;
  if (p.nranks <= 1 || p.m <= 0 || !r.valid()) return e;
  const int64_t block = blockRows(p.m, p.nranks);
  const double m = static_cast<double>(p.m), n = static_cast<double>(p.n),
               k = static_cast<double>(p.k);
  const double c = static_cast<double>(block);
  const double total = static_cast<double>(p.nranks) * c * static_cast<double>(p.width()) *
                       static_cast<double>(p.collBytes());
  const double collBytesUs = total / (r.collGBps * 1e3);
  const double gemmAll = estimateGemmLaunchUs(r, m, n, k, 1, p.inBytes, p.outBytes);
  e.unfused = (r.barrier ? r.syncUs : 0.0) + r.collFixedUs + collBytesUs + gemmAll;
  if (p.op == Op::kReduceScatter) {
    e.fused = r.syncUs + gemmAll + r.syncUs + r.launchUs + collBytesUs + r.launchUs;
    return e;
  }
  e.push = r.syncUs + r.launchUs + collBytesUs + r.syncUs + gemmAll + r.launchUs;
  const double ownCopy = c * k * static_cast<double>(p.inBytes) / (r.copyGBps * 1e3);
  const PeerGemms peers = peerGemms(p, 0);
  double peerUs = 0.0;
  if (peers.batch) {
    peerUs += estimateGemmLaunchUs(r, c, n, k, static_cast<double>(peers.batched.size()), p.inBytes,
                                   p.outBytes);
  } else {
    for (size_t i = 0; i < peers.batched.size(); ++i)
      peerUs += estimateGemmLaunchUs(r, c, n, k, 1, p.inBytes, p.outBytes);
  }
  for (int q : peers.single)
    peerUs += estimateGemmLaunchUs(r, static_cast<double>(rowShard(p.m, p.nranks, q).count), n, k,
                                   1, p.inBytes, p.outBytes);
  e.fused = r.syncUs + r.launchUs + ownCopy + r.launchUs +
            estimateGemmLaunchUs(r, c, n, k, 1, p.inBytes, p.outBytes) + r.syncUs + peerUs +
            r.launchUs;
  return e;
}

bool autoPicksFused(const Problem& p, const Plan& otherwise, const GemmRates& rates, bool* perRank,
                    VariantEstimates* estimates) {
  *perRank = false;
  const VariantEstimates e = estimateVariants(p, rates);
  if (estimates != nullptr) *estimates = e;
  if (!rates.valid() || p.nranks <= 1 || otherwise.variant != sscGemmUnfused ||
      otherwise.chunks != 1)
    return false;
  if (p.op == Op::kReduceScatter) return e.fused < e.unfused;
  // xGathered needs the gathered X in one place, which only the push form has.
  const bool perRankWins = !p.gatherOut && e.fused < e.push;
  const double best = perRankWins ? e.fused : e.push;
  if (best >= e.unfused) return false;
  *perRank = perRankWins;
  return true;
}

bool probeWanted(const std::string& mode, const char* mpsPercent) {
  if (mode == "on") return true;
  if (mode == "off" || mpsPercent == nullptr) return false;
  // The cap as MPS reads it: a number of percent; an unreadable one is taken as a cap (probing
  // costs one GEMM per new shape, a wrong answer costs more).
  char* end = nullptr;
  const double pct = std::strtod(mpsPercent, &end);
  if (end == mpsPercent)
    return std::string(mpsPercent).find_first_not_of(" \t") != std::string::npos;
  return pct < 100.0;
}

bool barrierWanted(const std::string& mode, bool shared) {
  if (mode == "on") return true;
  if (mode == "off") return false;
  return shared;
}

namespace {

// The fused all-gather's plan (gemm_plan.h): one slot is the whole gathered X; two when they fit.
bool makeFusedAllGather(const Problem& p, int requestChunks, size_t workspaceBytes, Plan* pl,
                        std::string* why) {
  pl->variant = sscGemmFused;
  pl->chunkRows = pl->block;
  const size_t slot = static_cast<size_t>(p.nranks) * pl->block * p.k * p.inBytes;
  if (slot > workspaceBytes) {
    *why = fmt::format(
        "variant sscGemmFused on sscAllGatherGemm keeps the whole gathered X "
        "({} x {} rows of {} bytes = {} bytes) in the workspace, which holds {}: "
        "create the context with a larger workspaceBytes, or use sscGemmAuto",
        p.nranks, pl->block, p.k * p.inBytes, slot, workspaceBytes);
    return false;
  }
  pl->slots = 2 * slot <= workspaceBytes ? 2 : 1;
  pl->slotBytes = slot;
  pl->padBytes = 0;
  // xGathered wants the gathered X, which only the push form has in one place.
  pl->agPerRank = requestChunks >= 2 && !p.gatherOut;
  pl->chunks = pl->agPerRank ? p.nranks : 1;
  pl->reason += pl->agPerRank ? ": one GEMM per source rank, peers' rows read in place"
                              : ": rows pushed into every rank's slot, one GEMM";
  return true;
}

}  // namespace

bool makePlan(const Problem& p, int requestVariant, int requestChunks, size_t workspaceBytes,
              Plan* plan, std::string* why, bool fusedAvailable, const GemmRates* rates) {
  Plan pl;
  pl.block = blockRows(p.m, p.nranks);
  if (requestVariant == sscGemmFused) {
    if (p.nranks > kFusedMaxRanks) {
      *why = fmt::format("variant sscGemmFused runs on at most {} ranks (the communicator has {})",
                         kFusedMaxRanks, p.nranks);
      return false;
    }
    if (!fusedAvailable) {
      *why =
          "variant sscGemmFused needs the context's workspace mapped into every peer, which "
          "this backend or communicator cannot do; use sscGemmAuto or sscGemmChunked";
      return false;
    }
  }
  if (requestVariant < sscGemmAuto || requestVariant > sscGemmFused) {
    *why = fmt::format("variant = {} is not an sscGemmVariant_t", requestVariant);
    return false;
  }
  if (requestChunks < 0) {
    *why = fmt::format("chunks = {} is negative", requestChunks);
    return false;
  }
  if (p.nranks == 1 || pl.block == 0) {
    pl.direct = p.nranks == 1;
    pl.chunkRows = pl.block;
    pl.chunks = pl.block == 0 ? 0 : 1;
    pl.reason = p.nranks == 1 ? "one rank: the GEMM alone, no collective" : "m = 0: nothing to do";
    *plan = pl;
    return true;
  }
  const size_t rowBytes = static_cast<size_t>(p.width()) * p.collBytes();  // one row of one rank
  const size_t total = rowBytes * pl.block * p.nranks;
  const int64_t byRule =
      std::min<int64_t>({kMaxChunks, static_cast<int64_t>(total / kMinChunkBytes), pl.block});
  int64_t chunks = 1;
  if (requestVariant == sscGemmAuto) {
    // No chunks unless the caller asks: nothing overlaps within a rank (schedule(), gemm_plan.h
    // says why), so each chunk beyond the first only adds its collective's fixed cost, one more
    // GEMM launch and, where the block is short, a pad copy, and moves no fewer bytes. The fused
    // variant where autoPicksFused estimates it faster (below).
    chunks = requestChunks > 0 ? requestChunks : 1;
    pl.variant = chunks >= 2 ? sscGemmChunked : sscGemmUnfused;
    pl.reason = requestChunks > 0
                    ? fmt::format("{} chunks asked for", requestChunks)
                    : fmt::format(
                          "the collective moves {:.1f} MiB: unfused (without overlap, "
                          "chunks only add fixed costs)",
                          mib(total));
  } else if (requestVariant == sscGemmFused) {
    pl.reason = "fused variant asked for";
    if (p.op == Op::kAllGather) {
      if (!makeFusedAllGather(p, requestChunks, workspaceBytes, &pl, why)) return false;
      *plan = pl;
      return true;
    }
    // One chunk unless asked, or unless the workspace holds less (clamped below): chunks do not
    // overlap within a rank (schedule(), gemm_plan.h), so each one only adds its waits.
    chunks = requestChunks > 0 ? requestChunks : 1;
    pl.variant = sscGemmFused;
  } else if (requestVariant == sscGemmChunked) {
    chunks = requestChunks > 0 ? requestChunks : std::max<int64_t>(2, byRule);
    pl.variant = sscGemmChunked;
    pl.reason = "chunked variant asked for";
  } else {
    chunks = std::max(1, requestChunks);
    pl.variant = sscGemmUnfused;
    pl.reason = "unfused variant asked for";
  }
  chunks = std::clamp<int64_t>(chunks, 1, pl.block);
  pl.slots = pl.variant == sscGemmUnfused ? 1 : 2;
  int64_t cr = (pl.block + chunks - 1) / chunks;
  // The contiguous side of a chunk's GEMM (Plan::scratchBytes), per row of a rank's block.
  // A workspace too small for it even at one row runs the strided batch instead (correct, slower).
  const bool scratch = pl.variant != sscGemmUnfused && chunks > 1 && p.nranks > 1;
  size_t scratchRow = !scratch
                          ? 0
                          : static_cast<size_t>(p.nranks) *
                                (p.op == Op::kReduceScatter ? p.k * p.inBytes : p.n * p.outBytes);
  if ((static_cast<size_t>(pl.slots) * p.nranks + 1) * rowBytes + scratchRow > workspaceBytes)
    scratchRow = 0;
  if (rowBytes > 0) {
    const size_t perRow = (static_cast<size_t>(pl.slots) * p.nranks + 1) * rowBytes + scratchRow;
    const int64_t fit = static_cast<int64_t>(workspaceBytes / perRow);
    if (fit < 1) {
      *why = fmt::format(
          "workspaceBytes = {} cannot hold one row per rank of the collective "
          "({} slot(s) x {} ranks + 1 pad row, {} bytes each = {} bytes); "
          "create the context with a larger workspaceBytes",
          workspaceBytes, pl.slots, p.nranks, rowBytes, perRow);
      return false;
    }
    if (cr > fit) {
      cr = fit;
      pl.reason += fmt::format("; the workspace holds {} rows per rank per chunk", fit);
    }
  }
  pl.chunkRows = cr;
  pl.chunks = static_cast<int>((pl.block + cr - 1) / cr);
  pl.slotBytes = static_cast<size_t>(p.nranks) * cr * rowBytes;
  pl.padBytes = cr * rowBytes;
  pl.scratchBytes = pl.chunks > 1 ? cr * scratchRow : 0;
  bool perRank = false;
  VariantEstimates est;
  if (requestVariant == sscGemmAuto && requestChunks == 0 && fusedAvailable && rates != nullptr &&
      p.nranks <= kFusedMaxRanks && autoPicksFused(p, pl, *rates, &perRank, &est)) {
    Plan fused;
    std::string ignored;
    // The fused reduce-scatter was estimated in one chunk: a workspace that needs more keeps
    // unfused.
    if (makePlan(p, sscGemmFused, perRank ? p.nranks : 0, workspaceBytes, &fused, &ignored, true) &&
        (p.op == Op::kAllGather || fused.chunks == 1)) {
      fused.reason = fmt::format(
          "the rule estimates {:.0f} us fused against {:.0f} us unfused ({})",
          p.op == Op::kAllGather && !perRank ? est.push : est.fused, est.unfused, pl.reason);
      pl = fused;
    } else {
      pl.reason += fmt::format(
          "; the rule estimates the fused variant faster ({:.0f} against {:.0f} us), but "
          "the workspace does not hold it in one chunk",
          est.fused, est.unfused);
    }
  } else if (requestVariant == sscGemmAuto && requestChunks == 0 && est.unfused > 0) {
    pl.reason += fmt::format(
        "; the rule estimates {:.0f} us unfused against {:.0f} us fused", est.unfused,
        p.op == Op::kAllGather && (p.gatherOut || est.push < est.fused) ? est.push : est.fused);
  }
  *plan = pl;
  return true;
}

ChunkRows chunkRows(const Plan& plan, int j) {
  ChunkRows c;
  c.begin = std::min(plan.block, j * plan.chunkRows);
  c.rows = std::min(plan.block, (j + 1) * plan.chunkRows) - c.begin;
  return c;
}

std::vector<GemmPiece> chunkPieces(const Problem& p, const Plan& plan, int j) {
  std::vector<GemmPiece> out;
  const ChunkRows cr = chunkRows(plan, j);
  const int64_t c = plan.block, b0 = cr.begin, h = cr.rows;
  if (h <= 0) return out;
  // Ranks 0 .. full-1 have all h rows of this chunk below m (monotone in the rank).
  const int64_t full = p.m - b0 - h >= 0 ? std::min<int64_t>(p.nranks, (p.m - b0 - h) / c + 1) : 0;
  const bool rs = p.op == Op::kReduceScatter;
  if (full > 0) {
    GemmPiece g;
    g.rows = h;
    g.batch = static_cast<int>(full);
    g.aRow = rs ? b0 : 0;
    g.aStride = rs ? c : h;
    g.dRow = rs ? 0 : b0;
    g.dStride = rs ? h : c;
    if (g.batch == 1 || (g.aStride == h && g.dStride == h)) {  // contiguous: one plain GEMM
      g.rows = h * g.batch;
      g.batch = 1;
      g.aStride = g.dStride = 0;
    }
    out.push_back(g);
  }
  if (full < p.nranks) {
    const int64_t v = std::clamp<int64_t>(p.m - (full * c + b0), 0, h);
    if (v > 0) {
      GemmPiece g;
      g.rows = v;
      g.aRow = rs ? full * c + b0 : full * h;
      g.dRow = rs ? full * h : full * c + b0;
      out.push_back(g);
    }
  }
  return out;
}

int64_t ownChunkRows(const Problem& p, const Plan& plan, int j, int rank) {
  const ChunkRows cr = chunkRows(plan, j);
  const int64_t own = rowShard(p.m, p.nranks, rank).count;
  return std::clamp<int64_t>(own - cr.begin, 0, cr.rows);
}

namespace {

float load(const void* base, size_t i, sscDataType_t t) {
  if (t == sscFloat32) return static_cast<const float*>(base)[i];
  const uint16_t v = static_cast<const uint16_t*>(base)[i];
  return t == sscFloat16 ? halfToFloat(v) : bf16ToFloat(v);
}

void store(void* base, size_t i, sscDataType_t t, float x) {
  if (t == sscFloat32)
    static_cast<float*>(base)[i] = x;
  else
    static_cast<uint16_t*>(base)[i] = t == sscFloat16 ? floatToHalf(x) : floatToBf16(x);
}

}  // namespace

void hostGemm(const void* x, const void* w, void* y, int64_t rows, int64_t n, int64_t k,
              sscDataType_t inType, sscDataType_t outType, bool weightKN, int64_t ldy) {
  // W converted once to fp32 as [n][k], so the inner loop is a dot product of two rows.
  std::vector<float> wf(static_cast<size_t>(n) * k), xf(static_cast<size_t>(k));
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < k; ++i)
      wf[j * k + i] = load(w, weightKN ? i * n + j : j * k + i, inType);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < k; ++i) xf[i] = load(x, r * k + i, inType);
    for (int64_t j = 0; j < n; ++j) {
      const float* wr = &wf[j * k];
      float acc = 0.0f;
      for (int64_t i = 0; i < k; ++i) acc += xf[i] * wr[i];
      store(y, r * ldy + j, outType, acc);
    }
  }
}

double estimateGemmUs(const Machine& mc, int partitions, double m, double n, double k,
                      double elem) {
  if (m <= 0 || n <= 0 || k <= 0) return 0.0;
  const double flops = 2.0 * m * n * k;
  const double bytes = (m * k + n * k + m * n) * elem;
  // Each partition gets 1/P of the GPU's compute and, running with the others, of its HBM.
  const double compute = flops / (mc.peakTflops * 1e12 / partitions);
  const double memory = bytes / (mc.hbmGbps * 1e9 / partitions);
  return std::max(compute, memory) * (1.0 + kShortKPenalty / k) * 1e6;
}

double estimateCollUs(const Machine& mc, int partitions, double bytes) {
  if (partitions <= 1 || bytes <= 0) return 0.0;
  return mc.collLatencyUs + bytes * (partitions - 1) / partitions / (mc.collGbps * 1e9) * 1e6;
}

bool shard2d(const sscGemmShard2dQuery_t& q, sscGemmShard2dPlan_t* plan, std::string* why) {
  const int inter = static_cast<int>(q.inter);  // any int a C caller stored
  if (inter != sscLinearColumnParallel && inter != sscLinearRowParallel) {
    *why = fmt::format("query.inter = {} is not an sscLinearParallel_t", inter);
    return false;
  }
  if (q.m < 0 || q.n < 0 || q.k < 0) {
    *why = fmt::format("query m, n, k = {}, {}, {} must be >= 0", q.m, q.n, q.k);
    return false;
  }
  if (q.partitions < 1) {
    *why = fmt::format("query.partitions = {} must be >= 1", q.partitions);
    return false;
  }
  if (q.elemBytes < 1 || q.elemBytes > 8) {
    *why = fmt::format("query.elemBytes = {} (1 .. 8)", q.elemBytes);
    return false;
  }
  if (q.peakTflops < 0 || q.hbmGbps < 0 || q.collGbps < 0 || q.collLatencyUs < 0) {
    *why = "query machine figures must be >= 0 (0: the defaults)";
    return false;
  }
  Machine mc;
  if (q.peakTflops > 0) mc.peakTflops = q.peakTflops;
  if (q.hbmGbps > 0) mc.hbmGbps = q.hbmGbps;
  if (q.collGbps > 0) mc.collGbps = q.collGbps;
  if (q.collLatencyUs > 0) mc.collLatencyUs = q.collLatencyUs;
  const int P = q.partitions;
  const double m = static_cast<double>(q.m), n = static_cast<double>(q.n),
               k = static_cast<double>(q.k);
  const double e = q.elemBytes;
  const int64_t kp = blockRows(q.k, P), np = blockRows(q.n, P);
  // Split K: partial [m][n] products, reduce-scattered. Split N: X [m][k] all-gathered.
  const double rsUs =
      estimateGemmUs(mc, P, m, n, static_cast<double>(kp), e) + estimateCollUs(mc, P, m * n * e);
  const double agUs =
      estimateGemmUs(mc, P, m, static_cast<double>(np), k, e) + estimateCollUs(mc, P, m * k * e);
  // The 1D option splits the dimension the GPUs already split; it wins ties (no change).
  const bool column = q.inter == sscLinearColumnParallel;
  const bool oneDIsRs = !column;  // row-parallel: K split further; column-parallel: N split further
  const double oneD = oneDIsRs ? rsUs : agUs, twoD = oneDIsRs ? agUs : rsUs;
  const bool pickTwoD = twoD < oneD;
  const bool rs = pickTwoD ? !oneDIsRs : oneDIsRs;
  plan->twoD = pickTwoD ? 1 : 0;
  plan->op = rs ? sscGemmOpReduceScatter : sscGemmOpAllGather;
  plan->m = q.m;
  plan->n = rs ? q.n : np;
  plan->k = rs ? kp : q.k;
  plan->estUs = pickTwoD ? twoD : oneD;
  plan->otherEstUs = pickTwoD ? oneD : twoD;
  return true;
}

}  // namespace ssc::gemm

namespace ssc::gemm {

std::vector<Step> schedule(const Problem& p, const Plan& plan, int rank, bool gatherOut) {
  std::vector<Step> out;
  if (plan.direct || plan.chunks == 0) return out;
  const bool rs = p.op == Op::kReduceScatter;
  for (int j = 0; j < plan.chunks; ++j) {
    const bool padded = ownChunkRows(p, plan, j, rank) < chunkRows(plan, j).rows;
    if (rs) {
      out.push_back({StepKind::kGemm, j});
      out.push_back({StepKind::kColl, j});
      if (padded) out.push_back({StepKind::kPadOut, j});
    } else {
      if (padded) out.push_back({StepKind::kPadIn, j});
      out.push_back({StepKind::kColl, j});
      if (gatherOut) out.push_back({StepKind::kGatherOut, j});  // before the slot's next fill
      out.push_back({StepKind::kGemm, j});
    }
  }
  return out;
}

}  // namespace ssc::gemm
