// SPDX-License-Identifier: MIT
// Regression checks, on the GPU, for the defects the public NCCL test suite and PyTorch found
// through the shim (docs/nccl-shim.md). Each case names the client behaviour it replays:
//   - premulsum:  PreMulSum with a per-rank scalar (nccl-tests `-o mulsum`) at 8 B, 256 B, 8 KiB
//                 (the LL packet range, where every rank used to apply its own scalar to all
//                 inputs) and 256 KiB, in and out of place;
//   - streams:    collectives of one communicator issued round-robin on three streams with no
//                 synchronisation in between (PyTorch's per-op streams): they must run in issue
//                 order, as NCCL guarantees, or they share FIFO counters and LL rounds at once;
//   - ll-wrap:    small all-reduces across the point where the LL packets' 32-bit flag wraps
//                 (a communicator created with its first LL round just below 2^32);
//   - p2p-ring:   300 grouped send/recv rings of a few sizes (nccl-tests sendrecv), past the old
//                 plan cache limit that synchronized the device every 256 groups;
//   - alltoall:   in place (nccl-tests always runs it);
//   - graph:      an all-reduce and a ring exchange of shapes never seen before, captured into a
//                 graph (first use uploads the plan inside the capture) and replayed 5 times;
//   - warmup:     a large broadcast from every root, then small ones (nccl-tests' warm-up at the
//                 largest size, then ascending sizes).
// Data is integer-valued so float sums are exact. Prints "FAIL ..." per failed check and
// "PASSED"/"FAILED" at the end (rank 0), exit 1 on failure.
//
//   tools/emulate/partition-run.sh K build/bin/gpu_conformance_test
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "src/platform/gpu_runtime.h"
#include "src/device/gpu/gpu_symmetric.h"
#include "starscream/starscream.h"
#include "tests/gpu/gpu_test_setup.h"

