// SPDX-License-Identifier: MIT
// The directory of receive buffers behind one-copy point-to-point (transports/usr/p2p_directory.h),
// over a fake runtime: ranks are objects in one process sharing one segment, allocations are
// fake address ranges (nothing is dereferenced). What it must guarantee: a receive is offered
// only once its sender confirmed the mapping, never at a stale address; entries change only while
// their rank has no work queued; pinned entries stay; memory that cannot be exported is never
// offered.
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

struct World {
  explicit World(int n) : segment(P2pDirectory::segmentBytes(n) + 64, 0) {
    char* base = segment.data() + (64 - reinterpret_cast<uintptr_t>(segment.data()) % 64) % 64;
    for (int r = 0; r < n; ++r) {
      runtimes.push_back(std::make_unique<FakeRuntime>(r));
      idle.push_back(std::make_unique<bool>(true));
      bool* on = idle.back().get();
      dirs.push_back(
          std::make_unique<P2pDirectory>(base, r, n, runtimes.back().get(), [on] { return *on; }));
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
  std::vector<std::unique_ptr<bool>> idle;
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

TEST(P2pDirectory, ReusedMemoryIsRetiredOnlyWhenIdleAndTheStaleMappingClosed) {
  World w(2);
  w.runtimes[1]->alloc(kBuf, 1 << 20);
  w.offer(1, 0, kBuf, 100);
  w.refresh(0, {1});
  ASSERT_NE(w.offer(1, 0, kBuf, 100), 0u);
  // The owner frees the allocation and gets another at the same address.
  w.runtimes[1]->free(kBuf);
  w.runtimes[1]->alloc(kBuf, 1 << 20);
  *w.idle[1] = false;  // work queued: an offer naming the old entry may be in flight
  EXPECT_EQ(w.offer(1, 0, kBuf, 100), 0u);
  EXPECT_EQ(w.runtimes[1]->exports, 1) << "the entry changed while work was queued";
  *w.idle[1] = true;
  EXPECT_EQ(w.offer(1, 0, kBuf, 100), 0u) << "retired and exported again";
  EXPECT_EQ(w.runtimes[1]->exports, 2);
  // The sender withdraws its confirmation at once, closes only when its own work is done.
  *w.idle[0] = false;
  w.refresh(0, {1});
  EXPECT_EQ(w.runtimes[0]->closes, 0);
  EXPECT_EQ(w.offer(1, 0, kBuf, 100), 0u) << "never the stale address";
  *w.idle[0] = true;
  w.refresh(0, {1});
  EXPECT_EQ(w.runtimes[0]->closes, 1);
  EXPECT_EQ(w.offer(1, 0, kBuf, 100), FakeRuntime::mappedAt(1, 1002));
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
