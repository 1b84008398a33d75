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
    if (rows == block && rows > 0) out.batched.push_back(q);
    else if (rows > 0) out.single.push_back(q);
  }
  const double entryFlops = 2.0 * static_cast<double>(block) * static_cast<double>(p.n) * static_cast<double>(p.k);
  out.batch = out.batched.size() >= 2 && (block < kPeerBatchMaxRows || entryFlops < kPeerBatchMaxFlops);
  return out;
}

// Measured on the H200 at K = 8 MPS partitions, bf16 (perf/RESULTS.md session 19, call AF: the
// whole TP8 table, every variant of both ops in one run). Where a fused form beat unfused:
//  - all-gather, one GEMM per source rank reading the peers' rows in place: at M = 16384 in
//    every layer (1.11-1.86x) and at M = 4096 where K >= 3584 (1.14-1.75x); it lost at
//    M <= 1024 everywhere and at M = 4096 with K <= 2880 (its 8 GEMM launches and W read 8
//    times outweigh the copy it saves);
//  - reduce-scatter, one chunk: at M = 16384 where N >= 7168 (1.03-1.12x); it lost or tied
//    below.
// Other rank counts were not measured: unfused there. The push form never won.
bool autoPicksFused(const Problem& p, const Plan& otherwise, bool* perRank) {
  *perRank = false;
  if (p.nranks != 8 || otherwise.variant != SSC_GEMM_UNFUSED || otherwise.chunks != 1) return false;
  if (p.op == Op::kAllGather) {
    // x_gathered needs the push form, which never won.
    // Session 23 (calls CD-CF, the gate in one warp): the per-rank form beat unfused in every
    // cell of M = 16384 and of M = 4096 with K >= 2048 (1.13-1.97x, median of three runs),
    // tied at M = 4096 with K = 1024 and lost below (one more launch and wait than unfused,
    // and at small M one read of W per peer).
    if (p.gatherOut || !(p.m >= 16384 || (p.m >= 4096 && p.k >= 2048))) return false;
    *perRank = true;
    // Session 21 (call AN) measured the copy-engine form 1.0-1.47x faster than the waiting-kernel
    // form in every cell of at least 4e10 flops (2 m n k), but that waiting-kernel form gated its
    // push in every block, which starved the late peers' GEMMs. With the gate in one warp
    // (call CD) the waiting-kernel form is within 2 % of it at the largest cells and 30-100 us
    // faster below (the stream operations' submissions): AUTO runs the waiting kernels (and no
    // watchdog thread); SSC_GEMM_COPY_ENGINE still asks for the copy engines.
    return true;
  }
  return p.m >= 16384 && p.n >= 7168;
}

bool probeWanted(const std::string& mode, const char* mpsPercent) {
  if (mode == "on") return true;
  if (mode == "off" || mpsPercent == nullptr) return false;
  // The cap as MPS reads it: a number of percent; an unreadable one is taken as a cap (probing
  // costs one GEMM per new shape, a wrong answer costs more).
  char* end = nullptr;
  const double pct = std::strtod(mpsPercent, &end);
  if (end == mpsPercent) return std::string(mpsPercent).find_first_not_of(" \t") != std::string::npos;
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
  pl->variant = SSC_GEMM_FUSED;
  pl->chunkRows = pl->block;
  const size_t slot = static_cast<size_t>(p.nranks) * pl->block * p.k * p.inBytes;
  if (slot > workspaceBytes) {
    *why = fmt::format("variant SSC_GEMM_FUSED on sscAllGatherGemm keeps the whole gathered X "
                       "({} x {} rows of {} bytes = {} bytes) in the workspace, which holds {}: "
                       "create the context with a larger workspace_bytes, or use SSC_GEMM_AUTO",
                       p.nranks, pl->block, p.k * p.inBytes, slot, workspaceBytes);
    return false;
  }
  pl->slots = 2 * slot <= workspaceBytes ? 2 : 1;
  pl->slotBytes = slot;
  pl->padBytes = 0;
  // x_gathered wants the gathered X, which only the push form has in one place.
  pl->agPerRank = requestChunks >= 2 && !p.gatherOut;
  pl->chunks = pl->agPerRank ? p.nranks : 1;
  pl->reason += pl->agPerRank ? ": one GEMM per source rank, peers' rows read in place"
                              : ": rows pushed into every rank's slot, one GEMM";
  return true;
}

}  // namespace

