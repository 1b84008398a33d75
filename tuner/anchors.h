// SPDX-License-Identifier: MIT
// Measured anchors: the calibration sweep's own times, kept beside the fitted profile so that the
// choice between algorithms the sweep timed comes from what they took on this machine.
//
// The fit (tuner/fit.h) turns the sweep into a handful of rates; its error is a few percent at the
// median and up to ~30 % at the worst point. Where two algorithms' predictions are that close but
// their measured times are not (an MPS partition's one-shot LL kernel against the FIFO kernel's
// direct plan at a few KiB: 7 against 14 us on an H100 at two partitions), the fit's noise decides
// the choice. The sweep measured both; those measurements rank them better than any refit could.
// The model keeps what was not measured: algorithms or protocols the sweep did not reach (its
// time budget), and sizes beyond the sweep's range.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/collectives/plan.h"
#include "tuner/profile.h"

namespace ssc {

// One measured point: a call of `bytes` (as Tuner::estimate counts them) took `timeUs`, the
// slowest rank's time, which every rank holds alike.
struct AnchorPoint {
  uint64_t bytes = 0;
  double timeUs = 0;
  bool operator==(const AnchorPoint&) const = default;
};

// The measured points of one (collective, algorithm, protocol), by size, ascending and distinct.
struct AnchorSeries {
  CollKind coll = CollKind::kAllReduce;
  Algo algo = Algo::kRing;
  Protocol protocol = Protocol::kFifo;
  std::vector<AnchorPoint> points;
  bool operator==(const AnchorSeries&) const = default;
};

// A series anchors the sizes between its smallest and largest point and this factor beyond each
// end: the nearest measurement is still a better guide than a fit there (at the small end times
// are flat: launch and latency), and no further.
inline constexpr double kAnchorReach = 2.0;

struct Anchors {
  std::vector<AnchorSeries> series;
  bool empty() const { return series.empty(); }
  // The measured time of (coll, algo, protocol) at `bytes`: interpolated between the two points
  // around it in log-size (and log-time: a power law, which both the flat latency-bound and the
  // linear bandwidth-bound parts of a curve are), or within kAnchorReach beyond an end along the
  // nearest segment (its slope held to [0, 1]: time neither falls with size nor grows faster
  // than it). False where the series does not reach `bytes` or there is no such series. `where`,
  // when given, says which points it came from ("8 B - 1 KiB").
  bool timeAt(CollKind coll, Algo algo, Protocol protocol, uint64_t bytes, double* us,
              std::string* where = nullptr) const;
  bool operator==(const Anchors&) const = default;
};

// A way to run a call, with the model's time for it: what the ranking weighs.
struct RankedCandidate {
  Algo algo = Algo::kRing;
  Protocol protocol = Protocol::kFifo;
  double modelUs = 0;
};

struct AnchoredRanking {
  size_t best = 0;        // index into the candidates
  bool measured = false;  // the ranking of measured candidates decided
  std::string why;        // for the explain output: the times that decided, or "" (the model)
};

// "direct", "symmetric/ll": how logs and explanations name a way to run a call (the protocol is
// named where an algorithm has more than one).
std::string candidateName(Algo algo, Protocol protocol);

// Measured times within this fraction of the fastest measured candidate's are a tie, broken by the
// model (rankWithAnchors).
constexpr double kMeasuredTie = 0.05;

// Ranks `candidates` (non-empty; ties go to the earlier one) at `bytes`: the candidates the
// anchors reach are ranked by their measured times, those within kMeasuredTie of the fastest by
// the model among themselves; the best of them stands for the measured ones
// against those the anchors do not reach, which the model ranks (an unmeasured candidate wins
// only where its model time beats the measured winner's model time: the two are compared on one
// scale). Where the anchors reach fewer than two candidates the model alone ranks them.
AnchoredRanking rankWithAnchors(const Anchors& anchors, CollKind coll, uint64_t bytes,
                                const std::vector<RankedCandidate>& candidates);

// JSON (an array of {"collective", "algorithm", "protocol", "points": [[bytes, us], ...]}), the
// calibration cache's "anchors" field.
std::string anchorsToJson(const Anchors& anchors);
// Reads anchorsToJson's text; sscInvalidArgument naming `origin` and the field on anything else
// (an unknown name, a size or time out of range, sizes not ascending, a series twice).
sscResult_t parseAnchors(const std::string& text, const std::string& origin, Anchors* out);

}  // namespace ssc
