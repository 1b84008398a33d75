// SPDX-License-Identifier: MIT
// Start-up shared by the GPU test programs (run under mpirun / tools/emulate/partition-run.sh).
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "src/platform/gpu_runtime.h"
#include "starscream/starscream.h"

// Selects this rank's device (rank r uses device r % ndev: all on device 0 under MPS). The
// topology is the library's own discovery: K ranks on one GPU (MPS clients of one device share
// its PCI address) are found as K partitions of that GPU, whatever its model; set
// STARSCREAM_TOPO_FILE to emulate another machine. Returns the device, or -1 after printing a
// SKIPPED line (rank 0) when no GPU is visible. A failing hipSetDevice aborts the job.
inline int setUpGpuRank(const char* program, int rank, int nranks) {
  (void)nranks;
  int ndev = 0;
  if (hipGetDeviceCount(&ndev) != hipSuccess || ndev == 0) {
    if (rank == 0) std::printf("SKIPPED: %s: no GPU visible\n", program);
    return -1;
  }
  const int device = rank % ndev;
  hipError_t e = hipSetDevice(device);
  if (e != hipSuccess) {
    std::fprintf(stderr, "rank %d: hipSetDevice(%d) failed: %s\n", rank, device,
                 hipGetErrorString(e));
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  return device;
}

// The start every GPU test program shares: MPI up, this rank's place in MPI_COMM_WORLD, its
// device picked (setUpGpuRank). False, after MPI_Finalize, when no GPU is visible: the program
// then returns 0, having printed its SKIPPED line (which ctest reports as a skip).
inline bool startGpuRank(int* argc, char*** argv, const char* program, int* rank, int* nranks) {
  MPI_Init(argc, argv);
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, nranks);
  if (setUpGpuRank(program, *rank, *nranks) >= 0) return true;
  MPI_Finalize();
  return false;
}

// A communicator over MPI_COMM_WORLD (rank 0's unique id broadcast over MPI); aborts the job
// when init fails, since no check can run without one.
inline sscComm_t newMpiComm(int rank, int nranks) {
  sscUniqueId id;
  if (rank == 0) sscGetUniqueId(&id);
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  sscComm_t comm = nullptr;
  if (sscCommInitRank(&comm, nranks, id, rank) != sscSuccess) {
    std::fprintf(stderr, "rank %d: comm init failed: %s\n", rank, sscGetLastError(nullptr));
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  return comm;
}

// A runtime or library call of the test program itself failed: nothing after it can be trusted,
// so report it and end the whole job.
inline void checkGpuOrAbort(hipError_t e, const char* what, int rank) {
  if (e == hipSuccess) return;
  std::fprintf(stderr, "rank %d: %s failed: %s\n", rank, what, hipGetErrorString(e));
  MPI_Abort(MPI_COMM_WORLD, 2);
}
inline void checkSscOrAbort(sscResult_t r, const char* what, int rank) {
  if (r == sscSuccess) return;
  std::fprintf(stderr, "rank %d: %s failed: %s\n", rank, what, sscGetLastError(nullptr));
  MPI_Abort(MPI_COMM_WORLD, 3);
}
// A device copy of h (room for one element at least, so an empty vector still gets a pointer).
// From pageable memory hipMemcpy returns once the data is staged, before the DMA to the device
// has landed, and the tests' streams are non-blocking (not ordered after the null stream):
// without the synchronize a kernel could read inputs still being written (seen on the H200:
// 1-3 runs in 10 of gpu_attention_test failed with wrong outputs or LSEs).
template <class T>
T* toDevice(const std::vector<T>& h, int rank) {
  T* d = nullptr;
  checkGpuOrAbort(
      hipMalloc(reinterpret_cast<void**>(&d), std::max<size_t>(h.size(), 1) * sizeof(T)),
      "hipMalloc", rank);
  if (!h.empty())
    checkGpuOrAbort(hipMemcpy(d, h.data(), h.size() * sizeof(T), hipMemcpyHostToDevice),
                    "hipMemcpy", rank);
  checkGpuOrAbort(hipDeviceSynchronize(), "hipDeviceSynchronize", rank);
  return d;
}

// The largest of every rank's x (a timing: the slowest rank's).
inline double maxOverRanks(double x) {
  double m = 0;
  MPI_Allreduce(&x, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return m;
}

// Microseconds per call for the `calls` calls body() queues on `stream`, timed with events once
// every rank's earlier work on it is done: the slowest rank's figure.
template <class F>
double eventTimeUs(hipStream_t stream, int calls, F body, int rank) {
  checkGpuOrAbort(hipStreamSynchronize(stream), "hipStreamSynchronize", rank);
  MPI_Barrier(MPI_COMM_WORLD);
  hipEvent_t t0, t1;
  checkGpuOrAbort(hipEventCreate(&t0), "hipEventCreate", rank);
  checkGpuOrAbort(hipEventCreate(&t1), "hipEventCreate", rank);
  checkGpuOrAbort(hipEventRecord(t0, stream), "hipEventRecord", rank);
  body();
  checkGpuOrAbort(hipEventRecord(t1, stream), "hipEventRecord", rank);
  checkGpuOrAbort(hipEventSynchronize(t1), "hipEventSynchronize", rank);
  float ms = 0;
  checkGpuOrAbort(hipEventElapsedTime(&ms, t0, t1), "hipEventElapsedTime", rank);
  checkGpuOrAbort(hipEventDestroy(t0), "hipEventDestroy", rank);
  checkGpuOrAbort(hipEventDestroy(t1), "hipEventDestroy", rank);
  return maxOverRanks(1000.0 * ms / calls);
}

// For programs that keep their MPI rank in g_rank.
#define CHECK_GPU(x) checkGpuOrAbort((x), #x, g_rank)
#define CHECK_SSC(x) checkSscOrAbort((x), #x, g_rank)
