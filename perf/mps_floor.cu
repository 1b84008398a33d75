// SPDX-License-Identifier: MIT
// mps_floor: the floor under any collective of K ranks on this machine, measured with the same
// launches and the same flag barrier as Starscream's zero-copy kernels but no data and no
// library: what a K-rank call cannot go below, so a collective's fixed cost can be split into
// "the machine" and "ours" (docs/zero-copy.md reads the latency figures against it).
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
//   bulk S        barrier, then each rank reads its 1/K slice of S bytes from every rank's
//                 buffer (through the IPC mappings) and writes it locally, then barrier: the
//                 data pattern of a zero-copy reduce-scatter of S bytes, with the bulk kernel's
//                 grid (one 512-thread block per 128 KiB, at most the SM share)
//   copy GB/s     every rank copies 1 GiB / K of its own memory at once (16-byte vectors, 4 in
//                 flight per thread, 4 blocks per SM of its share): bytes copied per second by
//                 all ranks together, against which K ranks' bandwidth is read (MPS caps each
//                 rank's SMs at 100/K %)
//   peer copy GB/s    the same, each rank reading the next rank's buffer through IPC
// Flags live in each rank's own device memory, mapped into every peer through IPC, and use
// device-scope release/acquire: MPS ranks share one GPU's L2 (src/kernels/gpu/sym_barrier.cuh).
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "perf/mps_ranks.cuh"

namespace {

using mps::check;
using mps::meet;
using mps::Peers;
constexpr int kMaxRanks = mps::kMaxRanks;
constexpr int kMaxBlocks = 64;  // the widest grid the barrier rows use

struct BigParams {
  char bytes[2048];
};

__global__ void emptyKernel() {}

// The same empty kernel as a programmatic dependent launch (sscLaunchDependent, CUDA sm_90): the
// next kernel in the stream is launched once this one's blocks have exited, without waiting for
// its completion to be signalled, and waits in its own sscGridDependencyWait() instead. Whether
// that takes the launch floor away under MPS is the question.
__global__ void pdlKernel() { sscGridDependencyWait(); }

__global__ void bigParamKernel(const SSC_GRID_CONSTANT BigParams p) {
  if (threadIdx.x == 0 && p.bytes[0] == 42) __threadfence();  // keeps the parameter alive
}

// `count` barriers, numbered epoch0 + 1 ... epoch0 + count.
__global__ void barrierKernel(const SSC_GRID_CONSTANT Peers p, uint64_t epoch0, int count) {
  for (int i = 1; i <= count; ++i) meet(p, epoch0 + i);
}

// dst[i] = src[i] over n 16-byte vectors, 4 loads in flight per thread.
__global__ void __launch_bounds__(512) copyKernel(uint4* dst, const uint4* src, uint64_t n) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t i = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += 4 * stride) {
    uint4 v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u)
      if (i + u * stride < n) v[u] = sscLoadCg(src + i + u * stride);
#pragma unroll
    for (int u = 0; u < 4; ++u)
      if (i + u * stride < n) dst[i + u * stride] = v[u];
  }
}

struct Bulk {
  const uint4* in[kMaxRanks];  // every rank's buffer, mapped here
  uint4* out;
  uint64_t sliceVecs;  // 16-byte vectors of each rank's slice
};

// Barrier, this rank's slice of every rank's buffer into out[q * slice + i], barrier.
__global__ void __launch_bounds__(512)
    bulkKernel(const SSC_GRID_CONSTANT Peers p, const SSC_GRID_CONSTANT Bulk b, uint64_t epoch0) {
  meet(p, epoch0 + 1);
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t i = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < b.sliceVecs;
       i += stride) {
    uint4 v[8];
#pragma unroll
    for (int q = 0; q < 8; ++q)
      if (q < p.nranks) v[q] = sscLoadCg(b.in[q] + p.rank * b.sliceVecs + i);
#pragma unroll
    for (int q = 0; q < 8; ++q)
      if (q < p.nranks) b.out[q * b.sliceVecs + i] = v[q];
  }
  meet(p, epoch0 + 2);
}

}  // namespace

