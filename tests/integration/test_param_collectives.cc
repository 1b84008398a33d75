// SPDX-License-Identifier: MIT
// Every collective over ranks x algorithm x data type, as Gloo tests its algorithms: one gtest
// case per (ranks and topology, algorithm, collective, type), each running counts 0, 1, 7 and
// 1000, in and out of place, several ops and every root, against the independent reference of
// tests/support/reference.h. All ranks live in this process (sscCommInitAll on the host
// backend), one thread and one stream each; the algorithm is switched through the communicator's
// own config (commForceAlgo), which is what STARSCREAM_ALGO sets at init. Each rank's thread is
// made once per shape and runs every case of that rank (RankThreads), and buffers are filled and
// checked a period at a time (periodic_data.h): the cases cost their collectives.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "src/comm/comm.h"
#include "src/core/dtype.h"
#include "src/kernels/host/reduce.h"
#include "starscream/starscream.h"
#include "tests/integration/periodic_data.h"
#include "tests/support/reference.h"

#ifndef SSC_TOPOLOGY_DIR
#error "SSC_TOPOLOGY_DIR must name tools/topologies"
#endif

namespace ssc::test {
namespace {

enum class Coll { kAllReduce, kReduceScatter, kAllGather, kBroadcast, kReduce, kAllToAll };
constexpr const char* kCollNames[] = {"allreduce", "reducescatter", "allgather",
                                      "broadcast", "reduce",        "alltoall"};

struct Shape {
  int ranks;
  const char* topo;  // a file of tools/topologies without ".json", or "flat"
};

// One thread per rank, kept for the whole run: run(fn) has every thread call fn(rank) and
// returns when all have (a thread per rank and case spent much of a case starting threads).
class RankThreads {
 public:
  explicit RankThreads(int n) {
    for (int r = 0; r < n; ++r) threads_.emplace_back([this, r] { loop(r); });
  }
  ~RankThreads() {
    {
      std::lock_guard<std::mutex> g(mu_);
      quit_ = true;
    }
    start_.notify_all();
    for (auto& t : threads_) t.join();
  }
  void run(const std::function<void(int)>& fn) {
    std::unique_lock<std::mutex> g(mu_);
    job_ = &fn;
    pending_ = static_cast<int>(threads_.size());
    ++generation_;
    start_.notify_all();
    done_.wait(g, [&] { return pending_ == 0; });
    job_ = nullptr;
  }

