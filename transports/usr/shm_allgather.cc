// SPDX-License-Identifier: MIT
#include "transports/usr/shm_allgather.h"

#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "transports/peer_view.h"
#include "src/core/errors.h"
#include "src/core/log.h"
#include "src/core/shared_file.h"

namespace ssc {

struct alignas(64) ShmAllGather::Slot {
  std::atomic<uint64_t> ticket;  // written last (release): the record below is complete
  uint64_t bytes;
  char data[kMaxBytes];
};

struct alignas(64) ShmAllGather::RankArea {
  std::atomic<uint64_t> collected;  // highest ticket this rank has collected
  char pad[56];
  Slot slots[kDepth];
};

static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared counters must be lock-free");

size_t ShmAllGather::segmentBytes(int nranks) {
  return sizeof(RankArea) * static_cast<size_t>(nranks);
}

ShmAllGather::ShmAllGather(void* segment, int rank, int nranks, const std::atomic<bool>* abort,
                           double timeoutSeconds)
    : segment_(static_cast<char*>(segment)),
      rank_(rank),
      nranks_(nranks),
      abort_(abort),
      timeoutSeconds_(timeoutSeconds) {}

ShmAllGather::~ShmAllGather() {
  if (mappedBytes_ != 0) munmap(segment_, mappedBytes_);
}

ShmAllGather::RankArea* ShmAllGather::area(int q) const {
  return reinterpret_cast<RankArea*>(segment_ + sizeof(RankArea) * static_cast<size_t>(q));
}

sscResult_t ShmAllGather::waitFor(const char* what, uint64_t ticket,
                                  bool (*ready)(const ShmAllGather*, int, uint64_t)) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  for (uint64_t spins = 0;; ++spins) {
    bool all = true;
    for (int q = 0; q < nranks_ && all; ++q) all = ready(this, q, ticket);
    if (all) return sscSuccess;
    // Peers are usually microseconds behind: spin first, then yield the core (ranks may share
    // cores with each other and with the application's threads).
    if (spins < 2000) continue;
    sched_yield();
    if (spins % 256 != 0) continue;
    if (abort_ != nullptr && abort_->load(std::memory_order_relaxed))
      return fail(sscRemoteError, "{}: communicator aborted while waiting for peers", what);
    const double waited = std::chrono::duration<double>(Clock::now() - start).count();
    if (timeoutSeconds_ > 0 && waited > timeoutSeconds_) {
      std::string missing;
      for (int q = 0; q < nranks_; ++q)
        if (!ready(this, q, ticket)) missing += (missing.empty() ? "" : ", ") + std::to_string(q);
      return fail(sscTimeout,
                  "{}: rank(s) {} did not reach call {} within STARSCREAM_TIMEOUT "
                  "({} s): a peer is missing, hung, or issued different calls",
                  what, missing, ticket, timeoutSeconds_);
    }
  }
}

sscResult_t ShmAllGather::post(const void* record, size_t bytes, uint64_t* ticket) {
  if (bytes > kMaxBytes)
    return SSC_INTERNAL("shared all-gather record of {} bytes (at most {})", bytes, kMaxBytes);
  const uint64_t t = nextTicket_;
  if (t > kDepth)
    SSC_CHECK(waitFor("posting a call's buffers", t - kDepth,
                      [](const ShmAllGather* s, int q, uint64_t need) {
                        return s->area(q)->collected.load(std::memory_order_acquire) >= need;
                      }));
  Slot& slot = area(rank_)->slots[t % kDepth];
  std::memcpy(slot.data, record, bytes);
  slot.bytes = bytes;
  slot.ticket.store(t, std::memory_order_release);
  ++nextTicket_;
  *ticket = t;
  return sscSuccess;
}

sscResult_t ShmAllGather::collect(uint64_t ticket, void* all, size_t bytes) {
  SSC_CHECK(
      waitFor("agreeing on a call's buffers", ticket, [](const ShmAllGather* s, int q, uint64_t t) {
        return s->area(q)->slots[t % kDepth].ticket.load(std::memory_order_acquire) == t;
      }));
  for (int q = 0; q < nranks_; ++q) {
    const Slot& slot = area(q)->slots[ticket % kDepth];
    if (slot.bytes != bytes)
      return fail(sscInvalidUsage,
                  "rank {} posted a {}-byte record for call {} where this rank "
                  "posted {} (the ranks issued different calls)",
                  q, slot.bytes, ticket, bytes);
    std::memcpy(static_cast<char*>(all) + static_cast<size_t>(q) * bytes, slot.data, bytes);
  }
  area(rank_)->collected.store(ticket, std::memory_order_release);
  return sscSuccess;
}

namespace {

struct Where {
  int32_t pid;
  int32_t fd;
  int32_t ok;
  int32_t pad;
};

}  // namespace

sscResult_t ShmAllGather::createShared(PeerView* comm, std::unique_ptr<ShmAllGather>* out) {
  out->reset();
  const int n = comm->nranks, me = comm->rank;
  const size_t bytes = segmentBytes(n);
  std::vector<Where> where(n, Where{0, -1, 0, 0});
  std::string why;
  int fd = -1;
  void* mem = nullptr;
  if (me == 0) {
    createSharedFile("starscream-calls", bytes, &fd, &mem, &why);
    where[0] = Where{static_cast<int32_t>(getpid()), fd, mem != nullptr ? 1 : 0, 0};
  }
  SSC_CHECK(comm->bootstrap->allGather(where.data(), sizeof(Where)));
  if (where[0].ok && me != 0) mem = mapPeerFile(where[0].pid, where[0].fd, bytes, &why);
  // Everyone must have it mapped before anyone relies on it, and the creator's fd must stay open
  // until the peers have opened it through /proc; after that the mappings keep it alive.
  std::vector<int32_t> ok(n, 0);
  ok[me] = mem != nullptr ? 1 : 0;
  const sscResult_t r = comm->bootstrap->allGather(ok.data(), sizeof(int32_t));
  bool all = r == sscSuccess;
  for (int q = 0; q < n && all; ++q) all = ok[q] != 0;
  if (fd >= 0) close(fd);
  if (!all) {
    if (mem != nullptr) munmap(mem, bytes);
    if (r == sscSuccess)
      SSC_LOG(kInfo, "no shared call table ({}): calls on plain buffers cannot map their peers'",
              why.empty() ? "another rank could not map it" : why);
    return r;
  }
  auto s = std::make_unique<ShmAllGather>(mem, me, n, &comm->abortFlag, comm->waits.timeoutSeconds);
  s->mappedBytes_ = bytes;
  *out = std::move(s);
  return sscSuccess;
}

}  // namespace ssc
