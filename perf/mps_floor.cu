// mps_floor: the floor under any collective of K ranks on this machine, measured with the same
// launches and the same flag barrier as Starscream's zero-copy kernels but no data and no
// library: what a K-rank call cannot go below, so a collective's fixed cost can be split into
// "the machine" and "ours" (perf/RESULTS.md, issue 14's latency targets).
//
//   mpirun -np K mps_floor [iters]      (tools/emulate/partition-run.sh K build/bin/mps_floor)
//
// Rows, each the slowest rank's mean per call, all ranks running at once:
//   launch        back-to-back empty kernels on one stream (the issue rate; nothing waits)
//   launch+sync   one empty kernel, then a stream synchronize (host -> GPU -> host round trip)
//   param 2KB     back-to-back empty kernels with a 2 KiB parameter block (the symmetric kernel's)
//   barrier x1    back-to-back 1-block kernels that meet every other rank at one flag barrier
//   barrier x2    the same with two barriers per kernel (the bulk kernel's first and last)
//   barrier x2 wide   two barriers with G blocks, block b meeting block b of every rank
//   event+launch  an event record after each launch (Starscream's launch-order event)
// Flags live in each rank's own device memory, mapped into every peer through IPC, and use
// device-scope release/acquire: MPS ranks share one GPU's L2 (src/kernels/gpu/sym_barrier.cuh).
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "src/platform/gpu_runtime.h"

