// The bootstrap root: serves one communicator's joins (see bootstrap.h).
#include <poll.h>

#include <exception>
#include <map>
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

  void failMembers() {
    const std::string message = fmt::format(
        "rank {} died while the communicator was being created (its connection to the bootstrap "
        "root closed before all {} ranks joined)", dead_, nranks_);
    SSC_LOG(kInfo, "bootstrap root at {}: {}", address_, message);
    for (const auto& [rank, member] : members_)
      if (rank != dead_) reply(member.sock, rank, sscRemoteError, WireAddress{}, message);
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
  int dead_ = -1;  // a member whose connection closed without withdrawing
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


}  // namespace ssc
