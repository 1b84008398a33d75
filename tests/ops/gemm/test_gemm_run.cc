// SPDX-License-Identifier: MIT
// The op's algorithm (gemm_run.cc) as both halves run it, seen through an engine that records
// what it is asked to do: a strided batch goes through the plan's scratch as one 2D copy and ONE
// GEMM where the rows allow it, as a batch otherwise, and fails on a scratch smaller than the
// piece; the empty, direct and fused calls and the bias reach the engine as they should. The
// chunked schedule with its collectives runs end to end under mpirun (test_gemm_mpi.cc).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "src/ops/gemm/gemm_engine.h"

namespace ssc::gemm {
namespace {

struct Recorded {
  std::string what;
  const void* a = nullptr;
  void* d = nullptr;
  GemmPiece piece;
  size_t dstPitch = 0, srcPitch = 0, width = 0, height = 0, bytes = 0;
  int64_t rows = 0;
};

class RecordingEngine final : public GemmEngine {
 public:
  std::vector<Recorded> ops;
  sscResult_t gemm(const Call&, const void* a, void* d, const GemmPiece& piece,
                   sscStream_t) override {
    Recorded o{"gemm"};
    o.a = a;
    o.d = d;
    o.piece = piece;
    ops.push_back(o);
    return sscSuccess;
  }
  sscResult_t zero(void* p, size_t bytes, sscStream_t, Doing) override {
    Recorded o{"zero"};
    o.d = p;
    o.bytes = bytes;
    ops.push_back(o);
    return sscSuccess;
  }
  sscResult_t copy(void* dst, const void* src, size_t bytes, sscStream_t, Doing) override {
    Recorded o{"copy"};
    o.a = src;
    o.d = dst;
    o.bytes = bytes;
    ops.push_back(o);
    return sscSuccess;
  }
  sscResult_t copy2D(void* dst, size_t dstPitch, const void* src, size_t srcPitch, size_t width,
                     size_t height, sscStream_t, Doing) override {
    Recorded o{"copy2D"};
    o.a = src;
    o.d = dst;
    o.dstPitch = dstPitch;
    o.srcPitch = srcPitch;
    o.width = width;
    o.height = height;
    ops.push_back(o);
    return sscSuccess;
  }
  sscResult_t arrivalBarrier(sscStream_t) override {
    ops.push_back(Recorded{"barrier"});
    return sscSuccess;
  }
  sscResult_t collectiveQueued(sscStream_t) override {
    ops.push_back(Recorded{"collective"});
    return sscSuccess;
  }
  sscResult_t fused(const Call&, sscStream_t) override {
    ops.push_back(Recorded{"fused"});
    return sscSuccess;
  }
  sscResult_t addBias(const Call&, int64_t rows, sscStream_t) override {
    Recorded o{"bias"};
    o.rows = rows;
    ops.push_back(o);
    return sscSuccess;
  }
};

// A context whose workspace is a 256-byte aligned host buffer: [2 slots][pad][scratch].
struct Fixture {
  alignas(256) char workspace[1 << 16] = {};
  sscGemmContext g;
  Call c;
  Fixture(int64_t k, int64_t n, sscDataType_t in, sscDataType_t out) {
    g.workspace = workspace;
    c.p.op = Op::kReduceScatter;
    c.p.m = 64;
    c.p.n = n;
    c.p.k = k;
    c.p.nranks = 4;
    c.inType = in;
    c.outType = out;
    c.plan.slots = 2;
    c.plan.slotBytes = 4096;
    c.plan.padBytes = 1024;
    c.plan.scratchBytes = 16384;
  }
  const char* scratch() const { return workspace + 2 * 4096 + 1024; }
};

// Four ranks' blocks of 3 rows, 16 rows apart: the reduce-scatter's x rows of one chunk.
GemmPiece stridedA() {
  GemmPiece p;
  p.aRow = 2;
  p.aStride = 16;
  p.dRow = 5;
  p.dStride = 3;
  p.rows = 3;
  p.batch = 4;
  return p;
}

TEST(GemmRun, StridedASidesGoThroughTheScratchAsOneGemm) {
  Fixture f(64, 32, sscBfloat16, sscBfloat16);  // rows of 128 and 64 bytes
  RecordingEngine e;
  char x[1], y[1];
  ASSERT_EQ(runPiece(&f.g, f.c, e, x, y, stridedA(), true, nullptr), sscSuccess);
  ASSERT_EQ(e.ops.size(), 2u);
  const Recorded& copy = e.ops[0];
  EXPECT_EQ(copy.what, "copy2D");
  EXPECT_EQ(copy.d, f.scratch());
  EXPECT_EQ(copy.a, x + 2 * 128);
  EXPECT_EQ(copy.srcPitch, 16u * 128);
  EXPECT_EQ(copy.dstPitch, 3u * 128);
  EXPECT_EQ(copy.width, 3u * 128);
  EXPECT_EQ(copy.height, 4u);
  const Recorded& gemm = e.ops[1];
  EXPECT_EQ(gemm.what, "gemm");
  EXPECT_EQ(gemm.a, f.scratch());
  EXPECT_EQ(gemm.d, y);
  EXPECT_EQ(gemm.piece.rows, 12);
  EXPECT_EQ(gemm.piece.batch, 1);
  EXPECT_EQ(gemm.piece.aRow, 0);
  EXPECT_EQ(gemm.piece.dRow, 5);
}

TEST(GemmRun, StridedDSidesGoThroughTheScratchAsOneGemm) {
  Fixture f(64, 32, sscBfloat16, sscFloat32);  // D rows of 128 bytes
  GemmPiece p = stridedA();
  p.aStride = p.rows;  // A contiguous, D strided: the all-gather's y rows
  p.dStride = 20;
  RecordingEngine e;
  char x[1], y[1];
  ASSERT_EQ(runPiece(&f.g, f.c, e, x, y, p, true, nullptr), sscSuccess);
  ASSERT_EQ(e.ops.size(), 2u);
  EXPECT_EQ(e.ops[0].what, "gemm");
  EXPECT_EQ(e.ops[0].a, x);
  EXPECT_EQ(e.ops[0].d, f.scratch());
  EXPECT_EQ(e.ops[0].piece.rows, 12);
  EXPECT_EQ(e.ops[0].piece.aRow, 2);
  EXPECT_EQ(e.ops[0].piece.dRow, 0);
  const Recorded& copy = e.ops[1];
  EXPECT_EQ(copy.what, "copy2D");
  EXPECT_EQ(copy.a, f.scratch());
  EXPECT_EQ(copy.d, y + 5 * 128);
  EXPECT_EQ(copy.dstPitch, 20u * 128);
  EXPECT_EQ(copy.srcPitch, 3u * 128);
  EXPECT_EQ(copy.height, 4u);
}

TEST(GemmRun, OddRowsAPlanWithoutScratchOrOneRankRunTheBatch) {
  char x[1], y[1];
  {
    Fixture f(63, 32, sscBfloat16, sscBfloat16);  // A rows of 126 bytes: not 16-byte multiples
    RecordingEngine e;
    ASSERT_EQ(runPiece(&f.g, f.c, e, x, y, stridedA(), true, nullptr), sscSuccess);
    ASSERT_EQ(e.ops.size(), 1u);
    EXPECT_EQ(e.ops[0].piece.batch, 4);
    EXPECT_EQ(e.ops[0].piece.aStride, 16);
  }
  {
    Fixture f(64, 32, sscBfloat16, sscBfloat16);
    f.c.plan.scratchBytes = 0;
    RecordingEngine e;
    ASSERT_EQ(runPiece(&f.g, f.c, e, x, y, stridedA(), true, nullptr), sscSuccess);
    ASSERT_EQ(e.ops.size(), 1u);
    EXPECT_EQ(e.ops[0].piece.batch, 4);
  }
  {
    Fixture f(64, 32, sscBfloat16, sscBfloat16);
    RecordingEngine e;  // the caller said no scratch (the fused forms' own pieces)
    ASSERT_EQ(runPiece(&f.g, f.c, e, x, y, stridedA(), false, nullptr), sscSuccess);
    ASSERT_EQ(e.ops.size(), 1u);
    EXPECT_EQ(e.ops[0].piece.batch, 4);
  }
  {
    Fixture f(64, 32, sscBfloat16, sscBfloat16);
    GemmPiece one = stridedA();
    one.batch = 1;
    RecordingEngine e;
    ASSERT_EQ(runPiece(&f.g, f.c, e, x, y, one, true, nullptr), sscSuccess);
    ASSERT_EQ(e.ops.size(), 1u);
    EXPECT_EQ(e.ops[0].piece.rows, 3);
  }
}

TEST(GemmRun, AScratchSmallerThanThePieceIsAnInternalError) {
  Fixture f(64, 32, sscBfloat16, sscBfloat16);
  f.c.plan.scratchBytes = 12 * 128 - 16;
  RecordingEngine e;
  char x[1], y[1];
  EXPECT_EQ(runPiece(&f.g, f.c, e, x, y, stridedA(), true, nullptr), sscInternalError);
  EXPECT_TRUE(e.ops.empty());
}

TEST(GemmRun, EmptyDirectFusedCallsAndTheBias) {
  char x[1], y[1], gathered[1], bias[1];
  {  // k = 0: this rank's block of y zeroed (64 rows over 4 ranks), then the bias over it
    Fixture f(0, 32, sscBfloat16, sscFloat32);
    f.c.rank = 1;
    f.c.y = y;
    f.c.bias = bias;
    RecordingEngine e;
    ASSERT_EQ(runCall(&f.g, f.c, e, nullptr), sscSuccess);
    ASSERT_EQ(e.ops.size(), 2u);
    EXPECT_EQ(e.ops[0].what, "zero");
    EXPECT_EQ(e.ops[0].bytes, 16u * 32 * 4);
    EXPECT_EQ(e.ops[1].what, "bias");
    EXPECT_EQ(e.ops[1].rows, 16);
  }
  {  // m = 0: nothing at all
    Fixture f(64, 32, sscBfloat16, sscBfloat16);
    f.c.p.m = 0;
    f.c.bias = bias;
    RecordingEngine e;
    ASSERT_EQ(runCall(&f.g, f.c, e, nullptr), sscSuccess);
    EXPECT_TRUE(e.ops.empty());
  }
  {  // direct all-gather: x copied to the gathered output, one GEMM of all rows
    Fixture f(64, 32, sscBfloat16, sscBfloat16);
    f.c.p.op = Op::kAllGather;
    f.c.plan.direct = true;
    f.c.x = x;
    f.c.y = y;
    f.c.xGathered = gathered;
    RecordingEngine e;
    ASSERT_EQ(runCall(&f.g, f.c, e, nullptr), sscSuccess);
    ASSERT_EQ(e.ops.size(), 2u);
    EXPECT_EQ(e.ops[0].what, "copy");
    EXPECT_EQ(e.ops[0].bytes, 64u * 64 * 2);
    EXPECT_EQ(e.ops[1].what, "gemm");
    EXPECT_EQ(e.ops[1].piece.rows, 64);
  }
  {  // fused: the engine's own
    Fixture f(64, 32, sscBfloat16, sscBfloat16);
    f.c.plan.variant = sscGemmFused;
    RecordingEngine e;
    ASSERT_EQ(runCall(&f.g, f.c, e, nullptr), sscSuccess);
    ASSERT_EQ(e.ops.size(), 1u);
    EXPECT_EQ(e.ops[0].what, "fused");
  }
}

}  // namespace
}  // namespace ssc::gemm
