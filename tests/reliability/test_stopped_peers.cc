// SPDX-License-Identifier: MIT
// A rank whose process is stopped (SIGSTOP: the stand-in for a hung process or a stalled host) is
// named by every survivor within seconds through the peer watch's heartbeat, long before
// STARSCREAM_TIMEOUT; a stop shorter than STARSCREAM_HEARTBEAT_TIMEOUT, or one of the whole job,
// fails nothing. Ranks are forked processes on the host backend (fault_harness.h); the test stops
// and resumes them by pid (child_pipes.h).
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "tests/reliability/child_pipes.h"
#include "tests/reliability/fault_harness.h"

namespace ssc::testing {
namespace {

using namespace std::chrono_literals;

// The promise at the default STARSCREAM_HEARTBEAT_TIMEOUT (3 s): every survivor names the
// stopped rank within this. STARSCREAM_TIMEOUT is 60 s here, so a survivor that only notices
// through its timeout fails the check.
constexpr double kNoticeSeconds = 5.0;

class StoppedPeers : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("STARSCREAM_BACKEND", "host", 1);
    ::setenv("STARSCREAM_TIMEOUT", "60", 1);
    ::unsetenv("STARSCREAM_HEARTBEAT_TIMEOUT");  // the default is what is promised
    ::unsetenv("STARSCREAM_TOPO_FILE");
    shmBefore_ = leftoverShm();
  }
  void TearDown() override { EXPECT_EQ(leftoverShm(), shmBefore_) << "shared memory left behind"; }

 private:
  std::vector<std::string> shmBefore_;
};

sscComm_t initOrReport(const RankContext& ctx) {
  sscComm_t comm = nullptr;
  sscResult_t r = sscCommInitRank(&comm, ctx.nranks(), ctx.id(), ctx.rank());
  if (r != sscSuccess) {
    ctx.report(r, nullptr);
    return nullptr;
  }
  return comm;
}

// All-reduces until one fails; says ready() after a few succeeded.
void allReduceUntilFailure(const RankContext& ctx, sscComm_t comm) {
  std::vector<float> buf(1 << 16, 1.0f);
  for (int i = 0;; ++i) {
    sscResult_t r =
        sscAllReduce(buf.data(), buf.data(), buf.size(), sscFloat32, sscSum, comm, nullptr);
    if (r == sscSuccess) r = sscStreamSynchronize(nullptr);
    if (r != sscSuccess) return ctx.report(r, comm);
    if (i == 5) ctx.ready();
  }
}

// All-reduces for `seconds` after ready() (the ranks agree when to stop through the data: element
// 0 carries each rank's wish to go on), checking every result. Reports success with the longest
// call after ready() in the message ("slowest=<seconds>"), or the first failure.
void allReduceFor(const RankContext& ctx, sscComm_t comm, double seconds) {
  std::vector<float> buf(1 << 16);
  const float n = static_cast<float>(ctx.nranks());
  double readyAt = 0, slowest = 0;
  int calls = 0;
  for (;; ++calls) {
    const bool more = readyAt == 0 || monotonicSeconds() - readyAt < seconds;
    std::fill(buf.begin(), buf.end(), 1.0f);
    buf[0] = more ? 1.0f : 0.0f;
    const double start = monotonicSeconds();
    sscResult_t r =
        sscAllReduce(buf.data(), buf.data(), buf.size(), sscFloat32, sscSum, comm, nullptr);
    if (r == sscSuccess) r = sscStreamSynchronize(nullptr);
    if (r != sscSuccess) return ctx.report(r, comm);
    if (readyAt != 0) slowest = std::max(slowest, monotonicSeconds() - start);
    for (size_t i = 1; i < buf.size(); ++i)
      if (buf[i] != n) return ctx.report(sscInternalError, "wrong sum at " + std::to_string(i));
    if (buf[0] != n) break;  // some rank is done: all are, at the same call
    if (calls == 5) {
      ctx.ready();
      readyAt = monotonicSeconds();
    }
  }
  char text[96];
  std::snprintf(text, sizeof(text), "calls=%d slowest=%.3f", calls, slowest);
  ctx.report(sscSuccess, text);
  (void)sscCommDestroy(comm);
}

double slowestCall(const RankReport& rep) {
  const size_t at = rep.message.find("slowest=");
  return at == std::string::npos ? 0 : std::atof(rep.message.c_str() + at + 8);
}

std::string hostName() {
  char host[64] = {0};
  (void)::gethostname(host, sizeof(host) - 1);
  return host;
}

