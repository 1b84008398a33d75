// SPDX-License-Identifier: MIT
// The bootstrap root's failures, from the ranks' side: a root whose process dies during init is
// named as gone within about a second, both by ranks that had joined it and by ranks that had not
// connected yet (instead of retrying the refused connection until STARSCREAM_TIMEOUT), and a rank
// that joins with a unique id whose communicator already formed is told so at once. Ranks are
// forked processes on the host backend (fault_harness.h).
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

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

class RootFaults : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("STARSCREAM_BACKEND", "host", 1);
    ::setenv("STARSCREAM_TIMEOUT", "30", 1);
    ::unsetenv("STARSCREAM_TOPO_FILE");
  }
};

// A process that makes a unique id (so the root runs there) and waits to be killed.
class RootHolder {
 public:
  RootHolder() {
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      ::close(fds[0]);
      sscUniqueId id;
      if (sscGetUniqueId(&id) != sscSuccess) ::_exit(2);
      if (::write(fds[1], &id, sizeof(id)) != static_cast<ssize_t>(sizeof(id))) ::_exit(3);
      for (;;) ::pause();
    }
    ::close(fds[1]);
    ok_ = ::read(fds[0], &id_, sizeof(id_)) == static_cast<ssize_t>(sizeof(id_));
    ::close(fds[0]);
  }
  ~RootHolder() { kill(); }
  bool ok() const { return ok_; }
  const sscUniqueId& id() const { return id_; }
  // SIGKILL, reaped; returns the monotonic time of the kill.
  double kill() {
    const double at = monotonicSeconds();
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
    return at;
  }

 private:
  pid_t pid_ = -1;
  sscUniqueId id_{};
  bool ok_ = false;
};

TEST_F(RootFaults, ARootThatDiesDuringInitIsNamedWithinASecondByJoinedAndLateRanks) {
  // Ranks 0 and 1 join the root and wait there for the others; ranks 2 and 3 start only after
  // the root's process was killed.
  RootHolder holder;
  ASSERT_TRUE(holder.ok());
  const sscUniqueId id = holder.id();
  Gate gate;
  FaultJob job(4, [&gate, id](const RankContext& ctx) {
    ctx.ready();
    if (ctx.rank() >= 2) gate.pass();
    sscComm_t comm = nullptr;
    ctx.report(sscCommInitRank(&comm, ctx.nranks(), id, ctx.rank()), nullptr);
  });
  ASSERT_TRUE(job.waitReady(4, 60));
  std::this_thread::sleep_for(500ms);  // ranks 0 and 1 have joined the root by now
  const double killedAt = holder.kill();
  std::this_thread::sleep_for(200ms);
  const double openedAt = monotonicSeconds();
  gate.open(2);
  const std::vector<RankReport> reports = job.finish(60);
  for (int r = 0; r < 4; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const RankReport& rep = reports[r];
    ASSERT_TRUE(rep.reported) << "exit status " << rep.exitStatus;
    EXPECT_EQ(rep.result, sscRemoteError) << rep.message;
    EXPECT_NE(rep.message.find("the bootstrap root at 127.0.0.1:"), std::string::npos)
        << rep.message;
    EXPECT_NE(rep.message.find(r < 2 ? "went away before every rank joined" : "is gone"),
              std::string::npos)
        << rep.message;
    EXPECT_NE(rep.message.find("sscGetUniqueId exited or crashed"), std::string::npos)
        << rep.message;
    const double took = rep.seconds - (r < 2 ? killedAt : openedAt);
    EXPECT_LT(took, 1.2) << rep.message;
    std::printf("rank %d failed %.0f ms after %s\n", r, took * 1e3,
                r < 2 ? "the root died" : "it started");
  }
}

TEST_F(RootFaults, AUniqueIdUsedAgainAfterItsCommunicatorFormedIsRefusedAtOnce) {
  // Ranks 0 and 1 form a communicator of 2 with the id (its root runs in this test process, which
  // is not part of it); rank 2 then tries to join with the same id.
  Gate gate;
  FaultJob job(3, [&gate](const RankContext& ctx) {
    sscComm_t comm = nullptr;
    if (ctx.rank() < 2) {
      sscResult_t r = sscCommInitRank(&comm, 2, ctx.id(), ctx.rank());
      if (r != sscSuccess) return ctx.report(r, nullptr);
      ctx.ready();
      std::this_thread::sleep_for(1500ms);
      return ctx.report(sscCommDestroy(comm), nullptr);
    }
    gate.pass();
    ctx.report(sscCommInitRank(&comm, 2, ctx.id(), 1), nullptr);
  });
  ASSERT_TRUE(job.waitReady(2, 60));
  const double openedAt = monotonicSeconds();
  gate.open(1);
  const std::vector<RankReport> reports = job.finish(60);
  for (int r : {0, 1}) {
    ASSERT_TRUE(reports[r].reported);
    EXPECT_EQ(reports[r].result, sscSuccess) << reports[r].message;
  }
  const RankReport& late = reports[2];
  ASSERT_TRUE(late.reported);
  EXPECT_EQ(late.result, sscInvalidUsage) << late.message;
  EXPECT_NE(late.message.find("this unique id was already used by a communicator of 2 ranks"),
            std::string::npos)
      << late.message;
  EXPECT_LT(late.seconds - openedAt, 1.0) << late.message;
  std::printf("the late rank was refused %.0f ms after it started: %s\n",
              (late.seconds - openedAt) * 1e3, late.message.c_str());
}

}  // namespace
}  // namespace ssc::testing
