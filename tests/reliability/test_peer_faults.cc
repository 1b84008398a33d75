// SPDX-License-Identifier: MIT
// A rank killed (SIGKILL), aborted or gone during init, mid-collective and during split: every
// survivor gets an error that names it within one second (the peer watch), nothing is left in
// /dev/shm, and orderly departures are not mistaken for failures. Ranks are forked processes on
// the host backend (fault_harness.h).
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "tests/reliability/fault_harness.h"

namespace ssc::testing {
namespace {

using namespace std::chrono_literals;

// Detection must beat this by far: STARSCREAM_TIMEOUT is 30 s in these tests, so a survivor that
// only notices through its timeout fails the time check.
constexpr double kNoticeSeconds = 1.0;

class PeerFaults : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("STARSCREAM_BACKEND", "host", 1);
    ::setenv("STARSCREAM_TIMEOUT", "30", 1);
    ::unsetenv("STARSCREAM_TOPO_FILE");
    shmBefore_ = leftoverShm();
  }
  void TearDown() override { EXPECT_EQ(leftoverShm(), shmBefore_) << "shared memory left behind"; }

  // Every rank but `victim` failed within kNoticeSeconds of `since`, naming the victim.
  static void expectSurvivorsNamed(const std::vector<RankReport>& reports, int victim, double since,
                                   const std::string& what) {
    const std::string name = "rank " + std::to_string(victim) + " " + what;
    double slowest = 0;
    for (size_t r = 0; r < reports.size(); ++r) {
      if (static_cast<int>(r) == victim) continue;
      SCOPED_TRACE("survivor rank " + std::to_string(r));
      const RankReport& rep = reports[r];
      ASSERT_TRUE(rep.reported) << "no report (exit status " << rep.exitStatus << ")";
      EXPECT_NE(rep.result, sscSuccess);
      EXPECT_NE(rep.message.find(name), std::string::npos) << rep.message;
      EXPECT_LT(rep.seconds - since, kNoticeSeconds) << rep.message;
      slowest = std::max(slowest, rep.seconds - since);
    }
    std::printf("slowest survivor noticed rank %d %s after %.1f ms\n", victim, what.c_str(),
                slowest * 1e3);
  }

 private:
  std::vector<std::string> shmBefore_;
};

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

sscComm_t initOrReport(const RankContext& ctx) {
  sscComm_t comm = nullptr;
  sscResult_t r = sscCommInitRank(&comm, ctx.nranks(), ctx.id(), ctx.rank());
  if (r != sscSuccess) {
    ctx.report(r, nullptr);
    return nullptr;
  }
  return comm;
}

struct Shape {
  int nranks, victim;
};

class KilledMidCollective : public PeerFaults, public ::testing::WithParamInterface<Shape> {};

TEST_P(KilledMidCollective, SurvivorsNameTheDeadRankWithinOneSecond) {
  const Shape s = GetParam();
  FaultJob job(s.nranks, [](const RankContext& ctx) {
    if (sscComm_t comm = initOrReport(ctx)) allReduceUntilFailure(ctx, comm);
  });
  ASSERT_TRUE(job.waitReady(s.nranks, 60)) << "the ranks never got going";
  const double killedAt = job.kill(s.victim);
  expectSurvivorsNamed(job.finish(20), s.victim, killedAt, "died");
}

INSTANTIATE_TEST_SUITE_P(Ranks, KilledMidCollective,
                         ::testing::Values(Shape{2, 1}, Shape{3, 0}, Shape{4, 2}, Shape{5, 4}),
                         [](const auto& info) {
                           return "np" + std::to_string(info.param.nranks) + "_victim" +
                                  std::to_string(info.param.victim);
                         });

