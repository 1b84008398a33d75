// SPDX-License-Identifier: MIT
// A communicator's work tracker (src/comm/work_tracker.h): waits end when the last work finishes
// or the last user leaves, not before; idle() reads what is pending.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "src/comm/work_tracker.h"

namespace ssc::test {
namespace {

using namespace std::chrono_literals;

TEST(WorkTracker, IdleFollowsQueuedWork) {
  WorkTracker w;
  EXPECT_TRUE(w.idle());
  w.waitIdle();  // nothing pending: returns at once
  w.queued();
  w.queued();
  EXPECT_FALSE(w.idle());
  w.done();
  EXPECT_FALSE(w.idle());
  w.done();
  EXPECT_TRUE(w.idle());
}

TEST(WorkTracker, WaitIdleEndsWithTheLastWork) {
  WorkTracker w;
  w.queued();
  w.queued();
  std::atomic<bool> returned{false};
  std::thread waiter([&] {
    w.waitIdle();
    returned = true;
  });
  w.done();
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(returned.load()) << "one piece of work is still pending";
  w.done();
  waiter.join();
  EXPECT_TRUE(returned.load());
}

TEST(WorkTracker, WaitUnusedEndsWithTheLastUser) {
  WorkTracker w;
  w.waitUnused();
  w.enter();
  w.enter();
  std::atomic<bool> returned{false};
  std::thread waiter([&] {
    w.waitUnused();
    returned = true;
  });
  w.leave();
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(returned.load()) << "one user is still inside";
  EXPECT_TRUE(w.idle()) << "users are not work";
  w.leave();
  waiter.join();
  EXPECT_TRUE(returned.load());
}

TEST(WorkTracker, ManyThreadsCountInAndOut) {
  WorkTracker w;
  constexpr int kThreads = 8, kEach = 5000;
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&] {
      for (int k = 0; k < kEach; ++k) {
        w.queued();
        w.enter();
        w.leave();
        w.done();
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_TRUE(w.idle());
  w.waitIdle();
  w.waitUnused();
}

}  // namespace
}  // namespace ssc::test
