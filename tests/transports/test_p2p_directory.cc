// SPDX-License-Identifier: MIT
// The directory of receive buffers behind one-copy point-to-point (transports/usr/p2p_directory.h),
// over a fake runtime: ranks are objects in one process sharing one segment, allocations are
// fake address ranges (nothing is dereferenced). What it must guarantee: a receive is offered
// only once its sender confirmed the mapping, never at a stale address; an entry or a mapping
// changes only once the work its rank queued before deciding to change it has finished, and then
// does even while newer work stays queued (a loop that never lets its rank go idle); pinned
// entries stay; memory that cannot be exported is never offered.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "transports/usr/p2p_directory.h"

namespace ssc::test {
namespace {

struct FakeHandle {
  int32_t owner;
  int32_t pad;
  uint64_t id;
};

class FakeRuntime : public PeerMemoryRuntime {
 public:
  explicit FakeRuntime(int rank) : rank_(rank) {}
  void alloc(uintptr_t base, size_t bytes) {
    allocs_[base] = PeerAllocation{base, bytes, ++nextId_ + 1000u * rank_};
  }
  void free(uintptr_t base) { allocs_.erase(base); }
  static uintptr_t mappedAt(int owner, uint64_t id) {
    return 0x7000'0000'0000ull + (static_cast<uintptr_t>(owner) << 36) + (id << 24);
  }
  bool query(const void* p, size_t bytes, PeerAllocation* out, std::string* why) override {
    const auto a = reinterpret_cast<uintptr_t>(p);
    auto it = allocs_.upper_bound(a);
    if (unshareable || it == allocs_.begin()) return *why = "fake: unshareable", false;
    --it;
    if (a + bytes > it->second.base + it->second.bytes) return false;
    *out = it->second;
    return true;
  }
  bool exportHandle(const PeerAllocation& a, uint8_t handle[kPeerHandleBytes],
                    std::string*) override {
    const FakeHandle h{rank_, 0, a.id};
    std::memset(handle, 0, kPeerHandleBytes);
    std::memcpy(handle, &h, sizeof(h));
    ++exports;
    return true;
  }
  bool open(const uint8_t handle[kPeerHandleBytes], const PeerAllocation& a, void** mapped,
            std::string*) override {
    FakeHandle h;
    std::memcpy(&h, handle, sizeof(h));
    EXPECT_EQ(h.id, a.id);
    EXPECT_EQ(open_.count({h.owner, h.id}), 0u) << "opened twice";
    open_.insert({h.owner, h.id});
    *mapped = reinterpret_cast<void*>(mappedAt(h.owner, h.id));
    return true;
  }
  void close(void* mapped, const PeerAllocation& a) override {
    for (auto it = open_.begin(); it != open_.end(); ++it)
      if (reinterpret_cast<void*>(mappedAt(it->first, it->second)) == mapped) {
        EXPECT_EQ(it->second, a.id);
        open_.erase(it);
        ++closes;
        return;
      }
    ADD_FAILURE() << "closing " << mapped << ", which is not open";
  }
  size_t openNow() const { return open_.size(); }

  bool unshareable = false;
  int exports = 0, closes = 0;

