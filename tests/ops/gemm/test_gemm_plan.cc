// SPDX-License-Identifier: MIT
// The pure shape logic of the fused GEMM-collectives (src/ops/gemm/gemm_plan.h): row ranges,
// the variant rule, the workspace limit, and a simulation of every chunk's GEMM pieces over many
// shapes (each output row produced exactly once, from the right input row); the reference host
// GEMM; the 2D-sharding helper's rule on the TP8 layers' shapes. AUTO's fused-variant rule is
// test_gemm_rule.cc.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "src/kernels/host/reduce.h"
#include "src/ops/gemm/gemm_plan.h"

namespace ssc::gemm {
namespace {

TEST(GemmRows, TorchChunkRule) {
  const std::vector<int64_t> want10 = {3, 3, 3, 1};
  for (int r = 0; r < 4; ++r) EXPECT_EQ(rowShard(10, 4, r).count, want10[r]) << r;
  EXPECT_EQ(rowShard(5, 4, 3).count, 0);  // c = 2: 2, 2, 1, 0
  EXPECT_EQ(rowShard(5, 4, 3).first, 5);
  EXPECT_EQ(rowShard(0, 3, 1).count, 0);
  for (int64_t m = 0; m < 40; ++m)
    for (int n = 1; n <= 9; ++n) {
      int64_t next = 0;
      for (int r = 0; r < n; ++r) {
        const RowRange rr = rowShard(m, n, r);
        EXPECT_EQ(rr.first, next) << m << " " << n << " " << r;
        EXPECT_GE(rr.count, 0);
        EXPECT_LE(rr.count, blockRows(m, n));
        next += rr.count;
      }
      EXPECT_EQ(next, m);
    }
}

Problem problem(Op op, int64_t m, int64_t n, int64_t k, int nranks) {
  Problem p;
  p.op = op;
  p.m = m;
  p.n = n;
  p.k = k;
  p.nranks = nranks;
  return p;
}

TEST(GemmPlanRule, SmallCallsRunUnfused) {
  Plan pl;
  std::string why;
  // 70B O projection at M = 16 over 8 partitions: 16 x 8192 x 2 bytes, far below 2 x 16 MiB.
  ASSERT_TRUE(makePlan(problem(Op::kReduceScatter, 16, 8192, 128, 8), sscGemmAuto, 0,
                       kDefaultWorkspaceBytes, &pl, &why));
  EXPECT_EQ(pl.variant, sscGemmUnfused);
  EXPECT_EQ(pl.chunks, 1);
  EXPECT_EQ(pl.chunkRows, 2);
}

TEST(GemmPlanRule, AutoRunsUnfusedForcedChunkedCutsPiecesOfAtLeastTheMinimum) {
  Plan pl;
  std::string why;
  // 16384 x 8192 bf16 = 256 MiB reduce-scattered. AUTO: never chunked (without overlap chunks
  // only add fixed costs; the fused variant is the rule's, test_gemm_rule.cc); forced chunked:
  // at most kMaxChunks chunks of at least kMinChunkBytes.
  const Problem p = problem(Op::kReduceScatter, 16384, 8192, 128, 8);
  ASSERT_TRUE(makePlan(p, sscGemmAuto, 0, size_t{1} << 30, &pl, &why, false));
  EXPECT_EQ(pl.variant, sscGemmUnfused);
  EXPECT_EQ(pl.chunks, 1);
  ASSERT_TRUE(makePlan(p, sscGemmChunked, 0, size_t{1} << 30, &pl, &why));
  EXPECT_EQ(pl.variant, sscGemmChunked);
  EXPECT_EQ(pl.chunks, kMaxChunks);
  EXPECT_GE(pl.slotBytes, kMinChunkBytes);
  // 4096 x 8192 bf16 = 64 MiB: 4 chunks of 16 MiB.
  ASSERT_TRUE(makePlan(problem(Op::kAllGather, 4096, 1024, 8192, 8), sscGemmChunked, 0,
                       size_t{1} << 30, &pl, &why));
  EXPECT_EQ(pl.variant, sscGemmChunked);
  EXPECT_EQ(pl.chunks, 4);
  EXPECT_EQ(pl.slots, 2);
  // AUTO with chunks asked for runs them.
  ASSERT_TRUE(makePlan(p, sscGemmAuto, 3, size_t{1} << 30, &pl, &why));
  EXPECT_EQ(pl.variant, sscGemmChunked);
  EXPECT_EQ(pl.chunks, 3);
}

// A chunk of a chunked plan is one GEMM: its strided side (x rows for the reduce-scatter, y rows
// for the all-gather) goes through a scratch of nranks x chunkRows rows, which the workspace
// holds too; without room for it the plan still runs (a strided batch).
TEST(GemmPlanRule, ChunkedPlansHaveScratchForOneGemmPerChunk) {
  Plan pl;
  std::string why;
  const Problem rs = problem(Op::kReduceScatter, 100, 10, 3, 4);  // rows of 20 bytes, c = 25
  ASSERT_TRUE(makePlan(rs, sscGemmChunked, 5, 1 << 20, &pl, &why)) << why;
  EXPECT_EQ(pl.chunks, 5);
  EXPECT_EQ(pl.scratchBytes, size_t{4 * 5 * 3 * 2});  // nranks x chunkRows x k x 2 bytes
  Problem ag = problem(Op::kAllGather, 100, 10, 3, 4);
  ag.outBytes = 4;
  ASSERT_TRUE(makePlan(ag, sscGemmChunked, 5, 1 << 20, &pl, &why)) << why;
  EXPECT_EQ(pl.scratchBytes, size_t{4 * 5 * 10 * 4});  // nranks x chunkRows x n x 4 bytes
  // The workspace bounds slots, pad and scratch together.
  const size_t perRow = (2 * 4 + 1) * 20 + 4 * 3 * 2;
  ASSERT_TRUE(makePlan(rs, sscGemmChunked, 0, perRow * 7, &pl, &why)) << why;
  EXPECT_EQ(pl.chunkRows, 7);
  EXPECT_EQ(pl.slots * pl.slotBytes + pl.padBytes + pl.scratchBytes, perRow * 7);
  // No room for the scratch: a plan without it.
  ASSERT_TRUE(makePlan(rs, sscGemmChunked, 0, (2 * 4 + 1) * 20, &pl, &why)) << why;
  EXPECT_EQ(pl.chunkRows, 1);
  EXPECT_EQ(pl.scratchBytes, 0u);
  // One chunk, or unfused: none needed.
  ASSERT_TRUE(makePlan(rs, sscGemmUnfused, 0, 1 << 20, &pl, &why)) << why;
  EXPECT_EQ(pl.scratchBytes, 0u);
}

TEST(GemmPlanRule, WorkspaceBoundsTheChunk) {
  Plan pl;
  std::string why;
  const Problem p = problem(Op::kReduceScatter, 100, 10, 3, 4);  // rows of 20 bytes, c = 25
  ASSERT_TRUE(makePlan(p, sscGemmUnfused, 0, (4 + 1) * 20 * 7, &pl, &why));
  EXPECT_EQ(pl.chunkRows, 7);
  EXPECT_EQ(pl.chunks, 4);
  EXPECT_EQ(pl.slots * pl.slotBytes + pl.padBytes, size_t{(4 + 1) * 20 * 7});
  EXPECT_FALSE(makePlan(p, sscGemmUnfused, 0, 99, &pl, &why));
  EXPECT_NE(why.find("workspaceBytes"), std::string::npos) << why;
}

TEST(GemmPlanRule, FusedReduceScatterOnly) {
  Plan pl;
  std::string why;
  const Problem rs = problem(Op::kReduceScatter, 10, 10, 10, 2);
  ASSERT_TRUE(makePlan(rs, sscGemmFused, 0, 1 << 20, &pl, &why)) << why;
  EXPECT_EQ(pl.variant, sscGemmFused);
  EXPECT_EQ(pl.chunks, 1);  // small: one chunk, no collective call either way
  EXPECT_EQ(pl.slots, 2);
  ASSERT_TRUE(makePlan(rs, sscGemmFused, 3, 1 << 20, &pl, &why)) << why;
  EXPECT_EQ(pl.chunks, 3);
  // Large: still one chunk where the workspace holds it (chunks do not overlap, they only add
  // waits); as many as the workspace needs where it does not.
  const Problem big = problem(Op::kReduceScatter, 4096, 7168, 64, 8);
  ASSERT_TRUE(makePlan(big, sscGemmFused, 0, size_t{1} << 30, &pl, &why)) << why;
  EXPECT_EQ(pl.chunks, 1);
  ASSERT_TRUE(makePlan(big, sscGemmFused, 0, size_t{40} << 20, &pl, &why)) << why;
  EXPECT_GE(pl.chunks, 3);
  EXPECT_LE(static_cast<size_t>(pl.slots) * pl.slotBytes + pl.padBytes + pl.scratchBytes,
            size_t{40} << 20);
  // Refused where it is not built, with the reason.
  EXPECT_FALSE(makePlan(rs, sscGemmFused, 0, 1 << 20, &pl, &why, false));
  EXPECT_NE(why.find("mapped"), std::string::npos) << why;
  EXPECT_FALSE(makePlan(problem(Op::kReduceScatter, 10, 10, 10, kFusedMaxRanks + 1), sscGemmFused,
                        0, 1 << 20, &pl, &why));
  EXPECT_NE(why.find("at most"), std::string::npos) << why;
  // AUTO never picks it where it cannot run.
  ASSERT_TRUE(makePlan(rs, sscGemmAuto, 0, 1 << 20, &pl, &why, false));
  EXPECT_NE(pl.variant, sscGemmFused);
}

TEST(GemmPlanRule, RefusesBadRequests) {
  Plan pl;
  std::string why;
  const Problem p = problem(Op::kAllGather, 10, 10, 10, 2);
  EXPECT_FALSE(makePlan(p, 7, 0, 1 << 20, &pl, &why));
  EXPECT_FALSE(makePlan(p, sscGemmAuto, -1, 1 << 20, &pl, &why));
  ASSERT_TRUE(makePlan(problem(Op::kAllGather, 10, 10, 10, 1), sscGemmAuto, 0, 1, &pl, &why));
  EXPECT_TRUE(pl.direct);
}

// The fused all-gather: a slot is the whole gathered X (nranks x block rows of k), two when they
// fit; chunks 1 = push + one GEMM, >= 2 = one GEMM per source rank (plan.chunks = nranks), the
// push form whenever xGathered is asked for; refused (with the reason) where one slot does not fit.
TEST(GemmPlanRule, FusedAllGatherForms) {
  Plan pl;
  std::string why;
  Problem p =
      problem(Op::kAllGather, 37, 29, 19, 4);  // block 10, slot 4 x 10 x 19 x 2 = 1520 bytes
  ASSERT_TRUE(makePlan(p, sscGemmFused, 0, 1 << 20, &pl, &why)) << why;
  EXPECT_EQ(pl.variant, sscGemmFused);
  EXPECT_FALSE(pl.agPerRank);
  EXPECT_EQ(pl.chunks, 1);
  EXPECT_EQ(pl.slots, 2);
  EXPECT_EQ(pl.slotBytes, size_t{4 * 10 * 19 * 2});
  EXPECT_EQ(pl.block, 10);
  ASSERT_TRUE(makePlan(p, sscGemmFused, 3, 1 << 20, &pl, &why)) << why;
  EXPECT_TRUE(pl.agPerRank);
  EXPECT_EQ(pl.chunks, 4);
  ASSERT_TRUE(makePlan(p, sscGemmFused, 2, 2000, &pl, &why)) << why;  // one slot fits, two do not
  EXPECT_EQ(pl.slots, 1);
  EXPECT_FALSE(makePlan(p, sscGemmFused, 0, 1519, &pl, &why));
  EXPECT_NE(why.find("workspaceBytes"), std::string::npos) << why;
  p.gatherOut = true;  // xGathered: the push form, which holds the gathered X
  ASSERT_TRUE(makePlan(p, sscGemmFused, 4, 1 << 20, &pl, &why)) << why;
  EXPECT_FALSE(pl.agPerRank);
  EXPECT_EQ(pl.chunks, 1);
  EXPECT_FALSE(makePlan(p, sscGemmFused, 0, 1 << 20, &pl, &why, false));
  EXPECT_NE(why.find("mapped"), std::string::npos) << why;
}

// The per-rank all-gather's peer GEMMs: every peer with rows exactly once, the full blocks
// batched, the one short block alone, empty blocks and the rank itself never; rotated from
// rank + 1.
TEST(GemmPlanPieces, PeerGemmsCoverEveryPeerOnce) {
  for (int n : {1, 2, 3, 5, 8, 16})
    for (int64_t m : {1, 2, 7, 8, 9, 17, 64, 100, 4099})
      for (int rank = 0; rank < n; ++rank) {
        SCOPED_TRACE(testing::Message() << "m " << m << " ranks " << n << " rank " << rank);
        const Problem p = problem(Op::kAllGather, m, 5, 3, n);
        const PeerGemms pg = peerGemms(p, rank);
        const int64_t block = blockRows(m, n);
        std::vector<int> seen(static_cast<size_t>(n), 0);
        int last = rank;
        for (const auto* list : {&pg.batched, &pg.single})
          for (int q : *list) {
            ASSERT_GE(q, 0);
            ASSERT_LT(q, n);
            EXPECT_NE(q, rank);
            ++seen[static_cast<size_t>(q)];
          }
        for (int q : pg.batched) {
          EXPECT_EQ(rowShard(m, n, q).count, block);
          EXPECT_GT((q - rank + n) % n, (last - rank + n) % n) << "rotated order";
          last = q;
        }
        EXPECT_LE(pg.single.size(), size_t{1});
        for (int q : pg.single) {
          EXPECT_GT(rowShard(m, n, q).count, 0);
          EXPECT_LT(rowShard(m, n, q).count, block);
        }
        for (int q = 0; q < n; ++q)
          EXPECT_EQ(seen[static_cast<size_t>(q)], q != rank && rowShard(m, n, q).count > 0 ? 1 : 0)
              << "peer " << q;
      }
  // 4099 rows on 8 ranks: blocks of 513, rank 7 has 508: six full peers, one alone; blocks of
  // 513 rows are batched only while an entry is small (kPeerBatchMaxRows, kPeerBatchMaxFlops).
  PeerGemms pg = peerGemms(problem(Op::kAllGather, 4099, 5, 3, 8), 2);
  EXPECT_EQ(pg.batched, (std::vector<int>{3, 4, 5, 6, 0, 1}));
  EXPECT_EQ(pg.single, std::vector<int>{7});
  EXPECT_TRUE(pg.batch);  // 2 x 513 x 5 x 3 flops an entry
  EXPECT_FALSE(
      peerGemms(problem(Op::kAllGather, 4096, 1024, 3584, 8), 0).batch);          // 70b.down: 3.8e9
  EXPECT_TRUE(peerGemms(problem(Op::kAllGather, 4096, 1024, 1024, 8), 0).batch);  // 70b.o: 1.1e9
  EXPECT_TRUE(peerGemms(problem(Op::kAllGather, 256, 1664, 16384, 8), 0).batch);  // 32 rows a block
  EXPECT_FALSE(peerGemms(problem(Op::kAllGather, 16384, 1024, 1024, 8), 0).batch);  // 70b.o: 4.3e9
  pg = peerGemms(problem(Op::kAllGather, 4088, 5, 3, 8), 7);  // blocks of 511: a batch of 7
  EXPECT_EQ(pg.batched, (std::vector<int>{0, 1, 2, 3, 4, 5, 6}));
  EXPECT_TRUE(pg.single.empty());
  EXPECT_TRUE(pg.batch);
  pg = peerGemms(problem(Op::kAllGather, 3, 5, 3, 3), 0);  // one row each: two peers batched
  EXPECT_TRUE(pg.batch);
  pg = peerGemms(problem(Op::kAllGather, 2, 5, 3, 3), 0);  // a batch of one is a GEMM
  EXPECT_EQ(pg.batched, std::vector<int>{1});
  EXPECT_FALSE(pg.batch);
}

// Simulates every chunk's pieces: each (rank, local row) of the result is produced exactly
// once, from the right input row, and nothing outside the slot or y is touched.
void simulate(Op op, int64_t m, int nranks, int variant, int chunks, size_t ws) {
  Problem p = problem(op, m, 5, 3, nranks);
  Plan pl;
  std::string why;
  ASSERT_TRUE(makePlan(p, variant, chunks, ws, &pl, &why)) << why;
  const int64_t c = pl.block;
  std::vector<int> produced(static_cast<size_t>(m), 0);
  for (int j = 0; j < pl.chunks; ++j) {
    const ChunkRows cr = chunkRows(pl, j);
    ASSERT_GT(cr.rows, 0);
    for (const GemmPiece& g : chunkPieces(p, pl, j))
      for (int b = 0; b < g.batch; ++b)
        for (int64_t i = 0; i < g.rows; ++i) {
          const int64_t a = g.aRow + b * g.aStride + i, d = g.dRow + b * g.dStride + i;
          // The slot row, whichever side of the GEMM it is on: [rank][cr.rows].
          const int64_t slotRow = op == Op::kReduceScatter ? d : a;
          const int64_t global = op == Op::kReduceScatter ? a : d;
          ASSERT_LT(slotRow, nranks * cr.rows);
          const int64_t rank = slotRow / cr.rows, inBlock = cr.begin + slotRow % cr.rows;
          ASSERT_EQ(global, rank * c + inBlock) << "chunk " << j;
          ASSERT_LT(inBlock, rowShard(m, nranks, static_cast<int>(rank)).count);
          ++produced[global];
        }
  }
  for (int64_t r = 0; r < m; ++r) EXPECT_EQ(produced[r], 1) << "row " << r;
  for (int r = 0; r < nranks; ++r) {
    int64_t sum = 0;
    for (int j = 0; j < pl.chunks; ++j) sum += ownChunkRows(p, pl, j, r);
    EXPECT_EQ(sum, rowShard(m, nranks, r).count);
  }
}

TEST(GemmPlanPieces, EveryRowOnceOverShapes) {
  for (Op op : {Op::kReduceScatter, Op::kAllGather})
    for (int n : {2, 3, 4, 8})
      for (int64_t m : {1, 2, 5, 7, 10, 17, 31, 64, 65})
        for (int chunks : {0, 1, 2, 3, 5}) {
          SCOPED_TRACE(testing::Message() << "m " << m << " ranks " << n << " chunks " << chunks);
          simulate(op, m, n, chunks >= 2 ? sscGemmChunked : sscGemmUnfused, chunks, 1 << 20);
          simulate(op, m, n, sscGemmUnfused, 0, (n + 1) * 10 * 4);  // 2 rows a chunk
        }
}

TEST(GemmPlanPieces, OneChunkIsOneGemm) {
  const Problem p = problem(Op::kReduceScatter, 10, 4, 4, 4);  // blocks 3, 3, 3, 1
  Plan pl;
  std::string why;
  ASSERT_TRUE(makePlan(p, sscGemmUnfused, 0, 1 << 20, &pl, &why));
  const auto pieces = chunkPieces(p, pl, 0);
  ASSERT_EQ(pieces.size(), 2u);  // ranks 0-2 as one GEMM of 9 rows, then rank 3's one row
  EXPECT_EQ(pieces[0].rows, 9);
  EXPECT_EQ(pieces[0].batch, 1);
  EXPECT_EQ(pieces[1].rows, 1);
  EXPECT_EQ(pieces[1].aRow, 9);
}

TEST(GemmHost, MatchesDoubleReferenceBothLayouts) {
  const int64_t rows = 5, n = 7, k = 9;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<uint16_t> x(rows * k), w(n * k), wt(k * n);
  for (auto& v : x) v = floatToBf16(u(rng));
  for (auto& v : w) v = floatToBf16(u(rng));
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < k; ++i) wt[i * n + j] = w[j * k + i];
  std::vector<float> y(rows * n), yt(rows * n);
  hostGemm(x.data(), w.data(), y.data(), rows, n, k, sscBfloat16, sscFloat32, false, n);
  hostGemm(x.data(), wt.data(), yt.data(), rows, n, k, sscBfloat16, sscFloat32, true, n);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j) {
      double ref = 0;
      for (int64_t i = 0; i < k; ++i)
        ref += double(bf16ToFloat(x[r * k + i])) * bf16ToFloat(w[j * k + i]);
      EXPECT_NEAR(y[r * n + j], ref, 1e-5);
      EXPECT_EQ(y[r * n + j], yt[r * n + j]);
    }
}