TEST_F(PeerFaults, KilledWhileIdleFailsTheCommunicatorAsynchronously) {
  // Nobody waits on the dead rank: sscCommGetAsyncError (what PyTorch's watchdog polls) reports it.
  FaultJob job(3, [](const RankContext& ctx) {
    sscComm_t comm = initOrReport(ctx);
    if (comm == nullptr) return;
    ctx.ready();
    for (;;) {
      sscResult_t state = sscSuccess;
      sscResult_t r = sscCommGetAsyncError(comm, &state);
      if (r != sscSuccess || state != sscSuccess) return ctx.report(state, comm);
      std::this_thread::sleep_for(5ms);
    }
  });
  ASSERT_TRUE(job.waitReady(3, 60));
  std::this_thread::sleep_for(100ms);
  const double killedAt = job.kill(1);
  expectSurvivorsNamed(job.finish(20), 1, killedAt, "died");
}

TEST_F(PeerFaults, KilledDuringInitBeforeEveryRankJoined) {
  // Rank 3 never starts, so ranks 0-2 wait at the root; rank 1 joined and is killed there.
  FaultJob job(4,
               [](const RankContext& ctx) {
                 ctx.ready();
                 sscComm_t comm = nullptr;
                 ctx.report(sscCommInitRank(&comm, ctx.nranks(), ctx.id(), ctx.rank()), nullptr);
               },
               /*absent=*/{3});
  ASSERT_TRUE(job.waitReady(3, 60));
  std::this_thread::sleep_for(500ms);  // rank 1 has joined the root by now
  const double killedAt = job.kill(1);
  std::vector<RankReport> reports = job.finish(20);
  reports.pop_back();  // rank 3 never ran
  expectSurvivorsNamed(reports, 1, killedAt, "died");
}

TEST_F(PeerFaults, AMalformedVariableOnOneRankFailsEveryRankAtOnce) {
  // Only rank 1's environment is wrong: it refuses init naming the variable, and the others learn
  // of its failed init from the peer watch instead of waiting for it until STARSCREAM_TIMEOUT.
  FaultJob job(3, [](const RankContext& ctx) {
    if (ctx.rank() == 1) ::setenv("STARSCREAM_HOST_SLOTS", "banana", 1);
    sscComm_t comm = nullptr;
    ctx.report(sscCommInitRank(&comm, ctx.nranks(), ctx.id(), ctx.rank()), nullptr);
  });
  std::vector<RankReport> reports = job.finish(60);
  ASSERT_TRUE(reports[1].reported);
  EXPECT_EQ(reports[1].result, sscInvalidArgument);
  EXPECT_NE(reports[1].message.find("STARSCREAM_HOST_SLOTS"), std::string::npos)
      << reports[1].message;
  expectSurvivorsNamed(reports, 1, reports[1].seconds, "aborted");
}

TEST_F(PeerFaults, KilledWhileTheOthersSplit) {
  FaultJob job(3, [](const RankContext& ctx) {
    sscComm_t comm = initOrReport(ctx);
    if (comm == nullptr) return;
    ctx.ready();
    if (ctx.rank() == 2) {
      ::pause();  // never calls split; killed here
      return;
    }
    sscComm_t child = nullptr;
    ctx.report(sscCommSplit(comm, 0, ctx.rank(), &child, nullptr), comm);
  });
  ASSERT_TRUE(job.waitReady(3, 60));
  std::this_thread::sleep_for(200ms);  // ranks 0 and 1 are inside the split
  const double killedAt = job.kill(2);
  expectSurvivorsNamed(job.finish(20), 2, killedAt, "died");
}

