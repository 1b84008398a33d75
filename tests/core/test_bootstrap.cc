// SPDX-License-Identifier: MIT
// The bootstrap and its socket layer, with every rank a thread of this process.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "src/core/bootstrap.h"
#include "src/core/errors.h"
#include "src/core/socket.h"

namespace ssc {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// The bootstrap's settings as a communicator created now would read them (the tests set
// STARSCREAM_TIMEOUT and STARSCREAM_SOCKET_IFNAME in the environment).
BootstrapOptions options() { return BootstrapOptions::from(env::Snapshot::take()); }

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// What one rank's connect (and optional work) produced; the error text is thread-local, so it
// is captured on the rank's own thread.
struct Outcome {
  sscResult_t result = sscInternalError;
  std::string error;
};

using Work = std::function<sscResult_t(Bootstrap&)>;

Outcome runRank(const sscUniqueId& id, int rank, int nranks, const Work& work = nullptr,
                const std::atomic<bool>* abortFlag = nullptr) {
  std::unique_ptr<Bootstrap> bootstrap;
  Outcome out;
  out.result = Bootstrap::connect(id, rank, nranks, abortFlag, options(), &bootstrap);
  if (out.result == sscSuccess && work) out.result = work(*bootstrap);
  if (out.result != sscSuccess) out.error = lastError();
  return out;
}

std::future<Outcome> launchRank(const sscUniqueId& id, int rank, int nranks, Work work = nullptr,
                                const std::atomic<bool>* abortFlag = nullptr) {
  return std::async(std::launch::async, [=] { return runRank(id, rank, nranks, work, abortFlag); });
}

// Every rank of a fresh communicator runs `work`; returns the outcomes by rank.
std::vector<Outcome> runAll(int nranks, const Work& work) {
  sscUniqueId id;
  EXPECT_EQ(bootstrapCreateUniqueId(options(), &id), sscSuccess) << lastError();
  std::vector<std::future<Outcome>> futures;
  for (int r = 0; r < nranks; ++r) futures.push_back(launchRank(id, r, nranks, work));
  std::vector<Outcome> outcomes;
  for (auto& f : futures) outcomes.push_back(f.get());
  return outcomes;
}

void expectAllSucceeded(const std::vector<Outcome>& outcomes) {
  for (size_t r = 0; r < outcomes.size(); ++r)
    EXPECT_EQ(outcomes[r].result, sscSuccess) << "rank " << r << ": " << outcomes[r].error;
}

// The unique id's layout (IdWire in bootstrap.cc): magic[4], version u16, reserved u16,
// cookie u64 at 8, then the root's raw sockaddr at 16 (family, then the port at 18).
constexpr size_t kIdCookie = 8, kIdAddress = 16, kIdPort = 18;

SocketAddress rootAddress(const sscUniqueId& id) {
  sockaddr_storage storage{};
  std::memcpy(&storage, id.internal + kIdAddress, sizeof(sockaddr_in6));
  return SocketAddress::fromSockaddr(reinterpret_cast<sockaddr*>(&storage), sizeof(storage));
}

// Waits for whichever of two futures finishes first; returns its index.
int firstReady(std::future<Outcome>& a, std::future<Outcome>& b) {
  for (;;) {
    if (a.wait_for(10ms) == std::future_status::ready) return 0;
    if (b.wait_for(10ms) == std::future_status::ready) return 1;
  }
}

unsigned char pattern(int rank, size_t index) {
  return static_cast<unsigned char>(rank * 131 + index * 7 + 1);
}

class BootstrapTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("STARSCREAM_TIMEOUT", "20", 1);
    ::unsetenv("STARSCREAM_SOCKET_IFNAME");
  }
};

TEST_F(BootstrapTest, AllGatherIsCorrectForManySizes) {
  for (int nranks : {1, 2, 3, 5, 8}) {
    SCOPED_TRACE("nranks=" + std::to_string(nranks));
    auto outcomes = runAll(nranks, [nranks](Bootstrap& b) -> sscResult_t {
      EXPECT_EQ(b.nranks(), nranks);
      SSC_CHECK(b.allGather(nullptr, 0));
      for (size_t bytes : {size_t{1}, size_t{(1 << 20) + 3}}) {
        std::vector<unsigned char> data(bytes * nranks, 0);
        for (size_t i = 0; i < bytes; ++i) data[b.rank() * bytes + i] = pattern(b.rank(), i);
        SSC_CHECK(b.allGather(data.data(), bytes));
        for (int r = 0; r < nranks; ++r) {
          for (size_t i = 0; i < bytes; ++i) {
            if (data[r * bytes + i] != pattern(r, i)) {
              ADD_FAILURE() << "rank " << b.rank() << ": block " << r << " byte " << i << " of "
                            << bytes << " is wrong";
              return sscInternalError;
            }
          }
        }
      }
      return sscSuccess;
    });
    expectAllSucceeded(outcomes);
  }
}

