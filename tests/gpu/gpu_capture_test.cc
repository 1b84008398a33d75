// SPDX-License-Identifier: MIT
// Zero-copy collectives inside CUDA graph capture (docs/zero-copy.md). For all-reduce,
// all-gather and reduce-scatter, at an LL-or-small size and a bulk size, on plain (cudaMalloc)
// and registered (sscMemAlloc + sscCommRegister) buffers, in place and out of place: the call is
// captured into a graph (global capture mode, as PyTorch captures), which must take the
// symmetric (zero-copy) path at capture; the graph is replayed several times with new data each
// time, each replay followed by an eager call of the same collective on other buffers of the
// same communicator (device-counted barriers and LL rounds must interleave), every result
// checked; then the graph is destroyed, the buffers freed, and more calls run on new buffers
// (often at the same addresses: nothing stale may be used). Then the timing (skipped with
// --no-time): a K-rank all-reduce at 8 B, 1 MiB and 64 MiB on plain buffers, per call, slowest
// rank: graph replay (zero-copy), eager calls, and a graph of the FIFO path, which is what every
// captured call took before (the model's choice without zero-copy, forced on the communicator).
//
//   mpirun -np K build/bin/gpu_capture_test [--no-time]   (tools/emulate/partition-run.sh)
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "src/comm/comm.h"
#include "src/device/gpu/gpu_symmetric.h"
#include "src/platform/gpu_runtime.h"
#include "starscream/starscream.h"
#include "tests/gpu/gpu_test_setup.h"
#include "tuner/select.h"

