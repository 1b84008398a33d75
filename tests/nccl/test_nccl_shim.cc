// SPDX-License-Identifier: MIT
// Unit tests of the NCCL shim in one process on the host backend: ncclConfig_t parsing (the
// versioned struct), handle validation, NCCL's group semantics with one thread driving several
// ranks (creation and collectives inside groups, simulated and poisoned groups), revoke, the
// device-API entry points, that the shim's registry, logger, last error and groups are
// libstarscream.so's (with STARSCREAM_DEBUG=WARN, which ctest sets for nccl.one_core), and (when
// ctest sets STARSCREAM_NCCL_FALLBACK) the vendor fallback.
#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "src/nccl/config.h"
#include "src/nccl/core_link.h"
#include "src/nccl/fallback.h"
#include "src/nccl/shim.h"  // the platform's nccl.h or rccl.h

#if SSC_NCCL_HAS_DEVICE_API
#include <nccl_device/core.h>
#include <nccl_device/ll_a2a.h>
#endif

namespace {

using ssc::nccl::parseConfig;
using ssc::nccl::ShimConfig;

// Expects `r` to be `want` with a last-error message containing `needle`.
void expectError(ncclResult_t r, ncclResult_t want, const char* needle) {
  EXPECT_EQ(r, want) << ncclGetErrorString(r);
  std::string msg = ncclGetLastError(nullptr);
  EXPECT_NE(msg.find(needle), std::string::npos) << "message: " << msg;
}

TEST(NcclConfig, NullGivesDefaultsOrTheParents) {
  ShimConfig out, parent;
  parent.blocking = false;
  parent.commName = "parent";
  ASSERT_EQ(parseConfig("t", nullptr, nullptr, &out), ncclSuccess);
  EXPECT_TRUE(out.blocking);
  ASSERT_EQ(parseConfig("t", nullptr, &parent, &out), ncclSuccess);
  EXPECT_FALSE(out.blocking);
  EXPECT_EQ(out.commName, "parent");
  // An explicit config does not inherit: its undefined fields take the defaults.
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  ASSERT_EQ(parseConfig("t", &config, &parent, &out), ncclSuccess);
  EXPECT_TRUE(out.blocking);
  EXPECT_EQ(out.commName, "");
}

TEST(NcclConfig, ReadsTheFields) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  config.splitShare = 1;
  config.commName = "tp";
  config.minCTAs = 2;
  config.maxCTAs = 8;
  ShimConfig out;
  ASSERT_EQ(parseConfig("t", &config, nullptr, &out), ncclSuccess);
  EXPECT_FALSE(out.blocking);
  EXPECT_TRUE(out.splitShare);
  EXPECT_EQ(out.commName, "tp");
}

TEST(NcclConfig, RejectsWhatNcclRejects) {
  ShimConfig out;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.magic = 0;
  expectError(parseConfig("t", &config, nullptr, &out), ncclInvalidArgument,
              "NCCL_CONFIG_INITIALIZER");
  config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 2;
  expectError(parseConfig("t", &config, nullptr, &out), ncclInvalidArgument, "config.blocking");
  config = NCCL_CONFIG_INITIALIZER;
  config.minCTAs = 8;
  config.maxCTAs = 2;
  expectError(parseConfig("t", &config, nullptr, &out), ncclInvalidArgument, "minCTAs");
#if SSC_NCCL_CONFIG_HAS_CTAPolicy
  config = NCCL_CONFIG_INITIALIZER;
  config.CTAPolicy = 7;
  expectError(parseConfig("t", &config, nullptr, &out), ncclInvalidArgument, "CTAPolicy");
#endif
  config = NCCL_CONFIG_INITIALIZER;
  config.splitShare = -3;
  expectError(parseConfig("t", &config, nullptr, &out), ncclInvalidArgument, "splitShare");
  config = NCCL_CONFIG_INITIALIZER;
  config.size = 4;
  expectError(parseConfig("t", &config, nullptr, &out), ncclInvalidArgument, "too small");
}

// A program built against an older nccl.h passes a shorter struct: fields past its size are
// not its own and must not be read, even when the bytes there would be invalid.
TEST(NcclConfig, OlderShorterStructIsReadOnlyUpToItsSize) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.size = offsetof(ncclConfig_t, splitShare);
  config.blocking = 0;
  config.splitShare = 99;  // beyond the caller's struct
