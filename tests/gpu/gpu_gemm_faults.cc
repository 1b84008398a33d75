// SPDX-License-Identifier: MIT
// gpu_gemm_test's checks of calls that cannot complete as made (gpu_gemm_faults.h): a rank that
// never calls, and calls under stream capture.
#include "tests/gpu/gpu_gemm_faults.h"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "starscream/starscream_ops.h"
#include "tests/gpu/gpu_test_setup.h"
#include "tests/support/half_storage.h"

namespace {

int g_rank = 0, g_nranks = 1;  // MPI_COMM_WORLD's, as the caller passes them

using ssc::test::fromStorage;
using ssc::test::seededMatrix;

void* toDevice(const void* h, size_t bytes) {
  void* d = nullptr;
  CHECK_GPU(hipMalloc(&d, std::max<size_t>(bytes, 16)));
  if (bytes > 0) CHECK_GPU(hipMemcpy(d, h, bytes, hipMemcpyHostToDevice));
  CHECK_GPU(hipDeviceSynchronize());  // pageable copies may land after hipMemcpy returns
  return d;
}

// On every rank but `missing`: `call` (one the missing rank never makes), a wait for the stream
// (a hang there is the defect), and the verdict: with `queued` the call must be accepted and the
// next one fail with sscTimeout naming the missing rank (a stream wait the watchdog released);
// otherwise the call may fail at once (a host-side agreement) or the next one, with any error
// naming it. Then every rank meets. Returns this rank's failures.
int expectMissing(const char* label, int missing, const std::function<sscResult_t()>& call,
                  hipStream_t stream, bool queued) {
  int failures = 0;
  if (g_rank != missing) {
    const double t0 = MPI_Wtime();
    sscResult_t r = call();
    std::string msg = sscGetLastError(nullptr);
    if (queued) CHECK_SSC(r);
    CHECK_GPU(hipStreamSynchronize(stream));  // a hang here is the defect
    const double waited = MPI_Wtime() - t0;
    if (r == sscSuccess) {
      r = call();
      msg = sscGetLastError(nullptr);
    }
    const std::string who = std::to_string(missing);
    const bool named = msg.find("rank " + who) != std::string::npos ||
                       (!queued && msg.find("rank(s) " + who) != std::string::npos);
    const bool ok = named && (queued ? r == sscTimeout : r != sscSuccess);
    std::printf("%s: missing rank%s, rank %d: after %.1f s: %s (%s)\n", ok ? "PASS" : "FAIL", label,
                g_rank, waited, sscGetErrorString(r), msg.c_str());
    failures += ok ? 0 : 1;
  }
  std::fflush(stdout);
  MPI_Barrier(MPI_COMM_WORLD);
  return failures;
}

}  // namespace

// --missing-rank (run with a small STARSCREAM_TIMEOUT): the last rank skips one
// SSC_GEMM_COPY_ENGINE all-gather that its peers make. Their stream waits have no timeout of
// their own; the context's watchdog must release them after STARSCREAM_TIMEOUT, so the stream
// completes, and the next call must fail with sscTimeout naming the missing rank. Returns the
// failures of this rank.
int runMissingRank(sscComm_t comm, hipStream_t stream, int rank, int nranks) {
  g_rank = rank;
  g_nranks = nranks;
  sscGemm_t gemm = nullptr;
  CHECK_SSC(sscGemmCreate(comm, nullptr, &gemm));
  const int64_t m = 64 * g_nranks, n = 32, k = 64;
  void *x = nullptr, *w = nullptr, *y = nullptr;
  CHECK_GPU(hipMalloc(&x, m * k * 2));  // all m rows: the reduce-scatter's x (the all-gather's: 64)
  CHECK_GPU(hipMalloc(&w, n * k * 2));
  CHECK_GPU(hipMalloc(&y, m * n * 2));
  CHECK_GPU(hipMemset(x, 0, m * k * 2));
  CHECK_GPU(hipMemset(w, 0, n * k * 2));
  CHECK_GPU(hipDeviceSynchronize());
  sscGemmArgs_t a = SSC_GEMM_ARGS_INITIALIZER;
  a.m = m, a.n = n, a.k = k;
  a.x = x, a.w = w, a.y = y;
  a.variant = sscGemmFused;
  a.chunks = g_nranks;  // the per-rank form: every rank waits for each peer's rows
  a.flags = SSC_GEMM_COPY_ENGINE;
  CHECK_SSC(sscAllGatherGemm(gemm, &a, stream));  // every rank: the flags start in step
  CHECK_GPU(hipStreamSynchronize(stream));
  MPI_Barrier(MPI_COMM_WORLD);
  const int missing = g_nranks - 1;
  int failures = expectMissing(
      "", missing, [&] { return sscAllGatherGemm(gemm, &a, stream); }, stream, true);
  CHECK_SSC(sscGemmDestroy(gemm));
  // The same with an unfused reduce-scatter, last: on plain buffers the core agrees on each
  // call's buffers on the host, so the call itself fails after STARSCREAM_TIMEOUT; were it
  // queued, its arrival barrier (STARSCREAM_GEMM_BARRIER, on by itself where ranks share a GPU's
  // SMs) or the core's kernel would time out and the next call fail. Either way: no hang, and an
  // error naming the missing rank. The communicator is left failed.
  CHECK_SSC(sscGemmCreate(comm, nullptr, &gemm));
  a.variant = sscGemmUnfused;
  a.chunks = 0;
  a.flags = 0;
  CHECK_SSC(sscGemmReduceScatter(gemm, &a, stream));  // every rank: the workspace mapped alike
  CHECK_GPU(hipStreamSynchronize(stream));
  MPI_Barrier(MPI_COMM_WORLD);
  failures += expectMissing(
      " (unfused)", missing, [&] { return sscGemmReduceScatter(gemm, &a, stream); }, stream, false);
  (void)sscGemmDestroy(gemm);  // the communicator has failed: destroy may say so
  CHECK_GPU(hipFree(x));
  CHECK_GPU(hipFree(w));
  CHECK_GPU(hipFree(y));
  return failures;
}

