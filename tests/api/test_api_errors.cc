// SPDX-License-Identifier: MIT
// Every bad-argument class returns an error code and a message, never a crash or a hang; plus
// the communicator life cycle (init-all, non-blocking init, abort, destroy) in one process.
#include <gtest/gtest.h>

#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "src/comm/comm.h"
#include "starscream/starscream.h"

namespace {

class ApiErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("STARSCREAM_TIMEOUT", "20", 1);
    ASSERT_EQ(sscCommInitAll(comms_, 2, nullptr), sscSuccess) << sscGetLastError(nullptr);
  }
  void TearDown() override {
    for (auto* c : comms_)
      if (c) sscCommDestroy(c);
  }
  // Expects `r` to be `want` with a last-error message containing `needle`.
  static void expectError(sscResult_t r, sscResult_t want, const char* needle) {
    EXPECT_EQ(r, want) << sscGetErrorString(r);
    std::string msg = sscGetLastError(nullptr);
    EXPECT_NE(msg.find(needle), std::string::npos) << "message: " << msg;
  }
  sscComm_t comms_[2] = {nullptr, nullptr};
  float a_[16] = {}, b_[16] = {};
};

TEST_F(ApiErrors, NullPointers) {
  expectError(sscAllReduce(nullptr, b_, 4, sscFloat32, sscSum, comms_[0], nullptr),
              sscInvalidArgument, "sendbuff");
  expectError(sscAllReduce(a_, nullptr, 4, sscFloat32, sscSum, comms_[0], nullptr),
              sscInvalidArgument, "recvbuff");
  expectError(sscAllReduce(a_, b_, 4, sscFloat32, sscSum, nullptr, nullptr), sscInvalidArgument,
              "comm is NULL");
  expectError(sscCommCount(comms_[0], nullptr), sscInvalidArgument, "count is NULL");
  expectError(sscGetUniqueId(nullptr), sscInvalidArgument, "NULL");
  sscUniqueId id{};
  expectError(sscCommInitRank(nullptr, 1, id, 0), sscInvalidArgument, "comm is NULL");
  expectError(sscGetVersion(nullptr), sscInvalidArgument, "NULL");
  expectError(sscMemAlloc(nullptr, 8), sscInvalidArgument, "ptr is NULL");
  // NULL buffers are fine when nothing is moved.
  EXPECT_EQ(sscAllReduce(nullptr, nullptr, 0, sscFloat32, sscSum, comms_[0], nullptr), sscSuccess);
}

TEST_F(ApiErrors, CountsThatOverflow) {
  expectError(sscAllReduce(a_, b_, SIZE_MAX, sscFloat32, sscSum, comms_[0], nullptr),
              sscInvalidArgument, "overflows");
  expectError(sscAllGather(a_, b_, SIZE_MAX / 8, sscFloat64, comms_[0], nullptr),
              sscInvalidArgument, "overflows");
  // A negative int passed as a count becomes huge.
  int negative = -5;
  expectError(sscBroadcast(a_, b_, static_cast<size_t>(negative), sscInt8, 0, comms_[0], nullptr),
              sscInvalidArgument, "overflows");
}

TEST_F(ApiErrors, UnknownTypeAndOp) {
  expectError(sscAllReduce(a_, b_, 4, static_cast<sscDataType_t>(99), sscSum, comms_[0], nullptr),
              sscInvalidArgument, "datatype");
  expectError(sscAllReduce(a_, b_, 4, sscFloat32, static_cast<sscRedOp_t>(77), comms_[0], nullptr),
              sscInvalidArgument, "reduction op");
  expectError(sscRedOpDestroy(sscSum, comms_[0]), sscInvalidArgument, "built-in");
  expectError(sscRedOpDestroy(static_cast<sscRedOp_t>(1234), comms_[0]), sscInvalidArgument,
              "not created");
  float two = 2;
  sscRedOp_t op;
  ASSERT_EQ(sscRedOpCreatePreMulSum(&op, &two, sscFloat32, sscScalarHostImmediate, comms_[0]),
            sscSuccess);
  expectError(sscAllReduce(a_, b_, 4, sscFloat64, op, comms_[0], nullptr), sscInvalidArgument,
              "created for datatype");
  EXPECT_EQ(sscRedOpDestroy(op, comms_[0]), sscSuccess);
  // A destroyed op is unknown to calls, and its number is handed out again.
  expectError(sscAllReduce(a_, b_, 4, sscFloat32, op, comms_[0], nullptr), sscInvalidArgument,
              "reduction op");
  expectError(sscRedOpDestroy(op, comms_[0]), sscInvalidArgument, "not created");
  sscRedOp_t again;
  ASSERT_EQ(sscRedOpCreatePreMulSum(&again, &two, sscFloat64, sscScalarHostImmediate, comms_[0]),
            sscSuccess);
  EXPECT_EQ(again, op);
  expectError(sscAllReduce(a_, b_, 4, sscFloat32, again, comms_[0], nullptr), sscInvalidArgument,
              "created for datatype");
  EXPECT_EQ(sscRedOpDestroy(again, comms_[0]), sscSuccess);
  expectError(sscRedOpCreatePreMulSum(&op, &two, sscFloat32, static_cast<sscScalarResidence_t>(7),
                                      comms_[0]),
              sscInvalidArgument, "residence");
}

