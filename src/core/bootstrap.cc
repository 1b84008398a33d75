#include "src/core/bootstrap.h"

#include <poll.h>
#include <sys/random.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <map>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "src/core/env.h"
#include "src/core/errors.h"
#include "src/core/log.h"
#include "src/core/socket.h"

namespace ssc {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr uint16_t kProtocolVersion = 1;
constexpr char kIdMagic[4] = {'S', 'S', 'C', 'B'};
constexpr char kHelloMagic[4] = {'S', 'S', 'C', 'H'};
constexpr char kReplyMagic[4] = {'S', 'S', 'C', 'R'};
constexpr char kPeerMagic[4] = {'S', 'S', 'C', 'P'};

// Caps on what the root (and a rank's ring listener) holds for clients that have connected but
// not yet said who they are. At the cap it stops accepting, so the kernel backlog absorbs a
// burst instead of the root refusing ranks; clients that stay silent past kHelloGrace (on a
// ring listener kHandshakeGrace) are dropped to free their slot.
constexpr size_t kMaxPendingClients = 256;
constexpr auto kHelloGrace = 5s;
constexpr uint32_t kMaxReplyMessage = 1024;
// The root's join clock starts when the id is made, before any rank's, so its verdict (which
// names the missing ranks) normally beats a rank's own timeout. This grace keeps it winning
// when a rank started at almost the same moment as the root.
constexpr auto kRootVerdictGrace = 250ms;
// How long a connection to a rank's listener may take to identify itself. Short, so stray
// clients cannot fill the listener for long; the real neighbour sends its handshake right after
// connect.
constexpr auto kHandshakeGrace = 2s;

// The wire formats. Integers travel in host byte order: every rank runs this same library on
// the same kind of host (as with NCCL). Packed so that the layout is the declared one; field
// order keeps the integers naturally aligned anyway.
#pragma pack(push, 1)
// Addresses travel as raw sockaddr_in / sockaddr_in6 bytes, as in NCCL: the library is
// Linux-only, so every rank agrees on the layout and on the AF_* values.
struct WireAddress {
  unsigned char bytes[sizeof(sockaddr_in6)];
};
struct IdWire {
  char magic[4];
  uint16_t version, reserved;
  uint64_t cookie;
  WireAddress root;
};
// Who a rank is: opens its hello to the root, and is sent both ways on each ring connection so
// that each end verifies the other.
struct PeerWire {
  char magic[4];
  uint16_t version, reserved;
  uint64_t cookie;
  int32_t rank, nranks;
};
// rank -> root.
struct HelloWire {
  PeerWire who;
  WireAddress listen;
};
// root -> rank; when result is not sscSuccess, messageBytes of explanation follow.
struct ReplyWire {
  char magic[4];
  int32_t result;
  uint32_t messageBytes;
  WireAddress next;
};
// Precedes every allGather block, so ranks in different calls fail instead of mixing data.
struct StepWire {
  uint32_t call, step;
  uint64_t bytes;
  bool operator==(const StepWire&) const = default;
};
#pragma pack(pop)
static_assert(sizeof(IdWire) <= SSC_UNIQUE_ID_BYTES);

WireAddress encodeAddress(const SocketAddress& a) {
  WireAddress w{};
  std::memcpy(w.bytes, a.get(), a.length());
  return w;
}

bool decodeAddress(const WireAddress& w, SocketAddress* out) {
  sockaddr_storage storage{};  // aligned, unlike the packed wire bytes
  std::memcpy(&storage, w.bytes, sizeof(w.bytes));
  *out = SocketAddress::fromSockaddr(reinterpret_cast<const sockaddr*>(&storage), sizeof(storage));
  return out->valid() && out->port() != 0;
}

sscResult_t decodeId(const sscUniqueId& id, uint64_t* cookie, SocketAddress* root) {
  IdWire w;
  std::memcpy(&w, id.internal, sizeof(w));
  if (std::memcmp(w.magic, kIdMagic, sizeof(kIdMagic)) != 0)
    return fail(sscInvalidArgument, "malformed unique id: it was not made by sscGetUniqueId");
  if (w.version != kProtocolVersion) {
    return fail(sscInvalidArgument,
                "unique id has bootstrap protocol version {}, this library speaks {}", w.version,
                kProtocolVersion);
  }
  if (!decodeAddress(w.root, root))
    return fail(sscInvalidArgument, "malformed unique id: bad root address");
  *cookie = w.cookie;
  return sscSuccess;
}

// The cookie tells communicators apart, so ids made at the same moment on different hosts must
// differ: take it from the kernel's entropy pool.
sscResult_t randomCookie(uint64_t* cookie) {
  auto* bytes = reinterpret_cast<unsigned char*>(cookie);
  for (size_t got = 0; got < sizeof(*cookie);) {
    ssize_t n = ::getrandom(bytes + got, sizeof(*cookie) - got, 0);
    if (n > 0)
      got += static_cast<size_t>(n);
    else if (errno != EINTR)
      return fail(sscSystemError, "getrandom: {}", errnoString(errno));
  }
  return sscSuccess;
}

template <typename Wire>
Wire stamped(const char (&magic)[4]) {
  Wire w{};
  std::memcpy(w.magic, magic, sizeof(magic));
  return w;
}

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
  struct Client {  // connected, hello not read in full yet
    Socket sock;
    HelloWire hello{};
    size_t got = 0;
    Clock::time_point since;
    bool done = false;
  };
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

