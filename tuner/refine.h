// SPDX-License-Identifier: MIT
// Online refinement (STARSCREAM_TUNE_ONLINE, docs/tuner.md): the arithmetic of it, apart from the
// communicator that runs it (src/comm/online_tuning.h).
//
// The calibration measures a few algorithms at a few sizes with nothing else running; the model
// fills in the rest. Where both are off (an algorithm the sweep did not reach, a size between its
// points, a workload whose other kernels share the GPU), the first calls of each size class can
// settle it on the real workload, as AutoCCL does: the tuner names the two or three choices worth
// trying, the calls of that class take them in turn, each rank times its own, the ranks pool their
// times, and every rank keeps the fastest from then on. Nothing here depends on which rank computes
// it: given the same pooled times, every rank picks the same winner.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tuner/anchors.h"
#include "tuner/model.h"

namespace ssc {

// Choices whose expected time (measured where the calibration's anchors reach, else the model's)
// exceeds the tuner's own choice's by more than this factor are not tried: a trial runs the
// application's real call, so a hopeless candidate costs it real time.
inline constexpr double kRefineReach = 4.0;
// The most choices a size class tries (the tuner's own included).
inline constexpr size_t kRefineMaxCandidates = 3;
// A class tries nothing when the tuner's choice is expected to take less than this many launches
// (the profile's launch time, calibrated on the machine in use). A trial is timed by its kernels'
// own interval, which leaves out what every call also pays around them: the launch, the queue's
// gap between kernels, the host's enqueue. For small calls those dominate and differ by algorithm
// (grid sizes, the staged path's copies), so the kernels' intervals rank the candidates wrong:
// on an H100 in 2 - 8 MPS partitions, trials at 16 B - 1 MiB kept choices up to 1.8x slower than
// the calibration's (whose batches are timed on the host, launches included), while from 64 MiB
// they matched it. There the calibration's measured anchors decide, as without online tuning.
inline constexpr double kRefineMinLaunches = 10;

// What a size class tries, in order: the tuner's own choice first (Tuner::choose), then the other
// ways the executor can run the call (algorithm and protocol; all-gather's two zero-copy grids),
// fastest expected first, within kRefineReach of the first, at most `most` in all. One entry when
// nothing else can serve the call, or when the tuner's choice is expected to take less than
// kRefineMinLaunches launches. `expectedUs`, when given: each one's expected time.
std::vector<Choice> refineCandidates(const Tuner& tuner, CollKind coll, uint64_t bytes,
                                     bool symmetric, size_t most = kRefineMaxCandidates,
                                     std::vector<double>* expectedUs = nullptr);

// The candidate that the class's call number `call` (0, 1, ... in the order every rank makes its
// calls of that class) runs while the class is trying: each candidate in turn, `trials` times each;
// -1 once call >= candidates * trials.
int trialCandidate(uint64_t call, size_t candidates, int trials);

// One rank's time for each candidate from its timed calls: the median of the known times (a
// call's device interval in microseconds; negative: not known), or -1 where none is known.
std::vector<double> trialTimes(size_t candidates,
                               const std::vector<std::pair<size_t, double>>& timed);

struct RefineOutcome {
  size_t winner = 0;      // index into the candidates
  bool measured = false;  // false: no candidate was timed on every rank; the tuner's choice stays
  std::string why;        // the pooled times, for the log
};

// The winner from every rank's trialTimes, concatenated by rank (`pooled`: nranks * candidates).
// A candidate counts only where every rank knows its time; its time is the slowest rank's (the
// call ends when its last rank does). The fastest wins, but the tuner's own choice (index 0) keeps
// its place unless another is faster by more than kMeasuredTie: closer than that, the difference is
// noise. Deterministic in `pooled` alone.
RefineOutcome refineWinner(const std::vector<Choice>& candidates, const std::vector<double>& pooled,
                           int nranks);

}  // namespace ssc
