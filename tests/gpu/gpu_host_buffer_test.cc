// SPDX-License-Identifier: MIT
// Buffers the GPU cannot touch are refused before any kernel does: a std::vector's data passed to
// a collective, a send or a receive (also while the stream is captured into a graph) is
// sscInvalidArgument naming the argument and "pageable host memory the GPU cannot access",
// where it used to launch a kernel on it and fail with an illegal memory access (a sticky error
// that ruins the process's GPU context). The communicator and the device stay usable: an
// all-reduce on device memory afterwards gives the exact sum. Pinned host memory, which kernels
// can reach, runs. On a device that accesses pageable memory itself (HMM, ATS) host buffers are
// accepted and must give the exact sum too.
//
//   mpirun -np K build/bin/gpu_host_buffer_test     (tools/emulate/partition-run.sh K ...)
//
// Prints "SKIPPED" and exits 0 where no GPU is visible.
#include <mpi.h>

#include <cstdio>
#include <string>
#include <vector>

#include "src/platform/gpu_runtime.h"
#include "starscream/starscream.h"
#include "tests/gpu/gpu_test_setup.h"

namespace {

int g_rank = 0, g_nranks = 1, g_failures = 0;
constexpr size_t kCount = 4096;

void expect(bool ok, const std::string& what) {
  if (ok) return;
  ++g_failures;
  std::fprintf(stderr, "rank %d FAIL %s\n", g_rank, what.c_str());
}

// `r` refused `arg` of `fn` as memory the GPU cannot access (or, where the device reads pageable
// memory itself, accepted).
void expectRefused(sscResult_t r, const std::string& fn, const std::string& arg, bool pageableOk,
                   const std::string& ctx) {
  const std::string msg = r == sscSuccess ? "" : sscGetLastError(nullptr);
  if (pageableOk) {
    expect(r == sscSuccess, ctx + ": refused on a device that accesses pageable memory: " + msg);
    return;
  }
  expect(r == sscInvalidArgument,
         ctx + ": returned " + sscGetErrorString(r) + ", not sscInvalidArgument");
  expect(msg.find(fn + ": " + arg + " ") != std::string::npos &&
             msg.find("pageable host memory the GPU cannot access") != std::string::npos,
         ctx + ": the message does not name " + arg + " as pageable host memory: " + msg);
}

// An all-reduce over `in`/`out` (device memory) gives the exact sum of every rank's rank + 1.
void expectSum(sscComm_t comm, float* in, float* out, const std::string& ctx) {
  std::vector<float> h(kCount, static_cast<float>(g_rank + 1));
  CHECK_GPU(hipMemcpy(in, h.data(), kCount * sizeof(float), hipMemcpyDefault));
  CHECK_GPU(hipDeviceSynchronize());
  const sscResult_t r = sscAllReduce(in, out, kCount, sscFloat32, sscSum, comm, nullptr);
  expect(r == sscSuccess,
         ctx + ": all-reduce failed: " + (r == sscSuccess ? "" : sscGetLastError(comm)));
  const sscResult_t s = sscStreamSynchronize(nullptr);
  expect(s == sscSuccess,
         ctx + ": synchronize failed: " + (s == sscSuccess ? "" : sscGetLastError(comm)));
  CHECK_GPU(hipMemcpy(h.data(), out, kCount * sizeof(float), hipMemcpyDefault));
  const float want = g_nranks * (g_nranks + 1) / 2.0f;
  expect(h.front() == want && h.back() == want, ctx + ": wrong sum " + std::to_string(h.back()));
}

}  // namespace

