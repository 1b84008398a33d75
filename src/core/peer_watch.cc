#include "src/core/peer_watch.h"

#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
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

constexpr char kNoticeMagic[4] = {'S', 'S', 'C', 'N'};

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
};

// One communicator's watch (one rank).
struct Entry {
  int rank = 0;
  Link links[2];           // [0] to the successor, [1] from the predecessor
  std::set<int> reported;  // subjects already handed to the handler (each once)
  PeerEventHandler handler;
  ExitKind onExit;
  pid_t pid = 0;           // a forked child never speaks for its parent's communicators
};

NoticeWire makeNotice(PeerEventKind kind, int rank, int origin) {
  NoticeWire n{};
  std::memcpy(n.magic, kNoticeMagic, sizeof(n.magic));
  n.kind = static_cast<uint32_t>(kind);
  n.rank = rank;
  n.origin = origin;
  return n;
}

// Best effort: a notice is 16 bytes on a connection that carries nothing else, so it never waits
// for buffer space; a neighbour that is already gone cannot be told anything.
void sendNotice(const Link& link, const NoticeWire& n) {
  if (link.sock.valid()) (void)link.sock.trySend(&n, sizeof(n));
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
      SSC_LOG(kWarn, "peer watch: cannot start its thread ({}): a dead peer will be noticed only "
              "when STARSCREAM_TIMEOUT expires", e.what());
    }
  }

  void wake() {
    const uint64_t one = 1;
    if (wakeFd_ >= 0) (void)!::write(wakeFd_, &one, sizeof(one));
  }

  void run() {
    std::vector<pollfd> fds;
    std::vector<std::pair<uint64_t, int>> owners;  // (entry, link) of fds[i + 1]
    for (;;) {
      fds.assign(1, {wakeFd_, POLLIN, 0});
      owners.clear();
      {
        std::lock_guard<std::mutex> g(mu_);
        for (const auto& [id, e] : entries_)
          for (int i = 0; i < 2; ++i)
            if (e->links[i].sock.valid()) {
              fds.push_back({e->links[i].sock.fd(), POLLIN | POLLRDHUP, 0});
              owners.emplace_back(id, i);
            }
      }
      if (::poll(fds.data(), fds.size(), 1000) < 0 && errno != EINTR) {
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
      for (size_t k = 1; k < fds.size(); ++k) {
        if (fds[k].revents == 0) continue;
        // The entry may have been removed (and its fd number reused) since the poll set was made.
        auto it = entries_.find(owners[k - 1].first);
        if (it == entries_.end()) continue;
        Link& link = it->second->links[owners[k - 1].second];
        if (link.sock.fd() == fds[k].fd) service(*it->second, owners[k - 1].second);
      }
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
        const NoticeWire n = link.pending;
        const bool valid = std::memcmp(n.magic, kNoticeMagic, sizeof(kNoticeMagic)) == 0 &&
                           n.kind >= 1 && n.kind <= 3 && n.rank >= 0 && n.origin >= 0;
        if (!valid) {
          SSC_LOG(kWarn, "peer watch: rank {} got a malformed notice from rank {}; closing that "
                  "control connection", e.rank, link.peer);
          link.sock.reset();
          return;
        }
        report(e, side, PeerEvent{static_cast<PeerEventKind>(n.kind), n.rank, n.origin});
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
      for (const Link& link : e->links) sendNotice(link, n);
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
  }
  return "?";
}

std::unique_ptr<PeerWatch> PeerWatch::start(int rank, Socket toNext, int nextRank, Socket fromPrev,
                                            int prevRank, PeerEventHandler handler,
                                            ExitKind onExit) {
  auto e = std::make_unique<Entry>();
  e->rank = rank;
  e->links[0].sock = std::move(toNext);
  e->links[0].peer = nextRank;
  e->links[1].sock = std::move(fromPrev);
  e->links[1].peer = prevRank;
  e->handler = std::move(handler);
  e->onExit = std::move(onExit);
  e->pid = ::getpid();
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
