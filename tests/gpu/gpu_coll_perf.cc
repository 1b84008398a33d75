// SPDX-License-Identifier: MIT
// GPU collective sweep with its own roofline (what the tuner's calibration reads): all-reduce,
// reduce-scatter and all-gather from 8 B to 1 GiB, for the default algorithm and each forced one,
// plus the device-to-device copy bandwidth of the same partitioning measured in the same run (every
// rank copying at once). Both buffers are registered (sscCommRegister of sscMemAlloc memory), so
// the default and "symmetric" may run zero-copy. Rows that pin the symmetric algorithm's protocol,
// so that the tuner's calibration sees each one (plain "symmetric" runs the tuner's pick):
// "symmetric_ll", LL packets (all-reduce up to 64 KiB); "symmetric_bulk", zero-copy on the bulk
// grid (all-reduce up to 64 KiB with LL off, and all-gather at every size); "symmetric_wide",
// zero-copy on the wide grid (all-gather at every size).
//
//   mpirun -np K build/bin/gpu_coll_perf [maxBytes] [out.json] [algo,algo,...] [coll,coll,...]
//
// Sizes are per-rank buffer sizes as nccl-tests counts them (all-reduce: the buffer; reduce-
// scatter: the input; all-gather: the output); reduce-scatter and all-gather round the float
// count down to a multiple of K (the bytes column says what ran). Latency rows (<= 64 KiB) time
// 200 back-to-back calls. busbw follows nccl-tests. roof% is the time the
// call would take if every rank read its input once and wrote its output once at the measured
// copy bandwidth, over the measured time.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tests/gpu/gpu_test_setup.h"
#include "src/platform/gpu_runtime.h"
#include "src/comm/comm.h"
#include "src/device/gpu/gpu_symmetric.h"
#include "src/kernels/gpu/copy_kernel.h"
#include "src/kernels/gpu/plan_kernel.h"
#include "starscream/starscream.h"

