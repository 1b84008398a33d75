// SPDX-License-Identifier: MIT
#include "src/core/peer_watch.h"

#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <set>
#include <system_error>
#include <thread>
#include <vector>

#include "src/core/log.h"

namespace ssc {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kNoticeMagic[4] = {'S', 'S', 'C', 'N'};
// On the wire only: "I am alive", never forwarded nor reported. The other kinds are PeerEventKind.
constexpr uint32_t kHeartbeat = 5;
constexpr uint32_t kLastKind = kHeartbeat;

#pragma pack(push, 1)
struct NoticeWire {
  char magic[4];
  uint32_t kind;
  int32_t rank, origin;
};
#pragma pack(pop)

struct Link {
  Socket sock;
  int peer = -1;
  NoticeWire pending{};  // a notice read in part
  size_t got = 0;
  Clock::time_point heard;  // when this neighbour last sent anything (or the watch started)
  std::string outbox;       // what a full send buffer held back (a stopped neighbour reads nothing)
};

// One communicator's watch (one rank).
struct Entry {
  int rank = 0;
  Link links[2];           // [0] to the successor, [1] from the predecessor
  std::set<int> reported;  // subjects of died/aborted/left handed to the handler (each once)
  std::set<int> silent;    // subjects reported unresponsive (each once)
  PeerEventHandler handler;
  ExitKind onExit;
  pid_t pid = 0;  // a forked child never speaks for its parent's communicators
  WatchOptions options;
  Clock::duration period{};    // between two heartbeats
  Clock::time_point beatAt{};  // when the last heartbeat went out
};

bool judges(const Entry& e) { return e.options.heartbeatTimeout > 0; }

// Time the watcher thread did not run for longer than this (the process was stopped as a whole,
// or starved) is forgiven: the silence it saw spans its own absence, not only the peer's.
Clock::duration stallGap(const Entry& e) {
  const double seconds = std::min(1.0, e.options.heartbeatTimeout / 2);
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// "rank 3 (host h, pid p)", or "rank 3" when the watch was not told where it runs.
std::string rankName(const Entry& e, int rank) {
  if (rank >= 0 && static_cast<size_t>(rank) < e.options.where.size() &&
      !e.options.where[rank].empty())
    return fmt::format("rank {} ({})", rank, e.options.where[rank]);
  return fmt::format("rank {}", rank);
}

// The sentence a kUnresponsive event carries.
std::string silenceText(const Entry& e, int rank, int origin) {
  const double t = e.options.heartbeatTimeout;
  const std::string limit =
      t > 0 ? fmt::format("{:g} s (STARSCREAM_HEARTBEAT_TIMEOUT)", t)
            : std::string("the heartbeat timeout (STARSCREAM_HEARTBEAT_TIMEOUT)");
  if (rank == e.rank) {
    return fmt::format(
        "{} was declared unresponsive by rank {}: its heartbeat stopped for longer "
        "than the other ranks allow (the process was stopped, e.g. SIGSTOP or a "
        "debugger, or its host stalled), so they gave up on its calls",
        rankName(e, rank), origin);
  }
  return fmt::format(
      "{} is unresponsive: {} heard no heartbeat from it for more than {} (its "
      "process is stopped or frozen, e.g. SIGSTOP, a debugger or a cgroup freezer, "
      "or its host stalled)",
      rankName(e, rank),
      origin == e.rank ? std::string("this rank") : fmt::format("rank {}", origin), limit);
}

NoticeWire makeNotice(PeerEventKind kind, int rank, int origin) {
  NoticeWire n{};
  std::memcpy(n.magic, kNoticeMagic, sizeof(n.magic));
  n.kind = static_cast<uint32_t>(kind);
  n.rank = rank;
  n.origin = origin;
  return n;
}

// Best effort: a notice is 16 bytes on a connection that carries nothing else, so it rarely waits
// for buffer space; a neighbour that is already gone cannot be told anything. One that is stopped
// reads nothing while our heartbeats go on: what the buffer cannot take waits in the outbox, whole
// notices only, so the stream never loses its framing, and heartbeats are dropped rather than
// queued behind it.
constexpr size_t kMaxOutbox = 64 * sizeof(NoticeWire);

void flush(Link& link) {
  while (!link.outbox.empty() && link.sock.valid()) {
    const IoResult io = link.sock.trySend(link.outbox.data(), link.outbox.size());
    if (io.status != IoResult::kProgress) return;
    link.outbox.erase(0, io.bytes);
  }
}

void sendNotice(Link& link, const NoticeWire& n) {
  if (!link.sock.valid()) return;
  flush(link);
  if (!link.outbox.empty()) {
    if (n.kind != kHeartbeat && link.outbox.size() < kMaxOutbox)
      link.outbox.append(reinterpret_cast<const char*>(&n), sizeof(n));
    return;
  }
  const IoResult io = link.sock.trySend(&n, sizeof(n));
  const size_t sent = io.status == IoResult::kProgress ? io.bytes : 0;
  if (io.status == IoResult::kProgress || io.status == IoResult::kWouldBlock)
    link.outbox.assign(reinterpret_cast<const char*>(&n) + sent, sizeof(n) - sent);
}

// The process-wide watcher: one thread polls every communicator's control connections. Leaked on
// purpose (it may be needed by atexit handlers after static destructors ran); replaced in a forked
// child, which inherits neither the thread nor a usable lock.
class Watcher {
 public:
  static Watcher& get() {
    static std::once_flag once;
    std::call_once(once, [] {
      // The child has no watcher thread, and a lock held by another thread at the fork would
      // stay held forever there: start over (the parent's watcher is leaked in the child).
      pthread_atfork(nullptr, nullptr, [] {
        new (&instanceMu()) std::mutex();
        instance() = nullptr;
      });
      std::atexit([] {
        if (Watcher* w = instance()) w->announceExit();
      });
    });
    std::lock_guard<std::mutex> g(instanceMu());
    if (instance() == nullptr) instance() = new Watcher();
    return *instance();
  }

  uint64_t add(std::unique_ptr<Entry> entry) {
    std::lock_guard<std::mutex> g(mu_);
    // Silence is counted from now; the first heartbeat goes out at once.
    for (Link& link : entry->links) link.heard = Clock::now();
    startThreadLocked();
    const uint64_t id = next_++;
    entries_.emplace(id, std::move(entry));
    wake();
    return id;
  }

  // Stops watching: after this returns the entry's handler never runs again.
  void remove(uint64_t id, PeerEventKind announce) {
    std::lock_guard<std::mutex> g(mu_);
    auto it = entries_.find(id);
    if (it == entries_.end()) return;
    Entry& e = *it->second;
    const NoticeWire n = makeNotice(announce, e.rank, e.rank);
    for (Link& link : e.links) {
      if (!link.sock.valid()) continue;
      sendNotice(link, n);
      // Read what the neighbour sent meanwhile: closing with unread data would reset the
      // connection, and the reset could overtake the notice just sent.
      char sink[256];
      while (link.sock.tryRecv(sink, sizeof(sink)).status == IoResult::kProgress) {
      }
      ::shutdown(link.sock.fd(), SHUT_WR);
      link.sock.reset();
    }
    entries_.erase(it);
    wake();
  }

 private:
  static Watcher*& instance() {
    static Watcher* w = nullptr;
    return w;
  }
  static std::mutex& instanceMu() {
    static std::mutex mu;
    return mu;
  }

  Watcher() : wakeFd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}

  void startThreadLocked() {
    if (started_) return;
    try {
      std::thread([this] { run(); }).detach();
      started_ = true;
    } catch (const std::system_error& e) {
      SSC_LOG(kWarn,
              "peer watch: cannot start its thread ({}): a dead peer will be noticed only "
              "when STARSCREAM_TIMEOUT expires",
              e.what());
    }
  }

  void wake() {
    const uint64_t one = 1;
    if (wakeFd_ >= 0) (void)!::write(wakeFd_, &one, sizeof(one));
  }

  void run() {
    std::vector<pollfd> fds;
    std::vector<std::pair<uint64_t, int>> owners;  // (entry, link) of fds[i + 1]
    Clock::time_point lastPass = Clock::now();
    for (;;) {
      fds.assign(1, {wakeFd_, POLLIN, 0});
      owners.clear();
      int waitMs = 1000;  // until the next heartbeat is due, at most
      {
        std::lock_guard<std::mutex> g(mu_);
        const auto now = Clock::now();
        for (const auto& [id, e] : entries_) {
          for (int i = 0; i < 2; ++i)
            if (e->links[i].sock.valid()) {
              fds.push_back({e->links[i].sock.fd(), POLLIN | POLLRDHUP, 0});
              owners.emplace_back(id, i);
            }
          const auto due =
              std::chrono::ceil<std::chrono::milliseconds>(e->beatAt + e->period - now);
          waitMs = static_cast<int>(std::clamp<int64_t>(due.count(), 0, waitMs));
        }
      }
      if (::poll(fds.data(), fds.size(), waitMs) < 0 && errno != EINTR) {
        SSC_LOG(kWarn, "peer watch: poll failed: {}", errnoString(errno));
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        continue;
      }
      if (fds[0].revents != 0) {
        uint64_t count;
        (void)!::read(wakeFd_, &count, sizeof(count));
      }
      std::lock_guard<std::mutex> g(mu_);
      // The process is exiting: static objects the handlers use may already be gone.
      if (exiting_) return;
      const auto now = Clock::now();
      const auto away = now - lastPass;
      lastPass = now;
      for (auto& [id, e] : entries_)
        if (away > stallGap(*e))
          for (Link& link : e->links) link.heard = std::max(link.heard, now);
      for (size_t k = 1; k < fds.size(); ++k) {
        if (fds[k].revents == 0) continue;
        // The entry may have been removed (and its fd number reused) since the poll set was made.
        auto it = entries_.find(owners[k - 1].first);
        if (it == entries_.end()) continue;
        Link& link = it->second->links[owners[k - 1].second];
        if (link.sock.fd() == fds[k].fd) service(*it->second, owners[k - 1].second);
      }
      for (auto& [id, e] : entries_) beat(*e, now);
    }
  }

  // Sends this rank's heartbeat when due, and reports a neighbour silent past the timeout.
  void beat(Entry& e, Clock::time_point now) {
    if (now - e.beatAt >= e.period) {
      const NoticeWire n = makeNotice(static_cast<PeerEventKind>(kHeartbeat), e.rank, e.rank);
      for (Link& link : e.links) sendNotice(link, n);
      e.beatAt = now;
    }
    if (!judges(e)) return;
    const auto limit = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(e.options.heartbeatTimeout));
    for (int side = 0; side < 2; ++side) {
      Link& link = e.links[side];
      if (!link.sock.valid() || now - link.heard <= limit) continue;
      const PeerEvent ev{PeerEventKind::kUnresponsive, link.peer, e.rank};
      // The silent rank itself is told too: if it comes back, it learns that the others gave
      // up on it instead of waiting for them.
      if (reportSilence(e, side, ev)) sendNotice(link, makeNotice(ev.kind, ev.rank, ev.origin));
    }
  }

