// SPDX-License-Identifier: MIT
// The bootstrap root: serves one communicator's joins (see bootstrap.h), then answers late joiners
// of its unique id (FormedRoots).
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <exception>
#include <map>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "src/core/bootstrap.h"
#include "src/core/bootstrap_wire.h"
#include "src/core/log.h"

namespace ssc {
namespace {

using namespace bootstrap_wire;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// A connection to a root that has not sent its hello in full yet.
struct Client {
  Socket sock;
  HelloWire hello{};
  size_t got = 0;
  Clock::time_point since;
  bool done = false;
};

enum class HelloRead { kPartial, kComplete, kDrop };

// One non-blocking read of a client's hello. Clients that close early or send junk are dropped
// without a word.
HelloRead readHelloPart(Client& c) {
  char* buffer = reinterpret_cast<char*>(&c.hello);
  IoResult io = c.sock.tryRecv(buffer + c.got, sizeof(c.hello) - c.got);
  if (io.status == IoResult::kWouldBlock) return HelloRead::kPartial;
  if (io.status != IoResult::kProgress) return HelloRead::kDrop;
  c.got += io.bytes;
  if (c.got >= sizeof(kHelloMagic) && std::memcmp(buffer, kHelloMagic, sizeof(kHelloMagic)))
    return HelloRead::kDrop;
  return c.got < sizeof(c.hello) ? HelloRead::kPartial : HelloRead::kComplete;
}

// Why a hello carries the wrong protocol version or cookie; empty when it is this root's.
std::string foreignHello(const PeerWire& h, uint64_t cookie) {
  if (h.version != kProtocolVersion) {
    return fmt::format(
        "bootstrap protocol mismatch: rank {} speaks version {}, the root {} "
        "(mixed Starscream builds?)",
        h.rank, h.version, kProtocolVersion);
  }
  if (h.cookie != cookie)
    return "bootstrap cookie mismatch: this rank was given a unique id from another communicator";
  return {};
}

// The root's answer: head, then the message. `wait`: how long a full send buffer may hold it up
// (the reply fits an idle socket's buffer many times over, so this only waits on a rank that
// stopped reading; 0: one attempt).
void sendReply(const Socket& sock, int rank, sscResult_t result, const WireAddress& next,
               std::string_view message, double wait) {
  auto head = stamped<ReplyWire>(kReplyMagic);
  head.result = result;
  head.messageBytes = static_cast<uint32_t>(std::min<size_t>(message.size(), kMaxReplyMessage));
  head.next = next;
  std::string buffer(reinterpret_cast<const char*>(&head), sizeof(head));
  buffer.append(message.substr(0, head.messageBytes));
  bool sent;
  if (wait > 0) {
    sent = sock.sendAll(buffer.data(), buffer.size(), Deadline::after(wait), nullptr,
                        fmt::format("rank {}", rank)) == sscSuccess;
  } else {
    const IoResult io = sock.trySend(buffer.data(), buffer.size());
    sent = io.status == IoResult::kProgress && io.bytes == buffer.size();
  }
  if (!sent) SSC_LOG(kInfo, "bootstrap root: could not answer rank {}", rank);
}

// ---------------------------------------------------------------- formed roots

// A root whose communicator formed keeps its listener, so that a rank that joins with the same
// unique id later (an id used twice: it serves one communicator) is told so at once instead of
// waiting out its STARSCREAM_TIMEOUT; so does one whose communicator failed to form (it says
// why). One thread serves every such root of the process. A root
// is kept while a rank of this process that joined through it holds it (formedRootHold: until
// that rank's bootstrap is destroyed, so its communicator's destroy closes the listener), else
// for kUnheldLinger (the id was made by a process outside the communicator). Once the listener is
// closed, a late joiner is refused, which it reports as the root being gone (bootstrap.cc).
constexpr auto kUnheldLinger = 60s;

class FormedRoots {
 public:
  // Null until a root formed in this process.
  static FormedRoots* find() {
    std::lock_guard<std::mutex> g(instanceMu());
    return instance();
  }

