// SPDX-License-Identifier: MIT
#include "tuner/refine.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace ssc {
namespace {

struct Expected {
  Choice choice;
  double us = 0;
};

}  // namespace

std::vector<Choice> refineCandidates(const Tuner& tuner, CollKind coll, uint64_t bytes,
                                     bool symmetric, size_t most, std::vector<double>* expectedUs) {
  const Choice own = tuner.choose(coll, bytes, symmetric);
  std::vector<Expected> all;
  for (const RankedCandidate& c : tuner.candidates(coll, bytes, symmetric)) {
    double us = c.modelUs;
    // The calibration's measured time where it reaches this size, as the tuner's ranking uses it.
    (void)tuner.anchors().timeAt(coll, c.algo, c.protocol, bytes, &us);
    all.push_back({{c.algo, c.protocol}, us});
  }
  std::vector<Choice> out{own};
  if (expectedUs != nullptr) expectedUs->assign(1, 0);
  const auto mine =
      std::find_if(all.begin(), all.end(), [&](const Expected& e) { return e.choice == own; });
  // The tuner's choice is not one the executor runs at this size (a forced fallback): nothing to
  // set against it.
  if (mine == all.end()) return out;
  if (expectedUs != nullptr) expectedUs->front() = mine->us;
  if (mine->us < kRefineMinLaunches * tuner.variant().launchUs) return out;
  const double limit = mine->us * kRefineReach;
  std::stable_sort(all.begin(), all.end(),
                   [](const Expected& a, const Expected& b) { return a.us < b.us; });
  for (const Expected& e : all) {
    if (out.size() >= most) break;
    if (e.choice == own || e.us > limit) continue;
    out.push_back(e.choice);
    if (expectedUs != nullptr) expectedUs->push_back(e.us);
  }
  return out;
}

int trialCandidate(uint64_t call, size_t candidates, int trials) {
  if (candidates == 0 || trials <= 0) return -1;
  const uint64_t span = static_cast<uint64_t>(candidates) * static_cast<uint64_t>(trials);
  return call < span ? static_cast<int>(call % candidates) : -1;
}

std::vector<double> trialTimes(size_t candidates,
                               const std::vector<std::pair<size_t, double>>& timed) {
  std::vector<double> out(candidates, -1);
  for (size_t c = 0; c < candidates; ++c) {
    std::vector<double> known;
    for (const auto& [which, us] : timed)
      if (which == c && us >= 0 && std::isfinite(us)) known.push_back(us);
    if (known.empty()) continue;
    std::sort(known.begin(), known.end());
    const size_t n = known.size();
    out[c] = n % 2 == 1 ? known[n / 2] : (known[n / 2 - 1] + known[n / 2]) / 2;
  }
  return out;
}

RefineOutcome refineWinner(const std::vector<Choice>& candidates, const std::vector<double>& pooled,
                           int nranks) {
  RefineOutcome out;
  const size_t n = candidates.size();
  if (n == 0 || nranks <= 0 || pooled.size() != n * static_cast<size_t>(nranks)) {
    out.why = "no times to compare";
    return out;
  }
  std::vector<double> slowest(n, 0);
  std::vector<bool> known(n, true);
  for (size_t c = 0; c < n; ++c)
    for (int r = 0; r < nranks; ++r) {
      const double us = pooled[static_cast<size_t>(r) * n + c];
      if (!(us >= 0) || !std::isfinite(us))
        known[c] = false;
      else
        slowest[c] = std::max(slowest[c], us);
    }
  size_t best = n;
  for (size_t c = 0; c < n; ++c)
    if (known[c] && (best == n || slowest[c] < slowest[best])) best = c;
  for (size_t c = 0; c < n; ++c) {
    if (!out.why.empty()) out.why += ", ";
    out.why += known[c] ? fmt::format("{} {:.1f} us",
                                      candidateName(candidates[c].algo, candidates[c].protocol),
                                      slowest[c])
                        : fmt::format("{} not timed on every rank",
                                      candidateName(candidates[c].algo, candidates[c].protocol));
  }
  if (best == n) return out;
  out.measured = true;
  out.winner = known[0] && slowest[0] <= slowest[best] * (1 + kMeasuredTie) ? 0 : best;
  return out;
}

}  // namespace ssc