  // Reads what a control connection has; a close without a notice from that neighbour is its death.
  void service(Entry& e, int side) {
    Link& link = e.links[side];
    for (;;) {
      char* buffer = reinterpret_cast<char*>(&link.pending);
      IoResult io = link.sock.tryRecv(buffer + link.got, sizeof(link.pending) - link.got);
      if (io.status == IoResult::kWouldBlock) return;
      if (io.status == IoResult::kProgress) {
        link.got += io.bytes;
        if (link.got < sizeof(link.pending)) continue;
        link.got = 0;
        link.heard = std::max(link.heard, Clock::now());
        const NoticeWire n = link.pending;
        const bool valid = std::memcmp(n.magic, kNoticeMagic, sizeof(kNoticeMagic)) == 0 &&
                           n.kind >= 1 && n.kind <= kLastKind && n.rank >= 0 && n.origin >= 0;
        if (!valid) {
          SSC_LOG(kWarn,
                  "peer watch: rank {} got a malformed notice from rank {}; closing that "
                  "control connection",
                  e.rank, link.peer);
          link.sock.reset();
          return;
        }
        if (n.kind == kHeartbeat) continue;
        const PeerEvent ev{static_cast<PeerEventKind>(n.kind), n.rank, n.origin};
        if (ev.kind == PeerEventKind::kUnresponsive)
          reportSilence(e, side, ev);
        else
          report(e, side, ev);
        continue;
      }
      // Closed or failed: if the neighbour said nothing first, the kernel closed it for a
      // process that no longer exists.
      link.sock.reset();
      report(e, side, PeerEvent{PeerEventKind::kDied, link.peer, e.rank});
      return;
    }
  }