namespace {

constexpr int kMaxRanks = 64;
constexpr int kMaxBlocks = 64;
constexpr unsigned long long kSpinLimit = 1ull << 28;  // a broken barrier ends, never hangs

struct Peers {
  uint64_t* flags[kMaxRanks];  // [rank] -> that rank's kMaxBlocks flags, mapped here
  int nranks, rank;
  unsigned int* failed;        // set when a wait ran past kSpinLimit
};

struct BigParams {
  char bytes[2048];
};

__global__ void emptyKernel() {}

__global__ void bigParamKernel(const SSC_GRID_CONSTANT BigParams p) {
  if (threadIdx.x == 0 && p.bytes[0] == 42) __threadfence();  // keeps the parameter alive
}

// `count` barriers, numbered epoch0 + 1 ... epoch0 + count; block b meets block b everywhere.
__global__ void barrierKernel(const SSC_GRID_CONSTANT Peers p, uint64_t epoch0, int count) {
  for (int i = 1; i <= count; ++i) {
    const uint64_t e = epoch0 + i;
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
}

void check(hipError_t e, const char* what) {
  if (e == hipSuccess) return;
  std::fprintf(stderr, "mps_floor: %s: %s\n", what, hipGetErrorString(e));
  MPI_Abort(MPI_COMM_WORLD, 1);
}

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  const int iters = argc > 1 ? std::atoi(argv[1]) : 2000;
  if (nranks > kMaxRanks || iters < 10) {
    if (rank == 0) std::fprintf(stderr, "usage: mpirun -np K (<= %d) mps_floor [iters >= 10]\n", kMaxRanks);
    MPI_Finalize();
    return 2;
  }
  const char* dev = std::getenv("MPS_FLOOR_DEVICE");  // as NCCL_TESTS_DEVICE: every rank on one GPU
  check(hipSetDevice(dev != nullptr ? std::atoi(dev) : 0), "hipSetDevice");
  hipStream_t stream;
  check(hipStreamCreateWithFlags(&stream, hipStreamNonBlocking), "stream");
  hipEvent_t ev;
  check(hipEventCreateWithFlags(&ev, hipEventDisableTiming), "event");

  uint64_t* mine = nullptr;
  check(hipMalloc(reinterpret_cast<void**>(&mine), kMaxBlocks * sizeof(uint64_t)), "hipMalloc");
  check(hipMemset(mine, 0, kMaxBlocks * sizeof(uint64_t)), "hipMemset");
  unsigned int* failed = nullptr;
  check(hipMalloc(reinterpret_cast<void**>(&failed), sizeof(unsigned int)), "hipMalloc");
  check(hipMemset(failed, 0, sizeof(unsigned int)), "hipMemset");
  check(hipDeviceSynchronize(), "sync");
  hipIpcMemHandle_t h;
  check(hipIpcGetMemHandle(&h, mine), "hipIpcGetMemHandle");
  std::vector<hipIpcMemHandle_t> all(nranks);
  MPI_Allgather(&h, sizeof(h), MPI_BYTE, all.data(), sizeof(h), MPI_BYTE, MPI_COMM_WORLD);
  Peers peers{};
  peers.nranks = nranks;
  peers.rank = rank;
  peers.failed = failed;
  for (int q = 0; q < nranks; ++q) {
    if (q == rank) {
      peers.flags[q] = mine;
      continue;
    }
    void* m = nullptr;
    check(hipIpcOpenMemHandle(&m, all[q], hipIpcMemLazyEnablePeerAccess), "hipIpcOpenMemHandle");
    peers.flags[q] = static_cast<uint64_t*>(m);
  }
  int sms = 0;
  check(hipDeviceGetAttribute(&sms, hipDeviceAttributeMultiprocessorCount, 0), "attribute");
  // The bulk kernel's grid for a large call: this rank's SM share (MPS caps it at 100/K %).
  const int wide = std::clamp(sms / nranks, 1, kMaxBlocks);

  uint64_t epoch = 0;
  BigParams big{};
  struct Row {
    const char* name;
    double us;
  };
  std::vector<Row> rows;
  // Runs `body` iters times after a warm-up of iters / 10, all ranks started together; the
  // slowest rank's time per call. sync: the GPU work is waited for inside the timed region.
  const auto timed = [&](const char* name, auto body) {
    for (int i = 0; i < iters / 10; ++i) body();
    check(hipStreamSynchronize(stream), "sync");
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = now();
    for (int i = 0; i < iters; ++i) body();
    check(hipStreamSynchronize(stream), "sync");
    double us = (now() - t0) * 1e6 / iters, worst = 0;
    MPI_Reduce(&us, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    rows.push_back({name, worst});
  };
  timed("launch", [&] { emptyKernel<<<1, 32, 0, stream>>>(); });
  timed("launch+sync", [&] {
    emptyKernel<<<1, 32, 0, stream>>>();
    check(hipStreamSynchronize(stream), "sync");
  });
  timed("param 2KB", [&] { bigParamKernel<<<1, 32, 0, stream>>>(big); });
  timed("event+launch", [&] {
    emptyKernel<<<1, 32, 0, stream>>>();
    check(hipEventRecord(ev, stream), "event");
  });
  timed("barrier x1", [&] {
    barrierKernel<<<1, 64, 0, stream>>>(peers, epoch, 1);
    epoch += 1;
  });
  timed("barrier x2", [&] {
    barrierKernel<<<1, 64, 0, stream>>>(peers, epoch, 2);
    epoch += 2;
  });
  timed("barrier x2 wide", [&] {
    barrierKernel<<<wide, 512, 0, stream>>>(peers, epoch, 2);
    epoch += 2;
  });
  unsigned int bad = 0;
  check(hipMemcpy(&bad, failed, sizeof(bad), hipMemcpyDeviceToHost), "copy");
  unsigned int anyBad = 0;
  MPI_Reduce(&bad, &anyBad, 1, MPI_UNSIGNED, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    std::printf("# mps_floor: %d ranks, %d iterations, wide grid %d blocks of 512 threads\n", nranks,
                iters, wide);
    std::printf("%-18s %10s\n", "# row", "us/call");
    for (const Row& r : rows) std::printf("%-18s %10.2f\n", r.name, r.us);
    if (anyBad != 0) std::printf("# WARNING: a barrier wait timed out; its rows are not valid\n");
  }
  for (int q = 0; q < nranks; ++q)
    if (q != rank) (void)hipIpcCloseMemHandle(peers.flags[q]);
  (void)hipFree(mine);
  (void)hipFree(failed);
  MPI_Finalize();
  return anyBad != 0 && rank == 0 ? 1 : 0;
}