namespace {

int g_rank = 0, g_nranks = 1, g_failures = 0, g_checks = 0;

void expect(bool ok, const std::string& what) {
  ++g_checks;
  if (ok) return;
  ++g_failures;
  std::fprintf(stderr, "rank %d FAIL %s\n", g_rank, what.c_str());
}

// A device buffer of n floats with a host mirror.
struct Buf {
  float* dev = nullptr;
  size_t n = 0;
  explicit Buf(size_t count) : n(count) {
    CHECK_GPU(hipMalloc(reinterpret_cast<void**>(&dev), (n ? n : 1) * 4));
  }
  ~Buf() { (void)hipFree(dev); }
  void put(const std::vector<float>& h) {
    CHECK_GPU(hipMemcpy(dev, h.data(), n * 4, hipMemcpyHostToDevice));
  }
  std::vector<float> get() const {
    std::vector<float> h(n);
    CHECK_GPU(hipMemcpy(h.data(), dev, n * 4, hipMemcpyDeviceToHost));
    return h;
  }
};

float valueOf(int rank, size_t i) {
  return static_cast<float>((rank * 7 + static_cast<int>(i % 13)) % 17);
}

std::vector<float> input(int rank, size_t n) {
  std::vector<float> h(n);
  for (size_t i = 0; i < n; ++i) h[i] = valueOf(rank, i);
  return h;
}

bool sameAs(const std::vector<float>& got, const std::vector<float>& want, size_t* bad) {
  for (size_t i = 0; i < want.size(); ++i)
    if (got[i] != want[i]) {
      *bad = i;
      return false;
    }
  return true;
}

void check(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  size_t bad = 0;
  const bool ok = sameAs(got, want, &bad);
  expect(ok, ok ? what
                : what + " (element " + std::to_string(bad) + ": got " + std::to_string(got[bad]) +
                      ", want " + std::to_string(want[bad]) + ")");
}

void premulsum(sscComm_t comm, hipStream_t s) {
  for (size_t bytes : {8u, 256u, 8192u, 262144u}) {
    for (bool inPlace : {false, true}) {
      const size_t n = bytes / 4;
      Buf in(n), out(n);
      in.put(input(g_rank, n));
      float scalar = static_cast<float>(g_rank + 1);  // per rank, as nccl-tests does
      sscRedOp_t op;
      CHECK_SSC(sscRedOpCreatePreMulSum(&op, &scalar, sscFloat32, sscScalarHostImmediate, comm));
      CHECK_SSC(sscAllReduce(in.dev, inPlace ? in.dev : out.dev, n, sscFloat32, op, comm, s));
      CHECK_SSC(sscStreamSynchronize(s));
      CHECK_SSC(sscRedOpDestroy(op, comm));
      std::vector<float> want(n, 0.f);
      for (int q = 0; q < g_nranks; ++q)
        for (size_t i = 0; i < n; ++i) want[i] += static_cast<float>(q + 1) * valueOf(q, i);
      check((inPlace ? in : out).get(), want,
            "premulsum " + std::to_string(bytes) + " B" + (inPlace ? " in place" : ""));
    }
  }
}

void streams(sscComm_t comm) {
  hipStream_t st[3];
  for (auto& s : st) CHECK_GPU(hipStreamCreateWithFlags(&s, hipStreamNonBlocking));
  const size_t sizes[] = {2, 4096, 65536, 1 << 20, 300001};
  const int calls = 30;
  std::vector<Buf*> ins, outs;
  for (int c = 0; c < calls; ++c) {
    const size_t n = sizes[c % 5];
    const bool gather = c % 3 == 1;
    ins.push_back(new Buf(n));
    outs.push_back(new Buf(gather ? n * g_nranks : n));
    std::vector<float> h = input(g_rank + c, n);
    ins.back()->put(h);
  }
  for (int c = 0; c < calls; ++c) {
    const size_t n = sizes[c % 5];
    sscStream_t s = static_cast<sscStream_t>(st[c % 3]);
    if (c % 3 == 1)
      CHECK_SSC(sscAllGather(ins[c]->dev, outs[c]->dev, n, sscFloat32, comm, s));
    else
      CHECK_SSC(sscAllReduce(ins[c]->dev, outs[c]->dev, n, sscFloat32, sscSum, comm, s));
  }
  for (auto& s : st) CHECK_SSC(sscStreamSynchronize(static_cast<sscStream_t>(s)));
  for (int c = 0; c < calls; ++c) {
    const size_t n = sizes[c % 5];
    std::vector<float> want;
    if (c % 3 == 1) {
      for (int q = 0; q < g_nranks; ++q) {
        std::vector<float> part = input(q + c, n);
        want.insert(want.end(), part.begin(), part.end());
      }
    } else {
      want.assign(n, 0.f);
      for (int q = 0; q < g_nranks; ++q)
        for (size_t i = 0; i < n; ++i) want[i] += valueOf(q + c, i);
    }
    check(outs[c]->get(), want, "streams call " + std::to_string(c));
    delete ins[c];
    delete outs[c];
  }
  for (auto& s : st) (void)hipStreamDestroy(s);
}

void llWrap(hipStream_t s) {
  // A fresh communicator whose LL rounds start 6 below the 32-bit wrap.
  ssc::gpu::setFirstLLRound(0xFFFFFFFAull);
  sscComm_t comm = newMpiComm(g_rank, g_nranks);
  ssc::gpu::setFirstLLRound(1);
  for (int c = 0; c < 16; ++c) {
    const size_t n = 2 + static_cast<size_t>(c) * 37;  // LL sizes (< 64 KiB)
    Buf in(n), out(n);
    in.put(input(g_rank + c, n));
    CHECK_SSC(sscAllReduce(in.dev, out.dev, n, sscFloat32, sscSum, comm, s));
    CHECK_SSC(sscStreamSynchronize(s));
    std::vector<float> want(n, 0.f);
    for (int q = 0; q < g_nranks; ++q)
      for (size_t i = 0; i < n; ++i) want[i] += valueOf(q + c, i);
    check(out.get(), want, "ll-wrap call " + std::to_string(c));
  }
  CHECK_SSC(sscCommDestroy(comm));
}

void p2pRing(sscComm_t comm, hipStream_t s) {
  const int next = (g_rank + 1) % g_nranks, prev = (g_rank + g_nranks - 1) % g_nranks;
  const size_t sizes[] = {2, 1024, 1 << 20};
  Buf in(1 << 20), out(1 << 20);
  in.put(input(g_rank, 1 << 20));
  for (int it = 0; it < 300; ++it) {
    const size_t n = sizes[it % 3];
    CHECK_SSC(sscGroupStart());
    CHECK_SSC(sscSend(in.dev, n, sscFloat32, next, comm, s));
    CHECK_SSC(sscRecv(out.dev, n, sscFloat32, prev, comm, s));
    CHECK_SSC(sscGroupEnd());
    if (it % 50 == 49 || it == 299) {
      CHECK_SSC(sscStreamSynchronize(s));
      std::vector<float> got = out.get(), want = input(prev, 1 << 20);
      got.resize(n), want.resize(n);
      check(got, want, "p2p-ring iteration " + std::to_string(it));
    }
  }
}

void alltoallInPlace(sscComm_t comm, hipStream_t s) {
  for (size_t count : {1u, 1000u, 1u << 18}) {
    const size_t n = count * g_nranks;
    Buf buf(n);
    buf.put(input(g_rank, n));
    CHECK_SSC(sscAllToAll(buf.dev, buf.dev, count, sscFloat32, comm, s));
    CHECK_SSC(sscStreamSynchronize(s));
    std::vector<float> want(n);
    for (int q = 0; q < g_nranks; ++q)
      for (size_t i = 0; i < count; ++i) want[q * count + i] = valueOf(q, g_rank * count + i);
    check(buf.get(), want, "alltoall in place, count " + std::to_string(count));
  }
}

// A replay repeats the captured launches' arguments exactly, so anything a kernel takes from the
// host per call (barrier epochs, LL rounds) would repeat too: the inputs change between replays
// so a kernel that reads a previous replay's packets or passes a stale barrier gives old sums.
void graph(sscComm_t comm, hipStream_t s, bool withAllReduce, bool withRing) {
#if defined(SSC_GPU_IS_CUDA)
  // Shapes no earlier case used, so the first use (plan build and upload) happens in capture.
  const size_t n = 777777, small = 100;
  const int next = (g_rank + 1) % g_nranks, prev = (g_rank + g_nranks - 1) % g_nranks;
  Buf in(n), out(n), in2(small), out2(small), sendB(n), recvB(n);
  cudaGraph_t g;
  cudaGraphExec_t exec;
  CHECK_GPU(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  if (withAllReduce) {
    CHECK_SSC(sscAllReduce(in.dev, out.dev, n, sscFloat32, sscSum, comm, s));
    CHECK_SSC(sscAllReduce(in2.dev, out2.dev, small, sscFloat32, sscSum, comm, s));
  }
  if (withRing) {
    CHECK_SSC(sscGroupStart());
    for (int k = 0; k < 5; ++k) {  // 10 ops x 2 chunks: more steps than fit inline
      CHECK_SSC(sscSend(sendB.dev, n, sscFloat32, next, comm, s));
      CHECK_SSC(sscRecv(recvB.dev, n, sscFloat32, prev, comm, s));
    }
    CHECK_SSC(sscGroupEnd());
  }
  CHECK_GPU(cudaStreamEndCapture(s, &g));
  CHECK_GPU(cudaGraphInstantiate(&exec, g, 0));
  for (int r = 0; r < 4; ++r) {
    in.put(input(g_rank + 10 * r, n));
    in2.put(input(g_rank + 10 * r, small));
    sendB.put(input(g_rank + 3 + 10 * r, n));
    CHECK_GPU(cudaGraphLaunch(exec, s));
    CHECK_GPU(cudaStreamSynchronize(s));
    sscResult_t async = sscSuccess;
    CHECK_SSC(sscCommGetAsyncError(comm, &async));
    expect(async == sscSuccess,
           std::string("graph replay: communicator error: ") + sscGetLastError(comm));
    std::vector<float> want(n, 0.f);
    for (int q = 0; q < g_nranks; ++q)
      for (size_t i = 0; i < n; ++i) want[i] += valueOf(q + 10 * r, i);
    const std::string tag = " (replay " + std::to_string(r) + ")";
    if (withAllReduce) {
      check(out.get(), want, "graph all-reduce" + tag);
      want.resize(small);
      check(out2.get(), want, "graph small all-reduce" + tag);
    }
    if (withRing) check(recvB.get(), input(prev + 3 + 10 * r, n), "graph send/recv ring" + tag);
  }
  (void)cudaGraphExecDestroy(exec);
  (void)cudaGraphDestroy(g);
#else
  (void)comm, (void)s;
#endif
}

void warmupThenSmall(sscComm_t comm, hipStream_t s) {
  for (int root = 0; root < g_nranks; ++root) {
    for (size_t n : {size_t{16} << 20, size_t{2}, size_t{16}, size_t{128}, size_t{2048}}) {
      Buf in(n), out(n);
      in.put(input(root, n));
      CHECK_SSC(sscBroadcast(in.dev, out.dev, n, sscFloat32, root, comm, s));
      CHECK_SSC(sscStreamSynchronize(s));
      check(out.get(), input(root, n),
            "broadcast root " + std::to_string(root) + " n " + std::to_string(n));
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (!startGpuRank(&argc, &argv, "gpu_conformance_test", &g_rank, &g_nranks)) return 0;
  sscComm_t comm = newMpiComm(g_rank, g_nranks);
  hipStream_t s;
  CHECK_GPU(hipStreamCreateWithFlags(&s, hipStreamNonBlocking));
  const std::string only = argc > 1 ? argv[1] : "";
  const auto run = [&](const char* name, auto&& fn) {
    if (!only.empty() && only != name) return;
    const int before = g_failures;
    fn();
    MPI_Barrier(MPI_COMM_WORLD);
    if (g_rank == 0) std::printf("%-10s %s\n", name, g_failures == before ? "ok" : "FAILED");
  };
  run("premulsum", [&] { premulsum(comm, s); });
  run("streams", [&] { streams(comm); });
  run("ll-wrap", [&] { llWrap(s); });
  run("p2p-ring", [&] { p2pRing(comm, s); });
  run("alltoall", [&] { alltoallInPlace(comm, s); });
  // Each graph case on a communicator of its own: a failed one leaves its error state behind.
  run("graph-ar", [&] {
    sscComm_t c = newMpiComm(g_rank, g_nranks);
    graph(c, s, true, false);
    CHECK_SSC(sscCommDestroy(c));
  });
  run("graph-ring", [&] {
    sscComm_t c = newMpiComm(g_rank, g_nranks);
    graph(c, s, false, true);
    CHECK_SSC(sscCommDestroy(c));
  });
  run("graph", [&] { graph(comm, s, true, true); });
  run("warmup", [&] { warmupThenSmall(comm, s); });
  CHECK_SSC(sscCommDestroy(comm));
  (void)hipStreamDestroy(s);
  int failures = 0;
  MPI_Allreduce(&g_failures, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0)
    std::printf("%s (%d checks per rank, %d failures)\n", failures ? "FAILED" : "PASSED", g_checks,
                failures);
  MPI_Finalize();
  return failures ? 1 : 0;
}