TEST_F(PeerFaults, AbortedRankIsNamedByThoseWaitingOnIt) {
  FaultJob job(3, [](const RankContext& ctx) {
    sscComm_t comm = initOrReport(ctx);
    if (comm == nullptr) return;
    if (ctx.rank() != 1) return allReduceUntilFailure(ctx, comm);
    std::vector<float> buf(1 << 16, 1.0f);
    for (int i = 0; i < 6; ++i) {
      (void)sscAllReduce(buf.data(), buf.data(), buf.size(), sscFloat32, sscSum, comm, nullptr);
      (void)sscStreamSynchronize(nullptr);
    }
    ctx.ready();
    std::this_thread::sleep_for(300ms);  // the others are waiting in their next all-reduce
    ctx.report(sscCommAbort(comm), nullptr);
    // Stays alive a while: the survivors must learn of the abort, not of a death.
    std::this_thread::sleep_for(1500ms);
  });
  ASSERT_TRUE(job.waitReady(3, 60));
  std::vector<RankReport> reports = job.finish(10);
  ASSERT_TRUE(reports[1].reported);
  ASSERT_EQ(reports[1].result, sscSuccess) << reports[1].message;
  expectSurvivorsNamed(reports, 1, reports[1].seconds, "aborted");
}

TEST_F(PeerFaults, ExitWithoutDestroyIsADepartureNotACrash) {
  // Rank 0 exits normally without destroying its communicator (a common end of a program): idle
  // peers stay out of error (so a watchdog polling sscCommGetAsyncError does not fire), and a
  // departure fails nothing by itself (what rank 0 sent may still be needed). A call that needs
  // rank 0 again runs out of STARSCREAM_TIMEOUT, and its error names the departure.
  ::setenv("STARSCREAM_TIMEOUT", "2", 1);
  FaultJob job(3, [](const RankContext& ctx) {
    sscComm_t comm = initOrReport(ctx);
    if (comm == nullptr) return;
    std::vector<float> buf(64, 1.0f);
    (void)sscAllReduce(buf.data(), buf.data(), buf.size(), sscFloat32, sscSum, comm, nullptr);
    (void)sscStreamSynchronize(nullptr);
    ctx.ready();
    if (ctx.rank() == 0) {
      ctx.report(sscSuccess, nullptr);
      std::exit(0);
    }
    std::this_thread::sleep_for(500ms);
    sscResult_t state = sscInternalError;
    if (sscCommGetAsyncError(comm, &state) != sscSuccess || state != sscSuccess)
      return ctx.report(sscInternalError, comm);  // the departure put an idle comm in error
    sscResult_t r =
        sscAllReduce(buf.data(), buf.data(), buf.size(), sscFloat32, sscSum, comm, nullptr);
    if (r == sscSuccess) r = sscStreamSynchronize(nullptr);
    ctx.report(r, comm);
    // Stay until the other survivor has timed out too, so its error names rank 0's departure
    // and not this one's: their waits start together but may end a scheduling delay apart
    // (300 ms was too little on a loaded 2-core machine).
    std::this_thread::sleep_for(2500ms);
  });
  ASSERT_TRUE(job.waitReady(3, 60));
  std::vector<RankReport> reports = job.finish(30);
  EXPECT_EQ(reports[0].exitStatus, 0);
  for (int r : {1, 2}) {
    SCOPED_TRACE("rank " + std::to_string(r));
    ASSERT_TRUE(reports[r].reported);
    EXPECT_EQ(reports[r].result, sscTimeout) << reports[r].message;
    EXPECT_NE(reports[r].message.find("rank 0 destroyed its communicator or its process exited"),
              std::string::npos)
        << reports[r].message;
  }
}