  static FormedRoots& get() {
    static std::once_flag once;
    std::call_once(once, [] {
      // A forked child gets no thread and must not keep the listeners open: a closed root has to
      // be refused, not left listening in a child where nobody accepts. Closing them there only
      // needs the lists, consistent because the fork happened with the locks held; nothing is
      // freed in the child (the instance is leaked).
      pthread_atfork(
          [] {
            instanceMu().lock();
            if (instance() != nullptr) instance()->mu_.lock();
          },
          [] {
            if (instance() != nullptr) instance()->mu_.unlock();
            instanceMu().unlock();
          },
          [] {
            if (FormedRoots* roots = instance()) {
              roots->closeAllInChild();
              roots->mu_.unlock();
            }
            instance() = nullptr;
            instanceMu().unlock();
          });
    });
    std::lock_guard<std::mutex> g(instanceMu());
    if (instance() == nullptr) instance() = new FormedRoots();
    return *instance();
  }

  // `failure`: why the communicator did not form (empty: it formed).
  void add(uint64_t cookie, Socket listener, std::string address, int nranks,
           std::vector<Client> clients, std::string failure = {}) {
    std::lock_guard<std::mutex> g(mu_);
    if (!startThreadLocked()) return;  // the listener closes: late joiners are refused
    Formed& f = formed_[cookie];
    f.listener = std::move(listener);
    f.address = std::move(address);
    f.nranks = nranks;
    f.formedAt = Clock::now();
    f.clients = std::move(clients);
    f.failure = std::move(failure);
    wake();
  }

  bool hold(uint64_t cookie) {
    std::lock_guard<std::mutex> g(mu_);
    auto it = formed_.find(cookie);
    if (it == formed_.end()) return false;
    ++it->second.holders;
    return true;
  }

  void release(uint64_t cookie) {
    std::lock_guard<std::mutex> g(mu_);
    auto it = formed_.find(cookie);
    if (it == formed_.end() || --it->second.holders > 0) return;
    // Closed here rather than by the thread, so that a destroyed communicator leaves no
    // descriptor behind; the thread's next poll set no longer names them.
    formed_.erase(it);
    wake();
  }

 private:
  struct Formed {
    Socket listener;
    std::string address;
    int nranks = 0;
    Clock::time_point formedAt;
    int holders = 0;
    std::vector<Client> clients;
    Clock::time_point acceptAfter;  // accept paused until then (after EMFILE)
    std::string failure;            // why it did not form; empty: it formed
  };

  static FormedRoots*& instance() {
    static FormedRoots* roots = nullptr;
    return roots;
  }
  static std::mutex& instanceMu() {
    static std::mutex mu;
    return mu;
  }

  FormedRoots() : wakeFd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}

  bool startThreadLocked() {
    if (started_) return true;
    try {
      std::thread([this] { run(); }).detach();
      started_ = true;
    } catch (const std::system_error& e) {
      SSC_LOG(kWarn,
              "bootstrap root: cannot start the thread that answers late joiners ({}); "
              "they will be refused instead",
              e.what());
    }
    return started_;
  }

  void wake() {
    const uint64_t one = 1;
    if (wakeFd_ >= 0) (void)!::write(wakeFd_, &one, sizeof(one));
  }

  void closeAllInChild() {
    for (auto& [cookie, f] : formed_) {
      if (f.listener.valid()) ::close(f.listener.release());
      for (Client& c : f.clients)
        if (c.sock.valid()) ::close(c.sock.release());
    }
  }

  void run() {
    std::vector<pollfd> fds;
    for (;;) {
      fds.assign(1, {wakeFd_, POLLIN, 0});
      auto wait = std::chrono::milliseconds(60000);
      {
        std::lock_guard<std::mutex> g(mu_);
        const auto now = Clock::now();
        auto until = [&](Clock::time_point t) {
          wait = std::min(wait, std::max(std::chrono::milliseconds(0),
                                         std::chrono::ceil<std::chrono::milliseconds>(t - now)));
        };
        for (const auto& [cookie, f] : formed_) {
          if (f.clients.size() < kMaxPendingClients && now >= f.acceptAfter)
            fds.push_back({f.listener.fd(), POLLIN, 0});
          else if (now < f.acceptAfter)
            until(f.acceptAfter);
          for (const Client& c : f.clients) {
            fds.push_back({c.sock.fd(), POLLIN, 0});
            until(c.since + kHelloGrace);
          }
          if (f.holders == 0) until(f.formedAt + kUnheldLinger);
        }
      }
      if (::poll(fds.data(), fds.size(), static_cast<int>(wait.count())) < 0 && errno != EINTR) {
        SSC_LOG(kWarn, "bootstrap root: poll failed: {}", errnoString(errno));
        std::this_thread::sleep_for(100ms);
        continue;
      }
      if (fds[0].revents != 0) {
        uint64_t count;
        (void)!::read(wakeFd_, &count, sizeof(count));
      }
      // Every root is served by non-blocking attempts, whatever poll said: a root released
      // meanwhile is gone from the map, and its descriptors' numbers may have been reused.
      std::lock_guard<std::mutex> g(mu_);
      const auto now = Clock::now();
      for (auto it = formed_.begin(); it != formed_.end();) {
        Formed& f = it->second;
        if (f.holders == 0 && now - f.formedAt >= kUnheldLinger) {
          SSC_LOG(kTrace, "bootstrap root at {}: no longer answers late joiners", f.address);
          it = formed_.erase(it);
          continue;
        }
        serve(it->first, f, now);
        ++it;
      }
    }
  }

