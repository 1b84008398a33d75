// SPDX-License-Identifier: MIT
#include "perf/common/launch.h"

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace ssc::perf {
namespace {

// The communicator whose asynchronous error fatalSsc reports when the thread has none.
sscComm_t gComm = nullptr;
World gWorld;

constexpr int kLineBytes = 2048;  // as nccl-tests: one fixed-size slot per rank

}  // namespace

World startMpi(int* argc, char*** argv) {
  // Communicators that span nodes run Starscream's network proxy thread, which calls MPI.
  int provided = 0;
  MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
  World world;
  MPI_Comm_rank(MPI_COMM_WORLD, &world.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world.nranks);
  world.pid = static_cast<int>(getpid());
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  world.hostname = host;
  gWorld = world;
  return world;
}

void stopMpi() { MPI_Finalize(); }

Session openSession(const World& world) {
  sscUniqueId id;
  std::memset(&id, 0, sizeof(id));
  if (world.rank == 0) PERF_CHECK(sscGetUniqueId(&id));
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  Session session;
  // Every rank reads the same environment and topology file, so a bad one fails every rank the
  // same way: the lowest failing rank says why, once, and all ranks leave without an MPI_Abort.
  const sscResult_t init = sscCommInitRank(&session.comm, world.nranks, id, world.rank);
  const std::string why = init == sscSuccess ? "" : sscGetLastError(nullptr);
  int firstFailed = init == sscSuccess ? world.nranks : world.rank;
  MPI_Allreduce(MPI_IN_PLACE, &firstFailed, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (firstFailed < world.nranks) {
    if (world.rank == firstFailed)
      std::fprintf(stderr, "%s: rank %d: communicator init failed: %s: %s\n",
                   world.hostname.c_str(), world.rank, sscGetErrorString(init),
                   why.empty() ? "(no message)" : why.c_str());
    if (session.comm != nullptr) (void)sscCommAbort(session.comm);
    stopMpi();
    std::exit(kExitFailure);
  }
  gComm = session.comm;
  PERF_CHECK(sscCommDevice(session.comm, &session.device));
  PERF_CHECK(sscStreamCreate(&session.stream));
  return session;
}

void closeSession(Session* session) {
  if (session->stream != nullptr) PERF_CHECK(sscStreamDestroy(session->stream));
  if (session->comm != nullptr) {
    PERF_CHECK(sscCommFinalize(session->comm));
    PERF_CHECK(sscCommDestroy(session->comm));
  }
  gComm = nullptr;
  *session = Session();
}

void fatalSsc(sscResult_t result, const char* call, const char* file, int line) {
  // Read the message before anything else can overwrite this thread's last error.
  const std::string last = sscGetLastError(gComm);
  std::fprintf(stderr, "%s: rank %d pid %d: Starscream failure %s:%d '%s': %s: %s\n",
               gWorld.hostname.c_str(), gWorld.rank, gWorld.pid, file, line, call,
               sscGetErrorString(result), last.empty() ? "(no message)" : last.c_str());
  std::fflush(stderr);
  // Wakes anything of ours still waiting on peers before MPI takes the job down.
  if (gComm != nullptr) (void)sscCommAbort(gComm);
  MPI_Abort(MPI_COMM_WORLD, kExitFailure);
  std::_Exit(kExitFailure);  // MPI_Abort does not return; this keeps [[noreturn]] honest
}

void fatalMessage(const std::string& message) {
  std::fprintf(stderr, "%s: rank %d pid %d: %s\n", gWorld.hostname.c_str(), gWorld.rank, gWorld.pid,
               message.c_str());
  std::fflush(stderr);
  if (gComm != nullptr) (void)sscCommAbort(gComm);
  MPI_Abort(MPI_COMM_WORLD, kExitFailure);
  std::_Exit(kExitFailure);
}

std::vector<double> gatherToRoot(const double* values, int count) {
  std::vector<double> all(gWorld.rank == 0 ? static_cast<size_t>(count) * gWorld.nranks : 0);
  MPI_Gather(values, count, MPI_DOUBLE, all.data(), count, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return all;
}

int64_t sumOverRanks(int64_t value) {
  long long v = value;
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  return v;
}

bool rootSays(bool ok) {
  int flag = ok ? 1 : 0;
  MPI_Bcast(&flag, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return flag != 0;
}

void barrier() { MPI_Barrier(MPI_COMM_WORLD); }

std::string gatherLines(const std::string& line) {
  std::vector<char> mine(kLineBytes, '\0');
  std::memcpy(mine.data(), line.data(), std::min<size_t>(line.size(), kLineBytes - 1));
  std::vector<char> all(gWorld.rank == 0 ? static_cast<size_t>(kLineBytes) * gWorld.nranks : 0);
  MPI_Gather(mine.data(), kLineBytes, MPI_CHAR, all.data(), kLineBytes, MPI_CHAR, 0,
             MPI_COMM_WORLD);
  std::string text;
  for (int r = 0; gWorld.rank == 0 && r < gWorld.nranks; ++r) {
    text += std::string(all.data() + static_cast<size_t>(r) * kLineBytes);
  }
  return text;
}

bool openJsonOnRank0(const World& world, const std::string& path, const std::string& program,
                     JsonLinesWriter* json) {
  std::string why;
  const bool ok = world.rank != 0 || path.empty() || json->open(path, &why);
  if (!rootSays(ok)) {
    if (world.rank == 0) std::fprintf(stderr, "%s: -J: %s\n", program.c_str(), why.c_str());
    return false;
  }
  return true;
}

}  // namespace ssc::perf
