// SPDX-License-Identifier: MIT
// The cache of peers' plain buffers (transports/usr/peer_cache.h) over a fake runtime: ranks
// are threads sharing one in-process call table, allocations are fake address ranges, and the
// runtime counts exports, opens and closes. Covers reuse (steady state opens nothing), an
// allocation freed and another made at the same address, LRU eviction, fingerprint mismatch,
// unshareable buffers, failed opens, the ring wrapping, one thread driving several ranks, a
// missing rank timing out, and calls captured into graphs (confirmed at once, pinned mappings).
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "transports/usr/peer_cache.h"
#include "transports/usr/shm_allgather.h"

namespace ssc::test {
namespace {

struct FakeHandle {
  int32_t owner;
  int32_t pad;
  uint64_t id;
};

// One "process": its allocations (fake address ranges, ids never reused) and what it opened.
class FakeRuntime : public PeerMemoryRuntime {
 public:
  explicit FakeRuntime(int rank) : rank_(rank) {}

  // A fake allocation at `base` (any address; nothing is dereferenced).
  void alloc(uintptr_t base, size_t bytes) {
    std::lock_guard<std::mutex> g(mu_);
    allocs_[base] = PeerAllocation{base, bytes, ++nextId_};
  }
  void free(uintptr_t base) {
    std::lock_guard<std::mutex> g(mu_);
    allocs_.erase(base);
  }
  // Where this process maps peer `owner`'s allocation `id` (distinct per pair).
  static uintptr_t mappedAt(int owner, uint64_t id) {
    return 0x7000'0000'0000ull + (static_cast<uintptr_t>(owner) << 36) + (id << 24);
  }

  bool query(const void* p, size_t bytes, PeerAllocation* out, std::string* why) override {
    std::lock_guard<std::mutex> g(mu_);
    if (unshareable) {
      *why = "fake: unshareable";
      return false;
    }
    const auto a = reinterpret_cast<uintptr_t>(p);
    auto it = allocs_.upper_bound(a);
    if (it == allocs_.begin()) return false;
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
            std::string* why) override {
    FakeHandle h;
    std::memcpy(&h, handle, sizeof(h));
    EXPECT_EQ(h.id, a.id) << "the handle and the posted allocation disagree";
    if (failOpens) {
      *why = "fake: open fails";
      return false;
    }
    std::lock_guard<std::mutex> g(mu_);
    const auto key = std::make_pair(h.owner, h.id);
    EXPECT_EQ(open_.count(key), 0u)
        << "export " << h.id << " of rank " << h.owner << " opened twice";
    open_.insert(key);
    *mapped = reinterpret_cast<void*>(mappedAt(h.owner, h.id));
    ++opens;
    return true;
  }
  void close(void* mapped, const PeerAllocation& a) override {
    std::lock_guard<std::mutex> g(mu_);
    for (auto it = open_.begin(); it != open_.end(); ++it)
      if (reinterpret_cast<void*>(mappedAt(it->first, it->second)) == mapped) {
        EXPECT_EQ(it->second, a.id);
        open_.erase(it);
        ++closes;
        return;
      }
    ADD_FAILURE() << "closing " << mapped << ", which is not open";
  }
  size_t openNow() {
    std::lock_guard<std::mutex> g(mu_);
    return open_.size();
  }

  std::atomic<bool> unshareable{false};
  std::atomic<bool> failOpens{false};
  std::atomic<int> exports{0}, opens{0}, closes{0};