TEST_F(BootstrapTest, RepeatedAllGatherAndBarrier) {
  static constexpr int kRanks = 4, kRounds = 20;
  std::atomic<int> arrived[kRounds] = {};
  auto outcomes = runAll(kRanks, [&arrived](Bootstrap& b) -> sscResult_t {
    const uint64_t cookie = b.cookie();
    for (int round = 0; round < kRounds; ++round) {
      std::vector<uint64_t> data(kRanks, 0);
      data[b.rank()] = cookie ^ (static_cast<uint64_t>(round) << 8) ^ b.rank();
      SSC_CHECK(b.allGather(data.data(), sizeof(uint64_t)));
      for (int r = 0; r < kRanks; ++r)
        EXPECT_EQ(data[r], cookie ^ (static_cast<uint64_t>(round) << 8) ^ r);
      // Stagger the arrivals: nobody may leave the barrier before the last rank reached it.
      if (b.rank() == round % kRanks) std::this_thread::sleep_for(2ms);
      arrived[round].fetch_add(1);
      SSC_CHECK(b.barrier());
      EXPECT_EQ(arrived[round].load(), kRanks) << "rank " << b.rank() << " round " << round;
    }
    return sscSuccess;
  });
  expectAllSucceeded(outcomes);
}

TEST_F(BootstrapTest, WrongCookieIsRejected) {
  sscUniqueId id;
  ASSERT_EQ(bootstrapCreateUniqueId(options(), &id), sscSuccess) << lastError();
  sscUniqueId forged = id;
  forged.internal[kIdCookie] ^= 0x5a;
  Outcome stranger = runRank(forged, 0, 2);
  EXPECT_EQ(stranger.result, sscInvalidUsage);
  EXPECT_NE(stranger.error.find("cookie"), std::string::npos) << stranger.error;
  // The rejected rank took no slot: the real communicator still forms.
  auto a = launchRank(id, 0, 2), b = launchRank(id, 1, 2);
  expectAllSucceeded({a.get(), b.get()});
}

TEST_F(BootstrapTest, MismatchedRankCountIsRejected) {
  sscUniqueId id;
  ASSERT_EQ(bootstrapCreateUniqueId(options(), &id), sscSuccess) << lastError();
  // Whichever hello the root reads second is refused; complete the communicator it kept.
  std::future<Outcome> ranks[2] = {launchRank(id, 0, 2), launchRank(id, 1, 3)};
  const int loser = firstReady(ranks[0], ranks[1]);
  Outcome refused = ranks[loser].get();
  EXPECT_EQ(refused.result, sscInvalidUsage);
  const std::string expected = loser == 1
                                   ? "rank 1 announced nranks=3 but rank 0 announced nranks=2"
                                   : "rank 0 announced nranks=2 but rank 1 announced nranks=3";
  EXPECT_NE(refused.error.find(expected), std::string::npos) << refused.error;
  std::vector<std::future<Outcome>> rest;
  if (loser == 1) {
    rest.push_back(launchRank(id, 1, 2));
  } else {
    rest.push_back(launchRank(id, 0, 3));
    rest.push_back(launchRank(id, 2, 3));
  }
  std::vector<Outcome> outcomes{ranks[1 - loser].get()};
  for (auto& f : rest) outcomes.push_back(f.get());
  expectAllSucceeded(outcomes);
}

TEST_F(BootstrapTest, DuplicateRankIsRejected) {
  sscUniqueId id;
  ASSERT_EQ(bootstrapCreateUniqueId(options(), &id), sscSuccess) << lastError();
  std::future<Outcome> twins[2] = {launchRank(id, 0, 2), launchRank(id, 0, 2)};
  const int loser = firstReady(twins[0], twins[1]);
  Outcome refused = twins[loser].get();
  EXPECT_EQ(refused.result, sscInvalidUsage);
  EXPECT_NE(refused.error.find("rank 0 joined twice"), std::string::npos) << refused.error;
  auto other = launchRank(id, 1, 2);
  expectAllSucceeded({twins[1 - loser].get(), other.get()});
}