bool makePlan(const Problem& p, int requestVariant, int requestChunks, size_t workspaceBytes,
              Plan* plan, std::string* why, bool fusedAvailable) {
  Plan pl;
  pl.block = blockRows(p.m, p.nranks);
  if (requestVariant == SSC_GEMM_FUSED) {
    if (p.nranks > kFusedMaxRanks) {
      *why = fmt::format("variant SSC_GEMM_FUSED runs on at most {} ranks (the communicator has {})",
                         kFusedMaxRanks, p.nranks);
      return false;
    }
    if (!fusedAvailable) {
      *why = "variant SSC_GEMM_FUSED needs the context's workspace mapped into every peer, which "
             "this backend or communicator cannot do; use SSC_GEMM_AUTO or SSC_GEMM_CHUNKED";
      return false;
    }
  }
  if (requestVariant < SSC_GEMM_AUTO || requestVariant > SSC_GEMM_FUSED) {
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
  const int64_t byRule = std::min<int64_t>({kMaxChunks, static_cast<int64_t>(total / kMinChunkBytes), pl.block});
  int64_t chunks = 1;
  if (requestVariant == SSC_GEMM_AUTO) {
    // Measured on the H200 at K = 8 (perf/RESULTS.md, session 5): the chunked variant was slower
    // than unfused in every cell of the TP8 table (its per-chunk collectives and the strided
    // GEMMs share the partition's SMs with each other), so the rule runs unfused unless the
    // caller asks for chunks; the fused variant only where autoPicksFused says it measured faster.
    chunks = requestChunks > 0 ? requestChunks : 1;
    pl.variant = chunks >= 2 ? SSC_GEMM_CHUNKED : SSC_GEMM_UNFUSED;
    pl.reason = requestChunks > 0 ? fmt::format("{} chunks asked for", requestChunks)
                                  : fmt::format("the collective moves {:.1f} MiB: unfused (the measured "
                                                "rule: chunking did not pay on the H200)", mib(total));
  } else if (requestVariant == SSC_GEMM_FUSED) {
    pl.reason = "fused variant asked for";
    if (p.op == Op::kAllGather) {
      if (!makeFusedAllGather(p, requestChunks, workspaceBytes, &pl, why)) return false;
      *plan = pl;
      return true;
    }
    // One chunk unless asked, or unless the workspace holds less (clamped below): chunks do not
    // overlap within a rank (schedule(), gemm_plan.h), so each one only adds its waits.
    chunks = requestChunks > 0 ? requestChunks : 1;
    pl.variant = SSC_GEMM_FUSED;
  } else if (requestVariant == SSC_GEMM_CHUNKED) {
    chunks = requestChunks > 0 ? requestChunks : std::max<int64_t>(2, byRule);
    pl.variant = SSC_GEMM_CHUNKED;
    pl.reason = "chunked variant asked for";
  } else {
    chunks = std::max(1, requestChunks);
    pl.variant = SSC_GEMM_UNFUSED;
    pl.reason = "unfused variant asked for";
  }
  chunks = std::clamp<int64_t>(chunks, 1, pl.block);
  pl.slots = pl.variant == SSC_GEMM_UNFUSED ? 1 : 2;
  int64_t cr = (pl.block + chunks - 1) / chunks;
  // The contiguous side of a chunk's GEMM (Plan::scratchBytes), per row of a rank's block.
  // A workspace too small for it even at one row runs the strided batch instead (correct, slower).
  const bool scratch = pl.variant != SSC_GEMM_UNFUSED && chunks > 1 && p.nranks > 1;
  size_t scratchRow = !scratch ? 0
                      : static_cast<size_t>(p.nranks) *
                            (p.op == Op::kReduceScatter ? p.k * p.inBytes : p.n * p.outBytes);
  if ((static_cast<size_t>(pl.slots) * p.nranks + 1) * rowBytes + scratchRow > workspaceBytes) scratchRow = 0;
  if (rowBytes > 0) {
    const size_t perRow = (static_cast<size_t>(pl.slots) * p.nranks + 1) * rowBytes + scratchRow;
    const int64_t fit = static_cast<int64_t>(workspaceBytes / perRow);
    if (fit < 1) {
      *why = fmt::format("workspace_bytes = {} cannot hold one row per rank of the collective "
                         "({} slot(s) x {} ranks + 1 pad row, {} bytes each = {} bytes); "
                         "create the context with a larger workspace_bytes",
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
  if (requestVariant == SSC_GEMM_AUTO && requestChunks == 0 && fusedAvailable &&
      p.nranks <= kFusedMaxRanks && autoPicksFused(p, pl, &perRank)) {
    Plan fused;
    std::string ignored;
    // The measured fused reduce-scatter ran in one chunk: a workspace that needs more keeps unfused.
    if (makePlan(p, SSC_GEMM_FUSED, perRank ? p.nranks : 0, workspaceBytes, &fused, &ignored, true) &&
        (p.op == Op::kAllGather || fused.chunks == 1)) {
      fused.reason = "the measured rule picks the fused variant (" + pl.reason + ")";
      pl = fused;
    }
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
  if (t == sscFloat32) static_cast<float*>(base)[i] = x;
  else static_cast<uint16_t*>(base)[i] = t == sscFloat16 ? floatToHalf(x) : floatToBf16(x);
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

double estimateGemmUs(const Machine& mc, int partitions, double m, double n, double k, double elem) {
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
  if (q.inter != SSC_LINEAR_COLUMN_PARALLEL && q.inter != SSC_LINEAR_ROW_PARALLEL) {
    *why = fmt::format("query.inter = {} is not an sscLinearParallel_t", q.inter);
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
  if (q.elem_bytes < 1 || q.elem_bytes > 8) {
    *why = fmt::format("query.elem_bytes = {} (1 .. 8)", q.elem_bytes);
    return false;
  }
  if (q.peak_tflops < 0 || q.hbm_gbps < 0 || q.coll_gbps < 0 || q.coll_latency_us < 0) {
    *why = "query machine figures must be >= 0 (0: the defaults)";
    return false;
  }
  Machine mc;
  if (q.peak_tflops > 0) mc.peakTflops = q.peak_tflops;
  if (q.hbm_gbps > 0) mc.hbmGbps = q.hbm_gbps;
  if (q.coll_gbps > 0) mc.collGbps = q.coll_gbps;
  if (q.coll_latency_us > 0) mc.collLatencyUs = q.coll_latency_us;
  const int P = q.partitions;
  const double m = static_cast<double>(q.m), n = static_cast<double>(q.n), k = static_cast<double>(q.k);
  const double e = q.elem_bytes;
  const int64_t kp = blockRows(q.k, P), np = blockRows(q.n, P);
  // Split K: partial [m][n] products, reduce-scattered. Split N: X [m][k] all-gathered.
  const double rsUs = estimateGemmUs(mc, P, m, n, static_cast<double>(kp), e) + estimateCollUs(mc, P, m * n * e);
  const double agUs = estimateGemmUs(mc, P, m, static_cast<double>(np), k, e) + estimateCollUs(mc, P, m * k * e);
  // The 1D option splits the dimension the GPUs already split; it wins ties (no change).
  const bool column = q.inter == SSC_LINEAR_COLUMN_PARALLEL;
  const bool oneDIsRs = !column;  // row-parallel: K split further; column-parallel: N split further
  const double oneD = oneDIsRs ? rsUs : agUs, twoD = oneDIsRs ? agUs : rsUs;
  const bool pickTwoD = twoD < oneD;
  const bool rs = pickTwoD ? !oneDIsRs : oneDIsRs;
  plan->two_d = pickTwoD ? 1 : 0;
  plan->op = rs ? SSC_GEMM_OP_REDUCE_SCATTER : SSC_GEMM_OP_ALL_GATHER;
  plan->m = q.m;
  plan->n = rs ? q.n : np;
  plan->k = rs ? kp : q.k;
  plan->est_us = pickTwoD ? twoD : oneD;
  plan->other_est_us = pickTwoD ? oneD : twoD;
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
