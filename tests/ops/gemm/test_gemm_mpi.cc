// SPDX-License-Identifier: MIT
// The fused GEMM-collectives end to end on the host backend under mpirun (1-4 ranks): both ops,
// odd M/N/K (M not a multiple of the rank count, ranks that own one row or none), bf16 and
// fp16, y in the input type or fp32, W stored [N][K] or [K][N], with and without nn.Linear's
// bias, the unfused and chunked variants (and the fused ones: both all-gather forms), and a
// workspace so small that a call runs in many chunks, against an fp32 reference of the same
// rounded inputs. Also the argument checks every rank must agree on, and an older header's
// arguments (without the bias).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <vector>

#include "src/kernels/host/reduce.h"
#include "starscream/starscream_mpi.h"
#include "starscream/starscream_ops.h"
#include "tests/support/half_storage.h"
#include "tests/support/mpi_gtest.h"

namespace {

int g_rank = 0, g_n = 1;
sscComm_t g_comm = nullptr;
sscStream_t g_stream = nullptr;

using ssc::test::fromStorage;
using ssc::test::seededMatrix;

// Element (row, col) of X W^T for one rank's stored inputs, in double, and the sum of |terms|.
void dot(const std::vector<uint16_t>& x, const std::vector<uint16_t>& w, int64_t row, int64_t col,
         int64_t n, int64_t k, bool kn, sscDataType_t t, double* val, double* mag) {
  for (int64_t i = 0; i < k; ++i) {
    const double term =
        double(fromStorage(x[row * k + i], t)) * fromStorage(w[kn ? i * n + col : col * k + i], t);
    *val += term;
    *mag += std::fabs(term);
  }
}

struct Case {
  bool rs;
  int64_t m, n, k;
  sscDataType_t dtype, out;
  bool kn;
  sscGemmVariant_t variant;
  int chunks;
  bool tinyWorkspace;
  int gathered = 0;  // all-gather: 0 no xGathered, 1 a separate one, 2 in place (x inside it)
  bool bias = false;
  bool ce = false;  // SSC_GEMM_COPY_ENGINE (the host backend runs its flag protocol)
  std::string name() const {
    return fmt::format("{} m{} n{} k{} {}->{}{} variant {} chunks {}{}{}{}{}",
                       rs ? "gemm_rs" : "ag_gemm", m, n, k, dtype == sscBfloat16 ? "bf16" : "fp16",
                       out == sscFloat32 ? "fp32" : "same", kn ? " KN" : "",
                       static_cast<int>(variant), chunks, tinyWorkspace ? " tiny-workspace" : "",
                       gathered == 1   ? " xGathered"
                       : gathered == 2 ? " in-place"
                                       : "",
                       bias ? " bias" : "", ce ? " copy-engine" : "");
  }
};

void runCase(const Case& c, sscGemm_t gemm) {
  SCOPED_TRACE(c.name() + fmt::format(" rank {} of {}", g_rank, g_n));
  int64_t first = 0, rows = 0;
  ASSERT_EQ(sscGemmRowShard(c.m, g_n, g_rank, &first, &rows), sscSuccess);
  const uint32_t base = static_cast<uint32_t>(c.m * 1000003 + c.n * 1009 + c.k * 13 + c.kn);
  // Reduce-scatter: every rank its own x [m][k] and w; all-gather: one X, every rank its own w.
  auto xOf = [&](int r) { return seededMatrix(base + (c.rs ? 7 * r : 0), c.m * c.k, c.dtype); };
  auto wOf = [&](int r) { return seededMatrix(base + 1000 + 7 * r, c.n * c.k, c.dtype); };
  const std::vector<uint16_t> xMine = xOf(g_rank), wMine = wOf(g_rank);
  std::vector<uint16_t> xArg = c.rs ? xMine
                                    : std::vector<uint16_t>(xMine.begin() + first * c.k,
                                                            xMine.begin() + (first + rows) * c.k);
  const int64_t yRows = c.rs ? rows : c.m;
  const size_t ob = c.out == sscFloat32 ? 4 : 2;
  std::vector<unsigned char> y(static_cast<size_t>(yRows * c.n) * ob + 1,
                               0xAB);  // +1: a guard byte
  sscGemmArgs_t a = SSC_GEMM_ARGS_INITIALIZER;
  a.m = c.m;
  a.n = c.n;
  a.k = c.k;
  a.dtype = c.dtype;
  a.outDtype = c.out == c.dtype ? SSC_GEMM_OUT_AS_INPUT : c.out;
  a.x = xArg.empty() ? nullptr : xArg.data();
  std::vector<uint16_t> gathered;
  if (c.gathered != 0) {
    gathered.assign(static_cast<size_t>(c.m * c.k) + 1, 0x7777);  // +1: a guard element
    a.xGathered = gathered.data();
    if (c.gathered == 2) {  // this rank's rows already in place
      std::copy(xArg.begin(), xArg.end(), gathered.begin() + first * c.k);
      a.x = rows * c.k == 0 ? nullptr : gathered.data() + first * c.k;
    }
  }
  a.w = wMine.data();
  a.y = yRows * c.n == 0 ? nullptr : y.data();
  a.flags = (c.kn ? SSC_GEMM_WEIGHT_KN : 0) | (c.ce ? SSC_GEMM_COPY_ENGINE : 0);
  a.variant = c.variant;
  a.chunks = c.chunks;
  // The bias in y's type: the layer's, the same on every rank (reduce-scatter), or this rank's
  // N-slice (all-gather: any values of its own).
  std::vector<float> biasF(c.bias ? c.n : 0);
  std::vector<uint16_t> biasH;
  for (int64_t j = 0; j < static_cast<int64_t>(biasF.size()); ++j) {
    biasF[j] = 0.25f * static_cast<float>((j * 7 + (c.rs ? 0 : g_rank) * 3) % 11) - 1.0f;
    if (c.out != sscFloat32) biasH.push_back(ssc::test::toStorage(biasF[j], c.out));
  }
  if (c.bias) a.bias = c.out == sscFloat32 ? static_cast<const void*>(biasF.data()) : biasH.data();
  // W as [K][N] when asked: the same matrix transposed, so the reference is unchanged.
  std::vector<uint16_t> wkn;
  if (c.kn) {
    wkn.resize(wMine.size());
    for (int64_t j = 0; j < c.n; ++j)
      for (int64_t i = 0; i < c.k; ++i) wkn[i * c.n + j] = wMine[j * c.k + i];
    a.w = wkn.data();
  }
  const sscResult_t r =
      c.rs ? sscGemmReduceScatter(gemm, &a, g_stream) : sscAllGatherGemm(gemm, &a, g_stream);
  ASSERT_EQ(r, sscSuccess) << sscGetLastError(nullptr);
  ASSERT_EQ(sscStreamSynchronize(g_stream), sscSuccess) << sscGetLastError(nullptr);
  EXPECT_EQ(y.back(), 0xAB) << "wrote past y";
  if (c.gathered != 0 && c.k > 0 && c.n > 0) {
    EXPECT_TRUE(std::equal(xMine.begin(), xMine.end(), gathered.begin())) << "xGathered is not X";
    EXPECT_EQ(gathered.back(), 0x7777) << "wrote past xGathered";
  }

  // The reference: partials rounded to the output type before the sum on the reduce-scatter
  // path, so the bound grows with the rank count; fp32 output only sees fp32 rounding.
  const double eps = c.out == sscFloat32 ? 1e-6 : c.out == sscFloat16 ? 1.0 / 2048 : 1.0 / 256;
  std::vector<std::vector<uint16_t>> xs, ws;
  for (int q = 0; q < (c.rs ? g_n : 1); ++q) xs.push_back(c.rs ? xOf(q) : xMine);
  for (int q = 0; q < (c.rs ? g_n : 1); ++q) ws.push_back(c.rs ? wOf(q) : wMine);
  int bad = 0;
  for (int64_t i = 0; i < yRows && bad < 5; ++i)
    for (int64_t j = 0; j < c.n && bad < 5; ++j) {
      const int64_t row = c.rs ? first + i : i;
      double val = 0, mag = 0;
      for (size_t q = 0; q < xs.size(); ++q)
        dot(xs[q], ws[q], row, j, c.n, c.k, false, c.dtype, &val, &mag);
      if (c.bias) {  // once, after the sum (one more rounding to y's type: the +2 below covers it)
        const double b = c.out == sscFloat32 ? biasF[j] : fromStorage(biasH[j], c.out);
        val += b;
        mag += std::fabs(b);
      }
      const size_t idx = static_cast<size_t>(i * c.n + j);
      const double got = ob == 4
                             ? reinterpret_cast<const float*>(y.data())[idx]
                             : fromStorage(reinterpret_cast<const uint16_t*>(y.data())[idx], c.out);
      const double tol = (mag + 1e-30) * eps * (xs.size() + 2) + 1e-6;
      if (!(std::fabs(got - val) <= tol)) {
        ADD_FAILURE() << fmt::format("y[{}][{}] = {}, want {} (tolerance {})", i, j, got, val, tol);
        ++bad;
      }
    }
}

// Whether any rank has failed so far (collective): the loops stop on every rank together, or a
// rank that stopped alone would leave the others in a collective until STARSCREAM_TIMEOUT.
bool anyRankFailed() {
  int mine = testing::Test::HasFailure() ? 1 : 0, any = 0;
  MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return any != 0;
}

class GemmMpi : public testing::Test {};

TEST_F(GemmMpi, OddShapesAllVariants) {
  sscGemmConfig_t cfg = SSC_GEMM_CONFIG_INITIALIZER;
  cfg.workspaceBytes = 1 << 20;
  sscGemm_t big = nullptr, tiny = nullptr;
  ASSERT_EQ(sscGemmCreate(g_comm, &cfg, &big), sscSuccess) << sscGetLastError(nullptr);
  cfg.workspaceBytes = 1800;  // >= (2 slots x 4 ranks + 1) x 33 x 4 bytes: a row or two a chunk
  ASSERT_EQ(sscGemmCreate(g_comm, &cfg, &tiny), sscSuccess) << sscGetLastError(nullptr);
  // 45 x 128 x 128: rows of 256 bytes or more, so a chunked plan's strided batches go through
  // its scratch as one GEMM (runPiece); the odd shapes run them one GEMM per rank.
  const std::vector<std::array<int64_t, 3>> shapes = {{1, 1, 1},   {7, 5, 3},    {37, 29, 19},
                                                      {13, 1, 40}, {64, 33, 17}, {3, 8, 5},
                                                      {5, 8, 0},   {0, 3, 3},    {45, 128, 128}};
  int index = 0;
  for (bool rs : {true, false})
    for (const auto& s : shapes)
      for (sscDataType_t t : {sscBfloat16, sscFloat16}) {
        const int mode = index++ % 4;
        Case c{rs,        s[0],        s[1], s[2], t, mode == 1 ? sscFloat32 : t,
               mode == 2, sscGemmAuto, 0,    false};
        c.bias = index % 3 != 0;
        runCase(c, big);
        c.variant = sscGemmChunked;
        c.chunks = 3;
        runCase(c, big);
        // The tiny workspace holds a row or two of the odd shapes, not of the wide one.
        const bool fitsTiny = s[1] < 128;
        c.variant = sscGemmUnfused;
        c.chunks = 0;
        c.tinyWorkspace = true;
        if (fitsTiny) runCase(c, tiny);
        c.variant = sscGemmChunked;
        if (fitsTiny) runCase(c, tiny);
        if (!rs) {  // the gathered X returned too, separately and in place
          c.gathered = 1;
          if (fitsTiny) runCase(c, tiny);
          c.gathered = 2;
          c.variant = sscGemmAuto;
          c.tinyWorkspace = false;
          runCase(c, big);
        }
        if (anyRankFailed()) break;
      }
  sscGemmVariant_t variant = sscGemmAuto;
  int chunks = -1;
  sscGemmArgs_t a = SSC_GEMM_ARGS_INITIALIZER;
  a.m = 37, a.n = 29, a.k = 19;
  EXPECT_EQ(sscGemmQueryPlan(tiny, sscGemmOpReduceScatter, &a, &variant, &chunks), sscSuccess)
      << sscGetLastError(nullptr);
  // Small: the rule runs it unfused; the tiny workspace still cuts it into chunks.
  EXPECT_EQ(variant, sscGemmUnfused);
  EXPECT_EQ(chunks, g_n == 1 ? 1 : 2) << "37 rows, 58-byte rows, 1800-byte workspace";
  EXPECT_EQ(sscGemmDestroy(tiny), sscSuccess);
  EXPECT_EQ(sscGemmDestroy(big), sscSuccess);
}

// The fused variant of the reduce-scatter: each rank's GEMM into its registered workspace, the
// owners sum their rows out of every rank's slot behind per-chunk flags. One chunk, forced
// chunks, and a workspace of a row or two per chunk (the two slots reused many times, so the
// done flags are what keeps a producer from overwriting rows an owner has not read), called
// twice on each context (the flags carry over between calls). ctest runs it on 1-4 and 6, 8 ranks.
TEST_F(GemmMpi, FusedOddShapes) {
  sscGemmConfig_t cfg = SSC_GEMM_CONFIG_INITIALIZER;
  cfg.workspaceBytes = 1 << 20;
  sscGemm_t big = nullptr, tiny = nullptr;
  ASSERT_EQ(sscGemmCreate(g_comm, &cfg, &big), sscSuccess) << sscGetLastError(nullptr);
  cfg.workspaceBytes =
      (2 * 8 + 1) * 33 * 4 * 2;  // two rows of the widest case per chunk at 8 ranks
  ASSERT_EQ(sscGemmCreate(g_comm, &cfg, &tiny), sscSuccess) << sscGetLastError(nullptr);
  const std::vector<std::array<int64_t, 3>> shapes = {{1, 1, 1},   {7, 5, 3},    {37, 29, 19},
                                                      {13, 1, 40}, {64, 33, 17}, {3, 8, 5},
                                                      {5, 8, 0},   {0, 3, 3}};
  int index = 0;
  for (const auto& s : shapes)
    for (sscDataType_t t : {sscBfloat16, sscFloat16}) {
      const int mode = index++ % 4;
      Case c{true,      s[0],         s[1], s[2], t, mode == 1 ? sscFloat32 : t,
             mode == 2, sscGemmFused, 0,    false};
      c.bias = index % 3 != 0;
      // Waiting kernels' flags and SSC_GEMM_COPY_ENGINE's (readyFrom) alternate on one context.
      for (int rep = 0; rep < 4; ++rep) {
        c.ce = rep % 2 == 1;
        runCase(c, big);
      }
      c.chunks = 3;
      runCase(c, big);
      c.ce = true;
      runCase(c, big);
      c.chunks = 0;
      c.tinyWorkspace = true;
      for (int rep = 0; rep < 2; ++rep) runCase(c, tiny);
      c.ce = false;
      runCase(c, tiny);
      if (anyRankFailed()) break;
    }
  // The fused all-gather + GEMM, both forms (push + one GEMM; one GEMM per source rank reading
  // the peers' slots in place), interleaved with the reduce-scatter's fused calls on the same
  // contexts (they share the slots and the use count), and with the gathered X returned.
  index = 0;
  for (const auto& s : shapes)
    for (sscDataType_t t : {sscBfloat16, sscFloat16}) {
      const int mode = index++ % 4;
      Case c{false,     s[0],         s[1], s[2], t, mode == 1 ? sscFloat32 : t,
             mode == 2, sscGemmFused, 0,    false};
      c.bias = index % 3 != 0;
      for (int rep = 0; rep < 2; ++rep) runCase(c, big);
      c.chunks = 2;  // per rank
      for (int rep = 0; rep < 2; ++rep) runCase(c, big);
      c.ce = true;  // both forms with SSC_GEMM_COPY_ENGINE, on the same slots
      runCase(c, big);
      c.chunks = 0;
      runCase(c, big);
      c.ce = false;
      c.chunks = 0;
      c.gathered = 1 + mode % 2;
      runCase(c, big);
      Case r = c;
      r.rs = true;
      r.gathered = 0;
      runCase(r, big);  // a reduce-scatter between two all-gathers on the same slots
      c.gathered = 0;
      c.chunks = 2;
      runCase(c, big);
      if (anyRankFailed()) break;
    }
  if (g_n > 1) {  // what the ops report for a fused plan
    sscGemmVariant_t variant = sscGemmAuto;
    int chunks = -1;
    sscGemmArgs_t a = SSC_GEMM_ARGS_INITIALIZER;
    a.m = 37, a.n = 29, a.k = 19;
    a.variant = sscGemmFused;
    EXPECT_EQ(sscGemmQueryPlan(tiny, sscGemmOpReduceScatter, &a, &variant, &chunks), sscSuccess)
        << sscGetLastError(nullptr);
    EXPECT_EQ(variant, sscGemmFused);
    EXPECT_GE(chunks, 2);
    EXPECT_EQ(sscGemmQueryPlan(big, sscGemmOpAllGather, &a, &variant, &chunks), sscSuccess)
        << sscGetLastError(nullptr);
    EXPECT_EQ(variant, sscGemmFused);
    EXPECT_EQ(chunks, 1);
    a.chunks = 2;
    EXPECT_EQ(sscGemmQueryPlan(big, sscGemmOpAllGather, &a, &variant, &chunks), sscSuccess)
        << sscGetLastError(nullptr);
    EXPECT_EQ(chunks, g_n);
    // The tiny workspace cannot hold a gathered X of 1000 rows: refused, naming the setting.
    a.m = 1000;
    EXPECT_EQ(sscGemmQueryPlan(tiny, sscGemmOpAllGather, &a, &variant, &chunks), sscInvalidUsage);
    EXPECT_NE(std::string(sscGetLastError(nullptr)).find("workspaceBytes"), std::string::npos);
  }
  EXPECT_EQ(sscGemmDestroy(tiny), sscSuccess);
  EXPECT_EQ(sscGemmDestroy(big), sscSuccess);
}

TEST_F(GemmMpi, RefusesBadArguments) {
  sscGemm_t g = nullptr;
  ASSERT_EQ(sscGemmCreate(g_comm, nullptr, &g), sscSuccess) << sscGetLastError(nullptr);
  std::vector<uint16_t> buf(64 * 64);
  sscGemmArgs_t a = SSC_GEMM_ARGS_INITIALIZER;
  a.m = 8, a.n = 4, a.k = 4;
  a.x = a.w = buf.data();
  a.y = buf.data();
  sscGemmArgs_t bad = a;
  bad.dtype = sscFloat32;
  EXPECT_EQ(sscGemmReduceScatter(g, &bad, g_stream), sscInvalidArgument);
  EXPECT_NE(std::string(sscGetLastError(nullptr)).find("dtype"), std::string::npos);
  bad = a;
  bad.variant = sscGemmFused;
  bad.chunks = -2;
  EXPECT_EQ(sscAllGatherGemm(g, &bad, g_stream), sscInvalidUsage);
  bad = a;
  bad.k = -1;
  EXPECT_EQ(sscAllGatherGemm(g, &bad, g_stream), sscInvalidArgument);
  bad = a;
  bad.w = nullptr;
  EXPECT_EQ(sscGemmReduceScatter(g, &bad, g_stream), sscInvalidArgument);
  bad = a;
  bad.size = 8;
  EXPECT_EQ(sscGemmReduceScatter(g, &bad, g_stream), sscInvalidArgument);
  {  // arguments from a header before `bias` (size up to xGathered) run, and without a bias
    std::vector<uint16_t> zeros(8 * 4, 0), y(8 * 4, 0x7777), ones(4, 0x3f80);
    sscGemmArgs_t old = a;
    old.x = old.w = zeros.data();
    old.y = y.data();
    old.size = offsetof(sscGemmArgs_t, bias);
    old.bias = ones.data();  // past the older struct's end: must not be read
    ASSERT_EQ(sscAllGatherGemm(g, &old, g_stream), sscSuccess) << sscGetLastError(nullptr);
    ASSERT_EQ(sscStreamSynchronize(g_stream), sscSuccess);
    EXPECT_EQ(std::count(y.begin(), y.end(), 0), 8 * 4) << "the bias of an older struct was read";
  }
  bad = a;
  bad.xGathered = buf.data();  // reduce-scatter has no gathered X
  EXPECT_EQ(sscGemmReduceScatter(g, &bad, g_stream), sscInvalidArgument);
  {  // x inside xGathered, one row off its place (every rank's verdict is the same)
    bad = a;
    bad.xGathered = buf.data();
    int64_t first = 0, rows = 0;
    ASSERT_EQ(sscGemmRowShard(a.m, g_n, g_rank, &first, &rows), sscSuccess);
    bad.x = buf.data() + (first + 1) * a.k;
    EXPECT_EQ(sscAllGatherGemm(g, &bad, g_stream), sscInvalidArgument);
    EXPECT_NE(std::string(sscGetLastError(nullptr)).find("in place"), std::string::npos);
  }
  bad = a;
  bad.flags = 0x10;
  EXPECT_EQ(sscGemmReduceScatter(g, &bad, g_stream), sscInvalidArgument);
  EXPECT_NE(std::string(sscGetLastError(nullptr)).find("unknown flags 0x10"), std::string::npos);
  EXPECT_EQ(sscGemmReduceScatter(nullptr, &a, g_stream), sscInvalidArgument);
  sscGemmConfig_t cfg = SSC_GEMM_CONFIG_INITIALIZER;
  cfg.workspaceBytes = 16;  // cannot hold one row per rank
  sscGemm_t small = nullptr;
  ASSERT_EQ(sscGemmCreate(g_comm, &cfg, &small), sscSuccess);
  if (g_n > 1) {
    EXPECT_EQ(sscGemmReduceScatter(small, &a, g_stream), sscInvalidArgument);
    EXPECT_NE(std::string(sscGetLastError(nullptr)).find("workspaceBytes"), std::string::npos);
  }
  EXPECT_EQ(sscGemmDestroy(small), sscSuccess);
  EXPECT_EQ(sscGemmDestroy(g), sscSuccess);
  EXPECT_EQ(sscGemmDestroy(g), sscInvalidUsage);
}

// The 2D-sharding helper through the public API: the query and the plan each come from their
// initializer (size and magic checked), and a query's inter outside sscLinearParallel_t is refused.
TEST_F(GemmMpi, Shard2dTakesInitializedStructs) {
  sscGemmShard2dQuery_t q = SSC_GEMM_SHARD2D_QUERY_INITIALIZER;
  q.inter = sscLinearRowParallel;
  q.m = 4096, q.n = 8192, q.k = 1024;
  q.partitions = 8;
  sscGemmShard2dPlan_t plan = SSC_GEMM_SHARD2D_PLAN_INITIALIZER;
  ASSERT_EQ(sscGemmShard2d(&q, &plan), sscSuccess) << sscGetLastError(nullptr);
  EXPECT_EQ(plan.op, sscGemmOpAllGather);
  EXPECT_EQ(plan.twoD, 1);
  EXPECT_EQ(plan.n, 1024);
  sscGemmShard2dPlan_t unset{};
  unset.size = sizeof(unset);  // no magic
  EXPECT_EQ(sscGemmShard2d(&q, &unset), sscInvalidArgument);
  EXPECT_NE(std::string(sscGetLastError(nullptr)).find("SSC_GEMM_SHARD2D_PLAN_INITIALIZER"),
            std::string::npos);
  q.inter = static_cast<sscLinearParallel_t>(2);
  EXPECT_EQ(sscGemmShard2d(&q, &plan), sscInvalidArgument);
  EXPECT_NE(std::string(sscGetLastError(nullptr)).find("inter"), std::string::npos);
}

// Only rank 0 keeps GoogleTest's printer: print the other ranks' failures here, or a wrong
// answer on rank 2 shows up only as a non-zero exit.
class RankFailures : public testing::EmptyTestEventListener {
  void OnTestPartResult(const testing::TestPartResult& r) override {
    if (r.failed() && g_rank != 0)
      std::fprintf(stderr, "rank %d: %s:%d: %s\n", g_rank, r.file_name() ? r.file_name() : "?",
                   r.line_number(), r.message());
  }
};

}  // namespace

int main(int argc, char** argv) {
  ssc::test::mpiGtestInit(&argc, &argv, &g_rank, &g_n);
  testing::UnitTest::GetInstance()->listeners().Append(new RankFailures);
  if (sscCommInitMpi(MPI_COMM_WORLD, &g_comm) != sscSuccess ||
      sscStreamCreate(&g_stream) != sscSuccess) {
    std::fprintf(stderr, "rank %d: init failed: %s\n", g_rank, sscGetLastError(nullptr));
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const int rc = RUN_ALL_TESTS();
  sscStreamDestroy(g_stream);
  // Collective finalize first: calls with k = 0 or m = 0 do not communicate, so a fast rank
  // could otherwise leave while a peer still makes calls on the communicator (which then fail).
  sscCommFinalize(g_comm);
  sscCommDestroy(g_comm);
  return ssc::test::mpiGtestFinish(rc);
}