TEST_F(BootstrapTest, BadRankOrCountFailsWithoutNetwork) {
  sscUniqueId zero{};  // never reached: the arguments are checked first
  std::unique_ptr<Bootstrap> b;
  const auto start = Clock::now();
  EXPECT_EQ(Bootstrap::connect(zero, 0, 0, nullptr, options(), &b), sscInvalidArgument);
  EXPECT_NE(lastError().find("nranks"), std::string::npos) << lastError();
  EXPECT_EQ(Bootstrap::connect(zero, -1, 4, nullptr, options(), &b), sscInvalidArgument);
  EXPECT_EQ(Bootstrap::connect(zero, 4, 4, nullptr, options(), &b), sscInvalidArgument);
  EXPECT_NE(lastError().find("rank 4 is out of range"), std::string::npos) << lastError();
  EXPECT_EQ(Bootstrap::connect(zero, 0, 1, nullptr, options(), nullptr), sscInvalidArgument);
  EXPECT_LT(secondsSince(start), 0.5);
  EXPECT_EQ(b, nullptr);
}

TEST_F(BootstrapTest, MalformedIdIsRejected) {
  sscUniqueId junk;
  std::memset(junk.internal, 0x42, sizeof(junk.internal));
  std::unique_ptr<Bootstrap> b;
  EXPECT_EQ(Bootstrap::connect(junk, 0, 1, nullptr, options(), &b), sscInvalidArgument);
  EXPECT_NE(lastError().find("unique id"), std::string::npos) << lastError();

  sscUniqueId id;
  ASSERT_EQ(bootstrapCreateUniqueId(options(), &id), sscSuccess);
  sscUniqueId badFamily = id;
  badFamily.internal[kIdAddress] = 9;  // no such address family
  EXPECT_EQ(Bootstrap::connect(badFamily, 0, 1, nullptr, options(), &b), sscInvalidArgument);
  expectAllSucceeded({runRank(id, 0, 1)});  // retire the root
}

TEST_F(BootstrapTest, MissingRankTimesOut) {
  ::setenv("STARSCREAM_TIMEOUT", "2", 1);
  sscUniqueId id;
  ASSERT_EQ(bootstrapCreateUniqueId(options(), &id), sscSuccess);
  const auto start = Clock::now();
  auto a = launchRank(id, 0, 3), b = launchRank(id, 1, 3);  // rank 2 never comes
  for (Outcome o : {a.get(), b.get()}) {
    EXPECT_EQ(o.result, sscTimeout) << o.error;
    EXPECT_NE(o.error.find("2 of 3 ranks joined"), std::string::npos) << o.error;
    EXPECT_NE(o.error.find("missing: rank 2"), std::string::npos) << o.error;
  }
  const double elapsed = secondsSince(start);
  EXPECT_GT(elapsed, 1.5);
  EXPECT_LT(elapsed, 3.5);
}

TEST_F(BootstrapTest, RootThatNeverAnswersTimesOut) {
  ::setenv("STARSCREAM_TIMEOUT", "1", 1);
  // A listener that never accepts: the rank's connect succeeds through the kernel backlog,
  // then the hello is never answered. The rank's own clock has to end it.
  Socket listener;
  SocketAddress address = SocketAddress::loopback(AF_INET);
  ASSERT_EQ(Socket::listen(address, &listener, &address), sscSuccess);
  sscUniqueId id;
  ASSERT_EQ(bootstrapCreateUniqueId(options(), &id), sscSuccess);
  expectAllSucceeded({runRank(id, 0, 1)});  // retire the real root, keep its id's format
  sscUniqueId silent = id;
  uint16_t port = htons(address.port());
  std::memcpy(&silent.internal[kIdPort], &port, sizeof(port));
  const auto start = Clock::now();
  Outcome o = runRank(silent, 0, 1);
  EXPECT_EQ(o.result, sscTimeout) << o.error;
  EXPECT_NE(o.error.find("bootstrap root"), std::string::npos) << o.error;
  EXPECT_LT(secondsSince(start), 2.5);
}