#if SSC_NCCL_CONFIG_HAS_CTAPolicy
  config.CTAPolicy = 99;
#endif
  ShimConfig out;
  ASSERT_EQ(parseConfig("t", &config, nullptr, &out), ncclSuccess) << ncclGetLastError(nullptr);
  EXPECT_FALSE(out.blocking);
  EXPECT_FALSE(out.splitShare);
}

class NcclShim : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("STARSCREAM_TIMEOUT", "30", 1);
    ASSERT_EQ(ncclCommInitAll(comms_, 2, nullptr), ncclSuccess) << ncclGetLastError(nullptr);
  }
  void TearDown() override {
    for (auto* c : comms_) {
      if (c != nullptr) {
        EXPECT_EQ(ncclCommDestroy(c), ncclSuccess) << ncclGetLastError(nullptr);
      }
    }
  }
  // One all-reduce over both ranks from this thread: a group, as NCCL requires.
  ncclResult_t allReduceBoth(ncclComm_t a, ncclComm_t b, double* bufA, double* bufB, size_t n) {
    ncclGroupStart();
    ncclAllReduce(bufA, bufA, n, ncclDouble, ncclSum, a, nullptr);
    ncclAllReduce(bufB, bufB, n, ncclDouble, ncclSum, b, nullptr);
    return ncclGroupEnd();
  }
  ncclComm_t comms_[2] = {nullptr, nullptr};
};

TEST_F(NcclShim, HandleValidation) {
  double a[4] = {}, b[4];
  expectError(ncclAllReduce(a, b, 4, ncclDouble, ncclSum, nullptr, nullptr), ncclInvalidArgument,
              "comm is NULL");
  int notAComm = 0;
  auto bogus = reinterpret_cast<ncclComm_t>(&notAComm);
  expectError(ncclAllReduce(a, b, 4, ncclDouble, ncclSum, bogus, nullptr), ncclInvalidUsage,
              "not a live communicator");
  int n = 0;
  expectError(ncclCommCount(bogus, &n), ncclInvalidUsage, "not a live communicator");
  expectError(ncclCommDestroy(bogus), ncclInvalidUsage, "not a live communicator");
  expectError(ncclCommCount(comms_[0], nullptr), ncclInvalidArgument, "count is NULL");
  EXPECT_EQ(ncclCommDestroy(nullptr), ncclSuccess);
  EXPECT_EQ(ncclCommAbort(nullptr), ncclSuccess);
  // Use after destroy.
  ncclComm_t dead = comms_[1];
  ASSERT_EQ(ncclCommDestroy(dead), ncclSuccess);
  comms_[1] = nullptr;
  expectError(ncclCommUserRank(dead, &n), ncclInvalidUsage, "not a live communicator");
  expectError(ncclCommAbort(dead), ncclInvalidUsage, "not a live communicator");
}

TEST_F(NcclShim, QueriesVersionAndStrings) {
  int n = 0, r = -1, d = 0, v = 0;
  ASSERT_EQ(ncclCommCount(comms_[1], &n), ncclSuccess);
  ASSERT_EQ(ncclCommUserRank(comms_[1], &r), ncclSuccess);
  ASSERT_EQ(ncclCommCuDevice(comms_[1], &d), ncclSuccess);
  ASSERT_EQ(ncclGetVersion(&v), ncclSuccess);
  EXPECT_EQ(n, 2);
  EXPECT_EQ(r, 1);
  EXPECT_EQ(d, -1);  // host backend
  EXPECT_EQ(v, NCCL_VERSION_CODE);
  EXPECT_STREQ(ncclGetErrorString(ncclSuccess), "no error");
  EXPECT_STREQ(ncclGetErrorString(static_cast<ncclResult_t>(1234)), "unknown result code");
  ncclResult_t state = ncclInternalError;
  ASSERT_EQ(ncclCommGetAsyncError(comms_[0], &state), ncclSuccess);
  EXPECT_EQ(state, ncclSuccess);
}