sscGemmShard2dPlan_t ask(sscLinearParallel_t inter, int64_t m, int64_t n, int64_t k,
                         int partitions) {
  sscGemmShard2dQuery_t q = SSC_GEMM_SHARD2D_QUERY_INITIALIZER;
  q.inter = inter;
  q.m = m;
  q.n = n;
  q.k = k;
  q.partitions = partitions;
  sscGemmShard2dPlan_t plan = SSC_GEMM_SHARD2D_PLAN_INITIALIZER;
  std::string why;
  EXPECT_TRUE(shard2d(q, &plan, &why)) << why;
  return plan;
}

TEST(GemmShard2d, Tp8Shapes) {
  // 70B O projection (row-parallel, K 1024 x N 8192 per GPU): 1D would leave K = 128 per
  // partition and reduce-scatter 8x the bytes; 2D splits N and all-gathers X.
  sscGemmShard2dPlan_t o = ask(sscLinearRowParallel, 4096, 8192, 1024, 8);
  EXPECT_EQ(o.twoD, 1);
  EXPECT_EQ(o.op, sscGemmOpAllGather);
  EXPECT_EQ(o.n, 1024);
  EXPECT_EQ(o.k, 1024);
  EXPECT_LT(o.estUs, o.otherEstUs);
  // 70B QKV (column-parallel, K 8192 x N 1280): all-gathering X [M][8192] costs more than
  // reduce-scattering the [M][1280] partials: 2D, split K.
  sscGemmShard2dPlan_t qkv = ask(sscLinearColumnParallel, 4096, 1280, 8192, 8);
  EXPECT_EQ(qkv.twoD, 1);
  EXPECT_EQ(qkv.op, sscGemmOpReduceScatter);
  EXPECT_EQ(qkv.k, 1024);
  // One partition: nothing to split, the 1D answer (no change) wins the tie.
  sscGemmShard2dPlan_t one = ask(sscLinearRowParallel, 64, 100, 100, 1);
  EXPECT_EQ(one.twoD, 0);
  EXPECT_EQ(one.op, sscGemmOpReduceScatter);
}

