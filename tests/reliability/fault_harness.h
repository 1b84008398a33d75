// SPDX-License-Identifier: MIT
// A harness for fault tests: each rank is a forked child process of the test, so a test can kill
// one with SIGKILL at a chosen moment and time how fast the survivors notice. mpirun cannot do
// this: it tears the whole job down as soon as one rank dies.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "starscream/starscream.h"

namespace ssc::testing {

// What a rank's scenario reports back to the test (through a pipe).
struct RankReport {
  bool reported = false;  // false: the child sent nothing (killed, crashed, hung)
  int result = -1;        // sscResult_t of the call that ended the scenario
  double seconds = 0;     // CLOCK_MONOTONIC when that call returned (same clock in every process)
  std::string message;    // sscGetLastError text
  int exitStatus = -1;    // waitpid status, decoded: exit code, or 128 + signal
};

// Handed to a rank's scenario in the child process.
class RankContext {
 public:
  RankContext(int rank, int nranks, const sscUniqueId& id, int reportFd, int readyFd)
      : rank_(rank), nranks_(nranks), id_(id), reportFd_(reportFd), readyFd_(readyFd) {}
  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  const sscUniqueId& id() const { return id_; }
  // Tells the test this rank reached the point it waits for (at most once per rank).
  void ready() const;
  // Sends the outcome to the test; `comm` (may be null) supplies the error text.
  void report(sscResult_t result, sscComm_t comm) const;
  void report(sscResult_t result, const std::string& message) const;

 private:
  int rank_, nranks_;
  sscUniqueId id_;
  int reportFd_, readyFd_;
};

using Scenario = std::function<void(const RankContext&)>;

// Monotonic seconds, comparable across the processes of this machine.
double monotonicSeconds();

class FaultJob {
 public:
  // Forks `nranks` children (rank r runs scenario(ctx) then _exit(0)), all with one unique id
  // made here; ranks listed in `absent` are not started at all.
  FaultJob(int nranks, const Scenario& scenario, const std::vector<int>& absent = {});
  ~FaultJob();  // kills whatever still runs

  // Waits until `count` ranks called ready(), or `timeoutSeconds`; false on timeout.
  bool waitReady(int count, double timeoutSeconds);
  // SIGKILLs rank r; returns the monotonic time of the kill.
  double kill(int rank);
  // Waits for every started child to exit (killing those still alive after timeoutSeconds) and
  // returns the reports by rank.
  std::vector<RankReport> finish(double timeoutSeconds);

 private:
  int nranks_;
  std::vector<pid_t> pids_;  // -1: not started or already reaped
  std::vector<int> reportFds_;
  int readyFd_ = -1;
  std::vector<RankReport> reports_;
};

// Names of Starscream shared-memory objects in /dev/shm (there should never be any).
std::vector<std::string> leftoverShm();

}  // namespace ssc::testing
