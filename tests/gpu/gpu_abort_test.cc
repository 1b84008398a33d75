// SPDX-License-Identifier: MIT
// sscCommAbort must wake GPU kernels that wait on a peer: an NCCL user expects ncclCommAbort to
// end pending work promptly, not after STARSCREAM_TIMEOUT. Rank 0 enqueues an all-reduce that
// the other ranks never join, so its kernel waits on rank 1; STARSCREAM_TIMEOUT is 60 s, so only
// the abort can end that wait within the 2 s allowed. Three kernels, three kinds of wait:
//   - fifo:     the plan kernel (ring, unregistered hipMalloc buffers): a FIFO receive;
//   - sym-ll:   the symmetric LL kernel (registered sscMemAlloc buffers, 4 KiB): the header;
//   - sym-bulk: the symmetric bulk kernel (registered, 4 MiB): the per-block peer barrier;
// each stopped two ways:
//   - abort: a second thread calls sscCommAbort after 200 ms. sscStreamSynchronize and the abort
//     itself (which waits for the communicator's kernels before freeing their memory) must return
//     promptly, and not with sscTimeout. sscCommAbort frees the communicator, so its async error
//     cannot be read afterwards: the "flag" way checks what it reports;
//   - flag: a second thread raises comm->abortFlag, which is what sscCommAbort does first, and
//     keeps the communicator: sscStreamSynchronize and sscCommGetAsyncError must then report
//     sscRemoteError with the "communicator aborted" message, not sscTimeout.
// Ranks other than 0 skip the call. They leave the communicator (deregister, sscCommDestroy:
// both local) only once rank 0 is done, so rank 0's kernel never writes into memory they freed.
//
//   mpirun -np K build/bin/gpu_abort_test     (K >= 2; tools/emulate/partition-run.sh K ...)
//
// Prints "SKIPPED" and exits 0 where no GPU is visible or K < 2.
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "src/comm/comm.h"
#include "src/platform/gpu_runtime.h"
#include "src/device/gpu/gpu_symmetric.h"
#include "starscream/starscream.h"
#include "tests/gpu/gpu_test_setup.h"

using namespace ssc;

namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kAbortAfter = std::chrono::milliseconds(200);
constexpr double kPromptSeconds = 2.0;  // STARSCREAM_TIMEOUT is 60 s: only the abort is this fast

int g_rank = 0, g_nranks = 1, g_failures = 0;

void expect(bool ok, const std::string& what) {
  if (ok) return;
  ++g_failures;
  std::fprintf(stderr, "rank %d FAIL %s\n", g_rank, what.c_str());
}

