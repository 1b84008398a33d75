// SPDX-License-Identifier: MIT
// The shared-memory wait (host transport, network proxy): STARSCREAM_TIMEOUT has the bootstrap's
// and the GPU's meaning here too, so 0 (or less) is "no limit", never "give up at once". The wait
// takes its limits from its owner (WaitLimits, read from the settings when the owner was made).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "src/core/bootstrap.h"
#include "src/core/env.h"
#include "src/core/errors.h"
#include "src/core/futex_wait.h"
#include "src/core/socket.h"

namespace ssc {
namespace {

using namespace std::chrono_literals;

// The limits a communicator created with STARSCREAM_TIMEOUT=timeout would take.
WaitLimits limitsFor(const char* timeout) {
  env::Snapshot settings;
  settings.set("STARSCREAM_TIMEOUT", timeout);
  return WaitLimits::from(settings);
}

class ShmWait : public ::testing::Test {
 protected:
  // Waits for a flag another thread raises after `delay`; *waited (optional) gets how long.
  static sscResult_t waitForLateFlag(const WaitLimits& limits, std::chrono::milliseconds delay,
                                     std::chrono::steady_clock::duration* waited = nullptr) {
    std::atomic<uint32_t> word{0};
    std::atomic<bool> ready{false};
    std::thread poster([&] {
      std::this_thread::sleep_for(delay);
      ready.store(true);
      shmNotify(&word);
    });
    const auto start = std::chrono::steady_clock::now();
    sscResult_t r = shmWait(
        &word, [&] { return ready.load(); }, nullptr, "hear from", 1, limits);
    if (waited != nullptr) *waited = std::chrono::steady_clock::now() - start;
    poster.join();
    return r;
  }
};

TEST_F(ShmWait, ZeroOrNegativeTimeoutMeansNoLimit) {
  for (const char* never : {"0", "-1", "-0.5"}) {
    EXPECT_EQ(waitForLateFlag(limitsFor(never), 300ms), sscSuccess)
        << "STARSCREAM_TIMEOUT=" << never << ": " << lastError();
    // The bootstrap reads the same value the same way.
    env::Snapshot settings;
    settings.set("STARSCREAM_TIMEOUT", never);
    EXPECT_TRUE(Deadline::after(BootstrapOptions::from(settings).timeoutSeconds).never()) << never;
  }
}

TEST_F(ShmWait, PositiveTimeoutExpires) {
  std::chrono::steady_clock::duration waited{};
  EXPECT_EQ(waitForLateFlag(limitsFor("0.2"), 1500ms, &waited), sscTimeout);
  EXPECT_NE(lastError().find("STARSCREAM_TIMEOUT"), std::string::npos) << lastError();
  EXPECT_LT(waited, 1400ms);
}

TEST_F(ShmWait, AbortEndsAWaitWithoutLimit) {
  std::atomic<uint32_t> word{0};
  std::atomic<bool> abortFlag{false};
  std::thread aborter([&] {
    std::this_thread::sleep_for(200ms);
    abortFlag.store(true);
    shmNotify(&word);
  });
  EXPECT_EQ(shmWait(
                &word, [] { return false; }, &abortFlag, "hear from", 1, limitsFor("0")),
            sscRemoteError);
  aborter.join();
}

}  // namespace
}  // namespace ssc
