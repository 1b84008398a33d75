// SPDX-License-Identifier: MIT
// What the standalone K-rank GPU benchmarks (mps_floor, bulk_shapes) share: K MPI processes on
// one GPU (MPS partitions), a flag barrier between them in IPC-mapped device memory with the
// same protocol as Starscream's zero-copy kernels (src/kernels/gpu/sym_barrier.cuh), and the
// IPC exchange of a buffer. No library: these tools measure the machine, not Starscream.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "src/platform/gpu_runtime.h"

namespace mps {

constexpr int kMaxRanks = 64;
constexpr int kMaxBlocks = 1024;                       // barrier flags per rank
constexpr unsigned long long kSpinLimit = 1ull << 28;  // a broken barrier ends, never hangs

struct Peers {
  uint64_t* flags[kMaxRanks];  // [rank] -> that rank's kMaxBlocks flags, mapped here
  int nranks, rank;
  unsigned int* failed;  // set when a wait ran past kSpinLimit
};

// Block blockIdx.x meets block blockIdx.x of every rank at barrier number e: thread 0 releases
// this rank's flag, thread q < nranks acquires rank q's. Device scope: MPS ranks share one L2.
__device__ inline void meet(const Peers& p, uint64_t e) {
  __syncthreads();
  if (threadIdx.x == 0) sscStoreReleaseGpu(p.flags[p.rank] + blockIdx.x, e);
  const int q = static_cast<int>(threadIdx.x);
  if (q < p.nranks && q != p.rank) {
    unsigned long long spins = 0;
    while (sscLoadAcquireGpu(p.flags[q] + blockIdx.x) < e) {
      if (++spins > kSpinLimit) {
        atomicExch(p.failed, 1u);
        break;
      }
    }
  }
  __syncthreads();
}

inline void check(hipError_t e, const char* what) {
  if (e == hipSuccess) return;
  std::fprintf(stderr, "%s: %s\n", what, hipGetErrorString(e));
  MPI_Abort(MPI_COMM_WORLD, 1);
}

// MPI_Init, this process's rank and the rank count, and its GPU: MPS_FLOOR_DEVICE (as
// NCCL_TESTS_DEVICE: every rank on one GPU), 0 when unset.
struct Start {
  int rank = 0, nranks = 1;
};
inline Start start(int* argc, char*** argv) {
  MPI_Init(argc, argv);
  Start s;
  MPI_Comm_rank(MPI_COMM_WORLD, &s.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &s.nranks);
  const char* dev = std::getenv("MPS_FLOOR_DEVICE");
  check(hipSetDevice(dev != nullptr ? std::atoi(dev) : 0), "hipSetDevice");
  return s;
}

inline double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Every rank's `mine` (device memory), mapped here: out[q] is rank q's, out[rank] == mine.
inline void exchange(void* mine, int rank, int nranks, void** out) {
  hipIpcMemHandle_t h;
  check(hipIpcGetMemHandle(&h, mine), "hipIpcGetMemHandle");
  std::vector<hipIpcMemHandle_t> all(nranks);
  MPI_Allgather(&h, sizeof(h), MPI_BYTE, all.data(), sizeof(h), MPI_BYTE, MPI_COMM_WORLD);
  for (int q = 0; q < nranks; ++q) {
    if (q == rank) {
      out[q] = mine;
      continue;
    }
    check(hipIpcOpenMemHandle(&out[q], all[q], hipIpcMemLazyEnablePeerAccess),
          "hipIpcOpenMemHandle");
  }
}

inline void unmap(void** mapped, int rank, int nranks) {
  for (int q = 0; q < nranks; ++q)
    if (q != rank) (void)hipIpcCloseMemHandle(mapped[q]);
}

// This rank's barrier flags (zeroed) and failure word, mapped into every rank.
inline Peers makePeers(int rank, int nranks) {
  Peers p{};
  p.nranks = nranks;
  p.rank = rank;
  uint64_t* mine = nullptr;
  check(hipMalloc(reinterpret_cast<void**>(&mine), kMaxBlocks * sizeof(uint64_t)),
        "hipMalloc flags");
  check(hipMemset(mine, 0, kMaxBlocks * sizeof(uint64_t)), "hipMemset flags");
  check(hipMalloc(reinterpret_cast<void**>(&p.failed), sizeof(unsigned int)), "hipMalloc");
  check(hipMemset(p.failed, 0, sizeof(unsigned int)), "hipMemset");
  check(hipDeviceSynchronize(), "sync");
  void* mapped[kMaxRanks];
  exchange(mine, rank, nranks, mapped);
  for (int q = 0; q < nranks; ++q) p.flags[q] = static_cast<uint64_t*>(mapped[q]);
  return p;
}

inline void freePeers(Peers& p) {
  void* mapped[kMaxRanks];
  for (int q = 0; q < p.nranks; ++q) mapped[q] = p.flags[q];
  unmap(mapped, p.rank, p.nranks);
  (void)hipFree(p.flags[p.rank]);
  (void)hipFree(p.failed);
}

// The slowest rank's mean time per call in microseconds (on every rank): `warm` calls untimed,
// then `iters` timed ones from an MPI barrier to a stream synchronize, all ranks at once.
template <class Call>
double slowestUs(hipStream_t stream, int warm, int iters, Call&& call) {
  for (int i = 0; i < warm; ++i) call();
  check(hipStreamSynchronize(stream), "warm-up");
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = now();
  for (int i = 0; i < iters; ++i) call();
  check(hipStreamSynchronize(stream), "timed");
  double us = (now() - t0) * 1e6 / iters, worst = 0;
  MPI_Allreduce(&us, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return worst;
}

// Any rank's barrier wait ran past kSpinLimit (the result on rank 0).
inline bool anyFailed(const Peers& p) {
  unsigned int bad = 0, any = 0;
  check(hipMemcpy(&bad, p.failed, sizeof(bad), hipMemcpyDeviceToHost), "copy");
  MPI_Reduce(&bad, &any, 1, MPI_UNSIGNED, MPI_MAX, 0, MPI_COMM_WORLD);
  return any != 0;
}

}  // namespace mps