 private:
  void loop(int rank) {
    uint64_t seen = 0;
    std::unique_lock<std::mutex> g(mu_);
    for (;;) {
      start_.wait(g, [&] { return quit_ || generation_ != seen; });
      if (quit_) return;
      seen = generation_;
      const std::function<void(int)>* job = job_;
      g.unlock();
      (*job)(rank);
      g.lock();
      if (--pending_ == 0) done_.notify_one();
    }
  }
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable start_, done_;
  const std::function<void(int)>* job_ = nullptr;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool quit_ = false;
};

// The ranks of one shape: communicators, streams and threads, made once and kept for the run.
struct World {
  std::vector<sscComm_t> comms;
  std::vector<sscStream_t> streams;
  std::unique_ptr<RankThreads> threads;
};

World* worldFor(const Shape& s) {
  static std::map<std::string, std::unique_ptr<World>> worlds;
  const std::string key = fmt::format("{}-{}", s.ranks, s.topo);
  auto it = worlds.find(key);
  if (it != worlds.end()) return it->second.get();
  auto w = std::make_unique<World>();
  w->comms.assign(s.ranks, nullptr);
  w->streams.assign(s.ranks, nullptr);
  if (std::string(s.topo) != "flat")
    setenv("STARSCREAM_TOPO_FILE", fmt::format("{}/{}.json", SSC_TOPOLOGY_DIR, s.topo).c_str(), 1);
  const sscResult_t r = sscCommInitAll(w->comms.data(), s.ranks, nullptr);
  unsetenv("STARSCREAM_TOPO_FILE");
  if (r != sscSuccess) {
    ADD_FAILURE() << key << ": sscCommInitAll failed: " << sscGetLastError(nullptr);
    return nullptr;
  }
  for (auto& st : w->streams)
    if (sscStreamCreate(&st) != sscSuccess) return nullptr;
  w->threads = std::make_unique<RankThreads>(s.ranks);
  return worlds.emplace(key, std::move(w)).first->second.get();
}

bool reduces(Coll c) {
  return c == Coll::kAllReduce || c == Coll::kReduceScatter || c == Coll::kReduce;
}

// One rank's part of a call: fills its input, runs the collective, waits, and counts wrong
// elements of its output (-1 on an API error, with the message in *why).
long long runRank(const World& w, int rank, Coll coll, sscDataType_t type, sscRedOp_t op,
                  uint64_t count, bool inPlace, int root, std::string* why) {
  const int n = static_cast<int>(w.comms.size());
  const size_t es = dtypeSize(type);
  uint64_t inElems = count, outElems = count;
  if (coll == Coll::kReduceScatter || coll == Coll::kAllToAll) inElems = n * count;
  if (coll == Coll::kAllGather || coll == Coll::kAllToAll) outElems = n * count;
  std::vector<char> outBuf(std::max(inElems, outElems) * es + 8);
  std::vector<char> inBuf(inPlace ? 0 : inElems * es + 8);
  char* out = outBuf.data();
  char* in = inPlace ? out : inBuf.data();
  if (inPlace && coll == Coll::kReduceScatter) out = in + rank * count * es;
  if (inPlace && coll == Coll::kAllGather) in = out + rank * count * es;
  const sscRedOp_t fillOp = reduces(coll) ? op : sscSum;
  const uint64_t global0 = coll == Coll::kAllToAll ? rank * n * count : 0;
  const int from = coll == Coll::kAllGather || coll == Coll::kAllToAll ? 0 : rank;
  const int extra = coll == Coll::kAllGather ? rank % 2 : 0;
  fillPeriodic(type, in, inElems, [&](uint64_t k) {
    return static_cast<double>(inputValue(from, global0 + k, type, fillOp) + extra);
  });
  sscComm_t comm = w.comms[rank];
  sscStream_t s = w.streams[rank];
  sscResult_t r = sscSuccess;
  switch (coll) {
    case Coll::kAllReduce: r = sscAllReduce(in, out, count, type, op, comm, s); break;
    case Coll::kReduceScatter: r = sscReduceScatter(in, out, count, type, op, comm, s); break;
    case Coll::kAllGather: r = sscAllGather(in, out, count, type, comm, s); break;
    case Coll::kBroadcast: r = sscBroadcast(in, out, count, type, root, comm, s); break;
    case Coll::kReduce: r = sscReduce(in, out, count, type, op, root, comm, s); break;
    case Coll::kAllToAll: r = sscAllToAll(in, out, count, type, comm, s); break;
  }
  if (r == sscSuccess) r = sscStreamSynchronize(s);
  if (r != sscSuccess) {
    *why = fmt::format("rank {}: {}: {}", rank, sscGetErrorString(r), sscGetLastError(comm));
    return -1;
  }
  long long wrong = 0;
  // Output elements [first, first + count) against want(i), i < count (periodic_data.h).
  auto checkBlock = [&](uint64_t first, auto want) {
    wrong += checkPeriodic(
        type, op, n, out + first * es, count, want, [&](uint64_t k, double got, double w) {
          if (why->empty())
            *why = fmt::format("rank {} out[{}] = {}, want {}", rank, first + k, got, w);
        });
  };
  switch (coll) {
    case Coll::kAllReduce:
      checkBlock(0, [&](uint64_t i) { return reduceReference(n, i, type, op); });
      break;
    case Coll::kReduceScatter:
      checkBlock(0, [&](uint64_t i) { return reduceReference(n, rank * count + i, type, op); });
      break;
    case Coll::kReduce:
      if (rank == root) checkBlock(0, [&](uint64_t i) { return reduceReference(n, i, type, op); });
      break;
    case Coll::kBroadcast:
      checkBlock(
          0, [&](uint64_t i) { return static_cast<double>(inputValue(root, i, type, sscSum)); });
      break;
    case Coll::kAllGather:
      for (int j = 0; j < n; ++j)
        checkBlock(j * count, [&](uint64_t i) {
          return static_cast<double>(inputValue(0, i, type, sscSum) + j % 2);
        });
      break;
    case Coll::kAllToAll:
      for (int j = 0; j < n; ++j)
        checkBlock(j * count, [&](uint64_t i) {
          return static_cast<double>(inputValue(0, j * n * count + rank * count + i, type, sscSum));
        });
      break;
  }
  return wrong;
}

using Param = std::tuple<Shape, const char*, Coll, sscDataType_t>;

class Collectives : public ::testing::TestWithParam<Param> {};

TEST_P(Collectives, MatchTheReference) {
  const auto& [shape, algo, coll, type] = GetParam();
  static const bool periodic = referencePeriodHolds(8);
  ASSERT_TRUE(periodic)
      << "tests/support/reference.cc's inputValue is no longer periodic with period " << kRefPeriod
      << ": update tests/integration/periodic_data.h";
  World* w = worldFor(shape);
  ASSERT_NE(w, nullptr);
  for (sscComm_t c : w->comms) ASSERT_EQ(commForceAlgo(c, algo), sscSuccess) << algo;
  const std::vector<sscRedOp_t> ops = reduces(coll)
                                          ? std::vector<sscRedOp_t>{sscSum, sscMax, sscAvg}
                                          : std::vector<sscRedOp_t>{sscSum};
  const bool rooted = coll == Coll::kBroadcast || coll == Coll::kReduce;
  for (uint64_t count : {0, 1, 7, 1000})
    for (bool inPlace : {false, true})
      for (sscRedOp_t op : ops)
        for (int root = 0; root < (rooted ? shape.ranks : 1); ++root) {
          std::vector<std::string> why(shape.ranks);
          std::vector<long long> wrong(shape.ranks, 0);
          w->threads->run([&](int r) {
            wrong[r] = runRank(*w, r, coll, type, op, count, inPlace, root, &why[r]);
          });
          for (int r = 0; r < shape.ranks; ++r)
            ASSERT_EQ(wrong[r], 0)
                << fmt::format("count {} {} op {} root {}: {}", count,
                               inPlace ? "in place" : "out of place", opName(op), root, why[r]);
        }
}

std::string caseName(const ::testing::TestParamInfo<Param>& info) {
  const auto& [shape, algo, coll, type] = info.param;
  std::string topo = shape.topo;
  std::replace(topo.begin(), topo.end(), '-', '_');
  return fmt::format("np{}_{}_{}_{}_{}", shape.ranks, topo, algo,
                     kCollNames[static_cast<int>(coll)], dtypeName(type));
}

// Non-power-of-two ranks, a partitioned topology (hierarchical runs its two tiers there) and an
// uneven one; the algorithms a caller can force, and the tuner's own choice ("auto").
INSTANTIATE_TEST_SUITE_P(
    RanksAlgosTypes, Collectives,
    ::testing::Combine(::testing::Values(Shape{1, "flat"}, Shape{2, "flat"}, Shape{3, "flat"},
                                         Shape{4, "2x2"}, Shape{5, "flat"},
                                         Shape{6, "uneven-3-2-1"}, Shape{8, "2x4"}),
                       ::testing::Values("ring", "bidir_ring", "direct", "hierarchical", "auto"),
                       ::testing::Values(Coll::kAllReduce, Coll::kReduceScatter, Coll::kAllGather,
                                         Coll::kBroadcast, Coll::kReduce, Coll::kAllToAll),
                       ::testing::Values(sscFloat32, sscBfloat16, sscInt32, sscFloat8e4m3)),
    caseName);

}  // namespace
}  // namespace ssc::test
