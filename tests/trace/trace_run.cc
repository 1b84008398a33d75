// SPDX-License-Identifier: MIT
// The calls of the STARSCREAM_TRACE tests, one process per rank under mpirun (host backend):
// per round, 3 all-reduces of growing size, a reduce-scatter, an all-gather, a broadcast, an
// all-to-all, a group of two all-reduces and a group of a ring's send and receive: kCallsPerRound
// calls, which the trace must hold one event each of (tests/trace/run_trace_test.sh checks the
// files with tools/trace/starscream_trace.py). --expect-off: the communicator must have no trace.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "src/comm/comm.h"
#include "starscream/starscream.h"
#include "starscream/starscream_mpi.h"

namespace {

constexpr int kCallsPerRound = 10;

#define CHECK(call)                                                      \
  do {                                                                   \
    sscResult_t r_ = (call);                                             \
    if (r_ != sscSuccess) {                                              \
      std::fprintf(stderr, "%s: %s: %s\n", #call, sscGetErrorString(r_), \
                   sscGetLastError(nullptr));                            \
      MPI_Abort(MPI_COMM_WORLD, 1);                                      \
    }                                                                    \
  } while (0)

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rounds = 1;
  bool expectOff = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--rounds=", 9) == 0) rounds = std::atoi(argv[i] + 9);
    if (std::strcmp(argv[i], "--expect-off") == 0) expectOff = true;
  }
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  sscComm_t comm = nullptr;
  CHECK(sscCommInitMpi(MPI_COMM_WORLD, &comm));
  if ((comm->trace == nullptr) != expectOff) {
    std::fprintf(stderr, "rank %d: tracing is %s, expected %s\n", rank,
                 comm->trace == nullptr ? "off" : "on", expectOff ? "off" : "on");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  const size_t maxCount = size_t{1} << (12 + 2 * rounds);
  std::vector<float> a(maxCount * n, 1.0f), b(maxCount * n, 0.0f), c(maxCount * n, 0.0f);
  sscStream_t s = nullptr;
  for (int round = 0; round < rounds; ++round) {
    const size_t count = size_t{1} << (12 + 2 * round);
    for (size_t k : {count / 16, count / 4, count})
      CHECK(sscAllReduce(a.data(), b.data(), k, sscFloat32, sscSum, comm, s));
    CHECK(sscReduceScatter(a.data(), b.data(), count / n, sscFloat32, sscSum, comm, s));
    CHECK(sscAllGather(a.data(), b.data(), count / n, sscFloat32, comm, s));
    CHECK(sscBroadcast(a.data(), b.data(), count, sscFloat32, round % n, comm, s));
    CHECK(sscAllToAll(a.data(), b.data(), count / n, sscFloat32, comm, s));
    CHECK(sscGroupStart());
    CHECK(sscAllReduce(a.data(), b.data(), count / 2, sscBfloat16, sscMax, comm, s));
    CHECK(sscAllReduce(a.data(), c.data(), count / 2, sscInt32, sscSum, comm, s));
    CHECK(sscGroupEnd());
    CHECK(sscGroupStart());
    CHECK(sscSend(a.data(), count, sscFloat32, (rank + 1) % n, comm, s));
    CHECK(sscRecv(b.data(), count, sscFloat32, (rank + n - 1) % n, comm, s));
    CHECK(sscGroupEnd());
  }
  CHECK(sscStreamSynchronize(s));
  CHECK(sscCommFinalize(comm));
  CHECK(sscCommDestroy(comm));
  if (rank == 0) std::printf("%d calls per rank\n", rounds * kCallsPerRound);
  MPI_Finalize();
  return 0;
}