 private:
  int rank_;
  std::mutex mu_;
  std::map<uintptr_t, PeerAllocation> allocs_;
  std::set<std::pair<int, uint64_t>> open_;
  uint64_t nextId_ = 0;
};

// n ranks: runtimes, caches over one shared segment, and a quiesce counter per rank.
struct World {
  World(int n, size_t capacity, double timeout = 20)
      : n(n), segment(ShmAllGather::segmentBytes(n) + 64) {
    char* base = segment.data();
    base += (64 - reinterpret_cast<uintptr_t>(base) % 64) % 64;  // slots are cache-line aligned
    for (int r = 0; r < n; ++r) {
      runtimes.push_back(std::make_unique<FakeRuntime>(r));
      quiesces.push_back(std::make_unique<std::atomic<int>>(0));
      std::atomic<int>* q = quiesces.back().get();
      caches.push_back(std::make_unique<PeerMemoryCache>(
          runtimes[r].get(), std::make_unique<ShmAllGather>(base, r, n, nullptr, timeout),
          [q] {
            ++*q;
            return sscSuccess;
          },
          capacity));
    }
  }
  // Runs body(rank) on n threads and waits for them.
  void onEveryRank(const std::function<void(int)>& body) {
    std::vector<std::thread> ts;
    for (int r = 0; r < n; ++r) ts.emplace_back(body, r);
    for (auto& t : ts) t.join();
  }
  int n;
  std::vector<char> segment;
  std::vector<std::unique_ptr<FakeRuntime>> runtimes;
  std::vector<std::unique_ptr<std::atomic<int>>> quiesces;
  std::vector<std::unique_ptr<PeerMemoryCache>> caches;
};

// Rank r's buffer k: a distinct fake address per (rank, k), the same on no two ranks (as in
// separate processes, where addresses differ anyway).
uintptr_t bufferAt(int rank, int k) { return 0x1000'0000ull * (rank + 1) + 0x10'0000ull * k; }
constexpr size_t kAllocBytes = 1 << 20;

PeerMemoryCache::Request allReduce(int rank, int in, int out, size_t bytes = 4096,
                                   uint64_t fp = 42) {
  PeerMemoryCache::Request q;
  q.fingerprint = fp;
  q.ptr[0] = reinterpret_cast<void*>(bufferAt(rank, in) + 256);  // not at the allocation start
  q.ptr[1] = reinterpret_cast<void*>(bufferAt(rank, out));
  q.bytes[0] = q.bytes[1] = bytes;
  q.inPlace = in == out;
  return q;
}

sscResult_t call(PeerMemoryCache& c, const PeerMemoryCache::Request& q,
                 PeerMemoryCache::Result* res) {
  uint64_t ticket = 0;
  sscResult_t r = c.post(q, &ticket);
  if (r != sscSuccess) return r;
  r = c.finish(ticket, q, res);
  if (r != sscSuccess) return r;
  return c.confirm(q, res);  // a captured call's second exchange (a no-op otherwise)
}

PeerMemoryCache::Request captured(PeerMemoryCache::Request q) {
  q.captured = true;
  return q;
}

TEST(PeerCache, SteadyStateReusesExportsAndOpensNothing) {
  World w(4, 8);
  for (int r = 0; r < 4; ++r)
    w.runtimes[r]->alloc(bufferAt(r, 0), kAllocBytes),
        w.runtimes[r]->alloc(bufferAt(r, 1), kAllocBytes);
  w.onEveryRank([&](int r) {
    PeerMemoryCache& c = *w.caches[r];
    for (int i = 0; i < 50; ++i) {  // 50 calls: the 8-slot ring wraps several times
      PeerMemoryCache::Result res;
      ASSERT_EQ(call(c, allReduce(r, 0, 1), &res), sscSuccess);
      // A new export is used from the call after it was opened everywhere.
      EXPECT_EQ(res.zeroCopy, i > 0) << "call " << i;
      if (!res.zeroCopy) continue;
      for (int q = 0; q < 4; ++q) {
        const uintptr_t in = q == r ? bufferAt(r, 0) + 256 : FakeRuntime::mappedAt(q, 1) + 256;
        const uintptr_t out = q == r ? bufferAt(r, 1) : FakeRuntime::mappedAt(q, 2);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(res.peers[0][q]), in);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(res.peers[1][q]), out);
      }
    }
  });
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(w.runtimes[r]->exports.load(), 2) << "rank " << r;
    EXPECT_EQ(w.runtimes[r]->opens.load(), 2 * 3) << "rank " << r;
    EXPECT_EQ(w.runtimes[r]->closes.load(), 0) << "rank " << r;
    EXPECT_EQ(w.caches[r]->stats().zeroCopyCalls, 49u);
  }
  for (auto& c : w.caches) c->release();
  for (int r = 0; r < 4; ++r)
    EXPECT_EQ(w.runtimes[r]->openNow(), 0u) << "release left mappings open";
}