int main(int argc, char** argv) {
  const mps::Start started = mps::start(&argc, &argv);
  const int rank = started.rank, nranks = started.nranks;
  const int iters = argc > 1 ? std::atoi(argv[1]) : 2000;
  if (nranks > kMaxRanks || iters < 10) {
    if (rank == 0)
      std::fprintf(stderr, "usage: mpirun -np K (<= %d) mps_floor [iters >= 10]\n", kMaxRanks);
    MPI_Finalize();
    return 2;
  }
  hipStream_t stream;
  check(hipStreamCreateWithFlags(&stream, hipStreamNonBlocking), "stream");
  hipEvent_t ev;
  check(hipEventCreateWithFlags(&ev, hipEventDisableTiming), "event");

  Peers peers = mps::makePeers(rank, nranks);
  int sms = 0;
  check(hipDeviceGetAttribute(&sms, hipDeviceAttributeMultiprocessorCount, 0), "attribute");
  // This rank's SM share: under MPS the attribute already reports the capped count.
  const int wide = std::clamp(sms, 1, kMaxBlocks);

  // Data buffers: 1 GiB / K per rank (at least 4 MiB), every rank's mapped everywhere.
  const uint64_t dataBytes = std::max<uint64_t>(uint64_t{1} << 22, (uint64_t{1} << 30) / nranks);
  uint4 *data = nullptr, *copyOut = nullptr;
  check(hipMalloc(reinterpret_cast<void**>(&data), dataBytes), "hipMalloc data");
  check(hipMalloc(reinterpret_cast<void**>(&copyOut), dataBytes), "hipMalloc out");
  check(hipMemset(data, 1, dataBytes), "hipMemset");
  check(hipDeviceSynchronize(), "sync");
  Bulk bulk{};
  bulk.out = copyOut;
  void* mapped[kMaxRanks];
  mps::exchange(data, rank, nranks, mapped);
  for (int q = 0; q < nranks; ++q) bulk.in[q] = static_cast<const uint4*>(mapped[q]);

  uint64_t epoch = 0;
  BigParams big{};
  struct Row {
    std::string name;
    double us;
  };
  std::vector<Row> rows;
  // Runs `body` iters times after a warm-up of iters / 10, all ranks started together; the
  // slowest rank's time per call. sync: the GPU work is waited for inside the timed region.
  const auto timed = [&](const std::string& name, auto body) {
    rows.push_back({name, mps::slowestUs(stream, iters / 10, iters, body)});
  };
  timed("launch", [&] { emptyKernel<<<1, 32, 0, stream>>>(); });
  // A step of 4 dependent kernels (the attention decode's fused K-rank step): plain launches,
  // programmatic dependent launches (plain ones on HIP), and one graph of the 4 (CUDA only here;
  // a graph launch is one submission).
  timed("4 launches", [&] {
    for (int i = 0; i < 4; ++i) emptyKernel<<<1, 32, 0, stream>>>();
  });
  timed("4 launches PDL", [&] {
    for (int i = 0; i < 4; ++i)
      check(sscLaunchDependent(reinterpret_cast<const void*>(&pdlKernel), dim3(1), dim3(32),
                               nullptr, 0, stream),
            "dependent launch");
  });
#if defined(SSC_GPU_IS_CUDA)
  {
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "capture");
    for (int i = 0; i < 4; ++i) emptyKernel<<<1, 32, 0, stream>>>();
    check(cudaStreamEndCapture(stream, &graph), "end capture");
    check(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
    timed("graph of 4", [&] { check(cudaGraphLaunch(exec, stream), "graph launch"); });
    check(cudaGraphExecDestroy(exec), "graph exec destroy");
    check(cudaGraphDestroy(graph), "graph destroy");
  }
#endif
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
  for (const uint64_t bytes : {uint64_t{256} << 10, uint64_t{4} << 20}) {
    if (nranks > 8 || bytes > dataBytes) break;  // the kernel unrolls over at most 8 ranks
    bulk.sliceVecs = bytes / nranks / 16;
    const int blocks = static_cast<int>(std::clamp<uint64_t>(bytes >> 17, 1, wide));
    timed("bulk " + std::to_string(bytes >> 10) + " KiB", [&] {
      bulkKernel<<<blocks, 512, 0, stream>>>(peers, bulk, epoch);
      epoch += 2;
    });
  }
  // Copies: GB/s of all ranks together, from the slowest rank's time.
  const int copyBlocks = 4 * std::max(sms, 1);
  const uint64_t vecs = dataBytes / 16;
  const int copyIters = std::max(iters / 100, 5);
  const auto copyRate = [&](const char* name, const uint4* src) {
    const double us = mps::slowestUs(stream, 2, copyIters, [&] {
      copyKernel<<<copyBlocks, 512, 0, stream>>>(copyOut, src, vecs);
    });
    // Reported as a rate: bytes copied by all ranks per second (GB/s), in the us/call column.
    rows.push_back({name, us > 0 ? 1e-3 * static_cast<double>(dataBytes) * nranks / us : 0});
  };
  copyRate("copy GB/s", data);
  copyRate("peer copy GB/s", bulk.in[(rank + 1) % nranks]);

  const bool anyBad = mps::anyFailed(peers);
  if (rank == 0) {
    std::printf(
        "# mps_floor: %d ranks, %d iterations, SM share %d (wide grid: that many 512-thread "
        "blocks)\n",
        nranks, iters, wide);
    std::printf("%-18s %10s\n", "# row", "us/call (GB/s for the copy rows)");
    for (const Row& r : rows) std::printf("%-18s %10.2f\n", r.name.c_str(), r.us);
    if (anyBad) std::printf("# WARNING: a barrier wait timed out; its rows are not valid\n");
  }
  mps::unmap(mapped, rank, nranks);
  mps::freePeers(peers);
  (void)hipFree(data);
  (void)hipFree(copyOut);
  MPI_Finalize();
  return anyBad && rank == 0 ? 1 : 0;
}