  // Hands a new event to the handler once per subject, and passes it on around the ring.
  void report(Entry& e, int from, const PeerEvent& ev) {
    if (ev.rank == e.rank || !e.reported.insert(ev.rank).second) return;
    sendNotice(e.links[1 - from], makeNotice(ev.kind, ev.rank, ev.origin));
    SSC_LOG(kInfo, "peer watch: rank {} learned that rank {} {} (noticed by rank {})", e.rank,
            ev.rank, peerEventName(ev.kind), ev.origin);
    deliver(e, ev);
  }

  // The same for a silence, once per subject; a verdict about this rank itself (the others gave
  // up on it while it was stopped) is handed over but goes no further. True when it was new.
  bool reportSilence(Entry& e, int from, PeerEvent ev) {
    if (!e.silent.insert(ev.rank).second) return false;
    if (ev.rank != e.rank) sendNotice(e.links[1 - from], makeNotice(ev.kind, ev.rank, ev.origin));
    ev.detail = silenceText(e, ev.rank, ev.origin);
    SSC_LOG(kInfo, "peer watch: rank {}: {}", e.rank, ev.detail);
    deliver(e, ev);
    return true;
  }

  void deliver(Entry& e, const PeerEvent& ev) {
    try {
      e.handler(ev);
    } catch (...) {
      SSC_LOG(kWarn, "peer watch: the handler of rank {} threw", e.rank);
    }
  }

