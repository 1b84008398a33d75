// SPDX-License-Identifier: MIT
// A communicator's plan cache (src/comm/plan_cache.h): a shape is built once and then handed out,
// a failed build leaves nothing behind, each kind starts over past kMaxCachedPlans, the
// tuner's reset forgets only collective plans, and threads asking at once build a shape once.
// The plans are empty but for a tag that says which key built them.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "src/comm/plan_cache.h"

namespace ssc::test {
namespace {

CollPlanKey collKey(uint64_t count) { return {0, 1, count, 0, 4, false, false, false}; }
P2pPlanKey p2pKey(uint64_t bytes) { return {(1ull << 32) | 1u, bytes}; }

// A build function that counts its calls and tags its plan with `tag`.
struct Builder {
  std::atomic<int> calls{0};
  auto of(uint64_t tag) {
    return [this, tag](PlanCache::Plan* out) {
      ++calls;
      auto plan = std::make_shared<RankPlan>();
      plan->scratchElems = tag;
      *out = std::move(plan);
      return sscSuccess;
    };
  }
};

TEST(PlanCache, BuildsOnMissAndHandsOutTheSamePlanOnHit) {
  PlanCache cache;
  Builder b;
  PlanCache::Plan first, again, other;
  ASSERT_EQ(cache.collPlan(collKey(10), b.of(10), &first), sscSuccess);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(b.calls, 1);
  ASSERT_EQ(cache.collPlan(collKey(10), b.of(99), &again), sscSuccess);
  EXPECT_EQ(b.calls, 1) << "a hit builds nothing";
  EXPECT_EQ(again, first) << "the same object, so the GPU backend uploads it once";
  ASSERT_EQ(cache.collPlan(collKey(11), b.of(11), &other), sscSuccess);
  EXPECT_EQ(b.calls, 2);
  EXPECT_NE(other, first);
  EXPECT_EQ(other->scratchElems, 11u);
  EXPECT_EQ(cache.collSize(), 2u);
  EXPECT_EQ(cache.p2pSize(), 0u);
}

TEST(PlanCache, KindsAreKeptApart) {
  PlanCache cache;
  Builder b;
  PlanCache::Plan coll, p2p, hit;
  ASSERT_EQ(cache.collPlan(collKey(10), b.of(1), &coll), sscSuccess);
  ASSERT_EQ(cache.p2pPlan(p2pKey(10), b.of(2), &p2p), sscSuccess);
  EXPECT_EQ(b.calls, 2);
  ASSERT_EQ(cache.p2pPlan(p2pKey(10), b.of(3), &hit), sscSuccess);
  EXPECT_EQ(hit, p2p);
  EXPECT_EQ(hit->scratchElems, 2u);
  EXPECT_EQ(cache.collSize(), 1u);
  EXPECT_EQ(cache.p2pSize(), 1u);
}

TEST(PlanCache, AFailedBuildCachesNothing) {
  PlanCache cache;
  int calls = 0;
  const auto failing = [&](PlanCache::Plan* out) {
    ++calls;
    *out = std::make_shared<RankPlan>();  // even a plan made before the failure is dropped
    return sscInvalidUsage;
  };
  PlanCache::Plan plan;
  EXPECT_EQ(cache.collPlan(collKey(1), failing, &plan), sscInvalidUsage);
  EXPECT_EQ(plan, nullptr) << "*out untouched";
  EXPECT_EQ(cache.p2pPlan(p2pKey(1), failing, &plan), sscInvalidUsage);
  EXPECT_EQ(plan, nullptr);
  EXPECT_EQ(cache.collSize(), 0u);
  EXPECT_EQ(cache.p2pSize(), 0u);
  EXPECT_EQ(cache.collPlan(collKey(1), failing, &plan), sscInvalidUsage);
  EXPECT_EQ(calls, 3) << "the next call tries again";
}

TEST(PlanCache, EachKindStartsOverPastTheLimit) {
  PlanCache cache;
  Builder b;
  PlanCache::Plan plan, p2p;
  ASSERT_EQ(cache.p2pPlan(p2pKey(7), b.of(7), &p2p), sscSuccess);
  for (uint64_t k = 0; k < kMaxCachedPlans; ++k)
    ASSERT_EQ(cache.collPlan(collKey(k), b.of(k), &plan), sscSuccess);
  EXPECT_EQ(cache.collSize(), kMaxCachedPlans);
  const int built = b.calls;
  for (uint64_t k = 0; k < kMaxCachedPlans; ++k)
    ASSERT_EQ(cache.collPlan(collKey(k), b.of(k), &plan), sscSuccess);
  EXPECT_EQ(b.calls, built) << "a full cache still hits";
  ASSERT_EQ(cache.collPlan(collKey(kMaxCachedPlans), b.of(0), &plan), sscSuccess);
  EXPECT_EQ(cache.collSize(), 1u) << "one more shape: the cache starts over with it";
  ASSERT_EQ(cache.collPlan(collKey(0), b.of(0), &plan), sscSuccess);
  EXPECT_EQ(b.calls, built + 2) << "an earlier shape is built again";
  EXPECT_EQ(cache.p2pSize(), 1u) << "the other kind keeps its plans";
  for (uint64_t k = 0; k < kMaxCachedPlans; ++k)
    ASSERT_EQ(cache.p2pPlan(p2pKey(100 + k), b.of(k), &plan), sscSuccess);
  EXPECT_EQ(cache.p2pSize(), 1u) << "the point-to-point kind has the same limit";
}

TEST(PlanCache, ClearingCollectivePlansKeepsPointToPointOnesAndHandedOutPlans) {
  PlanCache cache;
  Builder b;
  PlanCache::Plan coll, p2p, again;
  ASSERT_EQ(cache.collPlan(collKey(10), b.of(10), &coll), sscSuccess);
  ASSERT_EQ(cache.p2pPlan(p2pKey(10), b.of(20), &p2p), sscSuccess);
  cache.clearCollPlans();
  EXPECT_EQ(cache.collSize(), 0u);
  EXPECT_EQ(cache.p2pSize(), 1u);
  EXPECT_EQ(coll->scratchElems, 10u) << "a plan handed out stays valid";
  ASSERT_EQ(cache.collPlan(collKey(10), b.of(30), &again), sscSuccess);
  EXPECT_NE(again, coll) << "rebuilt (the tuner may choose differently now)";
  EXPECT_EQ(again->scratchElems, 30u);
  ASSERT_EQ(cache.p2pPlan(p2pKey(10), b.of(40), &again), sscSuccess);
  EXPECT_EQ(again, p2p);
  EXPECT_EQ(b.calls, 3);
}

// Threads asking for the same new shapes at once: each is built once, and every thread gets that
// one object. A build outside the lock would let two threads miss together and build it twice;
// the build yields to make that window wide.
TEST(PlanCache, ConcurrentCallersBuildEachShapeOnce) {
  constexpr int kThreads = 8;
  constexpr uint64_t kShapes = 64;
  PlanCache cache;
  std::array<std::atomic<int>, 2 * kShapes> builds{};
  std::vector<std::vector<PlanCache::Plan>> seen(kThreads,
                                                 std::vector<PlanCache::Plan>(2 * kShapes));
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      ++ready;
      while (ready.load() < kThreads) std::this_thread::yield();
      for (uint64_t i = 0; i < 2 * kShapes; ++i) {
        const uint64_t s = (i + static_cast<uint64_t>(t) * 7) % (2 * kShapes);  // own order
        const auto build = [&, s](PlanCache::Plan* out) {
          ++builds[s];
          std::this_thread::yield();
          auto plan = std::make_shared<RankPlan>();
          plan->scratchElems = s;
          *out = std::move(plan);
          return sscSuccess;
        };
        const sscResult_t r = s < kShapes ? cache.collPlan(collKey(s), build, &seen[t][s])
                                          : cache.p2pPlan(p2pKey(s), build, &seen[t][s]);
        ASSERT_EQ(r, sscSuccess);
      }
    });
  for (std::thread& t : threads) t.join();
  for (uint64_t s = 0; s < 2 * kShapes; ++s) {
    EXPECT_EQ(builds[s].load(), 1) << "shape " << s;
    ASSERT_NE(seen[0][s], nullptr);
    EXPECT_EQ(seen[0][s]->scratchElems, s);
    for (int t = 1; t < kThreads; ++t) EXPECT_EQ(seen[t][s], seen[0][s]) << "shape " << s;
  }
  EXPECT_EQ(cache.collSize(), kShapes);
  EXPECT_EQ(cache.p2pSize(), kShapes);
}

// The tuner's reset while calls run: every caller still gets the plan of its own shape.
TEST(PlanCache, ClearingWhileOthersLookUpHandsOutOnlyRightPlans) {
  constexpr int kThreads = 4;
  PlanCache cache;
  std::atomic<bool> stop{false};
  std::atomic<int> wrong{0}, lookups{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (uint64_t i = 0; !stop.load(); ++i) {
        const uint64_t s = (i * 13 + static_cast<uint64_t>(t)) % 40;
        PlanCache::Plan plan;
        const auto build = [s](PlanCache::Plan* out) {
          auto p = std::make_shared<RankPlan>();
          p->scratchElems = s;
          *out = std::move(p);
          return sscSuccess;
        };
        if (cache.collPlan(collKey(s), build, &plan) != sscSuccess || plan == nullptr ||
            plan->scratchElems != s)
          ++wrong;
        ++lookups;
      }
    });
  for (int i = 0; i < 200; ++i) {
    cache.clearCollPlans();
    std::this_thread::yield();
  }
  while (lookups.load() < 10000) std::this_thread::yield();
  stop = true;
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_LE(cache.collSize(), 40u);
}

}  // namespace
}  // namespace ssc::test