TEST_F(ApiErrors, BadRootAndPeer) {
  expectError(sscBroadcast(a_, b_, 4, sscFloat32, 2, comms_[0], nullptr), sscInvalidArgument,
              "root 2");
  expectError(sscReduce(a_, b_, 4, sscFloat32, sscSum, -1, comms_[0], nullptr), sscInvalidArgument,
              "root -1");
  expectError(sscSend(a_, 4, sscFloat32, 5, comms_[0], nullptr), sscInvalidArgument, "peer 5");
  expectError(sscRecv(b_, 4, sscFloat32, -1, comms_[0], nullptr), sscInvalidArgument, "peer -1");
}

TEST_F(ApiErrors, OverlappingBuffers) {
  expectError(sscAllReduce(a_, a_ + 1, 4, sscFloat32, sscSum, comms_[0], nullptr),
              sscInvalidArgument, "overlap");
  // All-to-all runs in place only with sendbuff == recvbuff; a shifted overlap is rejected.
  expectError(sscAllToAll(a_, a_ + 2, 2, sscFloat32, comms_[0], nullptr), sscInvalidArgument,
              "partially overlap");
  expectError(sscAllToAll(a_ + 1, a_, 2, sscFloat32, comms_[0], nullptr), sscInvalidArgument,
              "sendbuff == recvbuff");
  // Rank 0's in-place all-gather input sits at recvbuff + 0 * count; elsewhere is a partial
  // overlap.
  expectError(sscAllGather(a_ + 1, a_, 4, sscFloat32, comms_[0], nullptr), sscInvalidArgument,
              "in-place");
}

TEST_F(ApiErrors, UseAfterDestroy) {
  sscComm_t dead = comms_[1];
  // Destroying a communicator whose peer never runs anything is local and must not hang.
  ASSERT_EQ(sscCommDestroy(dead), sscSuccess);
  comms_[1] = nullptr;
  expectError(sscCommCount(dead, nullptr), sscInvalidUsage, "not a live communicator");
  expectError(sscAllReduce(a_, b_, 4, sscFloat32, sscSum, dead, nullptr), sscInvalidUsage,
              "not a live communicator");
  expectError(sscCommDestroy(dead), sscInvalidUsage, "not a live communicator");
  EXPECT_EQ(sscCommDestroy(nullptr), sscSuccess);
}

TEST_F(ApiErrors, MismatchedGroupCalls) {
  expectError(sscGroupEnd(), sscInvalidUsage, "without a matching sscGroupStart");
  ASSERT_EQ(sscGroupStart(), sscSuccess);
  EXPECT_EQ(sscSend(a_, 4, sscFloat32, 9, comms_[0], nullptr), sscInvalidArgument);
  expectError(sscGroupEnd(), sscInvalidArgument, "nothing in the group was launched");
  // The failed group is gone: a new one works.
  ASSERT_EQ(sscGroupStart(), sscSuccess);
  ASSERT_EQ(sscGroupStart(), sscSuccess);  // nested
  EXPECT_EQ(sscGroupEnd(), sscSuccess);
  EXPECT_EQ(sscGroupEnd(), sscSuccess);
}