int main(int argc, char** argv) {
  if (!startGpuRank(&argc, &argv, "gpu_host_buffer_test", &g_rank, &g_nranks)) return 0;
  int device = 0, pageable = 0;
  CHECK_GPU(hipGetDevice(&device));
  CHECK_GPU(hipDeviceGetAttribute(&pageable, hipDeviceAttributePageableMemoryAccess, device));
  const bool pageableOk = pageable == 1;
  sscComm_t comm = newMpiComm(g_rank, g_nranks);
  float *in = nullptr, *out = nullptr;
  CHECK_SSC(sscMemAlloc(reinterpret_cast<void**>(&in), kCount * g_nranks * sizeof(float)));
  CHECK_SSC(sscMemAlloc(reinterpret_cast<void**>(&out), kCount * g_nranks * sizeof(float)));
  expectSum(comm, in, out, "before");

  std::vector<float> host(kCount * g_nranks, 1.0f);
  float* h = host.data();
  const int peer = (g_rank + 1) % g_nranks;
  // Every rank passes host memory alike, so where it is accepted every call still meets its peers.
  expectRefused(sscAllReduce(h, out, kCount, sscFloat32, sscSum, comm, nullptr), "sscAllReduce",
                "sendbuff", pageableOk, "all-reduce from a std::vector");
  expectRefused(sscAllReduce(in, h, kCount, sscFloat32, sscSum, comm, nullptr), "sscAllReduce",
                "recvbuff", pageableOk, "all-reduce into a std::vector");
  // Small and in place: the LL packet path, whose kernel read the host pointer itself.
  expectRefused(sscAllReduce(h, h, 256, sscFloat32, sscSum, comm, nullptr), "sscAllReduce",
                "sendbuff", pageableOk, "in-place all-reduce of a std::vector");
  expectRefused(sscAllGather(in, h, kCount, sscFloat32, comm, nullptr), "sscAllGather", "recvbuff",
                pageableOk, "all-gather into a std::vector");
  if (g_nranks > 1) {
    CHECK_SSC(sscGroupStart());
    expectRefused(sscSend(h, kCount, sscFloat32, peer, comm, nullptr), "sscSend", "sendbuff",
                  pageableOk, "send from a std::vector");
    expectRefused(
        sscRecv(h + kCount, kCount, sscFloat32, (g_rank + g_nranks - 1) % g_nranks, comm, nullptr),
        "sscRecv", "recvbuff", pageableOk, "receive into a std::vector");
    const sscResult_t end = sscGroupEnd();
    expect(pageableOk ? end == sscSuccess : end != sscSuccess,
           "the group of refused calls ended with " + std::string(sscGetErrorString(end)));
  }
  if (pageableOk) CHECK_SSC(sscStreamSynchronize(nullptr));
  // While a stream is captured: refused before anything is captured, and the capture goes on.
  if (!pageableOk) {
    sscStream_t s = nullptr;
    CHECK_SSC(sscStreamCreate(&s));
    const auto stream = static_cast<hipStream_t>(s);
    CHECK_GPU(hipStreamBeginCapture(stream, hipStreamCaptureModeGlobal));
    expectRefused(sscAllReduce(h, out, kCount, sscFloat32, sscSum, comm, s), "sscAllReduce",
                  "sendbuff", false, "captured all-reduce from a std::vector");
    hipGraph_t graph = nullptr;
    expect(hipStreamEndCapture(stream, &graph) == hipSuccess,
           "the capture was invalidated by the refusal");
    if (graph != nullptr) CHECK_GPU(hipGraphDestroy(graph));
    CHECK_SSC(sscStreamDestroy(s));
  }
  expect(hipGetLastError() == hipSuccess, "a runtime error is pending after the refusals");
  expectSum(comm, in, out, "after the refusals");

  // Pinned host memory is accessible to kernels: it runs, with the exact sum.
  float* pinned = nullptr;
  CHECK_GPU(hipHostMalloc(reinterpret_cast<void**>(&pinned), kCount * sizeof(float),
                          hipHostMallocMapped));
  for (size_t i = 0; i < kCount; ++i) pinned[i] = static_cast<float>(g_rank + 1);
  sscResult_t r = sscAllReduce(pinned, out, kCount, sscFloat32, sscSum, comm, nullptr);
  expect(r == sscSuccess, std::string("all-reduce from pinned host memory: ") +
                              (r == sscSuccess ? "" : sscGetLastError(comm)));
  if (r == sscSuccess) CHECK_SSC(sscStreamSynchronize(nullptr));
  std::vector<float> got(kCount);
  CHECK_GPU(hipMemcpy(got.data(), out, kCount * sizeof(float), hipMemcpyDefault));
  const float want = g_nranks * (g_nranks + 1) / 2.0f;
  expect(got.front() == want && got.back() == want,
         "pinned host memory: wrong sum " + std::to_string(got.back()));
  CHECK_GPU(hipHostFree(pinned));

  CHECK_SSC(sscMemFree(in));
  CHECK_SSC(sscMemFree(out));
  CHECK_SSC(sscCommDestroy(comm));
  int total = 0;
  MPI_Allreduce(&g_failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0)
    std::printf("gpu_host_buffer_test K=%d: %s (%d failure(s)%s)\n", g_nranks,
                total == 0 ? "PASSED" : "FAILED", total,
                pageableOk ? "; the device accesses pageable memory: host buffers accepted" : "");
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