  void serve(uint64_t cookie, Formed& f, Clock::time_point now) {
    for (Client& c : f.clients) {
      const HelloRead read = readHelloPart(c);
      c.done = read != HelloRead::kPartial || now - c.since > kHelloGrace;
      if (read != HelloRead::kComplete) continue;
      const PeerWire& h = c.hello.who;
      std::string why = foreignHello(h, cookie);
      const double ago = std::chrono::duration<double>(now - f.formedAt).count();
      if (why.empty() && !f.failure.empty()) {
        why = fmt::format(
            "the communicator of this unique id failed to form {:.1f} s ago ({}); "
            "make a new id with sscGetUniqueId to try again",
            ago, f.failure);
      } else if (why.empty()) {
        why = fmt::format(
            "this unique id was already used by a communicator of {} ranks, formed {:.1f} s ago; "
            "a unique id serves one communicator: make a new one with sscGetUniqueId for each",
            f.nranks, ago);
      }
      SSC_LOG(kInfo, "bootstrap root at {} turns late rank {} away: {}", f.address, h.rank, why);
      sendReply(c.sock, h.rank, sscInvalidUsage, WireAddress{}, why, 0);
    }
    std::erase_if(f.clients, [](const Client& c) { return c.done; });
    while (now >= f.acceptAfter && f.clients.size() < kMaxPendingClients) {
      Socket s;
      const IoResult io = f.listener.tryAccept(&s);
      if (io.status == IoResult::kWouldBlock) break;
      if (io.status == IoResult::kError) {
        // Typically EMFILE. The listener stays readable, so leave it out of the poll a while.
        SSC_LOG(kWarn, "bootstrap root at {}: accept: {}", f.address, errnoString(io.error));
        f.acceptAfter = now + std::chrono::milliseconds(kAbortPollMs);
        break;
      }
      f.clients.push_back({std::move(s), {}, 0, now, false});
    }
  }

  std::mutex mu_;
  std::map<uint64_t, Formed> formed_;  // by cookie
  const int wakeFd_;
  bool started_ = false;
};

// ---------------------------------------------------------------- root

// Serves one communicator: collects a hello from every rank, then tells each rank where its
// ring successor listens. A single poll(2) loop, so no client can stall another.
class Root {
 public:
  Root(Socket listener, std::string address, uint64_t cookie, Deadline deadline)
      : listener_(std::move(listener)),
        address_(std::move(address)),
        cookie_(cookie),
        deadline_(deadline) {}

  void run() {
    std::vector<pollfd> fds;
    while (nranks_ == 0 || static_cast<int>(members_.size()) < nranks_) {
      if (deadline_.passed()) return giveUp();
      // Listener, then clients, then members. A negative fd is ignored by poll(2): that is how
      // the listener pauses at the cap.
      fds.assign(1, {clients_.size() < kMaxPendingClients ? listener_.fd() : -1, POLLIN, 0});
      for (const Client& c : clients_) fds.push_back({c.sock.fd(), POLLIN, 0});
      for (const auto& [rank, member] : members_) fds.push_back({member.sock.fd(), POLLIN, 0});
      if (::poll(fds.data(), fds.size(), deadline_.pollMs(1000)) < 0 && errno != EINTR) {
        SSC_LOG(kWarn, "bootstrap root at {}: poll failed: {}", address_, errnoString(errno));
        return giveUp();
      }
      // Members first: admitting a hello below changes members_ but never clients_.
      size_t i = 1 + clients_.size();
      for (auto it = members_.begin(); it != members_.end(); ++i)
        it = fds[i].revents != 0 ? checkMember(it) : std::next(it);
      if (dead_ >= 0) return failMembers();
      const auto now = Clock::now();
      for (i = 0; i < clients_.size(); ++i) {
        Client& c = clients_[i];
        c.done = fds[1 + i].revents != 0 ? readHello(c) : now - c.since > kHelloGrace;
      }
      std::erase_if(clients_, [](const Client& c) { return c.done; });
      if (fds[0].revents != 0) acceptClients();
    }
    finish();
  }

