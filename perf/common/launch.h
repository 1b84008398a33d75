// SPDX-License-Identifier: MIT
// The job around a perf test: MPI, the Starscream communicator and stream, the few MPI reductions
// the driver needs, and what happens when a Starscream call fails.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "perf/common/report.h"
#include "starscream/starscream.h"

namespace ssc::perf {

// Exit codes of every perf program (docs/perf.md lists them).
constexpr int kExitOk = 0;
constexpr int kExitWrongResults = 1;  // some #wrong > 0
constexpr int kExitUsage = 2;         // bad command line or environment
constexpr int kExitFailure = 3;       // a Starscream or system call failed

struct World {
  int rank = 0;
  int nranks = 1;
  int pid = 0;
  std::string hostname;
};

// MPI_Init and who we are. Every rank of MPI_COMM_WORLD is one Starscream rank.
World startMpi(int* argc, char*** argv);
void stopMpi();

struct Session {
  sscComm_t comm = nullptr;
  sscStream_t stream = nullptr;
  int device = -1;  // sscCommDevice: -1 on the host backend
};

// Rank 0 creates the unique id, MPI_Bcast hands it to every rank, and each rank calls
// sscCommInitRank with its MPI rank, then creates its stream. Read STARSCREAM_* variables
// (set by -A and -T) are in effect from here on.
Session openSession(const World& world);
void closeSession(Session* session);

// Prints which call failed, sscGetErrorString and sscGetLastError, then stops every rank with
// MPI_Abort(kExitFailure): one rank leaving alone would leave the others waiting on it.
[[noreturn]] void fatalSsc(sscResult_t result, const char* call, const char* file, int line);
[[noreturn]] void fatalMessage(const std::string& message);

// Rank 0 gets every rank's `count` values, rank after rank (empty elsewhere). Collective.
std::vector<double> gatherToRoot(const double* values, int count);
// Sum over ranks. Collective.
int64_t sumOverRanks(int64_t value);
// True on every rank iff `ok` on rank 0. Collective.
bool rootSays(bool ok);
void barrier();
// -J: rank 0 opens `path` (truncating it) into *json; "" opens nothing. True on every rank when
// it could; false on every rank after rank 0 printed "<program>: -J: <why>" on stderr. Collective.
bool openJsonOnRank0(const World& world, const std::string& path, const std::string& program,
                     JsonLinesWriter* json);
// Rank 0 gets every rank's `line` in rank order ("" elsewhere). Collective.
std::string gatherLines(const std::string& line);

}  // namespace ssc::perf

// Stops the job with a report when a Starscream call does not return sscSuccess.
#define PERF_CHECK(call)                                                    \
  do {                                                                      \
    const sscResult_t perf_check_result_ = (call);                          \
    if (perf_check_result_ != sscSuccess) {                                 \
      ::ssc::perf::fatalSsc(perf_check_result_, #call, __FILE__, __LINE__); \
    }                                                                       \
  } while (0)