TEST(GemmShard2d, RefusesBadQueries) {
  sscGemmShard2dQuery_t q = SSC_GEMM_SHARD2D_QUERY_INITIALIZER;
  sscGemmShard2dPlan_t plan = SSC_GEMM_SHARD2D_PLAN_INITIALIZER;
  std::string why;
  q.inter = static_cast<sscLinearParallel_t>(5);  // as a C caller may store it
  EXPECT_FALSE(shard2d(q, &plan, &why));
  q.inter = sscLinearRowParallel;
  q.partitions = 0;
  EXPECT_FALSE(shard2d(q, &plan, &why));
  EXPECT_NE(why.find("partitions"), std::string::npos);
  q.partitions = 2;
  q.m = -1;
  EXPECT_FALSE(shard2d(q, &plan, &why));
}

}  // namespace
}  // namespace ssc::gemm

// STARSCREAM_GEMM_PROBE: on and off win; auto probes only under an MPS cap below 100 % (the one
// place the vendor BLAS was seen leaving output unwritten, gpu_gemm_probe.h).
TEST(GemmProbe, WantedWhereTheCapIs) {
  using ssc::gemm::probeWanted;
  EXPECT_TRUE(probeWanted("on", nullptr));
  EXPECT_TRUE(probeWanted("on", "100"));
  EXPECT_FALSE(probeWanted("off", "20"));
  EXPECT_FALSE(probeWanted("auto", nullptr));
  EXPECT_FALSE(probeWanted("auto", ""));
  EXPECT_FALSE(probeWanted("auto", "100"));
  EXPECT_FALSE(probeWanted("auto", "100.0"));
  EXPECT_TRUE(probeWanted("auto", "20"));
  EXPECT_TRUE(probeWanted("auto", "12.5"));
  EXPECT_TRUE(probeWanted("auto", "33.3333"));
  EXPECT_TRUE(probeWanted("auto", "garbage"));  // unreadable: taken as a cap
  EXPECT_TRUE(probeWanted("", "20"));           // unset reads as auto
}

// STARSCREAM_GEMM_BARRIER: on and off win; auto holds the collectives where ranks share compute
// units (ranksShareComputeUnits: MPS partitions of one GPU), the one place a peer's waiting
// kernel starved a late rank's GEMM (docs/gemm.md, "The arrival barrier").
TEST(GemmBarrier, WantedWhereRanksShareComputeUnits) {
  using ssc::gemm::barrierWanted;
  EXPECT_TRUE(barrierWanted("on", false));
  EXPECT_TRUE(barrierWanted("on", true));
  EXPECT_FALSE(barrierWanted("off", true));
  EXPECT_TRUE(barrierWanted("auto", true));
  EXPECT_FALSE(barrierWanted("auto", false));
  EXPECT_TRUE(barrierWanted("", true));  // unset reads as auto
  EXPECT_FALSE(barrierWanted("", false));
}
