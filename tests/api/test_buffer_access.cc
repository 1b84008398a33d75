// SPDX-License-Identifier: MIT
// Every call that moves data asks the communicator's backend whether it can touch each buffer
// (Backend::checkAccessible) before anything is queued, and a refusal is the call's error:
// sscInvalidArgument naming the function and the argument, the communicator still usable. On a
// GPU the backend refuses pageable host memory (tests/gpu/gpu_collectives_test.cc); here a
// backend that delegates to the host backend refuses one buffer.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "src/comm/comm.h"
#include "src/core/errors.h"
#include "src/device/backend.h"
#include "starscream/starscream.h"

namespace ssc {
namespace {

// The host backend, except that [refused, refused + refusedBytes) is memory it cannot touch.
class RefusingBackend : public Backend {
 public:
  explicit RefusingBackend(Backend* inner) : inner_(inner) {}
  const void* refused = nullptr;
  size_t refusedBytes = 0;
  int checks = 0;

  sscResult_t checkAccessible(CommView* comm, const char* fn, const char* what, const void* p,
                              size_t bytes) override {
    ++checks;
    const auto a = reinterpret_cast<uintptr_t>(p), r = reinterpret_cast<uintptr_t>(refused);
    if (a < r + refusedBytes && r < a + bytes)
      return fail(sscInvalidArgument, "{}: {} {} is memory this backend cannot access", fn, what,
                  p);
    return inner_->checkAccessible(comm, fn, what, p, bytes);
  }

  const char* name() const override { return inner_->name(); }
  int deviceIndex() const override { return inner_->deviceIndex(); }
  sscResult_t memAlloc(void** ptr, size_t bytes) override { return inner_->memAlloc(ptr, bytes); }
  sscResult_t memFree(void* ptr) override { return inner_->memFree(ptr); }
  sscResult_t streamCreate(sscStream_t* s) override { return inner_->streamCreate(s); }
  sscResult_t streamSynchronize(sscStream_t s) override { return inner_->streamSynchronize(s); }
  sscResult_t streamDestroy(sscStream_t s) override { return inner_->streamDestroy(s); }
  sscResult_t connect(CommView* comm, std::unique_ptr<CommResources>* out) override {
    return inner_->connect(comm, out);
  }
  sscResult_t registerBuffer(CommView* comm, void* buff, size_t bytes,
                             std::vector<void*>* peers) override {
    return inner_->registerBuffer(comm, buff, bytes, peers);
  }
  sscResult_t deregisterBuffer(CommView* comm, void* buff,
                               const std::vector<void*>& peers) override {
    return inner_->deregisterBuffer(comm, buff, peers);
  }
  PeerMemoryRuntime* peerMemory(CommView* comm) override { return inner_->peerMemory(comm); }
  DeviceServices* services() override { return inner_->services(); }
  size_t defaultStagingBytes() const override { return inner_->defaultStagingBytes(); }
  sscResult_t enqueueStaged(CommView* comm, std::shared_ptr<Work> work, const StagedCopies& copies,
                            sscStream_t stream) override {
    return inner_->enqueueStaged(comm, std::move(work), copies, stream);
  }
  sscResult_t enqueueCopy(CommView* comm, void* dst, const void* src, size_t bytes,
                          sscStream_t stream) override {
    return inner_->enqueueCopy(comm, dst, src, bytes, stream);
  }
  uint64_t packetAllReduceMaxBytes(const CommView* comm) const override {
    return inner_->packetAllReduceMaxBytes(comm);
  }
  sscResult_t enqueue(CommView* comm, std::shared_ptr<Work> work, sscStream_t stream) override {
    return inner_->enqueue(comm, std::move(work), stream);
  }
  sscResult_t drain(CommView* comm) override { return inner_->drain(comm); }
  bool streamCapturing(sscStream_t stream) override { return inner_->streamCapturing(stream); }
  const uint32_t* deviceAbortWord(CommView* comm) override { return inner_->deviceAbortWord(comm); }