TEST_F(BootstrapTest, AbortUnblocksAllGather) {
  sscUniqueId id;
  ASSERT_EQ(bootstrapCreateUniqueId(options(), &id), sscSuccess);
  std::atomic<bool> abortFlag{false};
  std::promise<void> rank1Done;
  // Rank 1 joins the ring but never enters the allGather, so rank 0 waits on it.
  auto idle = launchRank(id, 1, 2, [&](Bootstrap&) {
    rank1Done.get_future().wait();
    return sscSuccess;
  });
  double waited = 0;
  std::string abortError;
  Outcome stuck = runRank(
      id, 0, 2,
      [&](Bootstrap& b) {
        std::thread aborter([&] {
          std::this_thread::sleep_for(200ms);
          abortFlag.store(true);
        });
        const auto start = Clock::now();
        uint64_t data[2] = {1, 0};
        sscResult_t res = b.allGather(data, sizeof(uint64_t));
        waited = secondsSince(start);
        abortError = lastError();
        aborter.join();
        // The ring is in an unknown state now: further use must fail, not hang.
        EXPECT_EQ(b.barrier(), sscRemoteError);
        return res;
      },
      &abortFlag);
  rank1Done.set_value();
  EXPECT_EQ(stuck.result, sscRemoteError);
  EXPECT_NE(abortError.find("aborted"), std::string::npos) << abortError;
  EXPECT_LT(waited, 2.0);
  EXPECT_EQ(idle.get().result, sscSuccess);
}

TEST_F(BootstrapTest, AbortUnblocksConnect) {
  sscUniqueId id;
  ASSERT_EQ(bootstrapCreateUniqueId(options(), &id), sscSuccess);
  std::atomic<bool> abortFlag{false};
  const auto start = Clock::now();
  auto lonely = launchRank(id, 0, 2, nullptr, &abortFlag);  // rank 1 never comes
  std::this_thread::sleep_for(200ms);
  abortFlag.store(true);
  Outcome o = lonely.get();
  EXPECT_EQ(o.result, sscRemoteError);
  EXPECT_NE(o.error.find("aborted"), std::string::npos) << o.error;
  EXPECT_LT(secondsSince(start), 2.0);
  // The aborted rank's slot is freed when its connection drops, so the job can still form.
  auto a = launchRank(id, 0, 2), b = launchRank(id, 1, 2);
  expectAllSucceeded({a.get(), b.get()});
}

TEST_F(BootstrapTest, MismatchedAllGatherSizesAreReported) {
  auto outcomes = runAll(2, [](Bootstrap& b) {
    std::vector<char> data(64);
    return b.allGather(data.data(), b.rank() == 0 ? 8 : 16);
  });
  for (const Outcome& o : outcomes) {
    EXPECT_EQ(o.result, sscInvalidUsage);
    EXPECT_NE(o.error.find("mismatch"), std::string::npos) << o.error;
  }
}

TEST_F(BootstrapTest, RootSurvivesJunkClients) {
  sscUniqueId id;
  ASSERT_EQ(bootstrapCreateUniqueId(options(), &id), sscSuccess);
  const SocketAddress root = rootAddress(id);
  ASSERT_TRUE(root.valid());
  const Deadline deadline = Deadline::after(5);
  std::vector<Socket> clients(4);
  for (Socket& s : clients)
    ASSERT_EQ(Socket::connect(root, deadline, nullptr, "root", &s), sscSuccess);
  const std::string http = "GET / HTTP/1.0\r\n\r\n";
  EXPECT_EQ(clients[0].sendAll(http.data(), http.size(), deadline, nullptr, "root"), sscSuccess);
  EXPECT_EQ(clients[1].sendAll("SSCH", 4, deadline, nullptr, "root"), sscSuccess);  // then quits
  clients[1].reset();
  clients[2].reset();  // connects and leaves without a word
  std::vector<char> noise(4096, '\xff');
  EXPECT_EQ(clients[3].sendAll(noise.data(), noise.size(), deadline, nullptr, "root"), sscSuccess);
  auto a = launchRank(id, 0, 2), b = launchRank(id, 1, 2);
  expectAllSucceeded({a.get(), b.get()});
}

// The hello a rank sends the root (HelloWire in bootstrap.cc): its PeerWire (24 bytes), then
// the raw sockaddr of its ring listener. The root's success reply (ReplyWire) is 40 bytes.
constexpr size_t kHelloBytes = 52, kHelloListen = 24, kReplyBytes = 40;