TEST_F(ApiErrors, BadInitArguments) {
  sscUniqueId id;
  ASSERT_EQ(sscGetUniqueId(&id), sscSuccess);
  sscComm_t c = nullptr;
  expectError(sscCommInitRank(&c, 0, id, 0), sscInvalidArgument, "nranks");
  expectError(sscCommInitRank(&c, 2, id, 2), sscInvalidArgument, "rank 2");
  sscConfig_t bad = SSC_CONFIG_INITIALIZER;
  bad.magic = 1;
  expectError(sscCommInitRankConfig(&c, 1, id, 0, &bad), sscInvalidArgument,
              "SSC_CONFIG_INITIALIZER");
  sscUniqueId garbage;
  memset(&garbage, 0x5a, sizeof(garbage));
  EXPECT_NE(sscCommInitRank(&c, 1, garbage, 0), sscSuccess);
  EXPECT_EQ(c, nullptr);
  expectError(sscCommInitAll(nullptr, 2, nullptr), sscInvalidArgument, "comms is NULL");
  sscComm_t cs[2];
  int devs[2] = {0, -1};
  expectError(sscCommInitAll(cs, 2, devs), sscInvalidArgument, "negative");
  expectError(sscCommSplit(comms_[0], -7, 0, &c, nullptr), sscInvalidArgument, "color");
}

// Runs f(rank) for both communicators at once (collective calls need every rank).
template <typename F>
void onBothRanks(F f) {
  std::thread t([&] { f(1); });
  f(0);
  t.join();
}

// 100000 bytes sent, 50000 received. The send is split over both channels (50000 bytes each),
// the receive is not, so channel 0's slot sizes agree; the message length, which every slot of a
// point-to-point message carries (Step::tag), does not. The receiver must fail, not take the
// first half as its message (and leave the second half for the next one).
TEST_F(ApiErrors, SendAndReceiveOfDifferentLengthsFail) {
  std::vector<char> sent(100000, 7), got(50000, 0);
  sscStream_t streams[2] = {nullptr, nullptr};
  for (auto& st : streams) ASSERT_EQ(sscStreamCreate(&st), sscSuccess);
  sscResult_t r[2] = {sscSuccess, sscSuccess};
  std::string why;
  onBothRanks([&](int rank) {
    r[rank] = rank == 0 ? sscSend(sent.data(), sent.size(), sscUint8, 1, comms_[0], streams[0])
                        : sscRecv(got.data(), got.size(), sscUint8, 0, comms_[1], streams[1]);
    if (r[rank] == sscSuccess) r[rank] = sscStreamSynchronize(streams[rank]);
    if (rank == 1) why = sscGetLastError(comms_[1]);
  });
  EXPECT_EQ(r[1], sscInvalidUsage) << sscGetErrorString(r[1]);
  EXPECT_NE(why.find("different sizes"), std::string::npos) << why;
  for (auto st : streams) sscStreamDestroy(st);
}

TEST_F(ApiErrors, MemoryAndRegistration) {
  void* p = nullptr;
  ASSERT_EQ(sscMemAlloc(&p, 0), sscSuccess);
  EXPECT_EQ(p, nullptr);
  void* bufs[2] = {nullptr, nullptr};
  void* handles[2] = {nullptr, nullptr};
  for (auto& b : bufs) ASSERT_EQ(sscMemAlloc(&b, 4096), sscSuccess);
  onBothRanks([&](int r) {
    EXPECT_EQ(sscCommRegister(comms_[r], bufs[r], 4096, &handles[r]), sscSuccess);
  });
  void* h = nullptr;
  expectError(sscCommRegister(comms_[0], static_cast<char*>(bufs[0]) + 8, 16, &h), sscInvalidUsage,
              "already registered");
  onBothRanks([&](int r) { EXPECT_EQ(sscCommDeregister(comms_[r], handles[r]), sscSuccess); });
  expectError(sscCommDeregister(comms_[0], handles[0]), sscInvalidArgument, "not a registration");
  for (auto& b : bufs) EXPECT_EQ(sscMemFree(b), sscSuccess);
  int onStack = 0;
  expectError(sscMemFree(&onStack), sscInvalidArgument, "not allocated by sscMemAlloc");
  expectError(sscStreamSynchronize(reinterpret_cast<sscStream_t>(&onStack)), sscInvalidArgument,
              "not a host-backend stream");
}

