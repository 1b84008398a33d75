// SPDX-License-Identifier: MIT
// sscCommAbort and sscCommDestroy from another thread while a thread is inside an entry point of
// the same communicator: the entry point returns an error (or finishes), never uses freed memory
// (this suite also runs under AddressSanitizer in CI), and nothing hangs. Two ranks live in this
// process (sscCommInitAll) on the host backend; rank 1 never joins the blocked call, so rank 0
// stays blocked until the abort.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "starscream/starscream.h"

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

class AbortRace : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("STARSCREAM_BACKEND", "host", 1);
    ::setenv("STARSCREAM_TIMEOUT", "30", 1);
    ::unsetenv("STARSCREAM_TOPO_FILE");
    ASSERT_EQ(sscCommInitAll(comms_, 2, nullptr), sscSuccess) << sscGetLastError(nullptr);
  }
  void TearDown() override {
    for (sscComm_t& c : comms_)
      if (c != nullptr) (void)sscCommAbort(c), c = nullptr;
  }

  // Runs `blocked` on a thread (it must block on rank 0 waiting for rank 1), aborts rank 0 from
  // this thread after a moment, and checks the blocked call returned an error soon after.
  void abortWhile(const std::function<sscResult_t(sscComm_t)>& blocked) {
    sscComm_t comm = comms_[0];
    auto call = std::async(std::launch::async, [&] { return blocked(comm); });
    ASSERT_EQ(call.wait_for(200ms), std::future_status::timeout) << "the call did not block";
    const auto abortAt = Clock::now();
    EXPECT_EQ(sscCommAbort(comm), sscSuccess) << sscGetLastError(nullptr);
    comms_[0] = nullptr;
    ASSERT_EQ(call.wait_for(5s), std::future_status::ready) << "the blocked call never returned";
    EXPECT_NE(call.get(), sscSuccess);
    EXPECT_LT(std::chrono::duration<double>(Clock::now() - abortAt).count(), 2.0);
  }

  sscComm_t comms_[2] = {nullptr, nullptr};
};

TEST_F(AbortRace, DuringSplit) {
  abortWhile([](sscComm_t comm) {
    sscComm_t child = nullptr;
    return sscCommSplit(comm, 0, 0, &child, nullptr);
  });
}

TEST_F(AbortRace, DuringRegister) {
  std::vector<char> buffer(1 << 16);
  abortWhile([&](sscComm_t comm) {
    void* handle = nullptr;
    return sscCommRegister(comm, buffer.data(), buffer.size(), &handle);
  });
}

TEST_F(AbortRace, DuringACollectiveAndItsSynchronize) {
  std::vector<float> buf(1 << 16, 1.0f);
  sscStream_t stream = nullptr;
  ASSERT_EQ(sscStreamCreate(&stream), sscSuccess);
  abortWhile([&](sscComm_t comm) {
    sscResult_t r =
        sscAllReduce(buf.data(), buf.data(), buf.size(), sscFloat32, sscSum, comm, stream);
    return r != sscSuccess ? r : sscStreamSynchronize(stream);
  });
  EXPECT_EQ(sscStreamDestroy(stream), sscSuccess);
}

TEST_F(AbortRace, DuringAGroupOverTwoCommunicators) {
  // The group holds a call on the aborted communicator and one on a second pair whose rank 1
  // does take part (on another thread), so only the aborted one blocks.
  sscComm_t other[2] = {nullptr, nullptr};
  ASSERT_EQ(sscCommInitAll(other, 2, nullptr), sscSuccess);
  std::vector<float> a(4096, 1.0f), b(4096, 1.0f), c(4096, 1.0f);
  sscStream_t stream = nullptr, peerStream = nullptr;
  ASSERT_EQ(sscStreamCreate(&stream), sscSuccess);
  ASSERT_EQ(sscStreamCreate(&peerStream), sscSuccess);
  auto peer = std::async(std::launch::async, [&] {
    sscResult_t r =
        sscAllReduce(c.data(), c.data(), c.size(), sscFloat32, sscSum, other[1], peerStream);
    return r != sscSuccess ? r : sscStreamSynchronize(peerStream);
  });
  abortWhile([&](sscComm_t comm) {
    sscGroupStart();
    (void)sscAllReduce(a.data(), a.data(), a.size(), sscFloat32, sscSum, comm, stream);
    (void)sscAllReduce(b.data(), b.data(), b.size(), sscFloat32, sscSum, other[0], stream);
    sscResult_t r = sscGroupEnd();
    return r != sscSuccess ? r : sscStreamSynchronize(stream);
  });
  EXPECT_EQ(peer.get(), sscSuccess) << "the other pair's call must still complete";
  EXPECT_EQ(b[0], 2.0f);
  for (sscComm_t o : other) (void)sscCommAbort(o);
  (void)sscStreamDestroy(stream);
  (void)sscStreamDestroy(peerStream);
}

TEST_F(AbortRace, AbortAndDestroyRacingOnOneCommunicatorFreeItOnce) {
  for (int round = 0; round < 20; ++round) {
    sscComm_t pair[2] = {nullptr, nullptr};
    ASSERT_EQ(sscCommInitAll(pair, 2, nullptr), sscSuccess);
    std::atomic<int> go{0};
    auto racer = [&](bool abort) {
      while (go.load() == 0) {
      }
      return abort ? sscCommAbort(pair[0]) : sscCommDestroy(pair[0]);
    };
    auto a = std::async(std::launch::async, racer, true);
    auto d = std::async(std::launch::async, racer, false);
    go.store(1);
    const sscResult_t ra = a.get(), rd = d.get();
    // Exactly one frees it; the other is told the communicator is not live.
    EXPECT_TRUE((ra == sscSuccess) != (rd == sscSuccess)) << ra << " " << rd;
    EXPECT_TRUE(ra == sscInvalidUsage || rd == sscInvalidUsage);
    EXPECT_EQ(sscCommAbort(pair[1]), sscSuccess);
  }
}

TEST_F(AbortRace, QueriesRacingWithDestroyNeverTouchAFreedCommunicator) {
  for (int round = 0; round < 20; ++round) {
    sscComm_t pair[2] = {nullptr, nullptr};
    ASSERT_EQ(sscCommInitAll(pair, 2, nullptr), sscSuccess);
    std::atomic<bool> stop{false};
    std::thread poller([&] {
      int rank = 0, count = 0;
      sscResult_t state;
      while (!stop.load()) {
        (void)sscCommUserRank(pair[0], &rank);
        (void)sscCommCount(pair[0], &count);
        (void)sscCommGetAsyncError(pair[0], &state);
        (void)sscGetLastError(pair[0]);
      }
    });
    std::this_thread::sleep_for(2ms);
    EXPECT_EQ(sscCommDestroy(pair[0]), sscSuccess);
    std::this_thread::sleep_for(2ms);
    stop.store(true);
    poller.join();
    int rank = 0;
    EXPECT_EQ(sscCommUserRank(pair[0], &rank), sscInvalidUsage);
    EXPECT_EQ(sscCommAbort(pair[1]), sscSuccess);
  }
}

}  // namespace
