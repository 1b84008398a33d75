// SPDX-License-Identifier: MIT
#include "src/core/bootstrap.h"

#include <poll.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
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
#include "src/core/bootstrap_wire.h"
#include "src/core/peer_watch.h"
#include "src/core/socket.h"

namespace ssc {
namespace {

using namespace bootstrap_wire;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// ---------------------------------------------------------------- ranks

// A connection to a rank's ring listener that has not identified itself yet.
struct RingCaller {
  Socket sock;
  std::string who;          // for messages
  Clock::time_point until;  // dropped when silent past this
  PeerWire hello{};
  size_t got = 0;
  bool done = false;
};

// Where this process runs, for the messages that name a rank: "host h, pid p".
struct WhereWire {
  char host[64];
  int64_t pid;
};

class TcpBootstrap final : public Bootstrap {
 public:
  TcpBootstrap(int rank, int nranks, uint64_t cookie, const std::atomic<bool>* abortFlag,
               const BootstrapOptions& options)
      : abortFlag_(abortFlag),
        timeout_(options.timeoutSeconds),
        heartbeatTimeout_(options.heartbeatTimeout),
        ifname_(options.socketIfname),
        nextName_(fmt::format("rank {}", (rank + 1) % nranks)),
        prevName_(fmt::format("rank {}", (rank + nranks - 1) % nranks)) {
    rank_ = rank;
    nranks_ = nranks;
    cookie_ = cookie;
  }

  ~TcpBootstrap() override {
    watch_.reset();
    if (holdsRoot_) formedRootRelease(cookie_);
  }