namespace {

int g_rank = 0, g_nranks = 1;

// Seconds per iteration of fn, the slowest rank's, after warm-up.
template <class Fn>
double timeIt(hipStream_t stream, int iters, Fn fn) {
  hipEvent_t start, stop;
  CHECK_GPU(hipEventCreate(&start));
  CHECK_GPU(hipEventCreate(&stop));
  for (int i = 0; i < 2; ++i) fn();
  CHECK_GPU(hipStreamSynchronize(stream));
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK_GPU(hipEventRecord(start, stream));
  for (int i = 0; i < iters; ++i) fn();
  CHECK_GPU(hipEventRecord(stop, stream));
  CHECK_GPU(hipEventSynchronize(stop));
  float ms = 0;
  CHECK_GPU(hipEventElapsedTime(&ms, start, stop));
  CHECK_GPU(hipEventDestroy(start));
  CHECK_GPU(hipEventDestroy(stop));
  double t = ms * 1e-3 / iters, worst = 0;
  MPI_Allreduce(&t, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return worst;
}

int itersFor(size_t bytes) {
  if (bytes <= (64u << 10)) return 200;
  if (bytes <= (1u << 20)) return 50;
  if (bytes <= (64u << 20)) return 10;
  return 4;
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;  // the network proxy (topologies with several nodes) calls MPI
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_nranks);
  const size_t maxBytes = argc > 1 ? std::strtoull(argv[1], nullptr, 0) : (size_t(1) << 30);
  const char* jsonPath = argc > 2 && argv[2][0] != '\0' ? argv[2] : nullptr;
  // Optional filters, comma-separated names (empty or absent: all).
  const std::string algoFilter = argc > 3 ? argv[3] : "", collFilter = argc > 4 ? argv[4] : "";
  const auto selected = [](const std::string& filter, const char* name) {
    return filter.empty() ||
           ("," + filter + ",").find(std::string(",") + name + ",") != std::string::npos;
  };
  const int device = setUpGpuRank("gpu_coll_perf", g_rank, g_nranks);
  if (device < 0) {
    MPI_Finalize();
    return 0;
  }
  const int K = g_nranks;

  hipStream_t stream;
  CHECK_GPU(hipStreamCreateWithFlags(&stream, hipStreamNonBlocking));
  void *in = nullptr, *out = nullptr;
  CHECK_SSC(sscMemAlloc(&in, maxBytes));
  CHECK_SSC(sscMemAlloc(&out, maxBytes));
  CHECK_GPU(hipMemset(in, 0, maxBytes));
  CHECK_GPU(hipMemset(out, 0, maxBytes));

  int sms = 0;
  CHECK_GPU(hipDeviceGetAttribute(&sms, hipDeviceAttributeMultiprocessorCount, device));
  // Where this rank's kernels run: a grid of its SM share, and whether it is resident at once.
  int pct = 100;
  if (const char* p = std::getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"))
    pct = std::max(1, std::atoi(p));
  // Under an MPS cap the runtime reports the capped SM count (see src/device/gpu/gpu_census.h).
  const int share = std::max(1, pct < 100 ? sms : sms / K);
  int distinct = 0, resident = 0;
  ssc::gpu::probeResidency(share, 512, &distinct, &resident);
  int minDistinct = 0, allResident = 0;
  MPI_Allreduce(&distinct, &minDistinct, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&resident, &allResident, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (g_rank == 0)
    std::printf(
        "# K=%d SMs %d, MPS %d%%: a grid of %d blocks x 512 ran on >= %d distinct SMs per rank, "
        "all resident at once on every rank: %s\n",
        K, sms, pct, share, minDistinct, allResident ? "yes" : "no");
  // Roofline: all ranks copy at once (so each has its own share of SMs and of HBM), with the
  // runtime's copy engine path and with our own copy kernel; the better one is the roofline.
  const size_t copyBytes = std::min(maxBytes, size_t(256) << 20);
  const double tMemcpy = timeIt(stream, 5, [&] {
    CHECK_GPU(hipMemcpyAsync(out, in, copyBytes, hipMemcpyDeviceToDevice, stream));
  });
  const double tKernel = timeIt(stream, 5, [&] {
    ssc::gpu::launchCopyKernel(out, in, copyBytes, std::max(1, 2 * share), stream);
  });
  const double copyBw =
      K * copyBytes / std::min(tMemcpy, tKernel);  // bytes copied per second, all ranks
  if (g_rank == 0)
    std::printf(
        "# K=%d copy bandwidth (all ranks at once): memcpy %.1f GB/s, kernel %.1f GB/s, "
        "roofline uses %.1f GB/s\n",
        K, K * copyBytes / tMemcpy / 1e9, K * copyBytes / tKernel / 1e9, copyBw / 1e9);

  sscUniqueId id;
  if (g_rank == 0) CHECK_SSC(sscGetUniqueId(&id));
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  sscComm_t comm = nullptr;
  CHECK_SSC(sscCommInitRank(&comm, K, id, g_rank));
  void *hIn = nullptr, *hOut = nullptr;
  CHECK_SSC(sscCommRegister(comm, in, maxBytes, &hIn));
  CHECK_SSC(sscCommRegister(comm, out, maxBytes, &hOut));

  std::vector<size_t> sizes;
  for (size_t x = 8; x <= maxBytes; x *= 4) sizes.push_back(x);
  for (size_t x : {size_t(64) << 10, size_t(1) << 20, size_t(256) << 20, size_t(1) << 30})
    if (x <= maxBytes) sizes.push_back(x);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());

  FILE* json = (g_rank == 0 && jsonPath) ? std::fopen(jsonPath, "w") : nullptr;
  if (json)
    std::fprintf(json, "{\"K\": %d, \"copy_GBps\": %.2f, \"results\": [\n", K, copyBw / 1e9);
  bool firstRow = true;
  if (g_rank == 0)
    std::printf("%-14s %-13s %12s %10s %9s %9s %7s\n", "coll", "algo", "bytes", "time_us", "algbw",
                "busbw", "roof%");
  for (const char* coll : {"allreduce", "reducescatter", "allgather"}) {
    for (const char* algo : {"default", "symmetric", "symmetric_ll", "symmetric_bulk",
                             "symmetric_wide", "ring", "bidir_ring", "direct", "hierarchical"}) {
      if (!selected(algoFilter, algo) || !selected(collFilter, coll)) continue;
      const bool bulk = std::strcmp(algo, "symmetric_bulk") == 0,
                 ll = std::strcmp(algo, "symmetric_ll") == 0,
                 wide = std::strcmp(algo, "symmetric_wide") == 0;
      const bool allReduce = std::strcmp(coll, "allreduce") == 0,
                 allGather = std::strcmp(coll, "allgather") == 0;
      // Each pinned row runs where its protocol differs from another's (see the top).
      if ((ll && !allReduce) || (wide && !allGather) || (bulk && !allReduce && !allGather))
        continue;
      // The communicator's own settings (read at init), switched per row.
      CHECK_SSC(ssc::commForceAlgo(comm, std::strcmp(algo, "default") == 0 ? ""
                                         : bulk || ll || wide              ? "symmetric"
                                                                           : algo));
      comm->config.packetMaxBytes = bulk ? 0 : UINT64_MAX;
      comm->config.zeroCopyGrid = bulk   ? ssc::ZeroCopyGrid::kBulk
                                  : wide ? ssc::ZeroCopyGrid::kWide
                                         : ssc::ZeroCopyGrid::kAuto;
      for (size_t requested : sizes) {
        if ((bulk || ll) && allReduce && requested > (64u << 10)) continue;
        size_t elems = requested / 4;  // float
        if (std::strcmp(coll, "allreduce") != 0) elems -= elems % K;
        if (elems == 0) continue;
        const size_t bytes = elems * 4;
        sscResult_t r = sscSuccess;
        const double t = timeIt(stream, itersFor(bytes), [&] {
          if (std::strcmp(coll, "allreduce") == 0)
            r = sscAllReduce(in, out, elems, sscFloat32, sscSum, comm, stream);
          else if (std::strcmp(coll, "reducescatter") == 0)
            r = sscReduceScatter(in, out, elems / K, sscFloat32, sscSum, comm, stream);
          else
            r = sscAllGather(in, out, elems / K, sscFloat32, comm, stream);
        });
        if (r != sscSuccess) {
          if (g_rank == 0)
            std::printf("%-14s %-13s %12zu failed: %s\n", coll, algo, bytes, sscGetLastError(comm));
          break;
        }
        const double S = static_cast<double>(bytes), algbw = S / t;
        double busbw, traffic;  // traffic: bytes read + written per rank at the roofline
        if (std::strcmp(coll, "allreduce") == 0) {
          busbw = algbw * 2.0 * (K - 1) / K;
          traffic = 2 * S;
        } else {
          busbw = algbw * (K - 1) / K;
          traffic = S + S / K;
        }
        const double roof = (K * traffic / 2.0) / copyBw;  // a copy of B bytes moves 2B
        if (g_rank == 0) {
          std::printf("%-14s %-13s %12zu %10.2f %9.2f %9.2f %6.1f%%\n", coll, algo, bytes, t * 1e6,
                      algbw / 1e9, busbw / 1e9, 100.0 * roof / t);
          if (json)
            std::fprintf(
                json,
                "%s  {\"coll\": \"%s\", \"algo\": \"%s\", \"bytes\": %zu, \"time_us\": %.3f, "
                "\"algbw_GBps\": %.3f, \"busbw_GBps\": %.3f, \"roofline_pct\": %.2f}",
                firstRow ? "" : ",\n", coll, algo, bytes, t * 1e6, algbw / 1e9, busbw / 1e9,
                100.0 * roof / t);
          firstRow = false;
        }
      }
      std::fflush(stdout);
    }
  }
  if (json) {
    std::fprintf(json, "\n]}\n");
    std::fclose(json);
  }
  sscResult_t async = sscSuccess;
  sscCommGetAsyncError(comm, &async);
  if (g_rank == 0 && async != sscSuccess) std::printf("# async error: %s\n", sscGetLastError(comm));
  sscCommDeregister(comm, hIn);
  sscCommDeregister(comm, hOut);
  sscCommDestroy(comm);
  sscMemFree(in);
  sscMemFree(out);
  MPI_Finalize();
  return 0;
}