TEST_F(NcclShim, BadArgumentsAndUnsupportedFeatures) {
  double a[4] = {}, b[4];
  expectError(ncclAllReduce(a, b, 4, static_cast<ncclDataType_t>(99), ncclSum, comms_[0], nullptr),
              ncclInvalidArgument, "ncclAllReduce: unknown datatype 99");
#if SSC_NCCL_HAS_ncclGather
  expectError(ncclGather(a, b, 1, ncclDouble, 5, comms_[0], nullptr), ncclInvalidArgument,
              "root 5");
#endif
  expectError(ncclGroupEnd(), ncclInvalidUsage, "no matching ncclGroupStart");
#if SSC_NCCL_HAS_ncclCommWindowRegister
  // Windows are symmetric registrations (collective: tests/nccl/nccl_call_patterns.c registers
  // real ones under mpirun); here only the argument checks, which fail before any exchange.
  ncclWindow_t win = nullptr;
  expectError(ncclCommWindowRegister(comms_[0], a, sizeof(a), nullptr, NCCL_WIN_DEFAULT),
              ncclInvalidArgument, "win is NULL");
  expectError(ncclCommWindowRegister(comms_[0], a, sizeof(a), &win, 0x40), ncclInvalidArgument,
              "unknown winFlags 0x40");
  EXPECT_EQ(win, nullptr);
#endif
#if SSC_NCCL_HAS_DEVICE_API
  ncclDevCommRequirements_t reqs{};
  ncclDevComm_t* devComm = nullptr;
  expectError(ncclDevCommCreate(comms_[0], &reqs, devComm), ncclInvalidUsage, "device-side API");
  expectError(ncclDevCommDestroy(comms_[0], devComm), ncclInvalidUsage, "device-side API");
  ncclTeam_t world = ncclTeamWorld(comms_[1]);
  EXPECT_EQ(world.nRanks, 2);
  EXPECT_EQ(world.rank, 1);
  EXPECT_EQ(ncclTeamLsa(comms_[1]).nRanks, 1);
  EXPECT_EQ(ncclTeamRankToWorld(comms_[1], world, 0), 0);
  EXPECT_EQ(ncclLLA2ACalcSlots(32, 16), 64);
#endif
}

// NCCL's single-thread pattern: creation inside a group completes at ncclGroupEnd.
TEST(NcclShimLifecycle, InitRanksInsideAGroupFromOneThread) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t comms[2] = {nullptr, nullptr};
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < 2; ++r) ASSERT_EQ(ncclCommInitRank(&comms[r], 2, id, r), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(nullptr);
  std::vector<double> a(1000, 1.5), b(1000, 2.5);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ncclAllReduce(a.data(), a.data(), a.size(), ncclDouble, ncclSum, comms[0], nullptr);
  ncclAllReduce(b.data(), b.data(), b.size(), ncclDouble, ncclSum, comms[1], nullptr);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(nullptr);
  EXPECT_EQ(a[999], 4.0);
  EXPECT_EQ(b[0], 4.0);
  for (auto* c : comms) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
}

TEST(NcclShimLifecycle, NonBlockingInitIsPolledThroughGetAsyncError) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comms[2] = {nullptr, nullptr};
  for (int r = 0; r < 2; ++r)
    ASSERT_EQ(ncclCommInitRankConfig(&comms[r], 2, id, r, &config), ncclInProgress);
  int n = 0;
  ncclResult_t early = ncclCommCount(comms[0], &n);  // may race with the init: either is fine
  EXPECT_TRUE(early == ncclSuccess || early == ncclInvalidUsage);
  for (auto* c : comms) {
    ncclResult_t state = ncclInProgress;
    for (int i = 0; i < 20000 && state == ncclInProgress; ++i) {
      ASSERT_EQ(ncclCommGetAsyncError(c, &state), ncclSuccess);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_EQ(state, ncclSuccess) << ncclGetLastError(c);
  }
  for (auto* c : comms) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
}