TEST(PeerCache, FreedAndReallocatedAtTheSameAddressIsANewExport) {
  World w(3, 8);
  for (int r = 0; r < 3; ++r) w.runtimes[r]->alloc(bufferAt(r, 0), kAllocBytes);
  w.onEveryRank([&](int r) {
    PeerMemoryCache& c = *w.caches[r];
    PeerMemoryCache::Result res;
    ASSERT_EQ(call(c, allReduce(r, 0, 0), &res), sscSuccess);
    ASSERT_EQ(call(c, allReduce(r, 0, 0), &res), sscSuccess);
    ASSERT_TRUE(res.zeroCopy);
    EXPECT_EQ(res.anyInPlace, true);
  });
  // Rank 1 frees its buffer and gets a new allocation at the very same address.
  w.runtimes[1]->free(bufferAt(1, 0));
  w.runtimes[1]->alloc(bufferAt(1, 0), kAllocBytes);
  w.onEveryRank([&](int r) {
    PeerMemoryCache& c = *w.caches[r];
    PeerMemoryCache::Result res;
    ASSERT_EQ(call(c, allReduce(r, 0, 0), &res), sscSuccess);
    EXPECT_FALSE(res.zeroCopy) << "the new allocation was not opened everywhere yet";
    ASSERT_EQ(call(c, allReduce(r, 0, 0), &res), sscSuccess);
    ASSERT_TRUE(res.zeroCopy);
    if (r != 1) {
      // Rank 1's new allocation has id 2: never the stale mapping of id 1.
      EXPECT_EQ(reinterpret_cast<uintptr_t>(res.peers[0][1]), FakeRuntime::mappedAt(1, 2) + 256);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(res.peers[1][1]), FakeRuntime::mappedAt(1, 2));
    }
    EXPECT_EQ(c.entries(1), 1u) << "the dead allocation's entry is still held";
  });
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(w.runtimes[r]->closes.load(), r == 1 ? 0 : 1) << "rank " << r;
    EXPECT_EQ(w.runtimes[r]->exports.load(), r == 1 ? 2 : 1) << "rank " << r;
  }
}

// A registration of memory an owner allocated where a buffer this cache maps used to be
// (sscCommRegister calls dropOverlapping on every rank first): the stale mapping is closed now,
// on every rank alike, and the allocation itself (same id) is kept; calls go on zero-copy.
TEST(PeerCache, DropOverlappingClosesStaleMappingsOnEveryRankAlike) {
  World w(3, 8);
  for (int r = 0; r < 3; ++r) w.runtimes[r]->alloc(bufferAt(r, 0), kAllocBytes);
  w.onEveryRank([&](int r) {
    PeerMemoryCache::Result res;
    ASSERT_EQ(call(*w.caches[r], allReduce(r, 0, 0), &res), sscSuccess);
    ASSERT_EQ(call(*w.caches[r], allReduce(r, 0, 0), &res), sscSuccess);
    ASSERT_TRUE(res.zeroCopy);
  });
  // Rank 1 frees its buffer and allocates another at the same address (id 2), to register it.
  w.runtimes[1]->free(bufferAt(1, 0));
  w.runtimes[1]->alloc(bufferAt(1, 0), kAllocBytes);
  PeerAllocation fresh, kept;
  std::string why;
  ASSERT_TRUE(w.runtimes[1]->query(reinterpret_cast<void*>(bufferAt(1, 0)), 8, &fresh, &why));
  ASSERT_TRUE(w.runtimes[0]->query(reinterpret_cast<void*>(bufferAt(0, 0)), 8, &kept, &why));
  for (int r = 0; r < 3; ++r) {
    const int before = w.quiesces[r]->load();
    ASSERT_EQ(w.caches[r]->dropOverlapping(1, fresh), sscSuccess);
    ASSERT_EQ(w.caches[r]->dropOverlapping(0, kept), sscSuccess);  // rank 0's very allocation
    EXPECT_EQ(w.caches[r]->entries(1), 0u) << "rank " << r;
    EXPECT_EQ(w.caches[r]->entries(0), 1u) << "rank " << r;
    EXPECT_EQ(w.runtimes[r]->closes.load(), r == 1 ? 0 : 1) << "rank " << r;
    if (r != 1) {
      EXPECT_GT(w.quiesces[r]->load(), before) << "closed before the queued work drained";
    }
  }
  w.onEveryRank([&](int r) {
    PeerMemoryCache::Result res;
    ASSERT_EQ(call(*w.caches[r], allReduce(r, 0, 0), &res), sscSuccess);
    EXPECT_FALSE(res.zeroCopy);  // rank 1's new allocation is opened by this call
    ASSERT_EQ(call(*w.caches[r], allReduce(r, 0, 0), &res), sscSuccess);
    ASSERT_TRUE(res.zeroCopy);
    if (r != 1) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(res.peers[0][1]), FakeRuntime::mappedAt(1, 2) + 256);
    }
  });
  for (auto& c : w.caches) c->release();
  for (int r = 0; r < 3; ++r) EXPECT_EQ(w.runtimes[r]->openNow(), 0u);
}

