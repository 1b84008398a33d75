// SPDX-License-Identifier: MIT
// The network proxy over an in-process plugin: two "ranks" in one process, each with its own
// proxy, exchange FIFO slots the way two executors on different nodes would. The plugin below
// follows MPI's matching rules (per source, destination and tag, in posting order), so what the
// proxy relies on is what MPI guarantees.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>
#include <vector>

#include "transports/net/net_comm.h"
#include "transports/net/net_proxy.h"

namespace ssc {
namespace {

// --- an in-process network ----------------------------------------------------------------

struct FakeRequest {
  bool done = false;
  size_t bytes = 0;
  char* dst = nullptr;  // receives
  size_t capacity = 0;
};

struct FakeNetwork {
  using Key = std::tuple<int, int, int>;  // source, destination, tag
  std::mutex mu;
  std::map<Key, std::deque<std::vector<char>>> unexpected;
  std::map<Key, std::deque<FakeRequest*>> posted;
  int failSendsAfter = -1;  // > = 0: the n-th send from now on fails
};

FakeNetwork g_net;

// Each test starts from an empty network (a failed test may leave messages behind).
void resetNetwork() {
  std::lock_guard<std::mutex> g(g_net.mu);
  for (auto& [key, q] : g_net.posted) q.clear();
  g_net.unexpected.clear();
  g_net.posted.clear();
  g_net.failSendsAfter = -1;
}

struct FakeComm {
  int rank;
};

void deliver(FakeRequest* r, const std::vector<char>& m) {
  std::memcpy(r->dst, m.data(), std::min(m.size(), r->capacity));
  r->bytes = std::min(m.size(), r->capacity);
  r->done = true;
}

int fakeIsend(void* comm, int peer, int tag, const void* data, size_t bytes, void** request,
              sscNetError_t* err) {
  std::lock_guard<std::mutex> g(g_net.mu);
  if (g_net.failSendsAfter == 0) {
    std::snprintf(err->text, sizeof(err->text), "fake link down");
    return 1;
  }
  if (g_net.failSendsAfter > 0) --g_net.failSendsAfter;
  const int me = static_cast<FakeComm*>(comm)->rank;
  std::vector<char> m(static_cast<const char*>(data), static_cast<const char*>(data) + bytes);
  auto& waiting = g_net.posted[{me, peer, tag}];
  if (!waiting.empty()) {
    deliver(waiting.front(), m);
    waiting.pop_front();
  } else {
    g_net.unexpected[{me, peer, tag}].push_back(std::move(m));
  }
  auto* r = new FakeRequest;
  r->done = true;  // eager: the payload was copied
  *request = r;
  return 0;
}

int fakeIrecv(void* comm, int peer, int tag, void* data, size_t bytes, void** request,
              sscNetError_t*) {
  std::lock_guard<std::mutex> g(g_net.mu);
  const int me = static_cast<FakeComm*>(comm)->rank;
  auto* r = new FakeRequest;
  r->dst = static_cast<char*>(data);
  r->capacity = bytes;
  auto& queued = g_net.unexpected[{peer, me, tag}];
  if (!queued.empty()) {
    deliver(r, queued.front());
    queued.pop_front();
  } else {
    g_net.posted[{peer, me, tag}].push_back(r);
  }
  *request = r;
  return 0;
}

int fakeTest(void* request, int* done, size_t* bytes, sscNetError_t*) {
  std::lock_guard<std::mutex> g(g_net.mu);
  auto* r = static_cast<FakeRequest*>(request);
  *done = r->done;
  if (r->done) {
    *bytes = r->bytes;
    delete r;
  }
  return 0;
}

int fakeCancel(void* request, sscNetError_t*) {
  std::lock_guard<std::mutex> g(g_net.mu);
  auto* r = static_cast<FakeRequest*>(request);
  for (auto& [key, q] : g_net.posted) std::erase(q, r);
  delete r;
  return 0;
}

const sscNetV1 kFake = {"fake",    nullptr,  nullptr,    fakeIsend,
                        fakeIrecv, fakeTest, fakeCancel, nullptr};

// --- FIFOs as an executor holds them -------------------------------------------------------

constexpr int kSlots = 4;
constexpr uint64_t kSlotBytes = 256;

struct Fifo {
  std::atomic<uint64_t> tail{0}, head{0};
  uint64_t slotBytes[kSlots] = {};
  std::vector<char> data = std::vector<char>(kSlots * kSlotBytes);
};

// Two sub-FIFOs split every slot (as two GPU blocks do): piece b is [b * 128, (b + 1) * 128).
NetFifo view(Fifo& f, int peer, int piece) {
  NetFifo n;
  n.peer = peer;
  n.tag = piece;
  n.tail = &f.tail;
  n.head = &f.head;
  n.slotBytes = f.slotBytes;
  n.data = f.data.data();
  n.slotStride = kSlotBytes;
  n.pieceOffset = piece * kSlotBytes / 2;
  n.pieceBytes = kSlotBytes / 2;
  n.slots = kSlots;
  return n;
}

template <class Pred>
bool waitFor(Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!pred())
    if (std::chrono::steady_clock::now() > deadline) return false;
  return true;
}

char pattern(uint64_t slot, uint64_t i) { return static_cast<char>(slot * 31 + i * 7 + 1); }

// Rank `me` of a pair: one outbox to the other rank and one inbox from it, per piece.
struct Rank {
  FakeComm comm;
  std::unique_ptr<NetComm> net;
  Fifo out[2], in[2];
  std::unique_ptr<NetProxy> proxy;
  std::vector<std::string> failures;