TEST_F(NcclShim, SplitInsideAGroupAndRevoke) {
  ncclComm_t sub[2] = {nullptr, nullptr};
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclCommSplit(comms_[0], 0, 1, &sub[0], nullptr), ncclSuccess);  // key: reversed
  ASSERT_EQ(ncclCommSplit(comms_[1], 0, 0, &sub[1], nullptr), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(nullptr);
  int r0 = -1, r1 = -1;
  ASSERT_EQ(ncclCommUserRank(sub[0], &r0), ncclSuccess);
  ASSERT_EQ(ncclCommUserRank(sub[1], &r1), ncclSuccess);
  EXPECT_EQ(r0, 1);
  EXPECT_EQ(r1, 0);
  double a[3] = {1, 2, 3}, b[3] = {10, 20, 30};
  ASSERT_EQ(allReduceBoth(sub[0], sub[1], a, b, 3), ncclSuccess) << ncclGetLastError(nullptr);
  EXPECT_EQ(a[2], 33);
  EXPECT_EQ(b[0], 11);
#if SSC_NCCL_HAS_ncclCommRevoke
  // Revoked: work is refused, destroy still works; the parent is unaffected.
  for (auto* c : sub) ASSERT_EQ(ncclCommRevoke(c, NCCL_REVOKE_DEFAULT), ncclSuccess);
  expectError(ncclAllReduce(a, a, 1, ncclDouble, ncclSum, sub[0], nullptr), ncclInvalidUsage,
              "revoked");
  expectError(ncclCommFinalize(sub[0]), ncclInvalidUsage, "revoked");
#endif
  for (auto* c : sub) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
  ASSERT_EQ(allReduceBoth(comms_[0], comms_[1], a, b, 3), ncclSuccess) << ncclGetLastError(nullptr);
}

TEST_F(NcclShim, SimulatedGroupLaunchesNothingAndFailedGroupReportsTheCall) {
  double a[8], b[8];
  for (int i = 0; i < 8; ++i) a[i] = b[i] = i;
#if SSC_NCCL_HAS_ncclGroupSimulateEnd
  ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ncclAllReduce(a, a, 8, ncclDouble, ncclSum, comms_[0], nullptr);
  ncclAllReduce(b, b, 8, ncclDouble, ncclSum, comms_[1], nullptr);
  ASSERT_EQ(ncclGroupSimulateEnd(&sim), ncclSuccess) << ncclGetLastError(nullptr);
  EXPECT_EQ(a[7], 7);
  EXPECT_EQ(sim.estimatedTime, NCCL_UNDEF_FLOAT);
#endif
  // Nothing was left behind: the next group runs exactly its own calls.
  ASSERT_EQ(allReduceBoth(comms_[0], comms_[1], a, b, 8), ncclSuccess) << ncclGetLastError(nullptr);
  EXPECT_EQ(a[7], 14);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(a, a, 8, static_cast<ncclDataType_t>(42), ncclSum, comms_[0], nullptr),
            ncclInvalidArgument);
  ncclAllReduce(b, b, 8, ncclDouble, ncclSum, comms_[1], nullptr);
  expectError(ncclGroupEnd(), ncclInvalidArgument, "nothing in the group was launched");
  EXPECT_EQ(b[7], 14);
}

// One last-error slot: a grouped call the shim refuses is what ncclGroupEnd reports, and what
// both ncclGetLastError and sscGetLastError say; nothing of the group is launched.
TEST_F(NcclShim, FailedGroupKeepsItsCauseAsTheLastError) {
  double a[8], b[8];
  for (int i = 0; i < 8; ++i) a[i] = b[i] = i;
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclAllReduce(a, a, 8, ncclDouble, ncclSum, comms_[0], nullptr), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(b, b, 8, static_cast<ncclDataType_t>(42), ncclSum, comms_[1], nullptr),
            ncclInvalidArgument);
  EXPECT_STREQ(sscGetLastError(nullptr), ncclGetLastError(nullptr));
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidArgument);
  const std::string msg = ncclGetLastError(nullptr);
  EXPECT_NE(msg.find("ncclGroupEnd: a call in the group failed (ncclAllReduce: unknown datatype "
                     "42); nothing in the group was launched"),
            std::string::npos)
      << msg;
  EXPECT_STREQ(sscGetLastError(nullptr), msg.c_str());
  EXPECT_EQ(a[7], 7);
  // A call that Starscream itself refuses in the group is reported under its nccl* name too.
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(a, a, 8, ncclDouble, static_cast<ncclRedOp_t>(77), comms_[0], nullptr),
            ncclInvalidArgument);
  ASSERT_EQ(ncclAllReduce(b, b, 8, ncclDouble, ncclSum, comms_[1], nullptr), ncclSuccess);
  expectError(ncclGroupEnd(), ncclInvalidArgument,
              "a call in the group failed (ncclAllReduce: unknown reduction op 77");
  EXPECT_EQ(b[7], 7);
  // The failures left nothing behind.
  ASSERT_EQ(allReduceBoth(comms_[0], comms_[1], a, b, 8), ncclSuccess) << ncclGetLastError(nullptr);
  EXPECT_EQ(a[7], 14);
  EXPECT_EQ(b[7], 14);
}