TEST(PeerCache, LeastRecentlyUsedExportsAreEvictedOnEveryRankAlike) {
  World w(3, 2);  // two exports per rank
  for (int r = 0; r < 3; ++r)
    for (int k = 0; k < 3; ++k) w.runtimes[r]->alloc(bufferAt(r, k), kAllocBytes);
  w.onEveryRank([&](int r) {
    PeerMemoryCache& c = *w.caches[r];
    PeerMemoryCache::Result res;
    for (int k : {0, 1, 0, 2}) ASSERT_EQ(call(c, allReduce(r, k, k), &res), sscSuccess);
    // 1 was the least recently used when 2 arrived.
    for (int q = 0; q < 3; ++q) EXPECT_EQ(c.entries(q), 2u);
    ASSERT_EQ(call(c, allReduce(r, 0, 0), &res), sscSuccess);
    EXPECT_TRUE(res.zeroCopy) << "0 should have survived";
    ASSERT_EQ(call(c, allReduce(r, 1, 1), &res), sscSuccess);
    EXPECT_FALSE(res.zeroCopy) << "1 was evicted: exported again";
    ASSERT_EQ(call(c, allReduce(r, 1, 1), &res), sscSuccess);
    EXPECT_TRUE(res.zeroCopy);
  });
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(w.runtimes[r]->exports.load(), 4) << "rank " << r;  // 0, 1, 2, 1 again
    EXPECT_GE(w.runtimes[r]->closes.load(), 2 * 2) << "rank " << r;
    EXPECT_LE(w.runtimes[r]->openNow(), 2u * 2u) << "more than capacity x peers mapped";
    EXPECT_GT(w.quiesces[r]->load(), 0) << "closed mappings without draining the work first";
  }
}

TEST(PeerCache, DifferentCallsOnTheRanksFailEverywhereThenRecover) {
  World w(3, 8);
  for (int r = 0; r < 3; ++r) w.runtimes[r]->alloc(bufferAt(r, 0), kAllocBytes);
  w.onEveryRank([&](int r) {
    PeerMemoryCache& c = *w.caches[r];
    PeerMemoryCache::Result res;
    EXPECT_EQ(call(c, allReduce(r, 0, 0, 4096, r == 2 ? 7 : 42), &res), sscInvalidUsage)
        << "rank " << r;
    EXPECT_FALSE(res.zeroCopy);
    ASSERT_EQ(call(c, allReduce(r, 0, 0), &res), sscSuccess);
    EXPECT_TRUE(res.zeroCopy) << "the tables must still agree after a mismatch";
  });
}

TEST(PeerCache, OneUnshareableRankKeepsEveryRankOffZeroCopy) {
  World w(3, 8);
  for (int r = 0; r < 3; ++r) w.runtimes[r]->alloc(bufferAt(r, 0), kAllocBytes);
  w.runtimes[2]->unshareable = true;
  w.onEveryRank([&](int r) {
    PeerMemoryCache::Result res;
    for (int i = 0; i < 4; ++i) {
      ASSERT_EQ(call(*w.caches[r], allReduce(r, 0, 0), &res), sscSuccess);
      EXPECT_FALSE(res.zeroCopy) << "rank " << r << " call " << i;
    }
    EXPECT_TRUE(w.caches[r]->enabled());
  });
}