// Anyone on the host can connect to a rank's ring listener. Idle clients that got there first
// (a port scanner, a stuck job) must not keep the real neighbour out: served one at a time for
// 2 s each, twenty of them made init fail.
TEST_F(BootstrapTest, IdleClientsOnTheRingListenerDoNotStarveThePeer) {
  sscUniqueId id;
  ASSERT_EQ(bootstrapCreateUniqueId(options(), &id), sscSuccess);
  // Rank 0 reaches the root through this relay, which learns rank 0's listener from its hello.
  Socket relay;
  SocketAddress relayAddress = SocketAddress::loopback(AF_INET);
  ASSERT_EQ(Socket::listen(relayAddress, &relay, &relayAddress), sscSuccess);
  sscUniqueId viaRelay = id;
  const uint16_t port = htons(relayAddress.port());
  std::memcpy(&viaRelay.internal[kIdPort], &port, sizeof(port));
  const auto start = Clock::now();
  auto rank0 = launchRank(viaRelay, 0, 2);
  const Deadline deadline = Deadline::after(10);
  Socket fromRank0;
  ASSERT_EQ(relay.accept(deadline, nullptr, "rank 0", &fromRank0), sscSuccess) << lastError();
  char hello[kHelloBytes];
  ASSERT_EQ(fromRank0.recvAll(hello, sizeof(hello), deadline, nullptr, "rank 0"), sscSuccess);
  sockaddr_storage storage{};
  std::memcpy(&storage, hello + kHelloListen, sizeof(sockaddr_in6));
  const SocketAddress listener =
      SocketAddress::fromSockaddr(reinterpret_cast<sockaddr*>(&storage), sizeof(storage));
  ASSERT_TRUE(listener.valid());
  // The idle clients connect before rank 1 can: it learns where rank 0 listens only once the
  // root has rank 0's hello.
  std::vector<Socket> idle(20);
  for (Socket& s : idle)
    ASSERT_EQ(Socket::connect(listener, deadline, nullptr, "rank 0's listener", &s), sscSuccess);
  Socket toRoot;
  ASSERT_EQ(Socket::connect(rootAddress(id), deadline, nullptr, "root", &toRoot), sscSuccess);
  ASSERT_EQ(toRoot.sendAll(hello, sizeof(hello), deadline, nullptr, "root"), sscSuccess);
  auto rank1 = launchRank(id, 1, 2);
  char reply[kReplyBytes];
  ASSERT_EQ(toRoot.recvAll(reply, sizeof(reply), deadline, nullptr, "root"), sscSuccess);
  ASSERT_EQ(fromRank0.sendAll(reply, sizeof(reply), deadline, nullptr, "rank 0"), sscSuccess);
  expectAllSucceeded({rank0.get(), rank1.get()});
  EXPECT_LT(secondsSince(start), 5.0);
}

// A port on loopback where nothing listens (borrowed, then given back).
uint16_t closedPort() {
  SocketAddress address = SocketAddress::loopback(AF_INET);
  Socket placeholder;
  EXPECT_EQ(Socket::listen(address, &placeholder, &address), sscSuccess);
  return address.port();
}

// The process that made the id is gone, so its root's listener is closed: a rank that had not
// connected yet fails within about a second saying so, instead of retrying the refused
// connection until STARSCREAM_TIMEOUT.
TEST_F(BootstrapTest, ARootThatIsGoneFailsTheJoinerAtOnce) {
  sscUniqueId id;
  ASSERT_EQ(bootstrapCreateUniqueId(options(), &id), sscSuccess);
  expectAllSucceeded({runRank(id, 0, 1)});  // retire the real root, keep its id's format
  sscUniqueId gone = id;
  const uint16_t port = htons(closedPort());
  std::memcpy(&gone.internal[kIdPort], &port, sizeof(port));
  const auto start = Clock::now();
  Outcome o = runRank(gone, 0, 2);
  EXPECT_EQ(o.result, sscRemoteError) << o.error;
  EXPECT_NE(o.error.find("the bootstrap root at " + rootAddress(gone).toString() + " is gone"),
            std::string::npos)
      << o.error;
  EXPECT_NE(o.error.find("sscGetUniqueId"), std::string::npos) << o.error;
  EXPECT_LT(secondsSince(start), 1.0);
}