 private:
  int rank_;
  std::map<uintptr_t, PeerAllocation> allocs_;
  std::set<std::pair<int, uint64_t>> open_;
  uint64_t nextId_ = 0;
};

// A rank's work tickets: `issued` operations queued, the first `finished` of them done.
struct Clock {
  uint64_t issued = 0, finished = 0;
  void queue() { ++issued; }
  void finishAll() { finished = issued; }
};

struct World {
  explicit World(int n) : segment(P2pDirectory::segmentBytes(n) + 64, 0) {
    char* base = segment.data() + (64 - reinterpret_cast<uintptr_t>(segment.data()) % 64) % 64;
    for (int r = 0; r < n; ++r) {
      runtimes.push_back(std::make_unique<FakeRuntime>(r));
      clocks.push_back(std::make_unique<Clock>());
      Clock* c = clocks.back().get();
      dirs.push_back(std::make_unique<P2pDirectory>(
          base, r, n, runtimes.back().get(),
          WorkClock{[c] { return c->issued; }, [c](uint64_t t) { return t <= c->finished; }}));
    }
  }
  uint64_t offer(int owner, int sender, uintptr_t p, size_t bytes, int* pin = nullptr) {
    uint64_t at = 1;
    EXPECT_EQ(dirs[owner]->offer(sender, reinterpret_cast<const void*>(p), bytes, &at, pin),
              sscSuccess);
    return at;
  }
  void refresh(int sender, std::vector<int> owners, bool capturing = false) {
    EXPECT_EQ(dirs[sender]->refresh(owners, capturing), sscSuccess);
  }
  std::vector<char> segment;
  std::vector<std::unique_ptr<FakeRuntime>> runtimes;
  std::vector<std::unique_ptr<Clock>> clocks;
  std::vector<std::unique_ptr<P2pDirectory>> dirs;
};

constexpr uintptr_t kBuf = 0x1000'0000;

TEST(P2pDirectory, OffersOnlyWhatTheSenderConfirmed) {
  World w(3);
  w.runtimes[1]->alloc(kBuf, 1 << 20);
  EXPECT_EQ(w.offer(1, 0, kBuf + 64, 4096), 0u) << "first receive: exported, not offered";
  EXPECT_EQ(w.runtimes[1]->exports, 1);
  EXPECT_EQ(w.offer(1, 0, kBuf + 64, 4096), 0u) << "the sender has not mapped it yet";
  w.refresh(0, {1});
  const uint64_t mapped = FakeRuntime::mappedAt(1, 1001);
  EXPECT_EQ(w.offer(1, 0, kBuf + 64, 4096), mapped + 64)
      << "mapped: offered at the sender's address";
  EXPECT_EQ(w.offer(1, 2, kBuf + 64, 4096), 0u) << "rank 2 has not mapped it";
  w.refresh(0, {1});  // nothing new: opens nothing twice
  EXPECT_EQ(w.runtimes[0]->openNow(), 1u);
  EXPECT_EQ(w.dirs[1]->stats().oneCopyOffers, 1u);
}

TEST(P2pDirectory, MemoryThatCannotBeExportedIsNeverOffered) {
  World w(2);
  w.runtimes[1]->alloc(kBuf, 1 << 20);
  w.runtimes[1]->unshareable = true;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(w.offer(1, 0, kBuf, 100), 0u);
    w.refresh(0, {1});
  }
  EXPECT_EQ(w.runtimes[1]->exports, 0);
  EXPECT_EQ(w.offer(1, 1, kBuf, 100), 0u) << "to itself";
}

TEST(P2pDirectory, ReusedMemoryIsRetiredOnceEarlierWorkFinishedAndTheStaleMappingClosed) {
  World w(2);
  w.runtimes[1]->alloc(kBuf, 1 << 20);
  w.offer(1, 0, kBuf, 100);
  w.refresh(0, {1});
  ASSERT_NE(w.offer(1, 0, kBuf, 100), 0u);
  w.clocks[1]->queue();  // the owner's work naming the entry, not finished
  // The owner frees the allocation and gets another at the same address.
  w.runtimes[1]->free(kBuf);
  w.runtimes[1]->alloc(kBuf, 1 << 20);
  EXPECT_EQ(w.offer(1, 0, kBuf, 100), 0u);
  EXPECT_EQ(w.runtimes[1]->exports, 1) << "the entry changed while an offer could be in flight";
  w.clocks[1]->queue();       // the receive just made, through the FIFOs
  w.clocks[1]->finished = 1;  // the work queued before the decision: done; newer work is not
  EXPECT_EQ(w.offer(1, 0, kBuf, 100), 0u) << "retired and exported again";
  EXPECT_EQ(w.runtimes[1]->exports, 2) << "waited for work queued after the decision";
  // The sender withdraws its confirmation at once and closes once the work it had queued when it
  // saw the change has finished, though its newer work keeps it busy.
  w.clocks[0]->queue();
  w.refresh(0, {1});
  EXPECT_EQ(w.runtimes[0]->closes, 0) << "closed under a push that may still be queued";
  EXPECT_EQ(w.offer(1, 0, kBuf, 100), 0u) << "never the stale address";
  w.clocks[0]->queue();
  w.refresh(0, {1});
  EXPECT_EQ(w.runtimes[0]->closes, 0);
  w.clocks[0]->finished = 1;  // one launch still queued
  w.clocks[0]->queue();
  w.refresh(0, {1});
  EXPECT_EQ(w.runtimes[0]->closes, 1) << "waited for work queued after it saw the change";
  EXPECT_EQ(w.runtimes[0]->openNow(), 1u) << "the new allocation, mapped in the same refresh";
  EXPECT_EQ(w.offer(1, 0, kBuf, 100), FakeRuntime::mappedAt(1, 1002));
}

TEST(P2pDirectory, NothingClosesWhileCapturing) {
  World w(2);
  w.runtimes[1]->alloc(kBuf, 1 << 20);
  w.offer(1, 0, kBuf, 100);
  w.refresh(0, {1});
  w.runtimes[1]->free(kBuf);
  w.runtimes[1]->alloc(kBuf, 1 << 20);
  EXPECT_EQ(w.offer(1, 0, kBuf, 100), 0u);  // nothing queued anywhere: retired at once
  w.refresh(0, {1}, /*capturing=*/true);
  EXPECT_EQ(w.runtimes[0]->closes, 0);
  EXPECT_EQ(w.offer(1, 0, kBuf, 100), 0u);
  w.refresh(0, {1});
  EXPECT_EQ(w.runtimes[0]->closes, 1);
  EXPECT_NE(w.offer(1, 0, kBuf, 100), 0u);
}

TEST(P2pDirectory, AnEvictionIsCalledOffWhenTheEntryIsWantedAgain) {
  World w(2);
  const int n = P2pDirectory::kSlots;
  const auto at = [](int i) { return kBuf + (static_cast<uintptr_t>(i) << 24); };
  for (int i = 0; i <= n; ++i) w.runtimes[1]->alloc(at(i), 4096);
  for (int i = 0; i < n; ++i) w.offer(1, 0, at(i), 64);
  w.refresh(0, {1});
  w.clocks[1]->queue();  // a launch naming every entry, unfinished
  EXPECT_EQ(w.offer(1, 0, at(n), 64), 0u) << "evicts entry 0, once that launch finished";
  EXPECT_EQ(w.dirs[1]->stats().evictions, 1u);
  w.clocks[1]->queue();
  EXPECT_NE(w.offer(1, 0, at(0), 64), 0u) << "entry 0 wanted again: still mapped, still offered";
  w.clocks[1]->queue();
  w.clocks[1]->finishAll();
  EXPECT_EQ(w.offer(1, 0, at(n), 64), 0u) << "another entry goes instead";
  EXPECT_EQ(w.dirs[1]->stats().evictions, 2u);
  EXPECT_EQ(w.runtimes[1]->exports, n + 1);
  w.refresh(0, {1});
  EXPECT_EQ(w.runtimes[0]->closes, 1) << "the evicted entry's mapping";
  EXPECT_NE(w.offer(1, 0, at(0), 64), 0u) << "entry 0 kept";
  EXPECT_NE(w.offer(1, 0, at(n), 64), 0u);
}

TEST(P2pDirectory, LeastRecentlyUsedGoesAndPinnedEntriesStay) {
  World w(2);
  const int n = P2pDirectory::kSlots;
  for (int i = 0; i <= n; ++i) w.runtimes[1]->alloc(kBuf + (static_cast<uintptr_t>(i) << 24), 4096);
  for (int i = 0; i < n; ++i) w.offer(1, 0, kBuf + (static_cast<uintptr_t>(i) << 24), 64);
  w.refresh(0, {1});
  int pinned = -1;
  ASSERT_NE(w.offer(1, 0, kBuf, 64, &pinned), 0u);  // allocation 0 is now the most recent
  ASSERT_GE(pinned, 0);
  std::shared_ptr<P2pDirectory::Pin> pin = w.dirs[1]->pin(pinned);
  for (int i = 1; i < n; ++i)
    w.offer(1, 0, kBuf + (static_cast<uintptr_t>(i) << 24), 64);  // 0 is oldest now
  w.clocks[1]->queue();  // those offers' launch, finished: the next offer is another launch's
  w.clocks[1]->finishAll();
  EXPECT_EQ(w.offer(1, 0, kBuf + (static_cast<uintptr_t>(n) << 24), 64), 0u);
  EXPECT_EQ(w.dirs[1]->stats().evictions, 1u);
  EXPECT_NE(w.offer(1, 0, kBuf, 64), 0u) << "the pinned entry was evicted";
  pin->release();
  pin->release();  // idempotent
  w.refresh(0, {1});
  EXPECT_EQ(w.runtimes[0]->closes, 1) << "the evicted entry's mapping";
}

}  // namespace
}  // namespace ssc::test