TEST(PeerCache, FailedOpensFallBackEverywhereAndEventuallyStopTrying) {
  World w(3, 8);
  for (int r = 0; r < 3; ++r) w.runtimes[r]->alloc(bufferAt(r, 0), kAllocBytes);
  w.runtimes[1]->failOpens = true;
  w.onEveryRank([&](int r) {
    PeerMemoryCache::Result res;
    for (int i = 0; i < 10; ++i) {
      ASSERT_EQ(call(*w.caches[r], allReduce(r, 0, 0), &res), sscSuccess);
      EXPECT_FALSE(res.zeroCopy) << "rank " << r << " call " << i;
    }
    EXPECT_FALSE(w.caches[r]->enabled()) << "rank " << r;
  });
  // Rank 0 and 2 opened, then closed, what rank 1 could not: nothing stays mapped.
  for (int r = 0; r < 3; ++r) {
    w.caches[r]->release();
    EXPECT_EQ(w.runtimes[r]->openNow(), 0u);
  }
}

// A program that allocates a buffer per call and frees it right after: a slow peer's open of
// the new export can fail because the owner already freed it (on the host runtime the memfd is
// gone; on the GPU the IPC handle). Those failures never repeat for one allocation, so they must
// not turn zero-copy off: later calls on buffers that live on get it.
TEST(PeerCache, FailuresOfAllocationsNeverPostedAgainDoNotTurnZeroCopyOff) {
  World w(3, 8);
  w.runtimes[1]->failOpens = true;  // every open fails, as if each owner had freed already
  w.onEveryRank([&](int r) {
    PeerMemoryCache::Result res;
    for (int i = 0; i < 12; ++i) {
      w.runtimes[r]->alloc(bufferAt(r, i), kAllocBytes);  // a fresh allocation per call
      ASSERT_EQ(call(*w.caches[r], allReduce(r, i, i), &res), sscSuccess);
      EXPECT_FALSE(res.zeroCopy) << "rank " << r << " call " << i;
    }
    EXPECT_TRUE(w.caches[r]->enabled()) << "rank " << r << ": one-off failures turned it off";
  });
  w.runtimes[1]->failOpens = false;
  std::atomic<int> zeroCopy{0};
  w.onEveryRank([&](int r) {
    PeerMemoryCache::Result res;
    w.runtimes[r]->alloc(bufferAt(r, 20), kAllocBytes);
    for (int i = 0; i < 3; ++i) {  // the first call exports, the others run zero-copy
      ASSERT_EQ(call(*w.caches[r], allReduce(r, 20, 20), &res), sscSuccess);
      zeroCopy += res.zeroCopy ? 1 : 0;
    }
  });
  EXPECT_EQ(zeroCopy.load(), 3 * 2);
}

TEST(PeerCache, OneThreadDrivingSeveralRanksPostsAllBeforeWaiting) {
  World w(2, 8);
  for (int r = 0; r < 2; ++r) w.runtimes[r]->alloc(bufferAt(r, 0), kAllocBytes);
  for (int i = 0; i < 20; ++i) {
    uint64_t t[2];
    PeerMemoryCache::Request q[2] = {allReduce(0, 0, 0), allReduce(1, 0, 0)};
    for (int r = 0; r < 2; ++r) ASSERT_EQ(w.caches[r]->post(q[r], &t[r]), sscSuccess);
    for (int r = 0; r < 2; ++r) {
      PeerMemoryCache::Result res;
      ASSERT_EQ(w.caches[r]->finish(t[r], q[r], &res), sscSuccess);
      EXPECT_EQ(res.zeroCopy, i > 0);
    }
  }
}