// The poisoned group: a refused call fails the group at its outermost end however it nests, and
// whichever API opened it (the shim's groups are Starscream's), simulated ends included.
TEST_F(NcclShim, PoisonedGroupFailsAtTheOutermostEnd) {
  double a[4] = {1, 1, 1, 1}, b[4] = {2, 2, 2, 2};
  const auto bad = static_cast<ncclDataType_t>(42);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclAllReduce(a, a, 4, ncclDouble, ncclSum, comms_[0], nullptr), ncclSuccess);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(b, b, 4, bad, ncclSum, comms_[1], nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess);  // the inner end only closes a level
  ASSERT_EQ(ncclAllReduce(b, b, 4, ncclDouble, ncclSum, comms_[1], nullptr), ncclSuccess);
  expectError(ncclGroupEnd(), ncclInvalidArgument, "(ncclAllReduce: unknown datatype 42)");
  EXPECT_EQ(a[0], 1);
  EXPECT_EQ(b[0], 2);

  ASSERT_EQ(sscGroupStart(), sscSuccess);
  EXPECT_EQ(ncclAllReduce(b, b, 4, bad, ncclSum, comms_[1], nullptr), ncclInvalidArgument);
  EXPECT_EQ(sscGroupEnd(), sscInvalidArgument);
  EXPECT_NE(std::string(sscGetLastError(nullptr)).find("(ncclAllReduce: unknown datatype 42)"),
            std::string::npos)
      << sscGetLastError(nullptr);

#if SSC_NCCL_HAS_ncclGroupSimulateEnd
  ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclAllReduce(a, a, 4, ncclDouble, ncclSum, comms_[0], nullptr), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(b, b, 4, bad, ncclSum, comms_[1], nullptr), ncclInvalidArgument);
  expectError(ncclGroupSimulateEnd(&sim), ncclInvalidArgument,
              "ncclGroupSimulateEnd: a call in the group failed (ncclAllReduce: unknown datatype "
              "42)");
#endif
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage);  // every group above is closed
  ASSERT_EQ(allReduceBoth(comms_[0], comms_[1], a, b, 4), ncclSuccess) << ncclGetLastError(nullptr);
  EXPECT_EQ(a[0], 3);
  EXPECT_EQ(b[3], 3);
}

// The internal interface answers the version the shim was built for, and no other.
TEST(NcclShimCore, InternalInterfaceServesItsVersionOnly) {
  ASSERT_NE(ssc::nccl::core(), nullptr);
  EXPECT_EQ(ssc::nccl::core(), sscInternalInterface(SSC_INTERNAL_VERSION));
  EXPECT_EQ(sscInternalInterface(SSC_INTERNAL_VERSION + 1), nullptr);
  EXPECT_EQ(sscInternalInterface(0), nullptr);
  EXPECT_EQ(ssc::nccl::core()->groupDepth(), 0);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ssc::nccl::core()->groupDepth(), 1);  // the shim's group is the library's
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  EXPECT_EQ(ssc::nccl::core()->groupDiscard(), sscInvalidUsage);  // no group to end
}

// Where ctest starts them with STARSCREAM_DEBUG=WARN (nccl.one_core): the log lines a failure
// leaves. The library reads the level once, at its first log line.
class NcclShimLogged : public NcclShim {
 protected:
  void SetUp() override {
    const char* level = std::getenv("STARSCREAM_DEBUG");
    if (level == nullptr || std::string(level) != "WARN")
      GTEST_SKIP() << "needs STARSCREAM_DEBUG=WARN from the start (ctest's nccl.one_core)";
    NcclShim::SetUp();
  }
};