 private:
  struct Member {
    Socket sock;
    WireAddress listen;
  };
  using Members = std::map<int, Member>;

  void acceptClients() {
    while (clients_.size() < kMaxPendingClients) {
      Socket s;
      IoResult io = listener_.tryAccept(&s);
      if (io.status == IoResult::kWouldBlock) return;
      if (io.status == IoResult::kError) {
        // Typically EMFILE. The listener stays readable, so pause instead of spinning on it.
        SSC_LOG(kWarn, "bootstrap root at {}: accept: {}", address_, errnoString(io.error));
        ::poll(nullptr, 0, kAbortPollMs);
        return;
      }
      clients_.push_back({std::move(s), {}, 0, Clock::now(), false});
    }
  }

  // Returns true when the client is finished with: admitted, rejected or dropped.
  bool readHello(Client& c) {
    switch (readHelloPart(c)) {
      case HelloRead::kPartial: return false;
      case HelloRead::kDrop: return true;
      case HelloRead::kComplete: break;
    }
    admit(std::move(c.sock), c.hello);
    return true;
  }

  // Why the rank that sent h may not join; empty when it may.
  std::string refusal(const HelloWire& hello) const {
    const PeerWire& h = hello.who;
    SocketAddress listen;
    if (std::string why = foreignHello(h, cookie_); !why.empty()) return why;
    if (h.nranks < 1 || h.rank < 0 || h.rank >= h.nranks)
      return fmt::format("rank {} is out of range for nranks={}", h.rank, h.nranks);
    if (!decodeAddress(hello.listen, &listen))
      return fmt::format("rank {} announced a malformed listen address", h.rank);
    if (nranks_ != 0 && h.nranks != nranks_) {
      return fmt::format("rank {} announced nranks={} but rank {} announced nranks={}", h.rank,
                         h.nranks, announcer_, nranks_);
    }
    if (members_.count(h.rank) != 0)
      return fmt::format("rank {} joined twice: two processes were given that rank", h.rank);
    return {};
  }

  void admit(Socket sock, const HelloWire& hello) {
    const int rank = hello.who.rank;
    if (std::string why = refusal(hello); !why.empty()) {
      SSC_LOG(kInfo, "bootstrap root at {} turns rank {} away: {}", address_, rank, why);
      return reply(sock, rank, sscInvalidUsage, WireAddress{}, why);
    }
    if (nranks_ == 0) nranks_ = hello.who.nranks, announcer_ = rank;
    members_.emplace(rank, Member{std::move(sock), hello.listen});
    SSC_LOG(kTrace, "bootstrap root at {}: rank {} joined ({} of {})", address_, rank,
            members_.size(), nranks_);
  }

  // A member speaks only when it withdraws (its init was aborted): its slot is freed, so the
  // rank can join again. A connection that closes without that is a rank that died (killed,
  // crashed, exited): nobody would ever fill its slot, so every other member is failed at once,
  // instead of waiting out STARSCREAM_TIMEOUT.
  Members::iterator checkMember(Members::iterator it) {
    char probe = 0;
    const IoResult io = it->second.sock.tryRecv(&probe, 1);
    if (io.status == IoResult::kWouldBlock) return std::next(it);
    if (io.status != IoResult::kProgress || probe != kWithdraw) {
      if (dead_ < 0) dead_ = it->first;
      return std::next(it);
    }
    SSC_LOG(kInfo, "bootstrap root at {}: rank {} withdrew before all ranks joined", address_,
            it->first);
    it = members_.erase(it);
    if (members_.empty()) nranks_ = 0, announcer_ = -1;  // nobody left to hold to their count
    return it;
  }

  void reply(const Socket& sock, int rank, sscResult_t result, const WireAddress& next,
             std::string_view message) {
    sendReply(sock, rank, result, next, message, 1.0);
  }

  void finish() {
    // Before any rank hears back, so that one of this process finds it to hold.
    FormedRoots::get().add(cookie_, std::move(listener_), address_, nranks_, std::move(clients_));
    for (const auto& [rank, member] : members_)
      reply(member.sock, rank, sscSuccess, members_.at((rank + 1) % nranks_).listen, "");
    SSC_LOG(kInfo, "bootstrap root at {}: all {} ranks joined", address_, nranks_);
  }