// A captured call (a CUDA graph keeps whatever path it took): new exports are confirmed in a
// second exchange at once, so even the first call on a buffer runs zero-copy; its mappings are
// pinned, survive their eviction from the (replicated) table, are reused, not opened twice,
// when the owner posts that allocation again, and are closed only after the pin is released.
TEST(PeerCache, CapturedCallsRunZeroCopyAtOnceAndPinnedMappingsOutliveEviction) {
  World w(3, 2);  // two exports per rank
  for (int r = 0; r < 3; ++r)
    for (int k = 0; k < 4; ++k) w.runtimes[r]->alloc(bufferAt(r, k), kAllocBytes);
  std::vector<std::shared_ptr<PeerMemoryCache::Pin>> pins(3);
  w.onEveryRank([&](int r) {
    PeerMemoryCache& c = *w.caches[r];
    PeerMemoryCache::Result res;
    ASSERT_EQ(call(c, captured(allReduce(r, 0, 0)), &res), sscSuccess);
    ASSERT_TRUE(res.zeroCopy) << "a captured call must not freeze the fallback into its graph";
    EXPECT_EQ(reinterpret_cast<uintptr_t>(res.peers[1][(r + 1) % 3]),
              FakeRuntime::mappedAt((r + 1) % 3, 1));
    EXPECT_EQ(res.mappings.size(), 2u * 2u);  // in and out, of each of 2 peers
    pins[r] = c.pin(res);
    EXPECT_EQ(c.pinnedMappings(), 2u);
    // Eager calls on other buffers evict buffer 0's exports everywhere alike...
    for (int k : {1, 1, 2, 2}) ASSERT_EQ(call(c, allReduce(r, k, k), &res), sscSuccess);
    EXPECT_TRUE(res.zeroCopy);
    EXPECT_EQ(c.entries((r + 1) % 3), 2u);
    EXPECT_EQ(c.heldMappings(), 2u) << "evicted while pinned: held open";
    // ...and when buffer 0 comes back (exported again), the held mapping is used again.
    ASSERT_EQ(call(c, allReduce(r, 0, 0), &res), sscSuccess);
    ASSERT_EQ(call(c, allReduce(r, 0, 0), &res), sscSuccess);
    ASSERT_TRUE(res.zeroCopy);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(res.peers[0][(r + 2) % 3]),
              FakeRuntime::mappedAt((r + 2) % 3, 1) + 256);
    EXPECT_EQ(c.heldMappings(), 0u);
    for (int k : {3, 3, 2}) ASSERT_EQ(call(c, allReduce(r, k, k), &res), sscSuccess);
    EXPECT_EQ(c.heldMappings(), 2u);
  });
  for (int r = 0; r < 3; ++r) {
    // Of 2 peers: buffers 0, 1, 2, 3, and 2 again (evicted by 3 and closed); buffer 0 once only
    // (the fake runtime also fails a second open of one export).
    EXPECT_EQ(w.runtimes[r]->opens.load(), 5 * 2);
    // Open: buffer 0 (held), 3 and 2 (the table).
    EXPECT_EQ(w.runtimes[r]->openNow(), 3u * 2u) << "rank " << r;
  }
  // The graphs are destroyed (their runtime thread releases the pins); the next call closes.
  for (auto& p : pins) p->release();
  w.onEveryRank([&](int r) {
    PeerMemoryCache::Result res;
    const int closes = w.runtimes[r]->closes.load();
    ASSERT_EQ(call(*w.caches[r], allReduce(r, 3, 3), &res), sscSuccess);
    EXPECT_EQ(w.caches[r]->pinnedMappings(), 0u);
    EXPECT_EQ(w.caches[r]->heldMappings(), 0u);
    EXPECT_EQ(w.runtimes[r]->closes.load(), closes + 2) << "rank " << r;
  });
  for (auto& c : w.caches) c->release();
  for (int r = 0; r < 3; ++r) EXPECT_EQ(w.runtimes[r]->openNow(), 0u);
}