TEST_F(PeerFaults, ADepartedPeerDoesNotFailCallsThatNoLongerNeedIt) {
  // Rank 2 sends to rank 1, then destroys its communicator and exits before rank 1 receives:
  // the data is already in rank 1's FIFO, so the receive must succeed, and so must calls between
  // ranks 0 and 1 (seen on the GPU: a fast rank that finished and destroyed made its peers' last
  // send/receive fail).
  FaultJob job(3, [](const RankContext& ctx) {
    sscComm_t comm = initOrReport(ctx);
    if (comm == nullptr) return;
    std::vector<float> buf(256, static_cast<float>(ctx.rank() + 1));
    std::vector<float> got(256, 0.0f);
    ctx.ready();
    sscResult_t r = sscSuccess;
    if (ctx.rank() == 2) {
      r = sscSend(buf.data(), buf.size(), sscFloat32, 1, comm, nullptr);
      if (r == sscSuccess) r = sscStreamSynchronize(nullptr);
      if (r == sscSuccess) r = sscCommDestroy(comm);
      return ctx.report(r, nullptr);
    }
    std::this_thread::sleep_for(500ms);  // rank 2 has left by now
    if (ctx.rank() == 1) {
      r = sscRecv(got.data(), got.size(), sscFloat32, 2, comm, nullptr);
      if (r == sscSuccess) r = sscStreamSynchronize(nullptr);
      if (r == sscSuccess && got[0] != 3.0f) return ctx.report(sscInternalError, nullptr);
    }
    const int other = 1 - ctx.rank();  // ranks 0 and 1 exchange
    if (r == sscSuccess) r = sscGroupStart();
    if (r == sscSuccess) r = sscSend(buf.data(), buf.size(), sscFloat32, other, comm, nullptr);
    if (r == sscSuccess) r = sscRecv(got.data(), got.size(), sscFloat32, other, comm, nullptr);
    if (r == sscSuccess) r = sscGroupEnd();
    if (r == sscSuccess) r = sscStreamSynchronize(nullptr);
    if (r == sscSuccess && got[0] != static_cast<float>(other + 1)) r = sscInternalError;
    ctx.report(r, comm);
    if (r == sscSuccess) (void)sscCommDestroy(comm);
  });
  ASSERT_TRUE(job.waitReady(3, 60));
  std::vector<RankReport> reports = job.finish(30);
  for (int r = 0; r < 3; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    ASSERT_TRUE(reports[r].reported);
    EXPECT_EQ(reports[r].result, sscSuccess) << reports[r].message;
  }
}

TEST_F(PeerFaults, StaggeredOrderlyTeardownSucceedsEverywhere) {
  // Ranks finalize and destroy at different moments (rank 0 without finalizing): none of the
  // departures may fail another rank's finalize or destroy.
  FaultJob job(4, [](const RankContext& ctx) {
    sscComm_t comm = initOrReport(ctx);
    if (comm == nullptr) return;
    std::vector<float> buf(4096, 1.0f);
    for (int i = 0; i < 3; ++i) {
      (void)sscAllReduce(buf.data(), buf.data(), buf.size(), sscFloat32, sscSum, comm, nullptr);
      (void)sscStreamSynchronize(nullptr);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(40 * ctx.rank()));
    sscResult_t r = ctx.rank() == 0 ? sscSuccess : sscCommFinalize(comm);
    if (r != sscSuccess) return ctx.report(r, comm);
    ctx.report(sscCommDestroy(comm), nullptr);
  });
  for (const RankReport& rep : job.finish(60)) {
    ASSERT_TRUE(rep.reported);
    EXPECT_EQ(rep.result, sscSuccess) << rep.message;
  }
}

TEST_F(PeerFaults, AbortFromAnotherThreadEndsABlockedFinalize) {
  // One rank per process, so finalize meets the peers at a barrier; rank 1 never finalizes and
  // rank 0 is aborted from a second thread while its finalize waits.
  FaultJob job(2, [](const RankContext& ctx) {
    sscComm_t comm = initOrReport(ctx);
    if (comm == nullptr) return;
    ctx.ready();
    if (ctx.rank() == 1) {
      std::this_thread::sleep_for(1500ms);  // never finalizes
      return;
    }
    std::thread aborter([comm] {
      std::this_thread::sleep_for(200ms);
      (void)sscCommAbort(comm);
    });
    sscResult_t r = sscCommFinalize(comm);
    aborter.join();
    ctx.report(r, nullptr);
  });
  ASSERT_TRUE(job.waitReady(2, 60));
  std::vector<RankReport> reports = job.finish(10);
  ASSERT_TRUE(reports[0].reported) << "finalize did not return after the abort";
  EXPECT_NE(reports[0].result, sscSuccess);
}

}  // namespace
}  // namespace ssc::testing
