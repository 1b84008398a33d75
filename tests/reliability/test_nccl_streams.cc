// SPDX-License-Identifier: MIT
// The NCCL shim on the host backend checks the caller's stream as sscAllReduce does: a made-up
// handle (0x10) is ncclInvalidArgument, where the shim used to ignore it and run the call; NULL,
// CUDA's default-stream handles and streams from sscStreamCreate still run.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "src/nccl/shim.h"  // the platform's nccl.h or rccl.h

namespace {

using ssc::nccl::VendorStream;

VendorStream handle(uintptr_t value) { return reinterpret_cast<VendorStream>(value); }

class NcclStreams : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("STARSCREAM_BACKEND", "host", 1);
    setenv("STARSCREAM_TIMEOUT", "30", 1);
    ASSERT_EQ(ncclCommInitAll(comms_, 2, nullptr), ncclSuccess) << ncclGetLastError(nullptr);
  }
  void TearDown() override {
    for (ncclComm_t c : comms_) {
      if (c != nullptr) {
        EXPECT_EQ(ncclCommDestroy(c), ncclSuccess) << ncclGetLastError(nullptr);
      }
    }
  }
  // One all-reduce of both ranks (a group: one thread drives both), each on its own stream.
  ncclResult_t allReduceBoth(VendorStream a, VendorStream b, std::vector<double>* bufs) {
    for (int r = 0; r < 2; ++r) bufs[r].assign(1000, r + 1.0);
    ncclGroupStart();
    ncclAllReduce(bufs[0].data(), bufs[0].data(), 1000, ncclDouble, ncclSum, comms_[0], a);
    ncclAllReduce(bufs[1].data(), bufs[1].data(), 1000, ncclDouble, ncclSum, comms_[1], b);
    return ncclGroupEnd();
  }
  ncclComm_t comms_[2] = {nullptr, nullptr};
};

TEST_F(NcclStreams, AMadeUpStreamIsRefusedAsSscAllReduceRefusesIt) {
  std::vector<double> bufs[2];
  for (int r = 0; r < 2; ++r) bufs[r].assign(1000, r + 1.0);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(bufs[0].data(), bufs[0].data(), 1000, ncclDouble, ncclSum, comms_[0],
                          handle(0x10)),
            ncclInvalidArgument);
  const std::string why = ncclGetLastError(nullptr);
  EXPECT_NE(why.find("ncclAllReduce: stream 0x10 is not a stream"), std::string::npos) << why;
  // The check is Starscream's own (sscStreamSynchronize's, as in sscAllReduce).
  EXPECT_NE(why.find("is not a host-backend stream from sscStreamCreate"), std::string::npos)
      << why;
  ncclAllReduce(bufs[1].data(), bufs[1].data(), 1000, ncclDouble, ncclSum, comms_[1], nullptr);
  // The failed call fails the group: nothing was launched, so nothing waits for rank 0.
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidArgument);
  EXPECT_EQ(bufs[0][0], 1.0);
  EXPECT_EQ(bufs[1][0], 2.0);
  // Outside a group too.
  EXPECT_EQ(
      ncclBroadcast(bufs[0].data(), bufs[0].data(), 1000, ncclDouble, 0, comms_[0], handle(0x10)),
      ncclInvalidArgument);
}

TEST_F(NcclStreams, DefaultStreamHandlesAndStarscreamStreamsRun) {
  std::vector<double> bufs[2];
  ASSERT_EQ(allReduceBoth(nullptr, handle(1), bufs), ncclSuccess) << ncclGetLastError(nullptr);
  EXPECT_EQ(bufs[0][999], 3.0);
  EXPECT_EQ(bufs[1][0], 3.0);
  ASSERT_EQ(allReduceBoth(handle(2), nullptr, bufs), ncclSuccess) << ncclGetLastError(nullptr);
  EXPECT_EQ(bufs[1][999], 3.0);
  sscStream_t a = nullptr, b = nullptr;
  ASSERT_EQ(sscStreamCreate(&a), sscSuccess);
  ASSERT_EQ(sscStreamCreate(&b), sscSuccess);
  ASSERT_EQ(
      allReduceBoth(reinterpret_cast<VendorStream>(a), reinterpret_cast<VendorStream>(b), bufs),
      ncclSuccess)
      << ncclGetLastError(nullptr);
  EXPECT_EQ(bufs[0][0], 3.0);
  EXPECT_EQ(bufs[1][999], 3.0);
  EXPECT_EQ(sscStreamDestroy(a), sscSuccess);
  EXPECT_EQ(sscStreamDestroy(b), sscSuccess);
}

}  // namespace