  // Returns true when the client is finished with: admitted, rejected or dropped. Clients
  // that close early or send junk are dropped without a word.
  bool readHello(Client& c) {
    char* buffer = reinterpret_cast<char*>(&c.hello);
    IoResult io = c.sock.tryRecv(buffer + c.got, sizeof(c.hello) - c.got);
    if (io.status == IoResult::kWouldBlock) return false;
    if (io.status != IoResult::kProgress) return true;
    c.got += io.bytes;
    if (c.got >= sizeof(kHelloMagic) && std::memcmp(buffer, kHelloMagic, sizeof(kHelloMagic)))
      return true;
    if (c.got < sizeof(c.hello)) return false;
    admit(std::move(c.sock), c.hello);
    return true;
  }

  // Why the rank that sent h may not join; empty when it may.
  std::string refusal(const HelloWire& hello) const {
    const PeerWire& h = hello.who;
    SocketAddress listen;
    if (h.version != kProtocolVersion) {
      return fmt::format(
          "bootstrap protocol mismatch: rank {} speaks version {}, the root {} "
          "(mixed Starscream builds?)",
          h.rank, h.version, kProtocolVersion);
    }
    if (h.cookie != cookie_)
      return "bootstrap cookie mismatch: this rank was given a unique id from another communicator";
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

  // A member speaks only when it disconnects (or misbehaves): either way its slot is freed,
  // so a rank that was aborted or restarted can join again.
  Members::iterator checkMember(Members::iterator it) {
    char probe;
    if (it->second.sock.tryRecv(&probe, 1).status == IoResult::kWouldBlock) return std::next(it);
    SSC_LOG(kInfo, "bootstrap root at {}: rank {} left before all ranks joined", address_,
            it->first);
    it = members_.erase(it);
    if (members_.empty()) nranks_ = 0, announcer_ = -1;  // nobody left to hold to their count
    return it;
  }

  void reply(const Socket& sock, int rank, sscResult_t result, const WireAddress& next,
             std::string_view message) {
    auto head = stamped<ReplyWire>(kReplyMagic);
    head.result = result;
    head.messageBytes = static_cast<uint32_t>(std::min<size_t>(message.size(), kMaxReplyMessage));
    head.next = next;
    std::string buffer(reinterpret_cast<const char*>(&head), sizeof(head));
    buffer.append(message.substr(0, head.messageBytes));
    // The reply fits the socket's send buffer many times over: this only waits on a rank
    // that stopped reading, and then not for long.
    sscResult_t res = sock.sendAll(buffer.data(), buffer.size(), Deadline::after(1.0), nullptr,
                                   fmt::format("rank {}", rank));
    if (res != sscSuccess) SSC_LOG(kInfo, "bootstrap root: could not answer rank {}", rank);
  }

  void finish() {
    for (const auto& [rank, member] : members_)
      reply(member.sock, rank, sscSuccess, members_.at((rank + 1) % nranks_).listen, "");
    SSC_LOG(kInfo, "bootstrap root at {}: all {} ranks joined", address_, nranks_);
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
};

// ---------------------------------------------------------------- ranks

// A connection to a rank's ring listener that has not identified itself yet.
struct RingCaller {
  Socket sock;
  std::string who;  // for messages
  Clock::time_point until;  // dropped when silent past this
  PeerWire hello{};
  size_t got = 0;
  bool done = false;
};

class TcpBootstrap final : public Bootstrap {
 public:
  TcpBootstrap(int rank, int nranks, uint64_t cookie, const std::atomic<bool>* abortFlag)
      : abortFlag_(abortFlag),
        timeout_(env::getDouble("STARSCREAM_TIMEOUT")),
        nextName_(fmt::format("rank {}", (rank + 1) % nranks)),
        prevName_(fmt::format("rank {}", (rank + nranks - 1) % nranks)) {
    rank_ = rank;
    nranks_ = nranks;
    cookie_ = cookie;
  }

  sscResult_t setUp(const SocketAddress& root) {
    const Deadline deadline = Deadline::after(timeout_);
    SocketAddress local, nextAddress;
    SSC_CHECK(selectListenAddress(&local));
    SSC_CHECK(Socket::listen(local, &listener_, &local));
    SSC_CHECK(joinRoot(root, local, deadline, &nextAddress));
    if (nranks_ > 1) {
      // Connect-and-send never waits on the previous rank, so this order cannot deadlock.
      SSC_CHECK(Socket::connect(nextAddress, deadline, abortFlag_, nextName_, &next_));
      const PeerWire me = identity(kPeerMagic);
      SSC_CHECK(next_.sendAll(&me, sizeof(me), deadline, abortFlag_, nextName_));
      SSC_CHECK(acceptPrevious(deadline));
      PeerWire ack;
      SSC_CHECK(next_.recvAll(&ack, sizeof(ack), deadline, abortFlag_, nextName_));
      if (!isPeer(ack, (rank_ + 1) % nranks_)) {
        return fail(sscRemoteError, "rank {}: the process at {} is not {} of this communicator",
                    rank_, nextAddress.toString(), nextName_);
      }
    }
    listener_.reset();  // the ring is complete: nobody else may connect
    SSC_LOG(kInfo, "bootstrap: rank {} of {} joined the ring (listening on {})", rank_, nranks_,
            local.toString());
    return sscSuccess;
  }

  sscResult_t allGather(void* data, size_t bytes) override {
    if (broken_) {
      return fail(sscRemoteError,
                  "rank {}: the bootstrap ring is unusable after an earlier failure", rank_);
    }
    if (bytes > 0 && data == nullptr) return fail(sscInvalidArgument, "allGather: data is null");
    if (bytes > SIZE_MAX / static_cast<size_t>(nranks_))
      return fail(sscInvalidArgument, "allGather: {} bytes per rank overflows", bytes);
    if (nranks_ == 1) return sscSuccess;

    // Any failure leaves the ring's byte streams at unknown offsets, so it is final.
    broken_ = true;
    const Deadline deadline = Deadline::after(timeout_);
    ++calls_;
    char* blocks = static_cast<char*>(data);
    for (int step = 0; step < nranks_ - 1; ++step) {
      const size_t sendBlock = static_cast<size_t>((rank_ - step + nranks_) % nranks_);
      const size_t recvBlock = static_cast<size_t>((rank_ - step - 1 + 2 * nranks_) % nranks_);
      // With bytes == 0 the headers alone carry the synchronisation: after n-1 steps every
      // rank has heard, through the ring, from every other rank in this call.
      const StepWire mine{calls_, static_cast<uint32_t>(step), bytes};
      StepWire theirs{};
      SSC_CHECK(sendRecvAll(next_, &mine, sizeof(mine), nextName_, prev_, &theirs, sizeof(theirs),
                            prevName_, deadline, abortFlag_));
      if (!(theirs == mine)) {
        return fail(sscInvalidUsage,
                    "bootstrap allGather mismatch: {} is in call {} step {} with {} bytes per "
                    "rank; rank {} is in call {} step {} with {} bytes per rank",
                    prevName_, theirs.call, theirs.step, theirs.bytes, rank_, mine.call, mine.step,
                    mine.bytes);
      }
      SSC_CHECK(sendRecvAll(next_, blocks + sendBlock * bytes, bytes, nextName_, prev_,
                            blocks + recvBlock * bytes, bytes, prevName_, deadline, abortFlag_));
    }
    broken_ = false;
    return sscSuccess;
  }

  sscResult_t barrier() override { return allGather(nullptr, 0); }

 private:
  PeerWire identity(const char (&magic)[4]) const {
    auto w = stamped<PeerWire>(magic);
    w.version = kProtocolVersion;
    w.cookie = cookie_;
    w.rank = rank_;
    w.nranks = nranks_;
    return w;
  }

  bool isPeer(const PeerWire& w, int expectedRank) const {
    return std::memcmp(w.magic, kPeerMagic, sizeof(kPeerMagic)) == 0 &&
           w.version == kProtocolVersion && w.cookie == cookie_ && w.nranks == nranks_ &&
           w.rank == expectedRank;
  }

  sscResult_t joinRoot(const SocketAddress& root, const SocketAddress& local,
                       const Deadline& deadline, SocketAddress* next) {
    const std::string rootName = fmt::format("the bootstrap root at {}", root.toString());
    Socket sock;
    SSC_CHECK(Socket::connect(root, deadline, abortFlag_, "the bootstrap root", &sock));
    const HelloWire hello{identity(kHelloMagic), encodeAddress(local)};
    SSC_CHECK(sock.sendAll(&hello, sizeof(hello), deadline, abortFlag_, rootName));

    ReplyWire reply;
    const std::string waitName =
        fmt::format("{}, which waits for every rank to join (nranks={})", rootName, nranks_);
    SSC_CHECK(sock.recvAll(&reply, sizeof(reply), deadline.extendedBy(kRootVerdictGrace),
                           abortFlag_, waitName));
    if (std::memcmp(reply.magic, kReplyMagic, sizeof(kReplyMagic)) != 0 || reply.result < 0 ||
        reply.result >= sscNumResults || reply.messageBytes > kMaxReplyMessage) {
      return fail(sscRemoteError, "rank {}: malformed reply from {}", rank_, rootName);
    }
    if (reply.result != sscSuccess) {
      std::string message(reply.messageBytes, '\0');
      SSC_CHECK(sock.recvAll(message.data(), message.size(), deadline.extendedBy(1s), abortFlag_,
                             rootName));
      return fail(static_cast<sscResult_t>(reply.result), "rank {}: {} (reported by {})", rank_,
                  message, rootName);
    }
    if (!decodeAddress(reply.next, next))
      return fail(sscRemoteError, "rank {}: {} sent a malformed address", rank_, rootName);
    SSC_LOG(kTrace, "bootstrap: rank {} admitted by {}; {} listens on {}", rank_, rootName,
            nextName_, next->toString());
    return sscSuccess;
  }

  // Serves every connection to the listener at once until the previous rank has identified
  // itself. Anything else that connects (a port scanner, an idle or foreign client, a rank of a
  // dead job that reused this port) gets kHandshakeGrace to do the same and is then dropped.
  // One poll(2) loop, as in the root: served one at a time, twenty idle clients held the real
  // neighbour off for 40 s.
  sscResult_t acceptPrevious(const Deadline& deadline) {
    const std::string what = fmt::format("the ring connection from {}", prevName_);
    std::vector<RingCaller> callers;
    std::vector<pollfd> fds;
    for (;;) {
      if (abortFlag_ != nullptr && abortFlag_->load())
        return fail(sscRemoteError, "aborted while waiting for {}", what);
      if (deadline.passed()) {
        return fail(sscTimeout, "timed out waiting for {} (STARSCREAM_TIMEOUT={:g} s)", what,
                    deadline.budgetSeconds());
      }
      // A negative fd is ignored by poll(2): that is how the listener pauses at the cap.
      fds.assign(1, {callers.size() < kMaxPendingClients ? listener_.fd() : -1, POLLIN, 0});
      for (const RingCaller& c : callers) fds.push_back({c.sock.fd(), POLLIN, 0});
      if (::poll(fds.data(), fds.size(), deadline.pollMs(kAbortPollMs)) < 0 && errno != EINTR)
        return fail(sscSystemError, "poll failed while waiting for {}: {}", what, errnoString(errno));
      for (size_t i = 0; i < callers.size(); ++i) {
        RingCaller& c = callers[i];
        if (fds[1 + i].revents == 0 && Clock::now() < c.until) continue;
        if (fds[1 + i].revents != 0) {
          char* buffer = reinterpret_cast<char*>(&c.hello);
          IoResult io = c.sock.tryRecv(buffer + c.got, sizeof(c.hello) - c.got);
          if (io.status == IoResult::kWouldBlock) continue;
          if (io.status == IoResult::kProgress) c.got += io.bytes;
          if (io.status == IoResult::kProgress && c.got < sizeof(c.hello)) continue;
        }
        c.done = true;  // complete, closed, failed or silent past its grace
        if (c.got == sizeof(c.hello) && isPeer(c.hello, (rank_ + nranks_ - 1) % nranks_)) {
          const PeerWire me = identity(kPeerMagic);
          SSC_CHECK(c.sock.sendAll(&me, sizeof(me), deadline, abortFlag_, prevName_));
          prev_ = std::move(c.sock);
          return sscSuccess;
        }
        SSC_LOG(kWarn, "bootstrap: rank {} turned away {}: it did not identify itself as {}",
                rank_, c.who, prevName_);
      }
      std::erase_if(callers, [](const RingCaller& c) { return c.done; });
      while (fds[0].revents != 0 && callers.size() < kMaxPendingClients) {
        RingCaller c;
        SocketAddress from;
        IoResult io = listener_.tryAccept(&c.sock, &from);
        if (io.status == IoResult::kWouldBlock) break;
        if (io.status == IoResult::kError) {
          // Typically EMFILE. The listener stays readable, so pause instead of spinning on it.
          SSC_LOG(kWarn, "bootstrap: rank {}: accept: {}", rank_, errnoString(io.error));
          ::poll(nullptr, 0, kAbortPollMs);
          break;
        }
        c.who = fmt::format("the client at {}", from.toString());
        c.until = Clock::now() + kHandshakeGrace;
        callers.push_back(std::move(c));
      }
    }
  }

  const std::atomic<bool>* abortFlag_;
  const double timeout_;  // STARSCREAM_TIMEOUT, read once at connect
  const std::string nextName_, prevName_;
  Socket listener_, next_, prev_;
  uint32_t calls_ = 0;
  bool broken_ = false;
};

}  // namespace

sscResult_t bootstrapCreateUniqueId(sscUniqueId* id) {
  if (id == nullptr) return fail(sscInvalidArgument, "sscGetUniqueId: uniqueId is null");
  // The root's join clock starts now, before any rank's: see kRootVerdictGrace.
  const Deadline deadline = Deadline::fromEnv();
  SocketAddress address;
  Socket listener;
  uint64_t cookie = 0;
  SSC_CHECK(selectListenAddress(&address));
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

sscResult_t Bootstrap::connect(const sscUniqueId& id, int rank, int nranks,
                               const std::atomic<bool>* abortFlag,
                               std::unique_ptr<Bootstrap>* out) {
  if (out == nullptr) return fail(sscInvalidArgument, "bootstrap: out is null");
  if (nranks < 1) return fail(sscInvalidArgument, "nranks must be at least 1 (got {})", nranks);
  if (rank < 0 || rank >= nranks)
    return fail(sscInvalidArgument, "rank {} is out of range for nranks={}", rank, nranks);
  uint64_t cookie = 0;
  SocketAddress root;
  SSC_CHECK(decodeId(id, &cookie, &root));
  auto bootstrap = std::make_unique<TcpBootstrap>(rank, nranks, cookie, abortFlag);
  SSC_CHECK(bootstrap->setUp(root));
  *out = std::move(bootstrap);
  return sscSuccess;
}

}  // namespace ssc
