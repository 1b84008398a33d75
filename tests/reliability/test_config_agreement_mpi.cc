// SPDX-License-Identifier: MIT
// Settings that must agree, under mpirun with an environment of each rank's own (ctest launches
// it as an MPMD job: `-np 1 prog : -np 1 env VAR=VALUE prog : -np 1 prog`, so only rank 1 starts
// with VAR set, as a job script that exports something on one node would).
//
//   test_config_agreement_mpi VAR   every rank's init fails within 1 s of the last rank starting
//                                   it, with sscInvalidUsage naming VAR and rank 1
//   test_config_agreement_mpi       init succeeds (the ranks' spellings are equivalent) and an
//                                   all-reduce gives the exact sum
//
// Prints "PASS ..." or "FAIL ..." per rank; the exit status is non-zero if any rank failed.
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "starscream/starscream.h"
#include "starscream/starscream_mpi.h"
#include "tests/support/backend_copy.h"

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const std::string variable = argc > 1 ? argv[1] : "";
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = now();
  sscComm_t comm = nullptr;
  const sscResult_t r = sscCommInitMpi(MPI_COMM_WORLD, &comm);
  const double end = now();
  const std::string message = r == sscSuccess ? "" : sscGetLastError(nullptr);
  double lastStart = start;
  MPI_Allreduce(&start, &lastStart, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);

  std::string failure;
  if (!variable.empty()) {
    if (r != sscInvalidUsage)
      failure = std::string("init returned ") + sscGetErrorString(r) + ", not sscInvalidUsage";
    else if (message.find("the ranks' settings differ") == std::string::npos ||
             message.find(variable + " is ") == std::string::npos ||
             message.find("on rank 1") == std::string::npos)
      failure = "the message does not name " + variable + " and rank 1";
    else if (end - lastStart > 1.0)
      failure = "init failed " + std::to_string(end - lastStart) + " s after every rank started it";
  } else if (r != sscSuccess) {
    failure = "init failed";
  } else {
    // The library's memory (device memory on a GPU backend), so that it runs on either backend.
    std::vector<float> buf(1 << 16, static_cast<float>(rank + 1));
    const size_t bytes = buf.size() * sizeof(float);
    void* dev = nullptr;
    sscResult_t c = sscMemAlloc(&dev, bytes);
    if (c == sscSuccess && !ssc::test::copyBuffer(dev, buf.data(), bytes))
      c = sscUnhandledDeviceError;
    if (c == sscSuccess) c = sscAllReduce(dev, dev, buf.size(), sscFloat32, sscSum, comm, nullptr);
    if (c == sscSuccess) c = sscStreamSynchronize(nullptr);
    if (c == sscSuccess && !ssc::test::copyBuffer(buf.data(), dev, bytes))
      c = sscUnhandledDeviceError;
    if (dev != nullptr) (void)sscMemFree(dev);
    if (c != sscSuccess)
      failure = std::string("all-reduce failed: ") + sscGetLastError(comm);
    else if (buf.front() != n * (n + 1) / 2.0f || buf.back() != n * (n + 1) / 2.0f)
      failure = "all-reduce gave a wrong sum";
  }
  if (comm != nullptr) (void)sscCommDestroy(comm);
  if (failure.empty())
    std::printf("PASS rank %d (%.0f ms): %s\n", rank, (end - lastStart) * 1e3,
                message.empty() ? "init succeeded" : message.c_str());
  else
    std::printf("FAIL rank %d: %s: %s\n", rank, failure.c_str(), message.c_str());
  std::fflush(stdout);
  int bad = failure.empty() ? 0 : 1, anyBad = 0;
  MPI_Allreduce(&bad, &anyBad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return anyBad;
}