namespace {

int g_rank = 0, g_nranks = 1, g_failures = 0, g_checks = 0, g_cases = 0, g_zeroCopyCases = 0;

void expect(bool ok, const std::string& what) {
  ++g_checks;
  if (ok) return;
  ++g_failures;
  if (g_failures <= 20) std::fprintf(stderr, "rank %d FAIL %s\n", g_rank, what.c_str());
}

#if defined(SSC_GPU_IS_CUDA)
enum class Coll { kAllReduce, kAllGather, kReduceScatter };
const char* nameOf(Coll c) {
  return c == Coll::kAllReduce   ? "all-reduce"
         : c == Coll::kAllGather ? "all-gather"
                                 : "reduce-scatter";
}

// Exact in float32: small integers.
float valueOf(int rank, int rep, size_t i) {
  return static_cast<float>((rank + 1) * (rep + 3) + static_cast<int>(i % 11));
}

// One case's buffers: `count` is the API's count (per-rank block for all-gather/reduce-scatter).
struct Bufs {
  Coll coll;
  size_t count;
  bool registered, inPlace;
  char* alloc[2] = {nullptr, nullptr};
  void* handle[2] = {nullptr, nullptr};
  float* in = nullptr;
  float* out = nullptr;
  size_t inElems() const { return coll == Coll::kReduceScatter ? count * g_nranks : count; }
  size_t outElems() const { return coll == Coll::kAllGather ? count * g_nranks : count; }
};

char* allocate(sscComm_t comm, size_t bytes, bool registered, void** handle) {
  void* p = nullptr;
  if (registered) {
    CHECK_SSC(sscMemAlloc(&p, bytes));
    CHECK_SSC(sscCommRegister(comm, p, bytes, handle));
  } else {
    CHECK_GPU(cudaMalloc(&p, bytes));
  }
  return static_cast<char*>(p);
}

Bufs makeBufs(sscComm_t comm, Coll coll, size_t count, bool registered, bool inPlace) {
  Bufs b{coll, count, registered, inPlace};
  const size_t big = std::max(b.inElems(), b.outElems()) * 4;
  b.alloc[0] = allocate(comm, big, registered, &b.handle[0]);
  float* base = reinterpret_cast<float*>(b.alloc[0]);
  if (inPlace) {
    b.in = b.out = base;
    if (coll == Coll::kReduceScatter) b.out = base + g_rank * count;
    if (coll == Coll::kAllGather) b.in = base + g_rank * count;
  } else {
    b.alloc[1] = allocate(comm, big, registered, &b.handle[1]);
    b.in = base;
    b.out = reinterpret_cast<float*>(b.alloc[1]);
  }
  return b;
}

void freeBufs(sscComm_t comm, Bufs* b) {
  for (int k = 0; k < 2; ++k) {
    if (b->alloc[k] == nullptr) continue;
    if (b->registered) {
      CHECK_SSC(sscCommDeregister(comm, b->handle[k]));
      CHECK_SSC(sscMemFree(b->alloc[k]));
    } else {
      CHECK_GPU(cudaFree(b->alloc[k]));
    }
    b->alloc[k] = nullptr;
  }
}

void fill(const Bufs& b, int rep, cudaStream_t s) {
  std::vector<float> host(b.inElems());
  for (size_t i = 0; i < host.size(); ++i) host[i] = valueOf(g_rank, rep, i);
  CHECK_GPU(cudaMemcpyAsync(b.in, host.data(), host.size() * 4, cudaMemcpyHostToDevice, s));
  CHECK_GPU(cudaStreamSynchronize(s));  // host vector goes out of scope
}

sscResult_t issue(sscComm_t comm, const Bufs& b, cudaStream_t s) {
  switch (b.coll) {
    case Coll::kAllReduce: return sscAllReduce(b.in, b.out, b.count, sscFloat32, sscSum, comm, s);
    case Coll::kAllGather: return sscAllGather(b.in, b.out, b.count, sscFloat32, comm, s);
    default: return sscReduceScatter(b.in, b.out, b.count, sscFloat32, sscSum, comm, s);
  }
}

void check(sscComm_t comm, const Bufs& b, int rep, const std::string& what) {
  sscResult_t async = sscSuccess;
  CHECK_SSC(sscCommGetAsyncError(comm, &async));
  expect(async == sscSuccess, what + ": communicator error: " + sscGetLastError(comm));
  std::vector<float> got(b.outElems());
  CHECK_GPU(cudaMemcpy(got.data(), b.out, got.size() * 4, cudaMemcpyDeviceToHost));
  size_t wrong = 0, first = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    float want = 0;
    if (b.coll == Coll::kAllGather) {
      want = valueOf(static_cast<int>(i / b.count), rep, i % b.count);
    } else {
      const size_t at = b.coll == Coll::kReduceScatter ? g_rank * b.count + i : i;
      for (int q = 0; q < g_nranks; ++q) want += valueOf(q, rep, at);
    }
    if (got[i] != want && wrong++ == 0) first = i;
  }
  expect(wrong == 0, what + ": " + std::to_string(wrong) + " wrong elements, first at " +
                         std::to_string(first));
}

