// SPDX-License-Identifier: MIT
// Checked mode (STARSCREAM_CHECK, src/comm/call_check.h) in one process: the comparison and its
// messages, the setting's validation at init, and two ranks of one process (sscCommInitAll, the
// checker's own shared table) driven from one thread through a group.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "src/comm/call_check.h"
#include "src/core/dtype.h"
#include "starscream/starscream.h"
#include "transports/usr/shm_allgather.h"

namespace ssc {
namespace {

CallFingerprint allReduce(uint64_t seq, sscDataType_t dtype = sscFloat32, int op = sscSum,
                          uint64_t count = 1024) {
  CallFingerprint f;
  f.seq = seq;
  f.kind = static_cast<int32_t>(CollKind::kAllReduce);
  f.count = count;
  f.dtype = dtype;
  f.op = op;
  return f;
}

TEST(ApiCallCheck, AgreeingFingerprintsGiveNoMessage) {
  std::vector<CallFingerprint> all(4, allReduce(17));
  EXPECT_EQ(describeMismatch(all.data(), 4), "");
  EXPECT_EQ(describeMismatch(all.data(), 1), "");
}

TEST(ApiCallCheck, MessagesNameTheCallTheFieldAndTheRanks) {
  std::vector<CallFingerprint> all(2, allReduce(17));
  all[1].dtype = sscInt32;
  EXPECT_EQ(describeMismatch(all.data(), 2),
            "sscAllReduce: call 17 differs across ranks: rank 0 has datatype float32, rank 1 has "
            "int32 (STARSCREAM_CHECK=1)");
  all[1] = allReduce(17, sscFloat32, sscMax);
  EXPECT_EQ(describeMismatch(all.data(), 2),
            "sscAllReduce: call 17 differs across ranks: rank 0 has op sum, rank 1 has max "
            "(STARSCREAM_CHECK=1)");
  all[1] = allReduce(17, sscFloat32, sscSum, 1000);
  EXPECT_NE(describeMismatch(all.data(), 2).find("rank 0 has count 1024, rank 1 has 1000"),
            std::string::npos);
}

TEST(ApiCallCheck, RootsCollectivesAndCallNumbers) {
  CallFingerprint b;
  b.seq = 3;
  b.kind = static_cast<int32_t>(CollKind::kBroadcast);
  b.count = 8;
  b.dtype = sscInt64;
  b.root = 0;
  std::vector<CallFingerprint> all(3, b);
  all[2].root = 2;
  EXPECT_EQ(describeMismatch(all.data(), 3),
            "sscBroadcast: call 3 differs across ranks: rank 0 has root 0, rank 2 has 2 "
            "(STARSCREAM_CHECK=1)");
  all[2] = b;
  all[1].kind = static_cast<int32_t>(CollKind::kReduce);
  EXPECT_NE(describeMismatch(all.data(), 3)
                .find("rank 0 has collective sscBroadcast, rank 1 has sscReduce"),
            std::string::npos);
  // Call numbers come first: a rank that skipped a call is named as such.
  all[1] = b;
  all[1].seq = 4;
  all[2].seq = 4;
  EXPECT_NE(describeMismatch(all.data(), 3).find("call number 3, rank 1 has 4 (and 1 more rank)"),
            std::string::npos);
}

TEST(ApiCallCheck, ARankThatRefusedItsArgumentsIsNamed) {
  std::vector<CallFingerprint> all(2, allReduce(5));
  all[1].status = sscInvalidArgument;
  const std::string why = describeMismatch(all.data(), 2);
  EXPECT_NE(why.find("call 5 failed on rank 1"), std::string::npos) << why;
  EXPECT_NE(why.find("STARSCREAM_CHECK=1"), std::string::npos) << why;
}

TEST(ApiCallCheck, NamesOfEveryDatatypeAndOp) {
  for (int t = 0; t < sscNumTypes; ++t)
    EXPECT_EQ(std::string(dtypeApiName(t)).find("invalid"), std::string::npos);
  EXPECT_STREQ(dtypeApiName(sscFloat32), "float32");
  EXPECT_STREQ(dtypeApiName(sscInt32), "int32");
  EXPECT_STREQ(checkOpName(sscNumOps), "premulsum");
  EXPECT_STREQ(checkOpName(-1), "none");
}

// Two ranks in this process, checked mode set for them.
class ApiCheckedInProcess : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("STARSCREAM_TIMEOUT", "20", 1);
    setenv("STARSCREAM_CHECK", "1", 1);
    ASSERT_EQ(sscCommInitAll(comms_, 2, nullptr), sscSuccess) << sscGetLastError(nullptr);
  }
  void TearDown() override {
    for (auto* c : comms_)
      if (c) sscCommDestroy(c);
    unsetenv("STARSCREAM_CHECK");
    unsetenv("STARSCREAM_TIMEOUT");
  }
  sscComm_t comms_[2] = {nullptr, nullptr};
};

