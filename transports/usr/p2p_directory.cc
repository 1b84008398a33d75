// SPDX-License-Identifier: MIT
#include "transports/usr/p2p_directory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "src/core/errors.h"
#include "src/core/log.h"
#include "src/core/shared_file.h"

namespace ssc {

// One exported allocation of an owner, written by the owner only: `gen` is 0 while the slot is
// empty or being rewritten and is stored last (release), so a reader that sees the same non-zero
// generation before and after copying the rest has a consistent copy (a sequence lock).
struct alignas(64) P2pDirectory::Slot {
  std::atomic<uint64_t> gen;
  uint64_t base, bytes, id;
  uint8_t handle[kPeerHandleBytes];
};

// A sender's confirmation that it has the owner's slot of generation `gen` mapped at `at`;
// written by the sender only (`at` first, then `gen` with release; `gen` is cleared before the
// mapping is closed).
struct P2pDirectory::Confirm {
  std::atomic<uint64_t> gen;
  uint64_t at;
};

static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared counters must be lock-free");

namespace {
size_t slotsBytes(int nranks) {
  return sizeof(P2pDirectory::Slot) * static_cast<size_t>(nranks) * P2pDirectory::kSlots;
}
}  // namespace

size_t P2pDirectory::segmentBytes(int nranks) {
  const size_t n = static_cast<size_t>(nranks);
  return slotsBytes(nranks) + sizeof(Confirm) * n * n * kSlots;
}

P2pDirectory::P2pDirectory(void* segment, int rank, int nranks, PeerMemoryRuntime* runtime,
                           WorkClock work)
    : seg_(static_cast<char*>(segment)),
      rank_(rank),
      nranks_(nranks),
      runtime_(runtime),
      work_(std::move(work)),
      own_(kSlots),
      pins_(new std::atomic<int>[kSlots]),
      mapped_(static_cast<size_t>(nranks), std::vector<Mapped>(kSlots)) {
  for (int s = 0; s < kSlots; ++s) pins_[s].store(0);
}

P2pDirectory::~P2pDirectory() {
  release();
  if (mappedBytes_ != 0) munmap(seg_, mappedBytes_);
}

P2pDirectory::Slot* P2pDirectory::slot(int owner, int s) const {
  return reinterpret_cast<Slot*>(seg_) + static_cast<size_t>(owner) * kSlots + s;
}

P2pDirectory::Confirm* P2pDirectory::confirm(int owner, int sender, int s) const {
  auto* base = reinterpret_cast<Confirm*>(seg_ + slotsBytes(nranks_));
  return base + (static_cast<size_t>(owner) * nranks_ + sender) * kSlots + s;
}

// Finds a slot for the new allocation `a` (a free one, else one already retiring, else the least
// recently offered one that no graph pins and no offer of the launch being built names) and
// exports it there. Slots of this owner whose allocation overlaps `a` held memory that was freed
// and reused: they are retired at the same time. A slot to change stops being offered at once
// and changes once the work queued before that has finished (offers naming it may be in flight
// there; a sender closes its mapping when it sees the generation change). *out = -1 until then,
// and when every slot is pinned or in use by this launch: the receive takes the FIFOs, and a
// later launch tries again.
sscResult_t P2pDirectory::claimSlot(const PeerAllocation& a, int* out) {
  *out = -1;
  const uint64_t now = work_.issued();
  std::vector<int> retire;
  for (int s = 0; s < kSlots; ++s) {
    const Own& o = own_[s];
    if (o.gen != 0 && o.alloc.base < a.base + a.bytes && a.base < o.alloc.base + o.alloc.bytes)
      retire.push_back(s);
  }
  int target = -1;
  for (int s = 0; s < kSlots && target < 0; ++s)
    if (own_[s].gen == 0) target = s;
  if (target < 0 && !retire.empty()) target = retire.front();
  for (int s = 0; s < kSlots && target < 0; ++s)
    if (own_[s].retiring && pins_[s].load() == 0) target = s;
  if (target < 0) {
    for (int s = 0; s < kSlots; ++s)
      if (pins_[s].load() == 0 && own_[s].lastTicket < now &&
          (target < 0 || own_[s].lastUse < own_[target].lastUse))
        target = s;
    if (target < 0) return sscSuccess;
    ++stats_.evictions;
  }
  if (own_[target].gen != 0 && std::find(retire.begin(), retire.end(), target) == retire.end())
    retire.push_back(target);
  bool finished = true;
  for (int s : retire) {
    Own& o = own_[s];
    if (!o.retiring) {
      o.retiring = true;
      o.retireTicket = now;
    }
    if (!work_.finished(o.retireTicket)) finished = false;
  }
  if (!finished) return sscSuccess;
  for (int s : retire) {
    slot(rank_, s)->gen.store(0, std::memory_order_release);
    own_[s] = Own{};
  }
  Own& o = own_[target];
  o.alloc = a;
  o.gen = ++nextGen_;
  o.lastUse = clock_;
  o.lastTicket = now;
  Slot* sl = slot(rank_, target);
  sl->gen.store(0, std::memory_order_release);
  uint8_t handle[kPeerHandleBytes];
  std::string why;
  if (!runtime_->exportHandle(a, handle, &why)) {
    o.failed = true;  // never offered; the slot is reused like any other
    SSC_LOG(kInfo,
            "point-to-point: cannot export a receive buffer's allocation ({}); its "
            "receives take the FIFOs",
            why);
    *out = target;
    return sscSuccess;
  }
  sl->base = a.base;
  sl->bytes = a.bytes;
  sl->id = a.id;
  std::memcpy(sl->handle, handle, kPeerHandleBytes);
  sl->gen.store(o.gen, std::memory_order_release);
  ++stats_.exports;
  *out = target;
  return sscSuccess;
}

sscResult_t P2pDirectory::offer(int sender, const void* p, size_t bytes, uint64_t* peerAddress,
                                int* pinSlot) {
  *peerAddress = 0;
  ++stats_.offers;
  ++clock_;
  if (sender == rank_ || sender < 0 || sender >= nranks_ || bytes == 0) return sscSuccess;
  PeerAllocation a;
  std::string why;
  if (!runtime_->query(p, bytes, &a, &why)) return sscSuccess;  // not exportable: the FIFOs
  int s = -1;
  for (int i = 0; i < kSlots && s < 0; ++i)
    if (own_[i].gen != 0 && own_[i].alloc.id == a.id && own_[i].alloc.base == a.base) s = i;
  if (s < 0) return claimSlot(a, &s);  // the sender maps it at its next launch
  Own& o = own_[s];
  // Chosen for eviction but wanted again: nothing has changed yet (the generation changes only
  // once the ticket finished), so the eviction is called off and another slot is chosen.
  o.retiring = false;
  o.lastUse = clock_;
  o.lastTicket = work_.issued();
  if (o.failed) return sscSuccess;
  const Confirm* c = confirm(rank_, sender, s);
  if (c->gen.load(std::memory_order_acquire) != o.gen) return sscSuccess;
  *peerAddress = c->at + (reinterpret_cast<uintptr_t>(p) - a.base);
  ++stats_.oneCopyOffers;
  if (pinSlot != nullptr) *pinSlot = s;
  return sscSuccess;
}

std::shared_ptr<P2pDirectory::Pin> P2pDirectory::pin(int s) {
  return std::make_shared<Pin>(&pins_[s]);
}

sscResult_t P2pDirectory::refresh(const std::vector<int>& owners, bool capturing) {
  if (released_) return sscSuccess;
  struct Change {
    int owner, s;
  };
  std::vector<Change> stale, fresh;
  for (int owner : owners) {
    if (owner == rank_ || owner < 0 || owner >= nranks_) continue;
    for (int s = 0; s < kSlots; ++s) {
      const uint64_t g = slot(owner, s)->gen.load(std::memory_order_acquire);
      Mapped& m = mapped_[owner][s];
      if (g == m.gen) continue;
      if (m.at != nullptr)
        stale.push_back({owner, s});
      else if (g != 0)
        fresh.push_back({owner, s});
      else
        m = Mapped{};
    }
  }
  // The owner changed these slots once its work that could offer them had finished. Withdraw
  // the confirmations now; close (a push of ours into an earlier offer may still be queued) once
  // the work this rank had queued by now has finished, never while capturing: until then the
  // slot stays unconfirmed and its receives take the FIFOs.
  const uint64_t now = stale.empty() ? 0 : work_.issued();
  for (const Change& c : stale) {
    Mapped& m = mapped_[c.owner][c.s];
    if (!m.closing) {
      confirm(c.owner, rank_, c.s)->gen.store(0, std::memory_order_release);
      m.closing = true;
      m.closeTicket = now;
    }
    if (capturing || !work_.finished(m.closeTicket)) continue;
    runtime_->close(m.at, m.alloc);
    ++stats_.closes;
    m = Mapped{};
    fresh.push_back(c);
  }
  for (const Change& c : fresh) {
    Slot* sl = slot(c.owner, c.s);
    const uint64_t g = sl->gen.load(std::memory_order_acquire);
    if (g == 0) continue;
    PeerAllocation a{sl->base, sl->bytes, sl->id};
    uint8_t handle[kPeerHandleBytes];
    std::memcpy(handle, sl->handle, kPeerHandleBytes);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (sl->gen.load(std::memory_order_relaxed) != g) continue;  // rewritten meanwhile: later
    // Memory freed and reused at the same place: the runtime refuses to map the new allocation
    // while a mapping of the old one is open here ("already mapped", CUDA), so wait until that
    // one is closed (a later launch).
    bool shadowed = false;
    for (int s = 0; s < kSlots && !shadowed; ++s) {
      const Mapped& o = mapped_[c.owner][s];
      shadowed = s != c.s && o.at != nullptr && o.alloc.base < a.base + a.bytes &&
                 a.base < o.alloc.base + o.alloc.bytes &&
                 slot(c.owner, s)->gen.load(std::memory_order_acquire) != o.gen;
    }
    if (shadowed) continue;
    Mapped& m = mapped_[c.owner][c.s];
    void* at = nullptr;
    std::string why;
    if (!runtime_->open(handle, a, &at, &why)) {
      SSC_LOG(kInfo,
              "point-to-point: cannot map rank {}'s receive buffer ({}); sends to it "
              "into that allocation take the FIFOs",
              c.owner, why);
      m = Mapped{g, nullptr, a, true};
      continue;
    }
    m = Mapped{g, at, a, false};
    ++stats_.opens;
    Confirm* cf = confirm(c.owner, rank_, c.s);
    cf->at = reinterpret_cast<uint64_t>(at);
    cf->gen.store(g, std::memory_order_release);
  }
  return sscSuccess;
}

void P2pDirectory::release() {
  if (released_) return;
  released_ = true;
  for (int owner = 0; owner < nranks_; ++owner)
    for (int s = 0; s < kSlots; ++s) {
      Mapped& m = mapped_[owner][s];
      if (m.at == nullptr) continue;
      confirm(owner, rank_, s)->gen.store(0, std::memory_order_release);
      runtime_->close(m.at, m.alloc);
      ++stats_.closes;
      m = Mapped{};
    }
}

namespace {
struct Where {
  int32_t pid;
  int32_t fd;
  int32_t ok;
  int32_t pad;
};
}  // namespace

sscResult_t P2pDirectory::createShared(PeerView* comm, PeerMemoryRuntime* runtime, WorkClock work,
                                       std::unique_ptr<P2pDirectory>* out) {
  out->reset();
  const int n = comm->nranks, me = comm->rank;
  const size_t bytes = segmentBytes(n);
  std::vector<Where> where(n, Where{0, -1, 0, 0});
  std::string why;
  int fd = -1;
  void* mem = nullptr;
  if (me == 0) {
    createSharedFile("starscream-p2p", bytes, &fd, &mem, &why);
    where[0] = Where{static_cast<int32_t>(getpid()), fd, mem != nullptr ? 1 : 0, 0};
  }
  SSC_CHECK(comm->bootstrap->allGather(where.data(), sizeof(Where)));
  if (where[0].ok && me != 0) mem = mapPeerFile(where[0].pid, where[0].fd, bytes, &why);
  // Every rank must have it mapped before any relies on it; the creator's fd stays open until
  // the peers have opened it through /proc.
  std::vector<int32_t> ok(n, 0);
  ok[me] = mem != nullptr ? 1 : 0;
  const sscResult_t r = comm->bootstrap->allGather(ok.data(), sizeof(int32_t));
  bool all = r == sscSuccess;
  for (int q = 0; q < n && all; ++q) all = ok[q] != 0;
  if (fd >= 0) close(fd);
  if (!all) {
    if (mem != nullptr) munmap(mem, bytes);
    if (r == sscSuccess)
      SSC_LOG(kInfo, "no shared point-to-point directory ({}): sends and receives take the FIFOs",
              why.empty() ? "another rank could not map it" : why);
    return r;
  }
  auto d = std::make_unique<P2pDirectory>(mem, me, n, runtime, std::move(work));
  d->mappedBytes_ = bytes;
  *out = std::move(d);
  return sscSuccess;
}

}  // namespace ssc