TEST_F(ApiErrors, ZeroCopyOnRegisteredBuffersAndMismatchedOffsets) {
  // Registered sscMemAlloc buffers take the zero-copy (symmetric) algorithm; the results must be
  // the same as through the FIFOs, and ranks using different offsets must fail, not corrupt.
  const size_t count = 50000;  // large enough for the two-shot variant
  float* bufs[2];
  void* handles[2];
  for (auto& b : bufs)
    ASSERT_EQ(sscMemAlloc(reinterpret_cast<void**>(&b), 2 * count * sizeof(float)), sscSuccess);
  onBothRanks([&](int r) {
    ASSERT_EQ(sscCommRegister(comms_[r], bufs[r], 2 * count * sizeof(float), &handles[r]),
              sscSuccess);
  });
  for (sscComm_t c : comms_) ASSERT_EQ(ssc::commForceAlgo(c, "symmetric"), sscSuccess);
  for (size_t n : {size_t{1}, size_t{7}, count}) {
    for (int r = 0; r < 2; ++r)
      for (size_t i = 0; i < n; ++i)
        bufs[r][i] = static_cast<float>(r + 1) * static_cast<float>(i % 100);
    onBothRanks([&](int r) {
      EXPECT_EQ(sscAllReduce(bufs[r], bufs[r] + count, n, sscFloat32, sscSum, comms_[r], nullptr),
                sscSuccess);
      EXPECT_EQ(sscStreamSynchronize(nullptr), sscSuccess) << sscGetLastError(comms_[r]);
    });
    for (int r = 0; r < 2; ++r)
      for (size_t i = 0; i < n; ++i)
        ASSERT_EQ(bufs[r][count + i], 3.0f * static_cast<float>(i % 100))
            << "rank " << r << " i " << i;
    // In place (two-shot even when small).
    onBothRanks([&](int r) {
      EXPECT_EQ(sscAllReduce(bufs[r], bufs[r], n, sscFloat32, sscSum, comms_[r], nullptr),
                sscSuccess);
      EXPECT_EQ(sscStreamSynchronize(nullptr), sscSuccess);
    });
    for (int r = 0; r < 2; ++r)
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(bufs[r][i], 3.0f * static_cast<float>(i % 100));
  }
  // Rank 1 uses another offset: both must report it.
  sscResult_t res[2];
  onBothRanks([&](int r) {
    EXPECT_EQ(
        sscAllReduce(bufs[r] + r, bufs[r] + count, 10, sscFloat32, sscSum, comms_[r], nullptr),
        sscSuccess);
    res[r] = sscCommFinalize(comms_[r]);
  });
  EXPECT_TRUE(res[0] == sscInvalidUsage || res[1] == sscInvalidUsage) << res[0] << " " << res[1];
  for (int r = 0; r < 2; ++r) {
    sscCommAbort(comms_[r]);
    comms_[r] = nullptr;
  }
  for (auto& b : bufs) EXPECT_EQ(sscMemFree(b), sscSuccess);
}

TEST_F(ApiErrors, AllToAllInPlace) {
  // NCCL's test suite runs every collective with sendbuff == recvbuff too. Counts go from one
  // element to many FIFO chunks per block; values stay exact in float (below 2^24).
  for (size_t count : {size_t{1}, size_t{7}, size_t{100003}}) {
    std::vector<float> buf[2];
    for (int r = 0; r < 2; ++r)
      for (size_t k = 0; k < 2 * count; ++k)
        buf[r].push_back(static_cast<float>(r * 2 * count + k));
    onBothRanks([&](int r) {
      EXPECT_EQ(sscAllToAll(buf[r].data(), buf[r].data(), count, sscFloat32, comms_[r], nullptr),
                sscSuccess)
          << sscGetLastError(comms_[r]);
      EXPECT_EQ(sscStreamSynchronize(nullptr), sscSuccess) << sscGetLastError(comms_[r]);
    });
    // Block j of rank r's result is block r of rank j's input.
    for (int r = 0; r < 2; ++r)
      for (size_t j = 0; j < 2; ++j)
        for (size_t i = 0; i < count; ++i)
          ASSERT_EQ(buf[r][j * count + i], static_cast<float>(j * 2 * count + r * count + i))
              << "count " << count << " rank " << r << " block " << j << " i " << i;
  }
}