void oneCase(sscComm_t comm, cudaStream_t s, Coll coll, size_t count, bool registered,
             bool inPlace) {
  const std::string tag = std::string(nameOf(coll)) + " count " + std::to_string(count) +
                          (registered ? " registered" : " plain") + (inPlace ? " in place" : "");
  Bufs g = makeBufs(comm, coll, count, registered, inPlace);
  Bufs e = makeBufs(comm, coll, count, registered, inPlace);
  // What an eager call of this shape takes once its buffers are known (the planner may pick a
  // FIFO algorithm for some shapes): the captured call must take the same. The graph's own
  // buffers are new to the communicator at capture (their exports are confirmed then).
  for (int k = 0; k < 2; ++k) CHECK_SSC(issue(comm, e, s));
  const uint64_t eagerBefore = ssc::gpu::symmetricLaunches();
  CHECK_SSC(issue(comm, e, s));
  const uint64_t eagerZeroCopy = ssc::gpu::symmetricLaunches() - eagerBefore;
  CHECK_GPU(cudaStreamSynchronize(s));
  expect(eagerZeroCopy == 1 || coll != Coll::kAllReduce,
         tag + ": the eager all-reduce did not take zero-copy");
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  const uint64_t before = ssc::gpu::symmetricLaunches();
  CHECK_GPU(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  const sscResult_t r = issue(comm, g, s);
  CHECK_GPU(cudaStreamEndCapture(s, &graph));
  expect(r == sscSuccess, tag + ": captured call failed: " + sscGetLastError(comm));
  const uint64_t capturedZeroCopy = ssc::gpu::symmetricLaunches() - before;
  expect(capturedZeroCopy == eagerZeroCopy,
         tag + ": the captured call took " + (capturedZeroCopy ? "zero-copy" : "the FIFOs") +
             ", an eager one " + (eagerZeroCopy ? "zero-copy" : "the FIFOs"));
  g_zeroCopyCases += capturedZeroCopy == 1;
  ++g_cases;
  CHECK_GPU(cudaGraphInstantiate(&exec, graph, 0));
  for (int rep = 0; rep < 4; ++rep) {
    fill(g, rep, s);
    fill(e, rep + 10, s);
    CHECK_GPU(cudaGraphLaunch(exec, s));
    expect(issue(comm, e, s) == sscSuccess, tag + ": eager call failed");
    CHECK_GPU(cudaStreamSynchronize(s));
    check(comm, g, rep, tag + " replay " + std::to_string(rep));
    check(comm, e, rep + 10, tag + " eager after replay " + std::to_string(rep));
  }
  CHECK_GPU(cudaGraphExecDestroy(exec));
  CHECK_GPU(cudaGraphDestroy(graph));
  CHECK_GPU(cudaStreamSynchronize(s));
  // The runtime releases the graph's user object (which unpins the peers' mappings) on a thread
  // of its own, maybe a moment after the destroy; a mapping still pinned when its owner posts a
  // new allocation at the same address fails to open (the call falls back, still right).
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  MPI_Barrier(MPI_COMM_WORLD);
  freeBufs(comm, &g);
  freeBufs(comm, &e);
  Bufs f = makeBufs(comm, coll, count, registered, inPlace);
  for (int rep = 20; rep < 23; ++rep) {
    fill(f, rep, s);
    expect(issue(comm, f, s) == sscSuccess, tag + ": call on new buffers failed");
    CHECK_GPU(cudaStreamSynchronize(s));
    check(comm, f, rep, tag + " new buffers after the graph, call " + std::to_string(rep));
  }
  freeBufs(comm, &f);
}

// A graph of `n` all-reduces of `count` floats, replayed `reps` times after one warm-up replay.
double timeGraph(sscComm_t comm, cudaStream_t s, float* in, float* out, size_t count, int n,
                 int reps) {
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CHECK_GPU(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  for (int k = 0; k < n; ++k) CHECK_SSC(sscAllReduce(in, out, count, sscFloat32, sscSum, comm, s));
  CHECK_GPU(cudaStreamEndCapture(s, &graph));
  CHECK_GPU(cudaGraphInstantiate(&exec, graph, 0));
  CHECK_GPU(cudaGraphLaunch(exec, s));
  const double us = eventTimeUs(
      s, n * reps,
      [&] {
        for (int r = 0; r < reps; ++r) CHECK_GPU(cudaGraphLaunch(exec, s));
      },
      g_rank);
  CHECK_GPU(cudaStreamSynchronize(s));
  CHECK_GPU(cudaGraphExecDestroy(exec));
  CHECK_GPU(cudaGraphDestroy(graph));
  return us;
}

void timing(sscComm_t comm, cudaStream_t s) {
  struct Row {
    size_t bytes;
    double graph, eager, fifo;
  };
  std::vector<Row> rows;
  for (size_t bytes : {size_t{8}, size_t{1} << 20, size_t{64} << 20}) {
    const size_t count = bytes / 4;
    const int n = bytes >= (size_t{64} << 20) ? 4 : 20, reps = bytes >= (size_t{64} << 20) ? 3 : 10;
    float *in = nullptr, *out = nullptr;
    CHECK_GPU(cudaMalloc(&in, bytes));
    CHECK_GPU(cudaMalloc(&out, bytes));
    CHECK_GPU(cudaMemset(in, 0, bytes));
    CHECK_SSC(sscAllReduce(in, out, count, sscFloat32, sscSum, comm, s));  // map the buffers
    CHECK_SSC(sscAllReduce(in, out, count, sscFloat32, sscSum, comm, s));
    Row row{bytes, 0, 0, 0};
    row.graph = timeGraph(comm, s, in, out, count, n, reps);
    row.eager = eventTimeUs(
        s, n * reps,
        [&] {
          for (int k = 0; k < n * reps; ++k)
            CHECK_SSC(sscAllReduce(in, out, count, sscFloat32, sscSum, comm, s));
        },
        g_rank);
    // Before: captured calls never took zero-copy (nor packets), so they ran the model's choice
    // among the FIFO algorithms: force that one on this communicator for the FIFO graph.
    const size_t k = static_cast<size_t>(ssc::CollKind::kAllReduce);
    const ssc::Algo fifo = ssc::selectAlgo(*comm->tuner, ssc::CollKind::kAllReduce, bytes, false);
    const ssc::ForcedAlgos saved = comm->config.forcedAlgos;
    comm->config.forcedAlgos[k] = fifo;  // between calls: no other thread calls on comm
    const uint64_t symBefore = ssc::gpu::symmetricLaunches();
    row.fifo = timeGraph(comm, s, in, out, count, n, reps);
    expect(ssc::gpu::symmetricLaunches() == symBefore, "the FIFO graph took zero-copy");
    comm->config.forcedAlgos = saved;
    rows.push_back(row);
    CHECK_GPU(cudaFree(in));
    CHECK_GPU(cudaFree(out));
  }
  if (g_rank != 0) return;
  std::printf(
      "\ncapture timing, K = %d, float32 sum all-reduce on plain buffers, us per call (slowest "
      "rank)\n",
      g_nranks);
  std::printf(
      "| bytes | graph, zero-copy | eager | graph, FIFO (before) | FIFO / zero-copy graph |\n");
  std::printf("| --- | --- | --- | --- | --- |\n");
  for (const Row& r : rows)
    std::printf("| %zu | %.1f | %.1f | %.1f | %.2fx |\n", r.bytes, r.graph, r.eager, r.fifo,
                r.fifo / r.graph);
}
#endif

}  // namespace

int main(int argc, char** argv) {
  if (!startGpuRank(&argc, &argv, "gpu_capture_test", &g_rank, &g_nranks)) return 0;
#if defined(SSC_GPU_IS_CUDA)
  const bool time = !(argc > 1 && std::strcmp(argv[1], "--no-time") == 0);
  sscComm_t comm = newMpiComm(g_rank, g_nranks);
  cudaStream_t s;
  CHECK_GPU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  // 4 KiB: the LL packets for all-reduce, small zero-copy for the others; 4 MiB: bulk.
  for (Coll coll : {Coll::kAllReduce, Coll::kAllGather, Coll::kReduceScatter})
    for (size_t bytes : {size_t{4} << 10, size_t{4} << 20})
      for (bool registered : {false, true})
        for (bool inPlace : {false, true}) {
          const size_t count = coll == Coll::kAllReduce ? bytes / 4 : bytes / 4 / g_nranks;
          if (g_nranks > 1) oneCase(comm, s, coll, count, registered, inPlace);
        }
  int failures = 0, checks = 0;
  MPI_Allreduce(&g_failures, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&g_checks, &checks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0)
    std::printf(
        "gpu_capture_test K = %d: %s (%d checks, %d failed; %d of %d captured cases zero-copy)\n",
        g_nranks, failures == 0 ? "PASSED" : "FAILED", checks, failures, g_zeroCopyCases, g_cases);
  if (time && g_nranks > 1) timing(comm, s);
  CHECK_GPU(cudaStreamDestroy(s));
  CHECK_SSC(sscCommDestroy(comm));
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
#else
  if (g_rank == 0)
    std::printf("SKIPPED: gpu_capture_test: the capture cases use the CUDA graph API\n");
  MPI_Finalize();
  return 0;
#endif
}