// An id serves one communicator. While it lives, the root answers a rank that joins with the
// same id again at once; once every rank of this process destroyed it, the listener is closed
// and the late rank is refused, which it reports as the root being gone (both within a second,
// with STARSCREAM_TIMEOUT at 20 s; the checks allow 5 s, far from the timeout, so a loaded
// machine running tests in parallel does not fail them).
TEST_F(BootstrapTest, AUniqueIdUsedTwiceIsRefusedAtOnce) {
  sscUniqueId id;
  ASSERT_EQ(bootstrapCreateUniqueId(options(), &id), sscSuccess);
  std::promise<void> formed[2], done;
  std::shared_future<void> finish = done.get_future().share();
  std::vector<std::future<Outcome>> ranks;
  for (int r = 0; r < 2; ++r)
    ranks.push_back(launchRank(id, r, 2, [&formed, finish](Bootstrap& b) {
      formed[b.rank()].set_value();
      finish.wait();
      return sscSuccess;
    }));
  for (auto& f : formed) f.get_future().wait();
  auto start = Clock::now();
  Outcome late = runRank(id, 1, 2);
  EXPECT_EQ(late.result, sscInvalidUsage) << late.error;
  EXPECT_NE(late.error.find("this unique id was already used by a communicator of 2 ranks"),
            std::string::npos)
      << late.error;
  EXPECT_LT(secondsSince(start), 5.0);
  Outcome stranger = runRank(id, 0, 5);  // another size: the same answer
  EXPECT_NE(stranger.error.find("already used by a communicator of 2 ranks"), std::string::npos)
      << stranger.error;
  done.set_value();
  std::vector<Outcome> outcomes;
  for (auto& f : ranks) outcomes.push_back(f.get());
  expectAllSucceeded(outcomes);
  start = Clock::now();
  late = runRank(id, 1, 2);
  EXPECT_EQ(late.result, sscRemoteError) << late.error;
  EXPECT_NE(late.error.find("is gone"), std::string::npos) << late.error;
  EXPECT_LT(secondsSince(start), 5.0);
}

TEST_F(BootstrapTest, ALateRankOfAnIdWhoseCommunicatorFailedIsToldWhy) {
  ::setenv("STARSCREAM_TIMEOUT", "1", 1);
  sscUniqueId id;
  ASSERT_EQ(bootstrapCreateUniqueId(options(), &id), sscSuccess);
  Outcome alone = runRank(id, 0, 2);  // rank 1 comes too late
  EXPECT_EQ(alone.result, sscTimeout) << alone.error;
  const auto start = Clock::now();
  Outcome late = runRank(id, 1, 2);
  EXPECT_EQ(late.result, sscInvalidUsage) << late.error;
  EXPECT_NE(late.error.find("the communicator of this unique id failed to form"), std::string::npos)
      << late.error;
  EXPECT_NE(late.error.find("only 1 of 2 ranks joined"), std::string::npos) << late.error;
  EXPECT_LT(secondsSince(start), 0.5);
}

// ---------------------------------------------------------------- the socket layer

class BootstrapSocket : public BootstrapTest {};

void connectPair(int family, Socket* client, Socket* server) {
  Socket listener;
  SocketAddress address = SocketAddress::loopback(family);
  ASSERT_EQ(Socket::listen(address, &listener, &address), sscSuccess) << lastError();
  ASSERT_NE(address.port(), 0);
  const Deadline deadline = Deadline::after(5);
  ASSERT_EQ(Socket::connect(address, deadline, nullptr, "server", client), sscSuccess);
  ASSERT_EQ(listener.accept(deadline, nullptr, "client", server), sscSuccess);
}

TEST_F(BootstrapSocket, Ipv6Loopback) {
  Socket probe;
  SocketAddress v6 = SocketAddress::loopback(AF_INET6);
  if (Socket::listen(v6, &probe, &v6) != sscSuccess) GTEST_SKIP() << "no IPv6 loopback here";
  EXPECT_EQ(v6.toString().rfind("[::1]:", 0), 0u) << v6.toString();
  Socket client, server;
  connectPair(AF_INET6, &client, &server);
  const Deadline deadline = Deadline::after(5);
  char reply[6] = {0};
  ASSERT_EQ(client.sendAll("hello", 6, deadline, nullptr, "server"), sscSuccess);
  ASSERT_EQ(server.recvAll(reply, 6, deadline, nullptr, "client"), sscSuccess);
  EXPECT_STREQ(reply, "hello");
}