TEST_F(ApiCheckedInProcess, AGroupOverBothRanksComparesThem) {
  std::vector<float> in[2] = {std::vector<float>(64, 1.0f), std::vector<float>(64, 2.0f)};
  std::vector<float> out[2] = {std::vector<float>(64), std::vector<float>(64)};
  // Matching: one thread drives both ranks in a group (NCCL's pattern for several per process).
  ASSERT_EQ(sscGroupStart(), sscSuccess);
  for (int r = 0; r < 2; ++r)
    ASSERT_EQ(sscAllReduce(in[r].data(), out[r].data(), 64, sscFloat32, sscSum, comms_[r], nullptr),
              sscSuccess);
  ASSERT_EQ(sscGroupEnd(), sscSuccess) << sscGetLastError(nullptr);
  ASSERT_EQ(sscStreamSynchronize(nullptr), sscSuccess);
  for (int r = 0; r < 2; ++r) EXPECT_EQ(out[r][63], 3.0f);
  // Rank 1 says int32: the group fails before anything moves, naming the field.
  out[0].assign(64, -1.0f);
  ASSERT_EQ(sscGroupStart(), sscSuccess);
  ASSERT_EQ(sscAllReduce(in[0].data(), out[0].data(), 64, sscFloat32, sscSum, comms_[0], nullptr),
            sscSuccess);
  ASSERT_EQ(sscAllReduce(in[1].data(), out[1].data(), 64, sscInt32, sscSum, comms_[1], nullptr),
            sscSuccess);
  EXPECT_EQ(sscGroupEnd(), sscInvalidUsage);
  const std::string why = sscGetLastError(nullptr);
  EXPECT_NE(why.find("rank 0 has datatype float32, rank 1 has int32"), std::string::npos) << why;
  ASSERT_EQ(sscStreamSynchronize(nullptr), sscSuccess);
  EXPECT_EQ(out[0][0], -1.0f) << "nothing may have moved";
  // The communicators still work.
  ASSERT_EQ(sscGroupStart(), sscSuccess);
  for (int r = 0; r < 2; ++r)
    ASSERT_EQ(sscAllReduce(in[r].data(), out[r].data(), 64, sscFloat32, sscMax, comms_[r], nullptr),
              sscSuccess);
  ASSERT_EQ(sscGroupEnd(), sscSuccess) << sscGetLastError(nullptr);
  ASSERT_EQ(sscStreamSynchronize(nullptr), sscSuccess);
  for (int r = 0; r < 2; ++r) EXPECT_EQ(out[r][0], 2.0f);
}

TEST_F(ApiCheckedInProcess, OverTheBootstrapOneThreadServesBothRanks) {
  // Across hosts, ranks of one process exchange over the bootstrap, whose all-gather blocks:
  // one thread driving both ranks in a group must not wait on the first for the second.
  // Dropping the shared tables (both ranks, same point) takes that path here.
  for (auto* c : comms_) c->callCheck->table.reset();
  int32_t in[2][8] = {{1, 1, 1, 1, 1, 1, 1, 1}, {2, 2, 2, 2, 2, 2, 2, 2}}, out[2][8] = {};
  for (int round = 0; round < 2; ++round) {
    ASSERT_EQ(sscGroupStart(), sscSuccess);
    for (int r = 0; r < 2; ++r) {
      const int root = round == 1 && r == 1 ? 1 : 0;  // round 1: rank 1 names another root
      ASSERT_EQ(sscReduce(in[r], out[r], 8, sscInt32, sscSum, root, comms_[r], nullptr),
                sscSuccess);
    }
    const sscResult_t end = sscGroupEnd();
    const std::string why = sscGetLastError(nullptr);
    if (round == 1) {
      EXPECT_EQ(end, sscInvalidUsage);
      EXPECT_NE(why.find("rank 0 has root 0, rank 1 has 1"), std::string::npos) << why;
    } else {
      ASSERT_EQ(end, sscSuccess) << why;
      ASSERT_EQ(sscStreamSynchronize(nullptr), sscSuccess);
      EXPECT_EQ(out[0][7], 3);
    }
  }
}

TEST(ApiCheckSetting, AnythingButZeroOrOneFailsInitNamingTheVariable) {
  setenv("STARSCREAM_TIMEOUT", "20", 1);
  for (const char* bad : {"yes", "2", "true", " 1", "-1", "1x", "0x1"}) {
    setenv("STARSCREAM_CHECK", bad, 1);
    sscComm_t comms[2] = {nullptr, nullptr};
    EXPECT_EQ(sscCommInitAll(comms, 2, nullptr), sscInvalidArgument) << "'" << bad << "'";
    const std::string why = sscGetLastError(nullptr);
    EXPECT_NE(why.find("STARSCREAM_CHECK"), std::string::npos) << why;
    for (auto* c : comms)
      if (c) sscCommDestroy(c);
  }
  for (const char* good : {"0", "1", ""}) {
    setenv("STARSCREAM_CHECK", good, 1);
    sscComm_t comms[2] = {nullptr, nullptr};
    EXPECT_EQ(sscCommInitAll(comms, 2, nullptr), sscSuccess)
        << "'" << good << "': " << sscGetLastError(nullptr);
    for (auto* c : comms)
      if (c) sscCommDestroy(c);
  }
  unsetenv("STARSCREAM_CHECK");
  unsetenv("STARSCREAM_TIMEOUT");
}

}  // namespace
}  // namespace ssc