  void failMembers() {
    const std::string message = fmt::format(
        "rank {} died while the communicator was being created (its connection to the bootstrap "
        "root closed before all {} ranks joined)",
        dead_, nranks_);
    SSC_LOG(kInfo, "bootstrap root at {}: {}", address_, message);
    retire(message);
    for (const auto& [rank, member] : members_)
      if (rank != dead_) reply(member.sock, rank, sscRemoteError, WireAddress{}, message);
  }

  // Hands the listener to the roots that answer late joiners, saying why this one failed.
  void retire(const std::string& failure) {
    FormedRoots::get().add(cookie_, std::move(listener_), address_, nranks_, std::move(clients_),
                           failure);
  }

  void giveUp() {
    if (members_.empty()) {
      SSC_LOG(kInfo, "bootstrap root at {}: no rank joined in time; closing", address_);
      return;
    }
    // List a few missing ranks, found without walking an absurd nranks.
    std::string missing;
    int listed = 0;
    for (int r = 0; r < nranks_ && listed < 8; ++r) {
      if (members_.count(r) != 0) continue;
      missing += fmt::format("{}{}", listed++ == 0 ? "" : ", ", r);
    }
    const int absent = nranks_ - static_cast<int>(members_.size());
    if (absent > listed) missing += fmt::format(" and {} more", absent - listed);
    const std::string message = fmt::format(
        "bootstrap timed out: only {} of {} ranks joined within STARSCREAM_TIMEOUT={:g} s "
        "(missing: rank {})",
        members_.size(), nranks_, deadline_.budgetSeconds(), missing);
    SSC_LOG(kInfo, "bootstrap root at {}: {}", address_, message);
    retire(message);
    for (const auto& [rank, member] : members_)
      reply(member.sock, rank, sscTimeout, WireAddress{}, message);
  }

  Socket listener_;
  const std::string address_;
  const uint64_t cookie_;
  const Deadline deadline_;
  std::vector<Client> clients_;
  Members members_;  // by rank; a map, so a bogus nranks costs no memory
  int nranks_ = 0;   // 0 until the first hello fixes it
  int announcer_ = -1;
  int dead_ = -1;  // a member whose connection closed without withdrawing
};

}  // namespace

bool bootstrap_wire::formedRootHold(uint64_t cookie) {
  FormedRoots* roots = FormedRoots::find();
  return roots != nullptr && roots->hold(cookie);
}

void bootstrap_wire::formedRootRelease(uint64_t cookie) {
  if (FormedRoots* roots = FormedRoots::find()) roots->release(cookie);
}

sscResult_t bootstrapCreateUniqueId(const BootstrapOptions& options, sscUniqueId* id) {
  if (id == nullptr) return fail(sscInvalidArgument, "sscGetUniqueId: uniqueId is null");
  // The root's join clock starts now, before any rank's: see kRootVerdictGrace.
  const Deadline deadline = Deadline::after(options.timeoutSeconds);
  SocketAddress address;
  Socket listener;
  uint64_t cookie = 0;
  SSC_CHECK(selectListenAddress(options.socketIfname, &address));
  SSC_CHECK(Socket::listen(address, &listener, &address));
  SSC_CHECK(randomCookie(&cookie));

  auto wire = stamped<IdWire>(kIdMagic);
  wire.version = kProtocolVersion;
  wire.cookie = cookie;
  wire.root = encodeAddress(address);
  std::memset(id->internal, 0, sizeof(id->internal));
  std::memcpy(id->internal, &wire, sizeof(wire));

  auto root = std::make_unique<Root>(std::move(listener), address.toString(), cookie, deadline);
  try {
    // Detached: the root ends by itself once every rank joined or the deadline passed, and
    // must never hold up process exit. It touches nothing global that exit tears down.
    std::thread([root = std::move(root)] {
      try {
        root->run();
      } catch (const std::exception& e) {
        SSC_LOG(kWarn, "bootstrap root failed: {}", e.what());
      }
    }).detach();
  } catch (const std::system_error& e) {
    return fail(sscSystemError, "cannot start the bootstrap root thread: {}", e.what());
  }
  SSC_LOG(kInfo, "bootstrap root listening on {}", address.toString());
  return sscSuccess;
}

}  // namespace ssc