  // At normal process exit: every watched communicator of this process says goodbye, so its
  // peers do not mistake the exit for a crash.
  void announceExit() {
    std::lock_guard<std::mutex> g(mu_);
    exiting_ = true;
    for (auto& [id, e] : entries_) {
      if (e->pid != ::getpid()) continue;
      const PeerEventKind kind = e->onExit ? e->onExit() : PeerEventKind::kLeft;
      const NoticeWire n = makeNotice(kind, e->rank, e->rank);
      for (Link& link : e->links) sendNotice(link, n);
    }
  }

  std::mutex mu_;
  std::map<uint64_t, std::unique_ptr<Entry>> entries_;
  uint64_t next_ = 1;
  bool started_ = false;
  bool exiting_ = false;
  const int wakeFd_;
};

}  // namespace

const char* peerEventName(PeerEventKind kind) {
  switch (kind) {
    case PeerEventKind::kDied: return "died";
    case PeerEventKind::kAborted: return "aborted";
    case PeerEventKind::kLeft: return "left";
    case PeerEventKind::kUnresponsive: return "unresponsive";
  }
  return "?";
}

std::chrono::milliseconds heartbeatPeriod(double timeoutSeconds) {
  constexpr std::chrono::milliseconds kPeriod{250};
  if (!(timeoutSeconds > 0) || timeoutSeconds >= 1.0) return kPeriod;
  return std::max(std::chrono::milliseconds(10),
                  std::chrono::milliseconds(static_cast<int64_t>(timeoutSeconds * 250)));
}

std::unique_ptr<PeerWatch> PeerWatch::start(int rank, Socket toNext, int nextRank, Socket fromPrev,
                                            int prevRank, PeerEventHandler handler, ExitKind onExit,
                                            WatchOptions options) {
  auto e = std::make_unique<Entry>();
  e->rank = rank;
  e->links[0].sock = std::move(toNext);
  e->links[0].peer = nextRank;
  e->links[1].sock = std::move(fromPrev);
  e->links[1].peer = prevRank;
  e->handler = std::move(handler);
  e->onExit = std::move(onExit);
  e->pid = ::getpid();
  if (!std::isfinite(options.heartbeatTimeout)) options.heartbeatTimeout = 0;
  e->period = heartbeatPeriod(options.heartbeatTimeout);
  e->options = std::move(options);
  const uint64_t id = Watcher::get().add(std::move(e));
  return std::unique_ptr<PeerWatch>(new PeerWatch(id));
}

void PeerWatch::announce(PeerEventKind kind) {
  if (id_ == 0) return;
  Watcher::get().remove(id_, kind);
  id_ = 0;
}

PeerWatch::~PeerWatch() { announce(PeerEventKind::kAborted); }

}  // namespace ssc