TEST_F(BootstrapSocket, ConnectRetriesUntilThePeerListens) {
  SocketAddress address = SocketAddress::loopback(AF_INET);
  {
    Socket placeholder;  // borrow a free port, then give it back
    ASSERT_EQ(Socket::listen(address, &placeholder, &address), sscSuccess);
  }
  Socket late;
  std::thread listenLater([&] {
    std::this_thread::sleep_for(300ms);
    SocketAddress bound;
    EXPECT_EQ(Socket::listen(address, &late, &bound), sscSuccess) << lastError();
  });
  Socket client;
  EXPECT_EQ(Socket::connect(address, Deadline::after(5), nullptr, "late peer", &client), sscSuccess)
      << lastError();
  listenLater.join();
}

TEST_F(BootstrapSocket, ARefusalMeansGoneOnlyWhenThePeerListenedBeforehand) {
  SocketAddress address = SocketAddress::loopback(AF_INET);
  address.setPort(closedPort());
  Socket client;
  auto start = Clock::now();
  EXPECT_EQ(Socket::connect(address, Deadline::after(5), nullptr, "the root", &client,
                            Socket::Refused::kMeansGone),
            sscRemoteError);
  EXPECT_NE(lastError().find("nothing listens there any more"), std::string::npos) << lastError();
  EXPECT_GE(secondsSince(start), Socket::kRefusedGraceMs / 1000.0);
  EXPECT_LT(secondsSince(start), 1.0);
  // The default retries refusals until the deadline: the peer may not be up yet.
  start = Clock::now();
  EXPECT_EQ(Socket::connect(address, Deadline::after(0.8), nullptr, "a peer", &client), sscTimeout);
  EXPECT_GE(secondsSince(start), 0.75);
}

TEST_F(BootstrapSocket, LargeExchangeBothWaysDoesNotDeadlock) {
  Socket a, b;
  connectPair(AF_INET, &a, &b);
  // Far beyond what the kernel buffers, so sending before receiving would deadlock.
  const size_t bytes = 16u << 20;
  std::vector<char> aOut(bytes, 'a'), bOut(bytes, 'b'), aIn(bytes), bIn(bytes);
  const Deadline deadline = Deadline::after(10);
  std::thread other([&] {
    EXPECT_EQ(sendRecvAll(b, bOut.data(), bytes, "a", b, bIn.data(), bytes, "a", deadline, nullptr),
              sscSuccess);
  });
  EXPECT_EQ(sendRecvAll(a, aOut.data(), bytes, "b", a, aIn.data(), bytes, "b", deadline, nullptr),
            sscSuccess);
  other.join();
  EXPECT_EQ(aIn, bOut);
  EXPECT_EQ(bIn, aOut);
}

TEST_F(BootstrapSocket, PeerCloseAndTimeoutAreReported) {
  Socket client, server;
  connectPair(AF_INET, &client, &server);
  char buffer[8];
  const auto start = Clock::now();
  EXPECT_EQ(client.recvAll(buffer, sizeof(buffer), Deadline::after(0.3), nullptr, "rank 7"),
            sscTimeout);
  EXPECT_NE(lastError().find("rank 7"), std::string::npos) << lastError();
  EXPECT_LT(secondsSince(start), 1.0);
  server.reset();
  EXPECT_EQ(client.recvAll(buffer, sizeof(buffer), Deadline::after(5), nullptr, "rank 7"),
            sscRemoteError);
  EXPECT_NE(lastError().find("peer closed the connection"), std::string::npos) << lastError();
}

TEST_F(BootstrapSocket, InterfaceSelection) {
  SocketAddress address;
  ASSERT_EQ(selectListenAddress(options().socketIfname, &address), sscSuccess);
  EXPECT_EQ(address.toString(), "127.0.0.1:0");
  ::setenv("STARSCREAM_SOCKET_IFNAME", "lo", 1);
  ASSERT_EQ(selectListenAddress(options().socketIfname, &address), sscSuccess) << lastError();
  EXPECT_EQ(address.toString(), "127.0.0.1:0");
  ::setenv("STARSCREAM_SOCKET_IFNAME", "no-such-if0", 1);
  EXPECT_EQ(selectListenAddress(options().socketIfname, &address), sscInvalidArgument);
  EXPECT_NE(lastError().find("available: "), std::string::npos) << lastError();
  EXPECT_NE(lastError().find("lo"), std::string::npos) << lastError();
  ::unsetenv("STARSCREAM_SOCKET_IFNAME");
}

}  // namespace
}  // namespace ssc
