// SPDX-License-Identifier: MIT
// A stopped rank under mpirun (default STARSCREAM_HEARTBEAT_TIMEOUT): rank 0 sends SIGSTOP to one
// rank while every rank loops over all-reduces, then SIGCONT. On either backend: ctest runs it on
// the host backend, `tools/emulate/partition-run.sh 8 build/bin/test_stopped_rank_mpi 5 stop` on
// a GPU (the buffer comes from sscMemAlloc, filled and read through tests/support/backend_copy.h).
//
//   test_stopped_rank_mpi VICTIM         every other rank's all-reduce fails within 5 s of the
//                                        stop, naming the victim's rank, host and pid; resumed,
//                                        the victim fails at once, told it was given up on
//   test_stopped_rank_mpi VICTIM short   the stop lasts 1.5 s (below the timeout): every call
//                                        completes with the exact sum
//
// MPI only carries the pids, the times and the verdicts (over a communicator without the victim
// while it is stopped). Prints "PASS ..." or "FAIL ..." per rank; the exit status is non-zero if
// any rank failed.
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "starscream/starscream.h"
#include "starscream/starscream_mpi.h"
#include "tests/support/backend_copy.h"

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string hostName() {
  char host[64] = {0};
  (void)::gethostname(host, sizeof(host) - 1);
  return host;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const int victim = argc > 1 ? std::atoi(argv[1]) : n - 1;
  const bool shortStop = argc > 2 && std::string(argv[2]) == "short";
  if (victim <= 0 || victim >= n) {
    if (rank == 0) std::printf("FAIL usage: the victim must be a rank in 1..%d\n", n - 1);
    MPI_Finalize();
    return 2;
  }
  std::vector<int> pids(static_cast<size_t>(n));
  const int pid = static_cast<int>(::getpid());
  MPI_Allgather(&pid, 1, MPI_INT, pids.data(), 1, MPI_INT, MPI_COMM_WORLD);
  MPI_Comm others;  // every rank but the victim: usable while it is stopped
  MPI_Comm_split(MPI_COMM_WORLD, rank == victim ? 1 : 0, rank, &others);

  sscComm_t comm = nullptr;
  std::string failure;
  if (sscCommInitMpi(MPI_COMM_WORLD, &comm) != sscSuccess)
    failure = std::string("init failed: ") + sscGetLastError(nullptr);
  int initOk = failure.empty(), allInit = 0;
  MPI_Allreduce(&initOk, &allInit, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);

  // Rank 0 stops the victim 0.5 s into the loop (mid all-reduce: every rank is inside one or
  // about to be); in the short case it resumes it 1.5 s later.
  double stoppedAt = 0;
  std::thread stopper;
  const double loopStart = now();
  if (allInit && rank == 0) {
    stopper = std::thread([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      stoppedAt = now();
      ::kill(pids[static_cast<size_t>(victim)], SIGSTOP);
      if (shortStop) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        ::kill(pids[static_cast<size_t>(victim)], SIGCONT);
      }
    });
  }

  // All-reduces until one fails (the stop case), or for 4 s (the short case: element 0 carries
  // each rank's wish to go on, so all stop at the same call).
  sscResult_t result = sscSuccess;
  std::string message;
  double failedAt = 0, slowest = 0;
  std::vector<float> buf(1 << 16);
  const size_t bytes = buf.size() * sizeof(float);
  void* dev = nullptr;  // the library's memory: device memory on a GPU backend
  if (allInit && sscMemAlloc(&dev, bytes) != sscSuccess)
    failure = std::string("sscMemAlloc failed: ") + sscGetLastError(nullptr);
  for (int call = 0; allInit && dev != nullptr; ++call) {
    std::fill(buf.begin(), buf.end(), 1.0f);
    buf[0] = !shortStop || now() - loopStart < 4.0 ? 1.0f : 0.0f;
    if (!ssc::test::copyBuffer(dev, buf.data(), bytes)) {
      failure = "copying the input failed at call " + std::to_string(call);
      break;
    }
    const double start = now();
    result = sscAllReduce(dev, dev, buf.size(), sscFloat32, sscSum, comm, nullptr);
    if (result == sscSuccess) result = sscStreamSynchronize(nullptr);
    slowest = std::max(slowest, now() - start);
    if (result != sscSuccess) {
      failedAt = now();
      message = sscGetLastError(comm);
      break;
    }
    if (!ssc::test::copyBuffer(buf.data(), dev, bytes)) {
      failure = "copying the result failed at call " + std::to_string(call);
      break;
    }
    for (size_t i = 1; i < buf.size() && failure.empty(); ++i)
      if (buf[i] != static_cast<float>(n)) failure = "wrong sum at call " + std::to_string(call);
    if (!failure.empty() || buf[0] != static_cast<float>(n)) break;
  }
  if (stopper.joinable()) stopper.join();

  if (!allInit) {
    // Nothing to check: the failure is printed below.
  } else if (shortStop) {
    if (result != sscSuccess) failure = "an all-reduce failed across a short stop: " + message;
    double longest = 0;
    MPI_Allreduce(&slowest, &longest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (failure.empty() && longest < 1.2)
      failure = "no call waited through the stop (longest " + std::to_string(longest) + " s)";
    if (failure.empty() && rank == 0)
      std::printf("the longest all-reduce took %.2f s across the 1.5 s stop\n", longest);
  } else if (rank != victim) {
    // Survivors: rank 0 shares when it stopped the victim, then resumes it once all have failed.
    MPI_Bcast(&stoppedAt, 1, MPI_DOUBLE, 0, others);
    const std::string name = "rank " + std::to_string(victim) + " (host " + hostName() + ", pid " +
                             std::to_string(pids[static_cast<size_t>(victim)]) +
                             ") is unresponsive";
    if (result == sscSuccess)
      failure = "the all-reduce loop ended without a failure";
    else if (message.find(name) == std::string::npos)
      failure = "the error does not say '" + name + "'";
    else if (failedAt - stoppedAt > 5.0)
      failure = "the stop was noticed only after " + std::to_string(failedAt - stoppedAt) + " s";
    double took = failedAt - stoppedAt, slowestSurvivor = 0;
    MPI_Reduce(&took, &slowestSurvivor, 1, MPI_DOUBLE, MPI_MAX, 0, others);
    if (rank == 0) {
      std::printf("every survivor named rank %d within %.2f s of SIGSTOP: %s\n", victim,
                  slowestSurvivor, message.c_str());
      ::kill(pids[static_cast<size_t>(victim)], SIGCONT);
    }
  } else {
    // The victim, resumed: its call fails at once, saying the others gave up on it.
    if (result == sscSuccess)
      failure = "the resumed rank's loop ended without a failure";
    else if (message.find("was declared unresponsive") == std::string::npos)
      failure = "the resumed rank was not told it had been declared unresponsive";
  }

  std::printf("%s rank %d%s%s\n", failure.empty() ? "PASS" : "FAIL", rank,
              failure.empty() ? "" : ": ", failure.c_str());
  if (!failure.empty() && !message.empty())
    std::printf("  rank %d's error: %s\n", rank, message.c_str());
  std::fflush(stdout);
  if (comm != nullptr) (void)sscCommAbort(comm);
  if (dev != nullptr) (void)sscMemFree(dev);
  int ok = failure.empty(), allOk = 0;
  MPI_Allreduce(&ok, &allOk, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Comm_free(&others);
  MPI_Finalize();
  return allOk ? 0 : 1;
}