TEST_F(StoppedPeers, ARankStoppedMidAllReduceIsNamedByEverySurvivorWithinFiveSeconds) {
  constexpr int kRanks = 8, kVictim = 5;
  PidBoard board;
  FaultJob job(kRanks, [&board](const RankContext& ctx) {
    board.post(ctx.rank());
    if (sscComm_t comm = initOrReport(ctx)) allReduceUntilFailure(ctx, comm);
  });
  const std::vector<pid_t> pids = board.collect(kRanks, 60);
  ASSERT_GT(pids[kVictim], 0);
  ASSERT_TRUE(job.waitReady(kRanks, 120)) << "the ranks never got going";
  const double stoppedAt = monotonicSeconds();
  ASSERT_EQ(::kill(pids[kVictim], SIGSTOP), 0);
  // The survivors fail and exit while it is stopped; resumed, it learns that it was given up on.
  std::this_thread::sleep_for(std::chrono::duration<double>(kNoticeSeconds + 1));
  const double resumedAt = monotonicSeconds();
  ASSERT_EQ(::kill(pids[kVictim], SIGCONT), 0);
  const std::vector<RankReport> reports = job.finish(30);

  const std::string name = "rank " + std::to_string(kVictim) + " (host " + hostName() + ", pid " +
                           std::to_string(pids[kVictim]) + ") is unresponsive";
  double fastest = 1e9, slowest = 0;
  for (int r = 0; r < kRanks; ++r) {
    if (r == kVictim) continue;
    SCOPED_TRACE("survivor rank " + std::to_string(r));
    const RankReport& rep = reports[r];
    ASSERT_TRUE(rep.reported) << "no report (exit status " << rep.exitStatus << ")";
    EXPECT_EQ(rep.result, sscRemoteError) << rep.message;
    EXPECT_NE(rep.message.find(name), std::string::npos) << rep.message;
    EXPECT_NE(rep.message.find("STARSCREAM_HEARTBEAT_TIMEOUT"), std::string::npos) << rep.message;
    EXPECT_LT(rep.seconds - stoppedAt, kNoticeSeconds) << rep.message;
    fastest = std::min(fastest, rep.seconds - stoppedAt);
    slowest = std::max(slowest, rep.seconds - stoppedAt);
  }
  std::printf("survivors named the stopped rank %.2f - %.2f s after SIGSTOP; rank 0: %s\n", fastest,
              slowest, reports[0].message.c_str());
  const RankReport& victim = reports[kVictim];
  ASSERT_TRUE(victim.reported) << "the resumed rank did not fail (exit status " << victim.exitStatus
                               << ")";
  EXPECT_NE(victim.result, sscSuccess);
  EXPECT_NE(victim.message.find("was declared unresponsive"), std::string::npos) << victim.message;
  EXPECT_LT(victim.seconds - resumedAt, 2.0) << victim.message;
  std::printf("the resumed rank failed %.2f s after SIGCONT: %s\n", victim.seconds - resumedAt,
              victim.message.c_str());
}

TEST_F(StoppedPeers, AStopShorterThanTheHeartbeatTimeoutFailsNothing) {
  constexpr int kRanks = 4, kVictim = 2;
  PidBoard board;
  FaultJob job(kRanks, [&board](const RankContext& ctx) {
    board.post(ctx.rank());
    if (sscComm_t comm = initOrReport(ctx)) allReduceFor(ctx, comm, 4.0);
  });
  const std::vector<pid_t> pids = board.collect(kRanks, 60);
  ASSERT_GT(pids[kVictim], 0);
  ASSERT_TRUE(job.waitReady(kRanks, 120));
  std::this_thread::sleep_for(200ms);
  ASSERT_EQ(::kill(pids[kVictim], SIGSTOP), 0);
  std::this_thread::sleep_for(1500ms);  // half the default timeout
  ASSERT_EQ(::kill(pids[kVictim], SIGCONT), 0);
  double felt = 0;
  for (const RankReport& rep : job.finish(60)) {
    ASSERT_TRUE(rep.reported);
    EXPECT_EQ(rep.result, sscSuccess) << rep.message;
    felt = std::max(felt, slowestCall(rep));
  }
  // The stop landed inside a collective: some call waited through it.
  EXPECT_GT(felt, 1.2);
  std::printf("the longest all-reduce took %.2f s across the 1.5 s stop\n", felt);
}

TEST_F(StoppedPeers, AJobStoppedAndResumedAsAWholeGoesOn) {
  // A scheduler suspending the job (SIGSTOP to every rank) for longer than the heartbeat timeout:
  // each watch forgives the time it did not run itself, so nobody is declared unresponsive.
  constexpr int kRanks = 4;
  PidBoard board;
  FaultJob job(kRanks, [&board](const RankContext& ctx) {
    board.post(ctx.rank());
    if (sscComm_t comm = initOrReport(ctx)) allReduceFor(ctx, comm, 7.0);
  });
  const std::vector<pid_t> pids = board.collect(kRanks, 60);
  for (pid_t pid : pids) ASSERT_GT(pid, 0);
  ASSERT_TRUE(job.waitReady(kRanks, 120));
  std::this_thread::sleep_for(200ms);
  for (pid_t pid : pids) ASSERT_EQ(::kill(pid, SIGSTOP), 0);
  std::this_thread::sleep_for(4500ms);  // 1.5 x the default timeout
  for (pid_t pid : pids) ASSERT_EQ(::kill(pid, SIGCONT), 0);
  for (const RankReport& rep : job.finish(60)) {
    ASSERT_TRUE(rep.reported);
    EXPECT_EQ(rep.result, sscSuccess) << rep.message;
  }
}

}  // namespace
}  // namespace ssc::testing
