// SPDX-License-Identifier: MIT
// The fused GEMM-collectives on the GPU backend (starscream_ops.h): K ranks (mpirun, one per GPU
// or K MPS partitions of one GPU) run GEMM + reduce-scatter and all-gather + GEMM on cuBLASLt /
// hipBLASLt and compare every rank's output with an fp32 host reference of the same rounded
// inputs. Odd M/N/K (M not a multiple of K ranks, ranks owning one row or none), bf16 and fp16,
// y in the input type or fp32, W stored [N][K] or [K][N], the unfused, chunked and fused variants
// (both forms of the fused all-gather; forced chunk counts and a workspace small enough for many
// chunks; each with waiting kernels and with SSC_GEMM_COPY_ENGINE), and larger shapes where the
// rule itself picks chunks (checked on sampled rows). Rank 0 prints one PASS/FAIL line per case
// with the worst error over all ranks; SKIPPED without a GPU.
//
//   mpirun -np 4 build/bin/gpu_gemm_test        (or tools/emulate/partition-run.sh 4 ...)
//   ... gpu_gemm_test --only 'gemm_rs m=4096'    (the cases whose name contains the text: a
//                                                 failing case alone, e.g. under a profiler)
//   ... gpu_gemm_test --skip ' ce'               (all but the cases whose name contains the text)
//   ... gpu_gemm_test --calls 1 --rows 0         (every case one call, every row checked)
//   STARSCREAM_TIMEOUT=5 ... gpu_gemm_test --missing-rank   (SSC_GEMM_COPY_ENGINE's stream waits
//                                                 and the arrival barrier's released when a
//                                                 rank never calls)
// A failed case also prints, rank by rank, which checked rows were wrong.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "src/kernels/host/reduce.h"
#include "starscream/starscream_ops.h"
#include "tests/gpu/gpu_gemm_faults.h"
#include "tests/gpu/gpu_test_setup.h"
#include "tests/support/half_storage.h"