double seconds(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

sscComm_t newComm() { return newMpiComm(g_rank, g_nranks); }

struct Case {
  const char* name;
  bool symmetric;  // registered sscMemAlloc buffers (symmetric kernels); else hipMalloc + ring
  size_t count;    // floats
};

// Rank 0's side of one case: the call the peers never join, and the stop from another thread.
// Returns how long the stream took to finish after the stop, in seconds (-1: not measured).
double stopWaitingKernel(const Case& c, bool viaAbort, sscComm_t comm, void* in, void* out,
                         sscStream_t stream) {
  const std::string what = std::string(c.name) + (viaAbort ? " (sscCommAbort)" : " (abort flag)");
  const uint64_t launchesBefore = gpu::symmetricLaunches();
  const sscResult_t r = sscAllReduce(in, out, c.count, sscFloat32, sscSum, comm, stream);
  expect(r == sscSuccess, what + ": enqueue returned " + sscGetErrorString(r));
  if (c.symmetric)
    expect(gpu::symmetricLaunches() > launchesBefore, what + ": the symmetric kernel did not run");
  if (r != sscSuccess) {
    sscCommAbort(comm);
    return -1;
  }

  std::atomic<int64_t> stopAt{0};  // Clock ticks when the other thread stopped the communicator
  sscResult_t abortResult = sscSuccess;
  double abortSeconds = 0;
  std::thread stopper([&] {
    std::this_thread::sleep_for(kAbortAfter);
    const auto t = Clock::now();
    stopAt = t.time_since_epoch().count();
    if (viaAbort) {
      abortResult = sscCommAbort(comm);
      abortSeconds = seconds(t, Clock::now());
    } else {
      comm->abortFlag.store(true);
    }
  });
  const sscResult_t s = sscStreamSynchronize(stream);
  const auto synced = Clock::now();
  stopper.join();
  const Clock::time_point stopped{Clock::duration(stopAt.load())};

  // The kernel must have waited for the stop (else this case tests nothing), then ended promptly.
  expect(synced >= stopped, what +
                                ": the stream finished before the stop: the kernel did not wait "
                                "for the missing rank (" +
                                sscGetErrorString(s) + ")");
  const double late = seconds(stopped, synced);
  expect(late < kPromptSeconds, what + ": the stream took " + std::to_string(late) +
                                    " s after the stop (limit " + std::to_string(kPromptSeconds) +
                                    " s)");
  if (viaAbort) {
    // The communicator may be gone before the synchronize looks at it (then the kernel's error
    // has no one to report to): success or the abort's error, never the timeout.
    expect(s == sscSuccess || s == sscRemoteError,
           what + ": sscStreamSynchronize returned " + sscGetErrorString(s));
    expect(abortResult == sscSuccess,
           what + ": sscCommAbort returned " + sscGetErrorString(abortResult));
    expect(abortSeconds < kPromptSeconds,
           what + ": sscCommAbort took " + std::to_string(abortSeconds) + " s");
    return late;
  }
  expect(s == sscRemoteError, what + ": sscStreamSynchronize returned " + sscGetErrorString(s) +
                                  ", expected sscRemoteError");
  sscResult_t async = sscSuccess;
  expect(sscCommGetAsyncError(comm, &async) == sscSuccess && async == sscRemoteError,
         what + ": sscCommGetAsyncError reported " + sscGetErrorString(async) +
             ", expected sscRemoteError");
  const std::string message = comm->failures.message();
  expect(message.find("communicator aborted while waiting for") != std::string::npos,
         what + ": async message '" + message + "'");
  // The usual end of a communicator that failed: abort does not wait for peers.
  const auto t = Clock::now();
  expect(sscCommAbort(comm) == sscSuccess, what + ": sscCommAbort failed");
  expect(seconds(t, Clock::now()) < kPromptSeconds, what + ": sscCommAbort was slow");
  return late;
}

double runCase(const Case& c, bool viaAbort) {
  setenv("STARSCREAM_ALGO", c.symmetric ? "symmetric" : "ring", 1);
  sscComm_t comm = newComm();
  const size_t bytes = c.count * sizeof(float);
  void *in = nullptr, *out = nullptr, *hIn = nullptr, *hOut = nullptr;
  if (c.symmetric) {
    if (sscMemAlloc(&in, bytes) != sscSuccess || sscMemAlloc(&out, bytes) != sscSuccess ||
        sscCommRegister(comm, in, bytes, &hIn) != sscSuccess ||
        sscCommRegister(comm, out, bytes, &hOut) != sscSuccess) {
      std::fprintf(stderr, "rank %d: symmetric buffers failed: %s\n", g_rank,
                   sscGetLastError(comm));
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  } else if (hipMalloc(&in, bytes) != hipSuccess || hipMalloc(&out, bytes) != hipSuccess) {
    std::fprintf(stderr, "rank %d: hipMalloc failed\n", g_rank);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  hipMemset(in, 0, bytes);
  hipDeviceSynchronize();
  sscStream_t stream = nullptr;
  if (sscStreamCreate(&stream) != sscSuccess) {
    std::fprintf(stderr, "rank %d: sscStreamCreate failed: %s\n", g_rank, sscGetLastError(nullptr));
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Barrier(MPI_COMM_WORLD);

  double late = -1;
  if (g_rank == 0) late = stopWaitingKernel(c, viaAbort, comm, in, out, stream);  // frees comm
  // Rank 0's kernel has ended: its writes into the peers' FIFOs, inboxes and barrier slots are
  // over, so the peers may free them now.
  MPI_Barrier(MPI_COMM_WORLD);
  if (g_rank != 0) {
    if (hIn != nullptr) sscCommDeregister(comm, hIn);
    if (hOut != nullptr) sscCommDeregister(comm, hOut);
    expect(sscCommDestroy(comm) == sscSuccess,
           std::string(c.name) + ": sscCommDestroy on a rank that skipped the call failed");
  }
  // Nobody maps another rank's buffers any more.
  MPI_Barrier(MPI_COMM_WORLD);
  sscStreamDestroy(stream);
  if (c.symmetric) {
    sscMemFree(in);
    sscMemFree(out);
  } else {
    hipFree(in);
    hipFree(out);
  }
  return late;
}

}  // namespace

int main(int argc, char** argv) {
  if (!startGpuRank(&argc, &argv, "gpu_abort_test", &g_rank, &g_nranks)) return 0;
  if (g_nranks < 2) {
    if (g_rank == 0) std::printf("SKIPPED: gpu_abort_test: needs at least 2 ranks\n");
    MPI_Finalize();
    return 0;
  }
  setenv("STARSCREAM_TIMEOUT", "60", 1);

  const Case cases[] = {
      {"fifo", false, 1 << 20},
      {"sym-ll", true, 1024},
      {"sym-bulk", true, 1 << 20},
  };
  for (const Case& c : cases) {
    for (const bool viaAbort : {true, false}) {
      const int before = g_failures;
      const double late = runCase(c, viaAbort);
      int local = g_failures - before, total = 0;
      MPI_Allreduce(&local, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
      if (g_rank == 0)
        std::printf("gpu_abort_test K=%d %-8s %-12s %s (stream done %.1f ms after the stop)\n",
                    g_nranks, c.name, viaAbort ? "sscCommAbort" : "abort flag",
                    total == 0 ? "PASSED" : "FAILED", late * 1e3);
      std::fflush(stdout);
    }
  }

  int total = 0;
  MPI_Allreduce(&g_failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0)
    std::printf("gpu_abort_test K=%d: %s (%d failure(s))\n", g_nranks,
                total == 0 ? "PASSED" : "FAILED", total);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