// Stream capture (docs/gemm.md "Under stream capture"): AUTO, captured on a shape where,
// uncaptured, the rule runs a fused form (an all-gather whose X, 8192 x 8192, outweighs W many
// times: the per-rank form at any K from 2 to 8 at an H200's rates; sscGemmQueryPlan reports what
// it runs here), runs unfused and its replays give the result of an uncaptured unfused call; a
// forced fused call under capture is refused before anything is queued. Returns the failures of
// this rank.
int runCaptureChecks(sscComm_t comm, hipStream_t stream, int rank, int nranks) {
  g_rank = rank;
  g_nranks = nranks;
  const int64_t m = 8192, n = 64, k = 8192;
  int64_t first = 0, rows = 0;
  CHECK_SSC(sscGemmRowShard(m, g_nranks, g_rank, &first, &rows));
  const std::vector<uint16_t> xh = seededMatrix(700 + g_rank, rows * k, sscBfloat16);
  const std::vector<uint16_t> wh = seededMatrix(800 + g_rank, n * k, sscBfloat16);
  void* x = toDevice(xh.data(), xh.size() * 2);
  void* w = toDevice(wh.data(), wh.size() * 2);
  void* y = nullptr;
  CHECK_GPU(hipMalloc(&y, m * n * 2));
  sscGemm_t gemm = nullptr;
  CHECK_SSC(sscGemmCreate(comm, nullptr, &gemm));
  sscGemmArgs_t a = SSC_GEMM_ARGS_INITIALIZER;
  a.m = m, a.n = n, a.k = k;
  a.x = x, a.w = w, a.y = y;
  a.variant = sscGemmUnfused;  // the reference, and the GEMM shape probed outside the capture
  CHECK_SSC(sscAllGatherGemm(gemm, &a, stream));
  CHECK_GPU(hipStreamSynchronize(stream));
  std::vector<uint16_t> want(m * n), got(m * n);
  CHECK_GPU(hipMemcpy(want.data(), y, want.size() * 2, hipMemcpyDeviceToHost));
  a.variant = sscGemmAuto;
  sscGemmVariant_t uncaptured = sscGemmAuto;
  int chunks = 0;
  CHECK_SSC(sscGemmQueryPlan(gemm, sscGemmOpAllGather, &a, &uncaptured, &chunks));
  CHECK_GPU(hipMemset(y, 0xFF, m * n * 2));
  CHECK_GPU(hipDeviceSynchronize());
  MPI_Barrier(MPI_COMM_WORLD);
  hipGraph_t graph = nullptr;
  CHECK_GPU(hipStreamBeginCapture(stream, hipStreamCaptureModeGlobal));
  const sscResult_t inCapture = sscAllGatherGemm(gemm, &a, stream);
  CHECK_GPU(hipStreamEndCapture(stream, &graph));
  hipGraphExec_t exec = nullptr;
  if (inCapture == sscSuccess) {
    CHECK_GPU(hipGraphInstantiateWithFlags(&exec, graph, 0));
    for (int rep = 0; rep < 3; ++rep) CHECK_GPU(hipGraphLaunch(exec, stream));
    CHECK_GPU(hipStreamSynchronize(stream));
    CHECK_GPU(hipMemcpy(got.data(), y, got.size() * 2, hipMemcpyDeviceToHost));
  }
  int64_t wrong = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = fromStorage(got[i], sscBfloat16), e = fromStorage(want[i], sscBfloat16);
    if (!(std::fabs(g - e) <= 1.0 / 128 * (std::fabs(e) + 1.0))) ++wrong;
  }
  int failures = inCapture == sscSuccess && wrong == 0 ? 0 : 1;
  if (exec != nullptr) CHECK_GPU(hipGraphExecDestroy(exec));
  CHECK_GPU(hipGraphDestroy(graph));
  // A forced fused call under capture: refused, nothing queued (the capture ends clean).
  a.variant = sscGemmFused;
  a.chunks = g_nranks;
  CHECK_GPU(hipStreamBeginCapture(stream, hipStreamCaptureModeGlobal));
  const sscResult_t forced = sscAllGatherGemm(gemm, &a, stream);
  const std::string why = sscGetLastError(nullptr);
  graph = nullptr;
  const hipError_t ended = hipStreamEndCapture(stream, &graph);
  if (graph != nullptr) CHECK_GPU(hipGraphDestroy(graph));
  const bool refused =
      g_nranks == 1 || (forced == sscInvalidUsage && why.find("captured") != std::string::npos);
  failures += refused && ended == hipSuccess ? 0 : 1;
  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0)
    std::printf(
        "%s K=%d capture: AUTO (uncaptured: variant %d x %d) captured and replayed 3 times: %s, "
        "%lld of %lld elements off the unfused result; forced fused under capture: %s\n",
        all == 0 ? "PASS" : "FAIL", g_nranks, uncaptured, chunks, sscGetErrorString(inCapture),
        (long long)wrong, (long long)got.size(), refused ? "refused" : why.c_str());
  CHECK_SSC(sscGemmDestroy(gemm));
  CHECK_GPU(hipFree(x));
  CHECK_GPU(hipFree(w));
  CHECK_GPU(hipFree(y));
  return failures;
}