TEST_F(ApiErrors, QueriesAndStrings) {
  int n = 0, r = -1, d = 0, v = 0;
  EXPECT_EQ(sscCommCount(comms_[1], &n), sscSuccess);
  EXPECT_EQ(sscCommUserRank(comms_[1], &r), sscSuccess);
  EXPECT_EQ(sscCommDevice(comms_[1], &d), sscSuccess);
  EXPECT_EQ(sscGetVersion(&v), sscSuccess);
  EXPECT_EQ(n, 2);
  EXPECT_EQ(r, 1);
  EXPECT_EQ(d, -1);
  EXPECT_EQ(v, SSC_VERSION_CODE);
  for (int code = 0; code <= sscNumResults; ++code)
    EXPECT_NE(sscGetErrorString(static_cast<sscResult_t>(code)), nullptr);
  EXPECT_STREQ(sscGetErrorString(sscTimeout), "timed out waiting for a peer");
}

TEST_F(ApiErrors, TwoCommunicatorsInOneProcess) {
  std::vector<double> in0(1000, 1.5), in1(1000, 2.5), out0(1000), out1(1000);
  std::thread t([&] {
    EXPECT_EQ(sscAllReduce(in1.data(), out1.data(), 1000, sscFloat64, sscSum, comms_[1], nullptr),
              sscSuccess);
  });
  EXPECT_EQ(sscAllReduce(in0.data(), out0.data(), 1000, sscFloat64, sscSum, comms_[0], nullptr),
            sscSuccess);
  t.join();
  EXPECT_EQ(sscCommFinalize(comms_[0]), sscSuccess);
  EXPECT_EQ(sscCommFinalize(comms_[1]), sscSuccess);
  EXPECT_EQ(out0[999], 4.0);
  EXPECT_EQ(out1[0], 4.0);
}

TEST_F(ApiErrors, MismatchedCountsBetweenRanksFailInsteadOfCorrupting) {
  for (sscComm_t c : comms_) ASSERT_EQ(ssc::commForceAlgo(c, "ring"), sscSuccess);
  sscStream_t s0, s1;
  ASSERT_EQ(sscStreamCreate(&s0), sscSuccess);
  ASSERT_EQ(sscStreamCreate(&s1), sscSuccess);
  EXPECT_EQ(sscAllReduce(a_, a_, 8, sscFloat32, sscSum, comms_[0], s0), sscSuccess);
  EXPECT_EQ(sscAllReduce(b_, b_, 16, sscFloat32, sscSum, comms_[1], s1), sscSuccess);
  sscResult_t r0 = sscStreamSynchronize(s0);
  // Rank 1 may block on data rank 0 never sends: abort it so its queue drains.
  std::thread aborter([&] { sscCommAbort(comms_[1]); });
  sscResult_t r1 = sscStreamSynchronize(s1);
  aborter.join();
  comms_[1] = nullptr;
  EXPECT_TRUE(r0 == sscInvalidUsage || r1 == sscInvalidUsage) << r0 << " " << r1;
  sscResult_t async = sscSuccess;
  EXPECT_EQ(sscCommGetAsyncError(comms_[0], &async), sscSuccess);
  EXPECT_NE(async, sscSuccess);
  // A failed communicator refuses further work with the original reason.
  EXPECT_NE(sscAllReduce(a_, b_, 1, sscFloat32, sscSum, comms_[0], s0), sscSuccess);
  sscStreamDestroy(s0);
  sscStreamDestroy(s1);
}

TEST_F(ApiErrors, AbortFromAnotherThreadUnblocksAWaiter) {
  sscStream_t s;
  ASSERT_EQ(sscStreamCreate(&s), sscSuccess);
  // Only rank 0 joins this all-reduce: it waits for rank 1 until aborted.
  ASSERT_EQ(sscAllReduce(a_, b_, 16, sscFloat32, sscSum, comms_[0], s), sscSuccess);
  auto start = std::chrono::steady_clock::now();
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_EQ(sscCommAbort(comms_[0]), sscSuccess);
  });
  sscResult_t r = sscStreamSynchronize(s);
  aborter.join();
  comms_[0] = nullptr;
  EXPECT_EQ(r, sscRemoteError);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  sscStreamDestroy(s);
}