  sscResult_t setUp(const SocketAddress& root) {
    const Deadline deadline = Deadline::after(timeout_);
    SocketAddress local, nextAddress;
    SSC_CHECK(selectListenAddress(ifname_, &local));
    SSC_CHECK(Socket::listen(local, &listener_, &local));
    SSC_CHECK(joinRoot(root, local, deadline, &nextAddress));
    if (nranks_ > 1) {
      // Connect-and-send never waits on the previous rank, so this order cannot deadlock.
      // Two connections to the successor: the ring's data, and the peer watch's notices.
      for (const char* magic : {kPeerMagic, kWatchMagic}) {
        Socket& sock = magic == kPeerMagic ? next_ : watchNext_;
        // Its listener was up before the root handed out its address, and stays until this
        // rank's connections arrived: a refusal means it is gone.
        if (sscResult_t r = Socket::connect(nextAddress, deadline, abortFlag_, nextName_, &sock,
                                            Socket::Refused::kMeansGone);
            r != sscSuccess) {
          if (r != sscRemoteError || aborted()) return r;
          return fail(r, "rank {}: {} died during init: {}", rank_, nextName_, lastError());
        }
        const PeerWire me = identity(magic);
        SSC_CHECK(sock.sendAll(&me, sizeof(me), deadline, abortFlag_, nextName_));
      }
      SSC_CHECK(acceptPrevious(deadline));
      for (const char* magic : {kPeerMagic, kWatchMagic}) {
        const Socket& sock = magic == kPeerMagic ? next_ : watchNext_;
        PeerWire ack;
        SSC_CHECK(sock.recvAll(&ack, sizeof(ack), deadline, abortFlag_, nextName_));
        if (!isPeer(ack, (rank_ + 1) % nranks_, magic)) {
          return fail(sscRemoteError, "rank {}: the process at {} is not {} of this communicator",
                      rank_, nextAddress.toString(), nextName_);
        }
      }
    }
    listener_.reset();  // the ring is complete: nobody else may connect
    SSC_CHECK(gatherWhere());
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
    struct Busy {
      std::atomic<int>& n;
      explicit Busy(std::atomic<int>& c) : n(c) { ++n; }
      ~Busy() { --n; }
    } busy(busy_);
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

  void startWatch(PeerEventHandler handler, ExitKind onExit) override {
    if (nranks_ == 1 || watch_ != nullptr) return;
    WatchOptions options;
    options.heartbeatTimeout = heartbeatTimeout_;
    options.where = where_;
    watch_ = PeerWatch::start(rank_, std::move(watchNext_), (rank_ + 1) % nranks_,
                              std::move(watchPrev_), (rank_ + nranks_ - 1) % nranks_,
                              std::move(handler), std::move(onExit), std::move(options));
  }

  void stopWatch(PeerEventKind announce) override {
    if (watch_ != nullptr) watch_->announce(announce);
  }

  bool busy() const override { return busy_.load() != 0; }

 private:
  bool aborted() const { return abortFlag_ != nullptr && abortFlag_->load(); }

  // Every rank's host and pid, so that messages about a rank say where it runs.
  sscResult_t gatherWhere() {
    if (nranks_ == 1) return sscSuccess;
    std::vector<WhereWire> all(static_cast<size_t>(nranks_));
    std::memset(all.data(), 0, all.size() * sizeof(WhereWire));
    WhereWire& mine = all[static_cast<size_t>(rank_)];
    (void)::gethostname(mine.host, sizeof(mine.host) - 1);
    mine.pid = static_cast<int64_t>(::getpid());
    SSC_CHECK(allGather(all.data(), sizeof(WhereWire)));
    where_.clear();
    for (WhereWire& w : all) {
      w.host[sizeof(w.host) - 1] = '\0';
      where_.push_back(fmt::format("host {}, pid {}", w.host, w.pid));
    }
    return sscSuccess;
  }

  // `magic`: one of the 4-byte k*Magic arrays.
  PeerWire identity(const char* magic) const {
    PeerWire w{};
    std::memcpy(w.magic, magic, sizeof(w.magic));
    w.version = kProtocolVersion;
    w.cookie = cookie_;
    w.rank = rank_;
    w.nranks = nranks_;
    return w;
  }

  bool isPeer(const PeerWire& w, int expectedRank, const char* magic) const {
    return std::memcmp(w.magic, magic, sizeof(w.magic)) == 0 && w.version == kProtocolVersion &&
           w.cookie == cookie_ && w.nranks == nranks_ && w.rank == expectedRank;
  }

  sscResult_t joinRoot(const SocketAddress& root, const SocketAddress& local,
                       const Deadline& deadline, SocketAddress* next) {
    const std::string rootName = fmt::format("the bootstrap root at {}", root.toString());
    // The root lives in the process that called sscGetUniqueId, for as long as that process runs
    // (and, once the communicator formed, while that process keeps it): it listened before the
    // unique id existed, so a refused connection means it is gone, not that it is not up yet.
    const char* rootGone =
        "the process that called sscGetUniqueId exited or crashed, or its root closed (the "
        "communicator this unique id made was destroyed, or never formed); a unique id works "
        "only while its root runs";
    Socket sock;
    if (sscResult_t r = Socket::connect(root, deadline, abortFlag_, "the bootstrap root", &sock,
                                        Socket::Refused::kMeansGone);
        r != sscSuccess) {
      if (r != sscRemoteError || aborted()) return r;
      return fail(r, "rank {}: {} is gone: {} ({})", rank_, rootName, rootGone, lastError());
    }
    const HelloWire hello{identity(kHelloMagic), encodeAddress(local)};
    SSC_CHECK(sock.sendAll(&hello, sizeof(hello), deadline, abortFlag_, rootName));

    ReplyWire reply;
    const std::string waitName =
        fmt::format("{}, which waits for every rank to join (nranks={})", rootName, nranks_);
    if (sscResult_t r = sock.recvAll(&reply, sizeof(reply), deadline.extendedBy(kRootVerdictGrace),
                                     abortFlag_, waitName);
        r != sscSuccess) {
      // Giving up (an abort, a timeout) withdraws, so the root frees this rank's slot and the job
      // may still form; only a connection closed without it (the process died) makes the root
      // fail the others.
      (void)sock.trySend(&kWithdraw, 1);
      if (r == sscRemoteError && !aborted()) {
        return fail(r, "rank {}: {} went away before every rank joined: {} ({})", rank_, rootName,
                    rootGone, lastError());
      }
      return r;
    }
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
    // When the root runs in this process, it answers late joiners of this id until this rank's
    // bootstrap is destroyed.
    holdsRoot_ = formedRootHold(cookie_);
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
    const int prevRank = (rank_ + nranks_ - 1) % nranks_;
    // Until both of the predecessor's connections (data, then or before it the watch) arrived.
    while (!prev_.valid() || !watchPrev_.valid()) {
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
        return fail(sscSystemError, "poll failed while waiting for {}: {}", what,
                    errnoString(errno));
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
        const bool complete = c.got == sizeof(c.hello);
        for (const char* magic : {kPeerMagic, kWatchMagic}) {
          Socket& slot = magic == kPeerMagic ? prev_ : watchPrev_;
          if (!complete || slot.valid() || !isPeer(c.hello, prevRank, magic)) continue;
          const PeerWire me = identity(magic);
          SSC_CHECK(c.sock.sendAll(&me, sizeof(me), deadline, abortFlag_, prevName_));
          slot = std::move(c.sock);
        }
        if (!c.sock.valid()) continue;  // taken
        SSC_LOG(kWarn, "bootstrap: rank {} turned away {}: it did not identify itself as {}", rank_,
                c.who, prevName_);
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
    return sscSuccess;
  }

  const std::atomic<bool>* abortFlag_;
  const double timeout_;            // BootstrapOptions: fixed when the communicator was created
  const double heartbeatTimeout_;   // STARSCREAM_HEARTBEAT_TIMEOUT, as the peer watch takes it
  const std::string ifname_;        // STARSCREAM_SOCKET_IFNAME
  std::vector<std::string> where_;  // by rank: "host h, pid p"
  bool holdsRoot_ = false;
  const std::string nextName_, prevName_;
  Socket listener_, next_, prev_;
  Socket watchNext_, watchPrev_;  // handed to the peer watch by startWatch
  std::unique_ptr<PeerWatch> watch_;
  std::atomic<int> busy_{0};
  uint32_t calls_ = 0;
  bool broken_ = false;
};

}  // namespace

BootstrapOptions BootstrapOptions::from(const env::Snapshot& settings) {
  BootstrapOptions options;
  options.timeoutSeconds = settings.getDouble("STARSCREAM_TIMEOUT");
  // As the peer watch takes it: 0 (never) for <= 0, NaN or infinity; at least 1 s otherwise
  // (the heartbeat goes every 250 ms whatever a rank's own setting).
  const double t = settings.getDouble("STARSCREAM_HEARTBEAT_TIMEOUT");
  options.heartbeatTimeout = !(t > 0) || !std::isfinite(t) ? 0 : std::max(t, 1.0);
  options.socketIfname = settings.getString("STARSCREAM_SOCKET_IFNAME");
  return options;
}

sscResult_t Bootstrap::connect(const sscUniqueId& id, int rank, int nranks,
                               const std::atomic<bool>* abortFlag, const BootstrapOptions& options,
                               std::unique_ptr<Bootstrap>* out) {
  if (out == nullptr) return fail(sscInvalidArgument, "bootstrap: out is null");
  if (nranks < 1) return fail(sscInvalidArgument, "nranks must be at least 1 (got {})", nranks);
  if (rank < 0 || rank >= nranks)
    return fail(sscInvalidArgument, "rank {} is out of range for nranks={}", rank, nranks);
  uint64_t cookie = 0;
  SocketAddress root;
  SSC_CHECK(decodeId(id, &cookie, &root));
  auto bootstrap = std::make_unique<TcpBootstrap>(rank, nranks, cookie, abortFlag, options);
  SSC_CHECK(bootstrap->setUp(root));
  *out = std::move(bootstrap);
  return sscSuccess;
}

}  // namespace ssc
