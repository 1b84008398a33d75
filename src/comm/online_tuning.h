// SPDX-License-Identifier: MIT
// STARSCREAM_TUNE_ONLINE=N (docs/tuner.md): each size class of a collective tries the tuner's
// best two or three choices on the application's own calls (N timed calls each), the ranks pool
// their times at the next call of that class, and every rank runs the fastest from then on.
//
// Why every rank runs the same algorithm for the same call: ranks make the calls of a communicator
// in one order with the same sizes (the NCCL contract), so the k-th call of a class is the k-th on
// every rank, the trial it runs is a function of k alone (tuner/refine.h), and the decision is made
// at one call number from times that every rank has gathered alike (the bootstrap's all-gather).
// A trial is a correct algorithm, so results never depend on timing; only speed does.
//
// What it costs: the trials run the candidates at their own speed (none slower than kRefineReach
// times the tuner's pick by its own estimate); the deciding call waits, on the host, for this
// rank's timed calls to finish (a bounded wait: kReadWaitMs, more for large calls) and for every
// rank to reach that call (the bootstrap ring, which honours STARSCREAM_TIMEOUT and aborts: a rank
// that stops calling makes the others fail with a timeout there, not hang). A call captured into a
// graph is never timed; a class whose trials were all captured tries again at its next eager calls
// (kMaxRounds).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "src/comm/comm.h"
#include "src/device/work_timing.h"
#include "starscream/starscream.h"
#include "tuner/model.h"

namespace ssc {

class OnlineTuning {
 public:
  // `trials`: timed calls per candidate (STARSCREAM_TUNE_ONLINE), > 0.
  explicit OnlineTuning(int trials) : trials_(trials) {}

  // The choice for this rank's next call of `coll` moving `bytes` (as selectCall counts them;
  // `symmetric` as selectCall takes it). `*timing`: a timing for the call's work while it is a
  // trial, else null. `*choice` holds the tuner's own choice on entry and is replaced when the
  // class tries or has decided otherwise. Fails only when the deciding call cannot meet the other
  // ranks (the bootstrap's error).
  sscResult_t next(sscComm* comm, CollKind coll, uint64_t bytes, bool symmetric, Choice* choice,
                   std::shared_ptr<WorkTiming>* timing);

  // A class's state, for tests and diagnostics.
  struct ClassView {
    CollKind coll = CollKind::kAllReduce;
    bool symmetric = false;
    uint64_t bytes = 0;  // a size of the class (the first call's)
    std::vector<Choice> candidates;
    bool decided = false;
    bool measured = false;  // decided from times every rank knew
    size_t winner = 0;
    std::string why;
  };
  std::vector<ClassView> classes() const;

  // How long the deciding call waits for this rank's timed calls to finish: kReadWaitMs, plus
  // twice what the class's trials are expected to take (large calls queue behind each other), at
  // most kReadWaitMaxMs more. And how many rounds of trials a class runs at most when none of them
  // could be timed on every rank.
  static constexpr int kReadWaitMs = 200;
  static constexpr int kReadWaitMaxMs = 5000;
  static constexpr int kMaxRounds = 3;

 private:
  struct Class {
    ClassView view;
    uint64_t calls = 0;   // calls of this round so far
    double trialsUs = 0;  // what a round of trials is expected to take
    int rounds = 0;
    std::vector<std::pair<size_t, std::shared_ptr<WorkTiming>>> timed;
  };
  using Key = std::tuple<int, bool, int>;  // (collective, symmetric, size class)

  const int trials_;
  mutable std::mutex mu_;  // a leaf: never held across the bootstrap or the backend
  std::map<Key, Class> classes_;
};

// STARSCREAM_TUNE_ONLINE > 0 (read once at init): gives the communicator its OnlineTuning, where
// each rank has a process of its own (a warning otherwise). After the calibration, so that the
// sweep's forced calls are not the workload's.
void onlineTuningSetUp(sscComm* comm);

}  // namespace ssc
