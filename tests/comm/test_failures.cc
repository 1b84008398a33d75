// SPDX-License-Identifier: MIT
// A communicator's failure record (src/comm/failures.h): the first error wins, except over a
// non-blocking init's sscInProgress, and its message stays with its code; the peer watch's first
// verdicts stay; the text of a failure names the reason behind it once; several threads at once
// leave one consistent record.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "src/comm/failures.h"

namespace ssc::test {
namespace {

TEST(FailureRecord, FirstErrorWins) {
  std::atomic<int> code{sscSuccess};
  FailureRecord f(code);
  EXPECT_EQ(f.message(), "");
  EXPECT_TRUE(f.recordError(sscRemoteError, "rank 1 died"));
  EXPECT_EQ(code.load(), sscRemoteError);
  EXPECT_EQ(f.message(), "rank 1 died");
  EXPECT_FALSE(f.recordError(sscSystemError, "later"));
  EXPECT_FALSE(f.recordError(sscInternalError, ""));
  EXPECT_EQ(code.load(), sscRemoteError);
  EXPECT_EQ(f.message(), "rank 1 died");
}

TEST(FailureRecord, AnErrorReplacesInProgress) {
  std::atomic<int> code{sscInProgress};  // a non-blocking init is running
  FailureRecord f(code);
  EXPECT_TRUE(f.recordError(sscInvalidUsage, "settings differ"));
  EXPECT_EQ(code.load(), sscInvalidUsage);
  EXPECT_EQ(f.message(), "settings differ");
  EXPECT_FALSE(f.recordError(sscRemoteError, "rank 2 died")) << "the init's error is the first";
  EXPECT_EQ(code.load(), sscInvalidUsage);
  EXPECT_EQ(f.message(), "settings differ");
}

TEST(FailureRecord, ANonBlockingInitEndsInSuccessOnlyWhenNothingFailedMeanwhile) {
  std::atomic<int> code{sscSuccess};
  FailureRecord f(code);
  f.initStarted();
  EXPECT_EQ(code.load(), sscInProgress);
  f.initSucceeded();
  EXPECT_EQ(code.load(), sscSuccess);

  std::atomic<int> code2{sscSuccess};
  FailureRecord g(code2);
  g.initStarted();
  EXPECT_TRUE(g.recordError(sscRemoteError, "rank 3 died"));  // the peer watch, during init
  g.initSucceeded();
  EXPECT_EQ(code2.load(), sscRemoteError) << "the end of the init must not wipe the error";
  EXPECT_EQ(g.message(), "rank 3 died");
}

TEST(FailureRecord, VerdictsKeepTheFirstOfEachKind) {
  std::atomic<int> code{sscSuccess};
  FailureRecord f(code);
  EXPECT_EQ(f.peerGone(), "");
  EXPECT_EQ(f.peerLeft(), "");
  EXPECT_TRUE(f.notePeerGone("rank 3 aborted"));
  EXPECT_FALSE(f.notePeerGone("rank 4 died"));
  EXPECT_TRUE(f.notePeerLeft("rank 5 left")) << "a departure is kept apart from a death";
  EXPECT_FALSE(f.notePeerLeft("rank 6 left"));
  EXPECT_EQ(f.peerGone(), "rank 3 aborted");
  EXPECT_EQ(f.peerLeft(), "rank 5 left");
  EXPECT_EQ(code.load(), sscSuccess) << "a verdict is not an error of the communicator";
  EXPECT_EQ(f.message(), "");
}

TEST(FailureRecord, TextWhenNotAbortedNotesAPeerThatLeft) {
  std::atomic<int> code{sscSuccess};
  FailureRecord f(code);
  EXPECT_EQ(f.text("timed out waiting for rank 2", false), "timed out waiting for rank 2");
  f.recordError(sscRemoteError, "rank 1 died");
  f.notePeerGone("rank 1 died");
  EXPECT_EQ(f.text("timed out", false), "timed out") << "only a departure matters unaborted";
  f.notePeerLeft("rank 2 left");
  EXPECT_EQ(f.text("timed out", false), "timed out (note: rank 2 left)");
  EXPECT_EQ(f.text("timed out: rank 2 left", false), "timed out: rank 2 left") << "not said twice";
  EXPECT_EQ(f.text("", false), "rank 2 left") << "nothing local: the departure alone";
}

TEST(FailureRecord, TextWhenAbortedPutsTheReasonFirst) {
  std::atomic<int> code{sscSuccess};
  FailureRecord f(code);
  EXPECT_EQ(f.text("aborted while waiting for rank 3", true), "aborted while waiting for rank 3")
      << "no reason known";
  EXPECT_EQ(f.text("", true), "");
  f.notePeerLeft("rank 2 left");
  EXPECT_EQ(f.text("aborted", true), "aborted") << "a departure does not explain an abort";
  f.recordError(sscSystemError, "out of memory");
  EXPECT_EQ(f.text("aborted", true), "out of memory (aborted)") << "the recorded error";
  f.notePeerGone("rank 3 died");
  EXPECT_EQ(f.text("aborted", true), "rank 3 died (aborted)") << "the peer's verdict first";
  EXPECT_EQ(f.text("", true), "rank 3 died") << "nothing local: the reason alone";
  EXPECT_EQ(f.text("aborted: rank 3 died", true), "aborted: rank 3 died") << "not said twice";
}

// Threads recording different errors at once: exactly one wins, and the message read afterwards
// is the winner's (a record that set the code and the message apart could pair one thread's code
// with another's message, or let two threads replace sscInProgress). The window of such a race is
// narrow: a thousand rounds make it show.
TEST(FailureRecord, ConcurrentErrorsLeaveOneConsistentRecord) {
  constexpr int kThreads = 8;
  const sscResult_t codes[] = {sscSystemError, sscInternalError, sscInvalidArgument,
                               sscInvalidUsage, sscRemoteError};
  for (int round = 0; round < 1000; ++round) {
    std::atomic<int> code{round % 2 == 0 ? sscSuccess : sscInProgress};
    FailureRecord f(code);
    std::atomic<int> ready{0}, wins{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        const sscResult_t mine = codes[t % 5];
        ++ready;
        while (ready.load() < kThreads) std::this_thread::yield();
        if (f.recordError(mine, "code " + std::to_string(mine) + " from " + std::to_string(t)))
          ++wins;
        f.notePeerGone("gone " + std::to_string(t));
        (void)f.text("local", true);
      });
    for (std::thread& t : threads) t.join();
    ASSERT_EQ(wins.load(), 1) << "round " << round;
    const std::string message = f.message();
    ASSERT_EQ(message.rfind("code " + std::to_string(code.load()) + " from ", 0), 0u)
        << "round " << round << ": code " << code.load() << ", message '" << message << "'";
    const std::string gone = f.peerGone();
    ASSERT_EQ(gone.rfind("gone ", 0), 0u);
    EXPECT_EQ(f.text("local", true), gone + " (local)");
  }
}

}  // namespace
}  // namespace ssc::test
