// SPDX-License-Identifier: MIT
// The schedule the GPU half issues on the caller's stream (schedule(), gemm_plan.h), checked
// over many shapes, rank counts, ranks and chunk counts: the list is the order, so step a
// happens before step b when a comes first. Guarantees: a chunk's collective after its GEMM
// (reduce-scatter) or its GEMM after its collective (all-gather); the pad filled before the
// all-gather reads it and read after the reduce-scatter fills it; a workspace slot rewritten
// only after every step that read it. The host backend runs the same list
// (tests/ops/gemm/test_gemm_mpi.cc).
#include <gtest/gtest.h>

#include <vector>

#include "src/ops/gemm/gemm_plan.h"

namespace ssc::gemm {
namespace {

// One stream runs the list in order: step a happens before step b when a comes first.
bool before(size_t a, size_t b) { return a < b; }

std::vector<size_t> find(const std::vector<Step>& g, StepKind k, int chunk) {
  std::vector<size_t> out;
  for (size_t i = 0; i < g.size(); ++i)
    if (g[i].kind == k && g[i].chunk == chunk) out.push_back(i);
  return out;
}

void check(Op op, int64_t m, int nranks, int rank, int variant, int chunks,
           bool gatherOut = false) {
  Problem p;
  p.op = op;
  p.m = m;
  p.n = 6;
  p.k = 5;
  p.nranks = nranks;
  Plan pl;
  std::string why;
  ASSERT_TRUE(makePlan(p, variant, chunks, size_t{1} << 20, &pl, &why)) << why;
  const std::vector<Step> g = schedule(p, pl, rank, gatherOut);
  const bool rs = op == Op::kReduceScatter;
  for (int j = 0; j < pl.chunks; ++j) {
    const auto gemm = find(g, StepKind::kGemm, j), coll = find(g, StepKind::kColl, j);
    ASSERT_EQ(gemm.size(), 1u);
    ASSERT_EQ(coll.size(), 1u);
    EXPECT_TRUE(rs ? before(gemm[0], coll[0]) : before(coll[0], gemm[0])) << "chunk " << j;
    const bool padded = ownChunkRows(p, pl, j, rank) < chunkRows(pl, j).rows;
    const auto padIn = find(g, StepKind::kPadIn, j), padOut = find(g, StepKind::kPadOut, j);
    EXPECT_EQ(padIn.size(), !rs && padded ? 1u : 0u);
    EXPECT_EQ(padOut.size(), rs && padded ? 1u : 0u);
    // xGathered: copied out of the slot after the all-gather filled it, before its next fill.
    const auto out = find(g, StepKind::kGatherOut, j);
    EXPECT_EQ(out.size(), gatherOut ? 1u : 0u);
    if (!out.empty()) {
      EXPECT_TRUE(before(coll[0], out[0]));
      if (j + pl.slots < pl.chunks) {
        EXPECT_TRUE(before(out[0], find(g, StepKind::kColl, j + pl.slots)[0]));
      }
    }
    if (!padIn.empty()) {
      EXPECT_TRUE(before(padIn[0], coll[0]));
    }
    if (!padOut.empty()) {
      EXPECT_TRUE(before(coll[0], padOut[0]));
    }
    // Every later chunk on the same slot writes it only after this chunk's reader, and every
    // later use of the pad comes after this chunk's.
    for (int later = j + 1; later < pl.chunks; ++later) {
      const size_t writer =
          rs ? find(g, StepKind::kGemm, later)[0] : find(g, StepKind::kColl, later)[0];
      const size_t reader = rs ? coll[0] : gemm[0];
      if (later % pl.slots == j % pl.slots) {
        EXPECT_TRUE(before(reader, writer))
            << "slot of chunk " << j << " rewritten by chunk " << later;
      }
      for (size_t a : padIn.empty() ? padOut : padIn)
        for (StepKind k : {StepKind::kPadIn, StepKind::kPadOut})
          for (size_t b : find(g, k, later)) EXPECT_TRUE(before(a, b));
    }
  }
}

TEST(GemmSchedule, HappensBeforeOverShapes) {
  for (Op op : {Op::kReduceScatter, Op::kAllGather})
    for (int n : {2, 3, 4, 8})
      for (int64_t m : {1, 5, 7, 17, 64, 65})
        for (int rank = 0; rank < n; ++rank)
          for (int chunks : {1, 2, 3, 5}) {
            SCOPED_TRACE(testing::Message()
                         << (op == Op::kReduceScatter ? "rs" : "ag") << " m " << m << " ranks " << n
                         << " rank " << rank << " chunks " << chunks);
            check(op, m, n, rank, sscGemmChunked, chunks);
            check(op, m, n, rank, sscGemmUnfused, chunks);
            if (op == Op::kAllGather) check(op, m, n, rank, sscGemmChunked, chunks, true);
            if (HasFailure()) return;
          }
}

TEST(GemmSchedule, OneStepListPerChunk) {
  // Every chunk's work, in chunk order: no step of chunk j + 1 before the last of chunk j (one
  // stream, no overlap; gemm_plan.h says why), and exactly one GEMM and one collective each.
  for (Op op : {Op::kReduceScatter, Op::kAllGather}) {
    Problem p;
    p.op = op;
    p.m = 64;
    p.n = 6;
    p.k = 5;
    p.nranks = 4;
    Plan pl;
    std::string why;
    ASSERT_TRUE(makePlan(p, sscGemmChunked, 4, 1 << 20, &pl, &why)) << why;
    ASSERT_EQ(pl.chunks, 4);
    const std::vector<Step> list = schedule(p, pl, 0);
    int last = -1;
    for (const Step& s : list) {
      EXPECT_GE(s.chunk, last);
      last = s.chunk;
    }
    EXPECT_EQ(last, 3);
    EXPECT_EQ(list.size(), 8u);  // no pad: m is a multiple of the ranks and the chunks
  }
}

}  // namespace
}  // namespace ssc::gemm