// While a call is captured nothing waits for the device (no quiesce, no close): an eviction it
// causes closes at the next call that is not captured. A pin released after its cache is gone
// is harmless (the graph outlived the communicator).
TEST(PeerCache, ACapturedCallNeverWaitsForTheDevice) {
  World w(2, 2);
  for (int r = 0; r < 2; ++r)
    for (int k = 0; k < 3; ++k) w.runtimes[r]->alloc(bufferAt(r, k), kAllocBytes);
  std::vector<std::shared_ptr<PeerMemoryCache::Pin>> pins(2);
  w.onEveryRank([&](int r) {
    PeerMemoryCache& c = *w.caches[r];
    PeerMemoryCache::Result res;
    for (int k : {0, 0, 1, 1}) ASSERT_EQ(call(c, allReduce(r, k, k), &res), sscSuccess);
    const int quiesces = w.quiesces[r]->load(), closes = w.runtimes[r]->closes.load();
    ASSERT_EQ(call(c, captured(allReduce(r, 2, 2)), &res), sscSuccess);  // evicts buffer 0
    ASSERT_TRUE(res.zeroCopy);
    pins[r] = c.pin(res);
    EXPECT_EQ(w.quiesces[r]->load(), quiesces) << "a captured call waited for the device";
    EXPECT_EQ(w.runtimes[r]->closes.load(), closes);
    ASSERT_EQ(call(c, allReduce(r, 1, 1), &res), sscSuccess);
    EXPECT_GT(w.quiesces[r]->load(), quiesces);
    EXPECT_EQ(w.runtimes[r]->closes.load(), closes + 1) << "the put-off close did not happen";
  });
  for (auto& c : w.caches) c.reset();
  for (auto& p : pins) p->release();
}

// One thread driving both ranks: every finish() before any confirm() (as resolvePlainBuffers
// does), else the first confirm would wait for a record the same thread has yet to post.
TEST(PeerCache, CapturedCallsOfOneThreadDrivingSeveralRanksConfirmAfterAllFinish) {
  World w(2, 8);
  for (int r = 0; r < 2; ++r)
    for (int k = 0; k < 3; ++k) w.runtimes[r]->alloc(bufferAt(r, k), kAllocBytes);
  for (int k = 0; k < 3; ++k) {
    uint64_t t[2];
    PeerMemoryCache::Request q[2] = {captured(allReduce(0, k, k)), captured(allReduce(1, k, k))};
    PeerMemoryCache::Result res[2];
    for (int r = 0; r < 2; ++r) ASSERT_EQ(w.caches[r]->post(q[r], &t[r]), sscSuccess);
    for (int r = 0; r < 2; ++r) ASSERT_EQ(w.caches[r]->finish(t[r], q[r], &res[r]), sscSuccess);
    for (int r = 0; r < 2; ++r) {
      EXPECT_TRUE(res[r].confirmPending);
      ASSERT_EQ(w.caches[r]->confirm(q[r], &res[r]), sscSuccess);
      EXPECT_TRUE(res[r].zeroCopy) << "buffer " << k;
    }
  }
}

TEST(PeerCache, AMissingRankTimesOutNamingIt) {
  World w(3, 8, 0.3);
  for (int r = 0; r < 3; ++r) w.runtimes[r]->alloc(bufferAt(r, 0), kAllocBytes);
  std::vector<sscResult_t> got(3, sscSuccess);
  w.onEveryRank([&](int r) {
    if (r == 1) return;  // never calls
    PeerMemoryCache::Result res;
    got[r] = call(*w.caches[r], allReduce(r, 0, 0), &res);
  });
  EXPECT_EQ(got[0], sscTimeout);
  EXPECT_EQ(got[2], sscTimeout);
}

TEST(ShmAllGather, RecordsOfDifferentSizesAreRefused) {
  std::vector<char> seg(ShmAllGather::segmentBytes(2) + 64);
  char* base = seg.data() + (64 - reinterpret_cast<uintptr_t>(seg.data()) % 64) % 64;
  ShmAllGather a(base, 0, 2, nullptr, 5), b(base, 1, 2, nullptr, 5);
  uint64_t ta = 0, tb = 0;
  char x[16] = {}, y[32] = {}, all[64];
  ASSERT_EQ(a.post(x, sizeof(x), &ta), sscSuccess);
  ASSERT_EQ(b.post(y, sizeof(y), &tb), sscSuccess);
  EXPECT_EQ(a.collect(ta, all, sizeof(x)), sscInvalidUsage);
  char big[ShmAllGather::kMaxBytes + 1] = {};
  EXPECT_EQ(a.post(big, sizeof(big), &ta), sscInternalError);
}

}  // namespace
}  // namespace ssc::test
