// SPDX-License-Identifier: MIT
#include "src/comm/online_tuning.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "src/comm/comm.h"
#include "src/core/errors.h"
#include "src/core/log.h"
#include "tuner/refine.h"

namespace ssc {
namespace {

std::string sizeText(uint64_t b) {
  if (b >= (uint64_t{1} << 20))
    return fmt::format("{:.1f} MiB", static_cast<double>(b) / (1 << 20));
  if (b >= (uint64_t{1} << 10))
    return fmt::format("{:.1f} KiB", static_cast<double>(b) / (1 << 10));
  return fmt::format("{} B", b);
}

// This rank's device interval of each timed call, in microseconds (-1: not known), waiting up
// to `waitMs` for calls that have not finished yet. Never waits on a stream: a call that does
// not finish in time (its peers are still enqueueing it, or the application's stream waits on
// something the host has not done yet) is counted as not timed.
std::vector<std::pair<size_t, double>> readTimes(
    const std::vector<std::pair<size_t, std::shared_ptr<WorkTiming>>>& timed, double waitMs) {
  std::vector<std::pair<size_t, double>> out;
  std::vector<int> state(timed.size(), 0);
  std::vector<double> us(timed.size(), -1);
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::microseconds(static_cast<int64_t>(waitMs * 1e3));
  for (int pass = 0;; ++pass) {
    bool pending = false;
    for (size_t i = 0; i < timed.size(); ++i) {
      if (state[i] != 0) continue;
      int64_t start = 0, end = 0;
      // After the first pass ask for the device's newest state (the GPU backend's timer then
      // copies its slots now instead of using the last periodic copy).
      state[i] = timed[i].second->read(&start, &end, pass > 0);
      if (state[i] == 1) us[i] = end >= start ? static_cast<double>(end - start) / 1e3 : -1;
      pending = pending || state[i] == 0;
    }
    if (!pending || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  for (size_t i = 0; i < timed.size(); ++i) out.emplace_back(timed[i].first, us[i]);
  return out;
}

}  // namespace

sscResult_t OnlineTuning::next(sscComm* comm, CollKind coll, uint64_t bytes, bool symmetric,
                               Choice* choice, std::shared_ptr<WorkTiming>* timing) {
  timing->reset();
  const Key key{static_cast<int>(coll), symmetric, sizeClass(bytes)};
  std::vector<Choice> candidates;
  std::vector<std::pair<size_t, std::shared_ptr<WorkTiming>>> timed;
  double waitMs = kReadWaitMs;
  {
    std::lock_guard<std::mutex> g(mu_);
    auto [it, fresh] = classes_.try_emplace(key);
    Class& c = it->second;
    if (fresh) {
      c.view.coll = coll;
      c.view.symmetric = symmetric;
      c.view.bytes = bytes;
      std::vector<double> expected;
      c.view.candidates =
          refineCandidates(*comm->tuner, coll, bytes, symmetric, kRefineMaxCandidates, &expected);
      for (double us : expected) c.trialsUs += us * trials_;
      // One way to run it: decided before it starts.
      c.view.decided = c.view.candidates.size() < 2;
    }
    if (c.view.decided) {
      *choice = c.view.candidates[c.view.winner];
      return sscSuccess;
    }
    const uint64_t call = c.calls++;
    const int trial = trialCandidate(call, c.view.candidates.size(), trials_);
    if (trial >= 0) {
      *choice = c.view.candidates[static_cast<size_t>(trial)];
      *timing = std::make_shared<WorkTiming>();
      c.timed.emplace_back(static_cast<size_t>(trial), *timing);
      return sscSuccess;
    }
    // The deciding call: every rank is at this call of this class.
    candidates = c.view.candidates;
    waitMs = kReadWaitMs + std::min<double>(kReadWaitMaxMs, 2e-3 * c.trialsUs);
    timed = std::move(c.timed);
    c.timed.clear();
  }
  const size_t n = candidates.size();
  const std::vector<double> mine = trialTimes(n, readTimes(timed, waitMs));
  std::vector<double> pooled(n * static_cast<size_t>(comm->nranks), -1);
  std::copy(mine.begin(), mine.end(),
            pooled.begin() + static_cast<ptrdiff_t>(static_cast<size_t>(comm->rank) * n));
  if (const sscResult_t r = comm->bootstrap->allGather(pooled.data(), n * sizeof(double));
      r != sscSuccess)
    return fail(r,
                "STARSCREAM_TUNE_ONLINE: {} of ~{}: the ranks did not meet to pool their "
                "trial times: {}",
                collName(coll), sizeText(bytes), lastError());
  const RefineOutcome outcome = refineWinner(candidates, pooled, comm->nranks);

  std::lock_guard<std::mutex> g(mu_);
  Class& c = classes_[key];
  c.view.why = outcome.why;
  if (!outcome.measured && ++c.rounds < kMaxRounds) {
    // Nothing timed on every rank (calls captured into a graph, or still running): try again at
    // the next calls of this class, alike on every rank (they all gathered the same times).
    c.calls = 0;
    *choice = candidates[0];
    return sscSuccess;
  }
  c.view.decided = true;
  c.view.measured = outcome.measured;
  c.view.winner = outcome.winner;
  *choice = candidates[outcome.winner];
  if (comm->rank == 0)
    SSC_LOG(kInfo, "tuner: online: {} ~{}{}: {} -> {}{}", collName(coll), sizeText(bytes),
            symmetric ? " (zero-copy possible)" : "", outcome.why,
            candidateName(choice->algo, choice->protocol),
            outcome.measured ? "" : " (the tuner's choice: nothing was timed on every rank)");
  return sscSuccess;
}

std::vector<OnlineTuning::ClassView> OnlineTuning::classes() const {
  std::lock_guard<std::mutex> g(mu_);
  std::vector<ClassView> out;
  for (const auto& [key, c] : classes_) out.push_back(c.view);
  return out;
}

void OnlineTuningDeleter::operator()(OnlineTuning* t) const { delete t; }

void onlineTuningSetUp(sscComm* comm) {
  const int64_t trials = comm->settings.getInt("STARSCREAM_TUNE_ONLINE");
  if (trials <= 0) return;
  // The deciding call waits for every rank to reach it; ranks of one process are usually driven
  // by one thread, one after the other inside a group (sscCommInitAll), so the first would wait
  // for a rank this thread launches only after it. Every rank of such a communicator sees the
  // same process table, so all of them leave tuning off alike.
  if (!comm->onePerProcess) {
    if (comm->rank == 0)
      SSC_LOG(kWarn,
              "STARSCREAM_TUNE_ONLINE is off for this communicator: several of its ranks share "
              "a process, whose thread could not make its calls while one waits for the others");
    return;
  }
  comm->online.reset(new OnlineTuning(static_cast<int>(std::min<int64_t>(trials, 64))));
}

}  // namespace ssc