  explicit Rank(int me) : comm{me}, net(NetComm::wrap(&kFake, &comm)) {}
  void start() {
    const int peer = 1 - comm.rank;
    proxy = std::make_unique<NetProxy>(
        *net, std::vector<NetFifo>{view(out[0], peer, 0), view(out[1], peer, 1)},
        std::vector<NetFifo>{view(in[0], peer, 0), view(in[1], peer, 1)},
        [this](const std::string& m) { failures.push_back(m); });
  }

  // Posts `bytes` (a pattern of `seed`) in slot n of both pieces' outboxes, as a sender's executor
  // does.
  bool send(uint64_t n, uint64_t bytes, uint64_t seed) {
    for (Fifo& f : out) {
      if (!waitFor([&] { return n - f.head.load() < kSlots; })) return false;
      const uint64_t s = n % kSlots;
      for (uint64_t i = 0; i < kSlotBytes; ++i) f.data[s * kSlotBytes + i] = pattern(seed, i);
      f.slotBytes[s] = bytes;
      f.tail.store(n + 1, std::memory_order_release);
    }
    return true;
  }
  // Checks slot n of both pieces' inboxes against what send(.., bytes, seed) posted; frees it.
  void expectReceived(uint64_t n, uint64_t bytes, uint64_t seed) {
    for (int piece = 0; piece < 2; ++piece) {
      Fifo& f = in[piece];
      ASSERT_TRUE(waitFor([&] { return f.tail.load(std::memory_order_acquire) > n; }))
          << "slot " << n;
      const uint64_t s = n % kSlots;
      EXPECT_EQ(f.slotBytes[s], bytes);
      const uint64_t lo = piece * kSlotBytes / 2;
      const uint64_t hi = std::min(bytes, lo + kSlotBytes / 2);
      for (uint64_t i = lo; i < hi; ++i)
        ASSERT_EQ(f.data[s * kSlotBytes + i], pattern(seed, i)) << "slot " << n << " byte " << i;
      f.head.store(n + 1, std::memory_order_release);
    }
  }
};

uint64_t sizeOf(uint64_t n) { return (n * 37) % (kSlotBytes + 1); }  // 0 .. a full slot

TEST(NetProxy, SlotsOfEverySizeArriveInOrderBothWays) {
  resetNetwork();
  Rank a(0), b(1);
  a.start();
  b.start();
  constexpr uint64_t kCount = 200;  // many times the FIFO depth: slots are reused
  std::thread sender([&] {
    for (uint64_t n = 0; n < kCount; ++n) ASSERT_TRUE(a.send(n, sizeOf(n), n));
  });
  std::thread reverse([&] {
    for (uint64_t n = 0; n < kCount; ++n) ASSERT_TRUE(b.send(n, kSlotBytes - sizeOf(n), n));
  });
  for (uint64_t n = 0; n < kCount; ++n) {
    b.expectReceived(n, sizeOf(n), n);
    a.expectReceived(n, kSlotBytes - sizeOf(n), n);
    if (::testing::Test::HasFatalFailure()) break;
  }
  sender.join();
  reverse.join();
  EXPECT_TRUE(a.failures.empty());
  EXPECT_TRUE(b.failures.empty());
}

TEST(NetProxy, ASlotPostedJustBeforeTeardownIsStillSent) {
  // A sender that finishes its last step and destroys its communicator at once must not strand
  // the last slot (the proxy checks for it after the stop request).
  resetNetwork();
  Rank b(1);
  b.start();
  // Each round's sender is a fresh communicator whose FIFO starts at slot 0; the receiver's
  // counters go on (the network carries no counters, only slots in order).
  for (uint64_t round = 0; round < 50; ++round) {
    Rank a(0);
    a.start();
    ASSERT_TRUE(a.send(0, kSlotBytes, round));
    a.proxy.reset();
    b.expectReceived(round, kSlotBytes, round);
    if (::testing::Test::HasFatalFailure()) break;
  }
}

TEST(NetProxy, ANetworkFailureIsReportedOnce) {
  resetNetwork();
  Rank a(0), b(1);
  {
    std::lock_guard<std::mutex> g(g_net.mu);
    g_net.failSendsAfter = 3;  // the header and data of slot 0 of piece 0, the header of piece 1
  }
  a.start();
  b.start();
  ASSERT_TRUE(a.send(0, kSlotBytes, 0));
  ASSERT_TRUE(waitFor([&] { return !a.failures.empty(); }));
  a.proxy.reset();
  ASSERT_EQ(a.failures.size(), 1u);
  EXPECT_NE(a.failures[0].find("fake link down"), std::string::npos) << a.failures[0];
  EXPECT_NE(a.failures[0].find("rank 1"), std::string::npos) << a.failures[0];
  std::lock_guard<std::mutex> g(g_net.mu);
  g_net.failSendsAfter = -1;
}

TEST(NetProxy, PieceOfASlot) {
  NetFifo f;
  f.pieceOffset = 128;
  f.pieceBytes = 128;
  EXPECT_EQ(NetProxy::pieceOf(f, 0), 0u);
  EXPECT_EQ(NetProxy::pieceOf(f, 128), 0u);
  EXPECT_EQ(NetProxy::pieceOf(f, 129), 1u);
  EXPECT_EQ(NetProxy::pieceOf(f, 1000), 128u);
}

}  // namespace
}  // namespace ssc