namespace {

int g_rank = 0, g_nranks = 1;
int g_failures = 0;
std::string g_only;  // --only: run the cases whose name contains this
std::string g_skip;  // --skip: leave out the cases whose name contains this
int g_calls = 0;     // --calls N: every case runs N calls (0: the case's own count)
int g_rows = -1;     // --rows N: check N sampled rows of every case, 0 every row (-1: the case's)
bool g_missingRank = false;  // --missing-rank: only the watchdog's check (runMissingRank)

using ssc::test::fromStorage;
using ssc::test::seededMatrix;

void* toDevice(const void* h, size_t bytes) {
  void* d = nullptr;
  CHECK_GPU(hipMalloc(&d, std::max<size_t>(bytes, 16)));
  if (bytes > 0) CHECK_GPU(hipMemcpy(d, h, bytes, hipMemcpyHostToDevice));
  CHECK_GPU(hipDeviceSynchronize());  // pageable copies may land after hipMemcpy returns
  return d;
}

struct Case {
  bool rs;
  int64_t m, n, k;
  sscDataType_t dtype, out;
  bool kn;
  sscGemmVariant_t variant;
  int chunks;
  size_t workspace;   // 0: default
  int sampleRows;     // 0: check every row, else this many sampled rows (plus the first and last)
  int gathered = 0;   // all-gather: 1 xGathered separate, 2 in place (x at its rows inside it)
  bool bias = false;  // nn.Linear's bias, in y's type (sscGemmArgs_t.bias)
  int calls = 2;      // back to back on the stream before the check
  bool ce = false;    // SSC_GEMM_COPY_ENGINE: the fused forms ordered by stream memory operations
};

// The name --only matches: op, shape, types and the variant and chunks asked for.
std::string caseName(const Case& c) {
  char b[200];
  std::snprintf(b, sizeof(b), "%s m=%lld n=%lld k=%lld %s->%s variant=%d chunks=%d ws=%zu%s",
                c.rs ? "gemm_rs" : "ag_gemm", (long long)c.m, (long long)c.n, (long long)c.k,
                c.dtype == sscBfloat16 ? "bf16" : "fp16", c.out == sscFloat32 ? "fp32" : "same",
                c.variant, c.chunks, c.workspace, c.ce ? " ce" : "");
  return b;
}

// A failed case: each rank in turn says which of the rows it checked were wrong (row of y; an
// all-gather's row also as block q of the row shard, offset within it), so a failure points at
// the chunk and the rank block whose data went wrong.
void reportBadRows(const Case& c, size_t checked, const std::vector<int64_t>& bad, int64_t nans,
                   int64_t own) {
  const int64_t block = (c.m + g_nranks - 1) / g_nranks;
  for (int r = 0; r < g_nranks; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    if (r != g_rank) continue;
    std::string rows;
    char b[64];
    for (size_t i = 0; i < bad.size() && i < 12; ++i) {
      if (c.rs)
        std::snprintf(b, sizeof(b), " %lld", (long long)bad[i]);
      else
        std::snprintf(b, sizeof(b), " %lld(%lld:%lld)", (long long)bad[i],
                      (long long)(bad[i] / block), (long long)(bad[i] % block));
      rows += b;
    }
    if (bad.size() > 12) {
      std::snprintf(b, sizeof(b), " ... %lld", (long long)bad.back());
      rows += b;
    }
    std::printf("  rank %d (owns %lld rows): %zu of %zu checked rows wrong, %lld NaN elements;%s\n",
                g_rank, (long long)own, bad.size(), checked, (long long)nans, rows.c_str());
    std::fflush(stdout);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

void runCase(sscComm_t comm, hipStream_t stream, const Case& c) {
  if (!g_only.empty() && caseName(c).find(g_only) == std::string::npos) return;
  if (!g_skip.empty() && caseName(c).find(g_skip) != std::string::npos) return;
  int64_t first = 0, rows = 0;
  CHECK_SSC(sscGemmRowShard(c.m, g_nranks, g_rank, &first, &rows));
  const uint32_t base = static_cast<uint32_t>(c.m * 1000003 + c.n * 1009 + c.k * 13 + c.kn);
  auto xOf = [&](int r) { return seededMatrix(base + (c.rs ? 7 * r : 0), c.m * c.k, c.dtype); };
  auto wOf = [&](int r) { return seededMatrix(base + 1000 + 7 * r, c.n * c.k, c.dtype); };
  const std::vector<uint16_t> xMine = xOf(g_rank), wMine = wOf(g_rank);
  std::vector<uint16_t> wArg = wMine;
  if (c.kn)
    for (int64_t j = 0; j < c.n; ++j)
      for (int64_t i = 0; i < c.k; ++i) wArg[i * c.n + j] = wMine[j * c.k + i];
  const int64_t xRows = c.rs ? c.m : rows, xFirst = c.rs ? 0 : first;
  void* x = toDevice(xMine.data() + xFirst * c.k, xRows * c.k * 2);
  void* w = toDevice(wArg.data(), wArg.size() * 2);
  const int64_t yRows = c.rs ? rows : c.m;
  const size_t ob = c.out == sscFloat32 ? 4 : 2;
  void* y = nullptr;
  CHECK_GPU(hipMalloc(&y, std::max<size_t>(yRows * c.n * ob, 16)));
  CHECK_GPU(
      hipMemset(y, 0xFF, std::max<size_t>(yRows * c.n * ob, 16)));  // NaNs where nothing lands

  sscGemmConfig_t cfg = SSC_GEMM_CONFIG_INITIALIZER;
  cfg.workspaceBytes = c.workspace;
  sscGemm_t gemm = nullptr;
  CHECK_SSC(sscGemmCreate(comm, &cfg, &gemm));
  sscGemmArgs_t a = SSC_GEMM_ARGS_INITIALIZER;
  a.m = c.m, a.n = c.n, a.k = c.k;
  a.dtype = c.dtype;
  a.outDtype = c.out == c.dtype ? SSC_GEMM_OUT_AS_INPUT : c.out;
  a.x = x, a.w = w, a.y = y;
  void* gathered = nullptr;
  if (c.gathered != 0) {
    CHECK_GPU(hipMalloc(&gathered, std::max<size_t>(c.m * c.k * 2, 16)));
    CHECK_GPU(hipMemset(gathered, 0, std::max<size_t>(c.m * c.k * 2, 16)));
    a.xGathered = gathered;
    if (c.gathered == 2) {  // this rank's rows already in place
      if (rows > 0)
        CHECK_GPU(hipMemcpy(static_cast<char*>(gathered) + first * c.k * 2,
                            xMine.data() + first * c.k, rows * c.k * 2, hipMemcpyHostToDevice));
      CHECK_GPU(hipDeviceSynchronize());
      a.x = static_cast<char*>(gathered) + first * c.k * 2;
    }
  }
  // The bias: the layer's, the same on every rank (reduce-scatter), or this rank's N-slice.
  std::vector<float> biasF(c.bias ? c.n : 0);
  std::vector<uint16_t> biasH;
  for (int64_t j = 0; j < static_cast<int64_t>(biasF.size()); ++j) {
    biasF[j] = 0.25f * static_cast<float>((j * 7 + (c.rs ? 0 : g_rank) * 3) % 11) - 1.0f;
    if (c.out != sscFloat32) {
      biasH.push_back(ssc::test::toStorage(biasF[j], c.out));
      biasF[j] = fromStorage(biasH.back(), c.out);
    }
  }
  void* bias = nullptr;
  if (c.bias)
    bias = c.out == sscFloat32 ? toDevice(biasF.data(), biasF.size() * 4)
                               : toDevice(biasH.data(), biasH.size() * 2);
  a.bias = bias;
  a.flags = (c.kn ? SSC_GEMM_WEIGHT_KN : 0) | (c.ce ? SSC_GEMM_COPY_ENGINE : 0);
  a.variant = c.variant;
  a.chunks = c.chunks;
  sscGemmVariant_t variant = sscGemmAuto;
  int chunks = -1;
  CHECK_SSC(sscGemmQueryPlan(gemm, c.rs ? sscGemmOpReduceScatter : sscGemmOpAllGather, &a, &variant,
                             &chunks));
  // At least twice: the second call reuses the workspace slots and flags of the first.
  const int calls = g_calls > 0 ? g_calls : c.calls;
  for (int rep = 0; rep < calls; ++rep)
    CHECK_SSC(c.rs ? sscGemmReduceScatter(gemm, &a, stream) : sscAllGatherGemm(gemm, &a, stream));
  CHECK_GPU(hipStreamSynchronize(stream));
  std::vector<unsigned char> got(yRows * c.n * ob);
  if (!got.empty()) CHECK_GPU(hipMemcpy(got.data(), y, got.size(), hipMemcpyDeviceToHost));

  const double eps = c.out == sscFloat32 ? 1e-6 : c.out == sscFloat16 ? 1.0 / 2048 : 1.0 / 256;
  const int terms = c.rs ? g_nranks : 1;
  std::vector<std::vector<uint16_t>> xs, ws;
  for (int q = 0; q < terms; ++q) {
    xs.push_back(c.rs ? xOf(q) : xMine);
    ws.push_back(c.rs ? wOf(q) : wMine);
  }
  std::vector<int64_t> check;
  const int sampleRows = g_rows >= 0 ? g_rows : c.sampleRows;
  if (sampleRows == 0 || yRows <= sampleRows + 2) {
    for (int64_t i = 0; i < yRows; ++i) check.push_back(i);
  } else {
    std::mt19937 rng(99 + g_rank);
    check = {0, yRows - 1};
    for (int s = 0; s < sampleRows; ++s)
      check.push_back(std::uniform_int_distribution<int64_t>(0, yRows - 1)(rng));
  }
  std::sort(check.begin(), check.end());
  check.erase(std::unique(check.begin(), check.end()), check.end());
  double worst = 0;              // error / tolerance
  std::vector<int64_t> badRows;  // rows of y with an element past its tolerance
  int64_t nans = 0;
  for (int64_t i : check) {
    bool bad = false;
    for (int64_t j = 0; j < c.n; ++j) {
      const int64_t row = c.rs ? first + i : i;
      double val = 0, mag = 0;
      for (int q = 0; q < terms; ++q)
        for (int64_t t = 0; t < c.k; ++t) {
          const double term = double(fromStorage(xs[q][row * c.k + t], c.dtype)) *
                              fromStorage(ws[q][j * c.k + t], c.dtype);
          val += term;
          mag += std::fabs(term);
        }
      if (c.bias) {  // once, after the sum (one more rounding to y's type: covered by the + 2)
        val += biasF[j];
        mag += std::fabs(biasF[j]);
      }
      const size_t idx = static_cast<size_t>(i * c.n + j);
      const double v = ob == 4
                           ? reinterpret_cast<const float*>(got.data())[idx]
                           : fromStorage(reinterpret_cast<const uint16_t*>(got.data())[idx], c.out);
      const double tol = mag * eps * (terms + 2) + 1e-5;
      const double e = std::fabs(v - val) / tol;
      worst = std::isfinite(e) ? std::max(worst, e) : 1e30;
      bad = bad || !(e <= 1.0);
      nans += std::isfinite(v) ? 0 : 1;
    }
    if (bad) badRows.push_back(i);
  }
  if (gathered != nullptr) {  // the gathered X, bit for bit
    std::vector<uint16_t> gx(c.m * c.k);
    if (!gx.empty())
      CHECK_GPU(hipMemcpy(gx.data(), gathered, gx.size() * 2, hipMemcpyDeviceToHost));
    if (!std::equal(gx.begin(), gx.end(), xMine.begin())) worst = 1e30;
    CHECK_GPU(hipFree(gathered));
  }
  double all = 0;
  MPI_Allreduce(&worst, &all, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  const bool ok = all <= 1.0;
  if (!ok && g_rank == 0) ++g_failures;  // every rank knows the verdict (all): count it once
  if (!ok) reportBadRows(c, check.size(), badRows, nans, rows);
  if (g_rank == 0)
    std::printf(
        "%s K=%d %s m=%lld n=%lld k=%lld %s->%s%s%s%s variant=%d(ran %s x%d) ws=%zu: worst "
        "error/tolerance %.3g\n",
        ok ? "PASS" : "FAIL", g_nranks, c.rs ? "gemm_rs" : "ag_gemm", (long long)c.m,
        (long long)c.n, (long long)c.k, c.dtype == sscBfloat16 ? "bf16" : "fp16",
        c.out == sscFloat32 ? "fp32" : "same", c.kn ? " KN" : "",
        c.gathered == 1   ? " xGathered"
        : c.gathered == 2 ? " in-place"
                          : "",
        c.bias ? " bias" : "", c.variant,
        variant == sscGemmFused     ? "fused"
        : variant == sscGemmChunked ? "chunked"
                                    : "unfused",
        chunks, c.workspace, all);
  CHECK_SSC(sscGemmDestroy(gemm));
  CHECK_GPU(hipFree(x));
  CHECK_GPU(hipFree(w));
  CHECK_GPU(hipFree(y));
  if (bias != nullptr) CHECK_GPU(hipFree(bias));
}

}  // namespace

int main(int argc, char** argv) {
  if (!startGpuRank(&argc, &argv, "gpu_gemm_test", &g_rank, &g_nranks)) return 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--only" && i + 1 < argc) {
      g_only = argv[++i];
    } else if (arg == "--skip" && i + 1 < argc) {
      g_skip = argv[++i];
    } else if (arg == "--calls" && i + 1 < argc) {
      g_calls = std::atoi(argv[++i]);
    } else if (arg == "--rows" && i + 1 < argc) {
      g_rows = std::atoi(argv[++i]);
    } else if (arg == "--missing-rank") {
      g_missingRank = true;
    } else {
      if (g_rank == 0)
        std::fprintf(stderr,
                     "usage: gpu_gemm_test [--only TEXT] [--skip TEXT] [--calls N] [--rows N] "
                     "[--missing-rank]\n");
      MPI_Finalize();
      return 2;
    }
  }
  sscComm_t comm = newMpiComm(g_rank, g_nranks);
  hipStream_t stream = nullptr;
  CHECK_GPU(hipStreamCreateWithFlags(&stream, hipStreamNonBlocking));
  if (g_missingRank && g_nranks > 1) {
    g_failures += runMissingRank(comm, stream, g_rank, g_nranks);
    g_only = "(no case has this name)";  // nothing else
  }
  struct Shape {
    int64_t m, n, k;
  };
  const Shape odd[] = {{1, 1, 1},   {7, 5, 3},       {37, 29, 19},
                       {13, 1, 40}, {301, 257, 129}, {1000, 96, 200}};
  int i = 0;
  for (bool rs : {true, false})
    for (const Shape& s : odd)
      for (sscDataType_t t : {sscBfloat16, sscFloat16}) {
        const int mode = i++ % 4;
        const sscDataType_t out = mode == 1 ? sscFloat32 : t;
        runCase(comm, stream, {rs, s.m, s.n, s.k, t, out, mode == 2, sscGemmAuto, 0, 0, 0});
        runCase(comm, stream, {rs, s.m, s.n, s.k, t, out, mode == 2, sscGemmChunked, 3, 0, 0});
        // A workspace of a few rows per rank: many chunks, two slots alternating.
        const size_t row = static_cast<size_t>(rs ? s.n * (out == sscFloat32 ? 4 : 2) : s.k * 2);
        runCase(comm, stream,
                {rs, s.m, s.n, s.k, t, out, mode == 2, sscGemmChunked, 0,
                 (2 * g_nranks + 1) * row * 5, 0});
        // The fused variant, with waiting kernels and with SSC_GEMM_COPY_ENGINE (stream waits).
        for (bool ce : {false, true}) {
          if (rs) {  // one chunk, three, and many through two reused slots
            runCase(comm, stream,
                    {rs, s.m, s.n, s.k, t, out, mode == 2, sscGemmFused, 0, 0, 0, 0, false, 2, ce});
            runCase(comm, stream,
                    {rs, s.m, s.n, s.k, t, out, mode == 2, sscGemmFused, 3, 0, 0, 0, false, 2, ce});
            runCase(comm, stream,
                    {rs, s.m, s.n, s.k, t, out, mode == 2, sscGemmFused, 0,
                     (2 * g_nranks + 1) * row * 5, 0, 0, false, 2, ce});
          } else {  // push + one GEMM, and one GEMM per source rank in place
            runCase(comm, stream,
                    {rs, s.m, s.n, s.k, t, out, mode == 2, sscGemmFused, 0, 0, 0, 0, false, 2, ce});
            runCase(comm, stream,
                    {rs, s.m, s.n, s.k, t, out, mode == 2, sscGemmFused, 2, 0, 0, 0, false, 2, ce});
          }
        }
      }
  // The gathered X returned as well, separately and in place.
  for (int gathered : {1, 2}) {
    runCase(
        comm, stream,
        {false, 37, 29, 19, sscBfloat16, sscBfloat16, false, sscGemmChunked, 3, 0, 0, gathered});
    runCase(comm, stream,
            {false, 1000, 96, 200, sscFloat16, sscFloat32, false, sscGemmAuto, 0, 0, 0, gathered});
    runCase(comm, stream,
            {false, 37, 29, 19, sscBfloat16, sscBfloat16, false, sscGemmFused, 0, 0, 0, gathered});
    runCase(comm, stream,
            {false, 1000, 96, 200, sscFloat16, sscFloat32, true, sscGemmFused, 2, 0, 0, gathered});
    runCase(comm, stream,
            {false, 1000, 96, 200, sscFloat16, sscFloat32, true, sscGemmFused, 0, 0, 0, gathered,
             false, 2, true});
  }
  // nn.Linear's bias through every variant of both ops, fp32 y and W as [K][N], and an empty
  // sum (k = 0: y is the bias).
  for (bool rs : {true, false})
    for (sscGemmVariant_t variant : {sscGemmUnfused, sscGemmChunked, sscGemmFused}) {
      const int chunks = variant == sscGemmChunked ? 3 : 0;
      runCase(comm, stream,
              {rs, 301, 257, 129, sscBfloat16, sscBfloat16, false, variant, chunks, 0, 0, 0, true});
      runCase(comm, stream,
              {rs, 37, 29, 19, sscFloat16, sscFloat32, true, variant, chunks, 0, 0, 0, true});
      if (variant == sscGemmFused)
        runCase(comm, stream,
                {rs, 301, 257, 129, sscBfloat16, sscBfloat16, false, variant, rs ? 0 : 2, 0, 0, 0,
                 true, 2, true});
    }
  for (bool rs : {true, false})
    runCase(comm, stream,
            {rs, 5, 8, 0, sscBfloat16, sscBfloat16, false, sscGemmAuto, 0, 0, 0, 0, true});
  // Large shapes under AUTO and forced fused, rows sampled. AUTO runs what the rule estimates
  // faster (autoPicksFused): at an H200's rates, the all-gathers 4099 x 1030 x 8192 fused per
  // rank at K = 2 to 8, the reduce-scatter unfused.
  runCase(comm, stream,
          {true, 4099, 8192, 136, sscBfloat16, sscBfloat16, false, sscGemmAuto, 0, 0, 24});
  runCase(comm, stream,
          {true, 4099, 8192, 136, sscBfloat16, sscBfloat16, false, sscGemmFused, 0, 0, 24});
  runCase(comm, stream,
          {true, 2053, 1031, 257, sscFloat16, sscFloat32, true, sscGemmFused, 5, 0, 24});
  runCase(comm, stream,
          {false, 4099, 1030, 8192, sscBfloat16, sscBfloat16, false, sscGemmAuto, 0, 0, 24});
  runCase(comm, stream,
          {false, 2048, 512, 8191, sscFloat16, sscFloat32, true, sscGemmAuto, 0, 0, 24});
  runCase(comm, stream,
          {false, 4099, 1030, 8192, sscBfloat16, sscBfloat16, false, sscGemmFused, 0, 0, 24});
  runCase(comm, stream,
          {false, 2048, 512, 8191, sscFloat16, sscFloat32, true, sscGemmFused, 2, 0, 24});
  // The same with SSC_GEMM_COPY_ENGINE, 20 calls back to back (the stream waits' flags reused).
  runCase(comm, stream,
          {true, 4099, 8192, 136, sscBfloat16, sscBfloat16, false, sscGemmFused, 0, 0, 24, 0, false,
           20, true});
  runCase(comm, stream,
          {true, 2053, 1031, 257, sscFloat16, sscFloat32, true, sscGemmFused, 5, 0, 24, 0, false, 2,
           true});
  runCase(comm, stream,
          {false, 4099, 1030, 8192, sscBfloat16, sscBfloat16, false, sscGemmFused, 0, 0, 24, 0,
           false, 2, true});
  runCase(comm, stream,
          {false, 4096, 1024, 8192, sscBfloat16, sscBfloat16, false, sscGemmFused, 8, 0, 24, 0,
           false, 20, true});
  runCase(comm, stream,
          {false, 2048, 512, 8191, sscFloat16, sscFloat32, true, sscGemmFused, 2, 0, 24, 0, false,
           2, true});
  // The shapes whose overlapped forms hung at K = 8 MPS partitions of an H200 (docs/gemm.md: a
  // vendor GEMM on a side stream beside a kernel waiting on the peers; the fused reduce-scatter of
  // llama70b.o and gate_up at M = 4096 in 4 and 3 chunks, the chunked all-gather of
  // llama70b.qkv), 20 calls back to back each: a hang here fails the run at STARSCREAM_TIMEOUT.
  runCase(comm, stream,
          {true, 4096, 8192, 128, sscBfloat16, sscBfloat16, false, sscGemmFused, 4, 0, 8, 0, false,
           20});
  runCase(comm, stream,
          {true, 4096, 7168, 1024, sscBfloat16, sscBfloat16, false, sscGemmFused, 3, 0, 8, 0, false,
           20});
  runCase(comm, stream,
          {false, 4096, 160, 8192, sscBfloat16, sscBfloat16, false, sscGemmChunked, 4, 0, 8, 0,
           false, 20});
  // The per-rank all-gather with its peers batched (blocks below 512 rows), 20 calls back to back
  // (the batch's two pointer tables reused), with waiting kernels and with copy engines.
  runCase(comm, stream,
          {false, 1000, 96, 200, sscBfloat16, sscBfloat16, false, sscGemmFused, 8, 0, 24, 0, false,
           20});
  runCase(comm, stream,
          {false, 1000, 96, 200, sscFloat16, sscFloat32, true, sscGemmFused, 8, 0, 24, 0, false, 20,
           true});
  if (std::string("capture").find(g_only) != std::string::npos &&
      (g_skip.empty() || std::string("capture").find(g_skip) == std::string::npos))
    g_failures += runCaptureChecks(comm, stream, g_rank, g_nranks);
  // Chunked with a scratch (one GEMM per chunk), rows sampled.
  runCase(comm, stream,
          {true, 4099, 8192, 136, sscBfloat16, sscBfloat16, false, sscGemmChunked, 5, 0, 24});
  runCase(comm, stream,
          {false, 4099, 1030, 8192, sscBfloat16, sscBfloat16, false, sscGemmChunked, 5, 0, 24});
  CHECK_GPU(hipStreamDestroy(stream));
  if (g_missingRank) {  // its last check leaves the communicator failed on purpose
    (void)sscCommFinalize(comm);
    (void)sscCommDestroy(comm);
  } else {
    CHECK_SSC(sscCommFinalize(comm));
    CHECK_SSC(sscCommDestroy(comm));
  }
  int failures = 0;
  MPI_Allreduce(&g_failures, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0)
    std::printf("%s: %d case(s) failed\n", failures == 0 ? "ALL PASS" : "FAILED", failures);
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}