 private:
  Backend* inner_;
};

class BufferAccess : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("STARSCREAM_TIMEOUT", "20", 1);
    ASSERT_EQ(sscCommInitAll(comms_, 2, nullptr), sscSuccess) << sscGetLastError(nullptr);
    host_ = comms_[0]->backend;
    for (sscComm_t c : comms_) c->backend = &refusing_;
    refusing_.refused = bad_.data() + 512;  // the second half of bad_
    refusing_.refusedBytes = 512 * sizeof(float);
  }
  void TearDown() override {
    for (sscComm_t c : comms_) {
      c->backend = host_;
      (void)sscCommDestroy(c);
    }
  }
  static void expectRefused(sscResult_t r, const std::string& needle) {
    EXPECT_EQ(r, sscInvalidArgument) << sscGetErrorString(r);
    const std::string msg = sscGetLastError(nullptr);
    EXPECT_NE(msg.find(needle), std::string::npos) << "message: " << msg;
  }
  // Both ranks sum their ranks + 1, driven from this thread through a group.
  void expectAllReduceWorks() {
    std::vector<float> buf[2] = {std::vector<float>(64, 1.0f), std::vector<float>(64, 2.0f)};
    ASSERT_EQ(sscGroupStart(), sscSuccess);
    for (int r = 0; r < 2; ++r)
      ASSERT_EQ(
          sscAllReduce(buf[r].data(), buf[r].data(), 64, sscFloat32, sscSum, comms_[r], nullptr),
          sscSuccess)
          << sscGetLastError(nullptr);
    ASSERT_EQ(sscGroupEnd(), sscSuccess) << sscGetLastError(nullptr);
    ASSERT_EQ(sscStreamSynchronize(nullptr), sscSuccess) << sscGetLastError(nullptr);
    for (int r = 0; r < 2; ++r) EXPECT_EQ(buf[r][63], 3.0f);
  }

  sscComm_t comms_[2] = {nullptr, nullptr};
  Backend* host_ = nullptr;
  RefusingBackend refusing_{hostBackend()};
  std::vector<float> bad_ = std::vector<float>(1024, 0.0f), good_ = std::vector<float>(256, 0.0f);
};

TEST_F(BufferAccess, CollectivesRefuseABufferTheBackendCannotTouchAndNameIt) {
  float* bad = bad_.data() + 512;
  float* good = good_.data();
  expectRefused(sscAllReduce(bad, good, 64, sscFloat32, sscSum, comms_[0], nullptr),
                "sscAllReduce: sendbuff ");
  expectRefused(sscAllReduce(good, bad, 64, sscFloat32, sscSum, comms_[0], nullptr),
                "sscAllReduce: recvbuff ");
  expectRefused(sscAllReduce(bad, bad, 64, sscFloat32, sscSum, comms_[0], nullptr),
                "is memory this backend cannot access");
  // The whole range counts: a recvbuff of nranks blocks that ends in the refused memory.
  expectRefused(sscAllGather(good, bad - 64, 64, sscFloat32, comms_[0], nullptr),
                "sscAllGather: recvbuff ");
  expectRefused(sscReduceScatter(bad, good, 16, sscFloat32, sscSum, comms_[1], nullptr),
                "sscReduceScatter: sendbuff ");
  expectRefused(sscBroadcast(bad, good, 64, sscFloat32, 0, comms_[0], nullptr),
                "sscBroadcast: sendbuff ");
  // A broadcast's non-root reads no sendbuff, but writes its recvbuff (here the same buffer).
  expectRefused(sscBroadcast(bad, bad, 64, sscFloat32, 0, comms_[1], nullptr),
                "sscBroadcast: recvbuff ");
  expectRefused(sscReduce(good, bad, 64, sscFloat32, sscSum, 1, comms_[1], nullptr),
                "sscReduce: recvbuff ");
  expectRefused(sscAllToAll(bad, good, 16, sscFloat32, comms_[0], nullptr),
                "sscAllToAll: sendbuff ");
  // Nothing moves, nothing is touched.
  EXPECT_EQ(sscAllReduce(bad, bad, 0, sscFloat32, sscSum, comms_[0], nullptr), sscSuccess);
  expectAllReduceWorks();
}

TEST_F(BufferAccess, SendAndReceiveRefuseABufferTheBackendCannotTouch) {
  expectRefused(sscSend(bad_.data() + 512, 64, sscFloat32, 1, comms_[0], nullptr),
                "sscSend: sendbuff ");
  expectRefused(sscRecv(bad_.data() + 600, 64, sscFloat32, 0, comms_[1], nullptr),
                "sscRecv: recvbuff ");
  expectAllReduceWorks();
}

TEST_F(BufferAccess, ARefusalInAGroupFailsTheGroupAndLeavesTheCommunicatorUsable) {
  ASSERT_EQ(sscGroupStart(), sscSuccess);
  expectRefused(
      sscAllReduce(bad_.data() + 512, good_.data(), 64, sscFloat32, sscSum, comms_[0], nullptr),
      "sscAllReduce: sendbuff ");
  EXPECT_NE(sscGroupEnd(), sscSuccess);
  expectAllReduceWorks();
}

TEST_F(BufferAccess, EveryBufferOfACallIsCheckedOnce) {
  refusing_.checks = 0;
  expectAllReduceWorks();  // in place: one check per rank
  EXPECT_EQ(refusing_.checks, 2);
}

}  // namespace
}  // namespace ssc