// One registry and one logger: the shim reads STARSCREAM_* variables and logs through
// libstarscream.so. Changed after the library read it, STARSCREAM_DEBUG stays what the library
// read, for the shim's lines too (a copy of the logger in the shim would read it afresh).
TEST_F(NcclShimLogged, OneRegistryAndOneLogger) {
  int n = 0;
  testing::internal::CaptureStderr();
  EXPECT_EQ(sscCommCount(nullptr, &n), sscInvalidArgument);
  std::string log = testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("STARSCREAM WARN invalid argument: sscCommCount: comm is NULL"),
            std::string::npos)
      << log;
  unsetenv("STARSCREAM_DEBUG");
  testing::internal::CaptureStderr();
  expectError(ncclCommCount(nullptr, &n), ncclInvalidArgument, "ncclCommCount: comm is NULL");
  log = testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("STARSCREAM WARN NCCL shim: invalid argument"), std::string::npos) << log;
  EXPECT_NE(log.find("ncclCommCount: comm is NULL"), std::string::npos) << log;
  // The registry is the library's: what it reads, and its warning for an undeclared name.
  EXPECT_EQ(ssc::nccl::envString("STARSCREAM_TIMEOUT"), "30");  // set by SetUp
  EXPECT_EQ(ssc::nccl::envString("STARSCREAM_NCCL_FALLBACK"), "");
  testing::internal::CaptureStderr();
  EXPECT_EQ(ssc::nccl::envString("STARSCREAM_NO_SUCH_VARIABLE"), "");
  log = testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("STARSCREAM_NO_SUCH_VARIABLE is not in the registry"), std::string::npos)
      << log;
  setenv("STARSCREAM_DEBUG", "WARN", 1);
}

// The poisoned group logs its cause and the group's failure, nothing made up on the way (no
// failing call of Starscream's own, such as a send on a NULL communicator).
TEST_F(NcclShimLogged, PoisonedGroupLogsOnlyItsCause) {
  double a[4] = {}, b[4] = {};
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclAllReduce(a, a, 4, ncclDouble, ncclSum, comms_[0], nullptr), ncclSuccess);
  testing::internal::CaptureStderr();
  EXPECT_EQ(ncclAllReduce(b, b, 4, static_cast<ncclDataType_t>(42), ncclSum, comms_[1], nullptr),
            ncclInvalidArgument);
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidArgument);
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("ncclAllReduce: unknown datatype 42"), std::string::npos) << log;
  EXPECT_NE(log.find("nothing in the group was launched"), std::string::npos) << log;
  EXPECT_EQ(log.find("sscSend"), std::string::npos) << log;
  EXPECT_EQ(log.find("comm is NULL"), std::string::npos) << log;
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("(ncclAllReduce: unknown datatype 42)"),
            std::string::npos);
}

TEST_F(NcclShim, AbortFromAnotherThreadUnblocksAWaiter) {
  double a[16] = {}, b[16];
  ncclResult_t r = ncclSuccess;
  // Only rank 0 joins: its all-reduce waits for rank 1 until the abort.
  std::thread waiter([&] { r = ncclAllReduce(a, b, 16, ncclDouble, ncclSum, comms_[0], nullptr); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ASSERT_EQ(ncclCommAbort(comms_[0]), ncclSuccess);
  waiter.join();
  comms_[0] = nullptr;
  EXPECT_NE(r, ncclSuccess);
}

// Runs only where ctest sets STARSCREAM_NCCL_FALLBACK (tests/nccl/CMakeLists.txt): a CPU
// machine has the host backend, so the shim forwards to the real libnccl, which then fails for
// want of a GPU; what matters is that the failure is NCCL's own.
TEST(NcclFallback, ForwardsToTheVendorLibrary) {
  const char* path = std::getenv("STARSCREAM_NCCL_FALLBACK");
  if (path == nullptr || *path == '\0') GTEST_SKIP() << "STARSCREAM_NCCL_FALLBACK is not set";
  ASSERT_TRUE(ssc::nccl::vendorMode())
      << "STARSCREAM_NCCL_FALLBACK is set but ignored: is it registered in src/core/env.cc?";
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess) << ncclGetLastError(nullptr);
  EXPECT_EQ(id.internal[ssc::nccl::kIdTagByte], ssc::nccl::kVendorIdTag);
  ncclComm_t comm = nullptr;
  ncclResult_t r = ncclCommInitRank(&comm, 1, id, 0);
  if (r == ncclSuccess) {  // a machine with a GPU: NCCL itself served it
    EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
    return;
  }
  EXPECT_EQ(r, ncclUnhandledCudaError) << ncclGetLastError(nullptr);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("Cuda"), std::string::npos)
      << ncclGetLastError(nullptr);
}

}  // namespace
