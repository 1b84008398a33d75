// SPDX-License-Identifier: MIT
// A communicator reads its settings once, when it is created (docs/environment.md): a
// STARSCREAM_TIMEOUT set afterwards leaves its waits as they were while a communicator created
// after it takes the new value, and its calls read the environment not at all. Host backend,
// ranks as threads of this process.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <latch>
#include <thread>
#include <vector>

#include "src/comm/comm.h"
#include "src/core/env.h"
#include "starscream/starscream.h"
#include "tests/support/host_ranks.h"

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

class CommSettings : public ::testing::Test {
 protected:
  void SetUp() override { ::unsetenv("STARSCREAM_TIMEOUT"); }
  void TearDown() override { ::unsetenv("STARSCREAM_TIMEOUT"); }
};

TEST_F(CommSettings, TimeoutSetAfterCreationChangesOnlyLaterCommunicators) {
  ::setenv("STARSCREAM_TIMEOUT", "1", 1);
  sscComm_t early[2] = {nullptr, nullptr};
  ASSERT_EQ(sscCommInitAll(early, 2, nullptr), sscSuccess) << sscGetLastError(nullptr);
  ::setenv("STARSCREAM_TIMEOUT", "40", 1);
  EXPECT_EQ(early[0]->waits.timeoutSeconds, 1.0);

  // Rank 0 of the early pair alone: its wait for rank 1 gives up after its own 1 s, not 40 s.
  std::vector<float> in(64, 1.0f), out(64, 0.0f);
  const auto start = Clock::now();
  ASSERT_EQ(sscAllReduce(in.data(), out.data(), 64, sscFloat32, sscSum, early[0], nullptr),
            sscSuccess);
  EXPECT_EQ(sscStreamSynchronize(nullptr), sscTimeout) << sscGetLastError(nullptr);
  EXPECT_LT(Clock::now() - start, 20s);
  for (sscComm_t c : early) EXPECT_EQ(sscCommDestroy(c), sscSuccess);

  // A pair created now waits with 40 s: rank 1 comes 2.5 s late (past the early pair's limit)
  // and the call completes.
  sscComm_t late[2] = {nullptr, nullptr};
  ASSERT_EQ(sscCommInitAll(late, 2, nullptr), sscSuccess) << sscGetLastError(nullptr);
  EXPECT_EQ(late[0]->waits.timeoutSeconds, 40.0);
  sscStream_t streams[2] = {nullptr, nullptr};
  for (sscStream_t& s : streams) ASSERT_EQ(sscStreamCreate(&s), sscSuccess);
  std::vector<float> out1(64, 0.0f);
  ASSERT_EQ(sscAllReduce(in.data(), out.data(), 64, sscFloat32, sscSum, late[0], streams[0]),
            sscSuccess);
  std::this_thread::sleep_for(2500ms);
  sscResult_t state = sscInternalError;
  EXPECT_EQ(sscCommGetAsyncError(late[0], &state), sscSuccess);
  EXPECT_EQ(state, sscSuccess) << "the late pair's rank 0 gave up before rank 1 came";
  ASSERT_EQ(sscAllReduce(in.data(), out1.data(), 64, sscFloat32, sscSum, late[1], streams[1]),
            sscSuccess);
  for (sscStream_t s : streams) EXPECT_EQ(sscStreamSynchronize(s), sscSuccess);
  EXPECT_EQ(out[0], 2.0f);
  EXPECT_EQ(out1[63], 2.0f);
  for (sscStream_t s : streams) EXPECT_EQ(sscStreamDestroy(s), sscSuccess);
  for (sscComm_t c : late) EXPECT_EQ(sscCommDestroy(c), sscSuccess);
}

// Online tuning's deciding call waits for every rank: with both ranks in this process, driven
// by one thread inside a group, the first would wait for the second forever. It stays off, and
// the calls that would have decided complete.
TEST_F(CommSettings, OnlineTuningIsOffWithSeveralRanksInOneProcess) {
  ::setenv("STARSCREAM_TUNE_ONLINE", "1", 1);
  sscComm_t comms[2] = {nullptr, nullptr};
  ASSERT_EQ(sscCommInitAll(comms, 2, nullptr), sscSuccess) << sscGetLastError(nullptr);
  ::unsetenv("STARSCREAM_TUNE_ONLINE");
  std::vector<float> in(1 << 16, 1.0f), out0(in.size(), 0.0f), out1(in.size(), 0.0f);
  for (sscComm_t c : comms) EXPECT_EQ(c->online, nullptr);
  for (int k = 0; k < 8; ++k) {
    ASSERT_EQ(sscGroupStart(), sscSuccess);
    ASSERT_EQ(
        sscAllReduce(in.data(), out0.data(), in.size(), sscFloat32, sscSum, comms[0], nullptr),
        sscSuccess);
    ASSERT_EQ(
        sscAllReduce(in.data(), out1.data(), in.size(), sscFloat32, sscSum, comms[1], nullptr),
        sscSuccess);
    ASSERT_EQ(sscGroupEnd(), sscSuccess) << sscGetLastError(nullptr);
    ASSERT_EQ(sscStreamSynchronize(nullptr), sscSuccess);
    EXPECT_EQ(out0[0], 2.0f);
    EXPECT_EQ(out1.back(), 2.0f);
  }
  for (sscComm_t c : comms) EXPECT_EQ(sscCommDestroy(c), sscSuccess);
}

// Collectives and point-to-point calls take every setting from their communicator: between its
// creation and its destruction the environment is not read once.
TEST_F(CommSettings, CallsReadNoEnvironment) {
  constexpr int kRanks = 3;
  std::latch created(kRanks), counted(kRanks), called(kRanks);
  uint64_t before = 0, after = 0;
  ssc::test::runRanks(kRanks, [&](int rank, sscComm_t comm, sscStream_t stream) {
    created.arrive_and_wait();
    if (rank == 0) before = ssc::env::environmentReads();
    counted.arrive_and_wait();
    std::vector<float> a(1000, 1.0f), b(kRanks * 1000, 0.0f);
    EXPECT_EQ(sscAllReduce(a.data(), b.data(), 1000, sscFloat32, sscSum, comm, stream), sscSuccess);
    EXPECT_EQ(sscAllGather(a.data(), b.data(), 1000, sscFloat32, comm, stream), sscSuccess);
    EXPECT_EQ(sscReduceScatter(b.data(), a.data(), 1000, sscFloat32, sscMax, comm, stream),
              sscSuccess);
    EXPECT_EQ(sscBroadcast(a.data(), a.data(), 1000, sscFloat32, 1, comm, stream), sscSuccess);
    EXPECT_EQ(sscAllToAll(b.data(), b.data(), 1000, sscFloat32, comm, stream), sscSuccess);
    EXPECT_EQ(sscGroupStart(), sscSuccess);
    EXPECT_EQ(sscSend(a.data(), 100, sscFloat32, (rank + 1) % kRanks, comm, stream), sscSuccess);
    EXPECT_EQ(sscRecv(b.data(), 100, sscFloat32, (rank + kRanks - 1) % kRanks, comm, stream),
              sscSuccess);
    EXPECT_EQ(sscGroupEnd(), sscSuccess);
    EXPECT_EQ(sscStreamSynchronize(stream), sscSuccess) << sscGetLastError(comm);
    called.arrive_and_wait();
    if (rank == 0) after = ssc::env::environmentReads();
  });
  EXPECT_GT(before, 0u);  // creation read it
  EXPECT_EQ(after, before) << "a call on an existing communicator read the environment";
}

}  // namespace