TEST_F(ApiErrors, AbortWhileAnotherThreadFinalizes) {
  sscStream_t s;
  ASSERT_EQ(sscStreamCreate(&s), sscSuccess);
  // Rank 1 never joins: rank 0's finalize waits until the abort from another thread.
  ASSERT_EQ(sscAllReduce(a_, b_, 16, sscFloat32, sscSum, comms_[0], s), sscSuccess);
  sscResult_t finalized = sscSuccess;
  std::thread finalizer([&] { finalized = sscCommFinalize(comms_[0]); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(sscCommAbort(comms_[0]), sscSuccess);
  finalizer.join();
  comms_[0] = nullptr;
  EXPECT_NE(finalized, sscSuccess);
  sscStreamDestroy(s);
}

// sscStreamSynchronize(NULL) waits for every stream and reports the first error any of them
// stored, but consumes only the NULL stream's: a created stream still reports its own error.
TEST_F(ApiErrors, SynchronizeNullReportsErrorsWithoutTakingOtherStreams) {
  // Read when a communicator is created: in the pairs made below a lone rank gives up after 1 s.
  setenv("STARSCREAM_TIMEOUT", "1", 1);
  // Rank 0 alone on the NULL stream: its wait for rank 1 times out.
  sscComm_t lone[2] = {nullptr, nullptr};
  ASSERT_EQ(sscCommInitAll(lone, 2, nullptr), sscSuccess) << sscGetLastError(nullptr);
  ASSERT_EQ(sscAllReduce(a_, b_, 16, sscFloat32, sscSum, lone[0], nullptr), sscSuccess);
  EXPECT_EQ(sscStreamSynchronize(nullptr), sscTimeout) << sscGetLastError(nullptr);
  sscResult_t async = sscSuccess;
  EXPECT_EQ(sscCommGetAsyncError(lone[0], &async), sscSuccess);
  EXPECT_EQ(async, sscTimeout);
  EXPECT_EQ(sscStreamSynchronize(nullptr), sscSuccess);  // reported once, then gone
  for (auto* c : lone) sscCommDestroy(c);

  // A fresh pair (comms_[1] would find rank 0's data of the failed call waiting for it), rank 0
  // alone on a created stream: NULL reports that error and leaves it to its stream.
  sscComm_t pair[2] = {nullptr, nullptr};
  ASSERT_EQ(sscCommInitAll(pair, 2, nullptr), sscSuccess) << sscGetLastError(nullptr);
  sscStream_t s;
  ASSERT_EQ(sscStreamCreate(&s), sscSuccess);
  ASSERT_EQ(sscAllReduce(a_, b_, 16, sscFloat32, sscSum, pair[0], s), sscSuccess);
  EXPECT_EQ(sscStreamSynchronize(nullptr), sscTimeout);
  EXPECT_EQ(sscStreamSynchronize(s), sscTimeout);
  EXPECT_EQ(sscStreamSynchronize(s), sscSuccess);
  EXPECT_EQ(sscStreamSynchronize(nullptr), sscSuccess);
  EXPECT_EQ(sscStreamDestroy(s), sscSuccess);
  for (auto* c : pair) sscCommDestroy(c);
  setenv("STARSCREAM_TIMEOUT", "20", 1);
}

TEST(ApiLifecycle, NonBlockingInit) {
  sscUniqueId id;
  ASSERT_EQ(sscGetUniqueId(&id), sscSuccess);
  sscComm_t comms[2] = {nullptr, nullptr};
  sscConfig_t config = SSC_CONFIG_INITIALIZER;
  config.blocking = 0;
  for (int r = 0; r < 2; ++r)
    EXPECT_EQ(sscCommInitRankConfig(&comms[r], 2, id, r, &config), sscInProgress);
  for (int r = 0; r < 2; ++r) {
    sscResult_t state = sscInProgress;
    for (int i = 0; i < 2000 && state == sscInProgress; ++i) {
      ASSERT_EQ(sscCommGetAsyncError(comms[r], &state), sscSuccess);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_EQ(state, sscSuccess) << sscGetLastError(comms[r]);
  }
  for (auto* c : comms) EXPECT_EQ(sscCommDestroy(c), sscSuccess);
}

TEST(ApiLifecycle, TimeoutWhenAPeerNeverJoins) {
  setenv("STARSCREAM_TIMEOUT", "2", 1);
  sscUniqueId id;
  ASSERT_EQ(sscGetUniqueId(&id), sscSuccess);
  sscComm_t c = nullptr;
  auto start = std::chrono::steady_clock::now();
  sscResult_t r = sscCommInitRank(&c, 2, id, 0);
  EXPECT_NE(r, sscSuccess);
  EXPECT_EQ(c, nullptr);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(15));
  setenv("STARSCREAM_TIMEOUT", "20", 1);
}

}  // namespace
