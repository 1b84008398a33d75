// SPDX-License-Identifier: MIT
// mpirun integration tests on the host backend: every collective x algorithm x dtype x op, in
// place and out of place, counts 0, 1, 7, 1000 and 2^20+3, each rank checking its own output
// against a reference it computes itself. Launched by ctest under mpirun with several rank counts
// and emulated topologies (tests/integration/CMakeLists.txt). The cases that are not part of that
// matrix (bit-exactness across algorithms, send/receive, split, topology queries, device-scalar
// PreMulSum) are in test_mpi_collectives_more.cc, run after these in the same process.
//
// Kept cheap for 8 ranks on 2 cores: one communicator per process, shared by every case; buffers
// filled and checked a period at a time (periodic_data.h); plain buffers kept across the cases
// of a forced algorithm; one MPI reduction per case for the verdict; and the op of a small case
// rotates with its type and count instead of every op running at every count (caseOp).
// --case-rotation=R (0..5) shifts that rotation; the ctest entries use all six values, so every
// (algorithm, collective, type, op, count, placement) still runs in the suite.
#include <gtest/gtest.h>
#include <fmt/format.h>
#include <mpi.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "src/comm/comm.h"
#include "src/device/host/host_stream.h"
#include "src/kernels/host/reduce.h"
#include "transports/usr/peer_cache.h"
#include "starscream/starscream.h"
#include "starscream/starscream_mpi.h"
#include "tests/integration/mpi_collectives.h"
#include "tests/integration/periodic_data.h"
#include "tests/support/mpi_gtest.h"
#include "tests/support/reference.h"

namespace ssc::test {

sscComm_t g_comm = nullptr;
sscStream_t g_stream = nullptr;
int g_rank = 0, g_n = 1;

// Sum over ranks of `local`.
long long allSum(long long local) {
  long long total = 0;
  MPI_Allreduce(&local, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  return total;
}

// The communicator reads STARSCREAM_ALGO once, at init: switch its choice in place.
void forceAlgo(const char* algo) {
  ASSERT_EQ(ssc::commForceAlgo(g_comm, algo), sscSuccess) << algo;
}

namespace {

// Plain buffers (sscMemAlloc, never registered) kept from case to case and grown on demand, for
// cases forced to an algorithm that ignores where buffers come from (plain_buffers.cc: a forced
// algorithm other than symmetric keeps its path): fresh tens of MB per case cost page faults.
struct KeptBuffers {
  void* in = nullptr;
  void* out = nullptr;
  size_t bytes = 0;
} g_kept;
// Buffers registered (symmetrically) once, for the zero-copy algorithm's cases.
void* g_poolIn = nullptr;
void* g_poolOut = nullptr;
void* g_poolHandles[2] = {nullptr, nullptr};
constexpr size_t kPoolBytes = 64u << 20;

enum class Coll { kAllReduce, kReduceScatter, kAllGather, kBroadcast, kReduce, kAllToAll };
const char* kCollNames[] = {"allreduce", "reducescatter", "allgather",
                            "broadcast", "reduce",        "alltoall"};
constexpr int kOpRotations = 6;  // the number of ops: rotations 0..5 together run every op
int g_rotation = 0;              // --case-rotation=R

// The op of a reducing case; slot numbers its (count, placement), zero counts first. A type meets
// every op in any 6 slots of nonzero count, a slot meets every op over the types, and a (type,
// slot) every op over the rotations 0..5. The plan for a count and placement runs for every type;
// what an op changes (the reduction, its pre- and post-scaling) is per-element arithmetic.
sscRedOp_t caseOp(int type, int slot) { return kOps[(type + slot + g_rotation) % kOpRotations]; }

bool reduces(Coll c) {
  return c == Coll::kAllReduce || c == Coll::kReduceScatter || c == Coll::kReduce;
}

struct Case {
  Coll coll;
  sscDataType_t type;
  sscRedOp_t op;
  uint64_t count;
  bool inPlace;
  int root;
  bool registered = false;  // use the registered pool (zero-copy algorithm eligible)
  bool kept = false;        // use g_kept's plain buffers instead of allocating its own
  std::string describe(const char* algo) const {
    return fmt::format("{} {} {} {} count {} {} root {}", algo, kCollNames[static_cast<int>(coll)],
                       dtypeName(type), opName(op), count, inPlace ? "in-place" : "out-of-place",
                       root);
  }
};

// Runs one case; returns this rank's number of wrong elements (or -1 on an API error).
long long runCase(const Case& c, std::string* why) {
  const size_t es = dtypeSize(c.type);
  const uint64_t n = static_cast<uint64_t>(g_n), cnt = c.count;
  uint64_t inElems = cnt, outElems = cnt;
  if (c.coll == Coll::kReduceScatter || c.coll == Coll::kAllToAll) inElems = n * cnt;
  if (c.coll == Coll::kAllGather || c.coll == Coll::kAllToAll) outElems = n * cnt;
  void* outBuf = nullptr;
  void* inBuf = nullptr;
  // In place, all-to-all (like all-reduce, broadcast and reduce) passes one buffer as both.
  const bool separateIn = !c.inPlace;
  if (c.registered) {
    if (std::max(inElems, outElems) * es + 64 > kPoolBytes) return -1;
    outBuf = g_poolOut;
    inBuf = g_poolIn;
  } else if (c.kept) {
    const size_t need = std::max(inElems, outElems) * es + 64;
    if (need > g_kept.bytes) {
      sscMemFree(g_kept.in), sscMemFree(g_kept.out), g_kept = KeptBuffers{};
      if (sscMemAlloc(&g_kept.in, need) != sscSuccess ||
          sscMemAlloc(&g_kept.out, need) != sscSuccess)
        return -1;
      g_kept.bytes = need;
    }
    outBuf = g_kept.out;
    inBuf = g_kept.in;
    // What an earlier case left must not pass for output this call failed to write.
    std::memset(outBuf, 0xa5, std::max(inElems, outElems) * es);
  } else {
    if (sscMemAlloc(&outBuf, std::max<uint64_t>(outElems, inElems) * es + 64) != sscSuccess)
      return -1;
    if (separateIn && sscMemAlloc(&inBuf, inElems * es + 64) != sscSuccess) return -1;
  }
  char* out = static_cast<char*>(outBuf);
  char* in = separateIn ? static_cast<char*>(inBuf) : out;
  if (c.inPlace && c.coll == Coll::kReduceScatter) out = in + g_rank * cnt * es;
  if (c.inPlace && c.coll == Coll::kAllGather) in = out + g_rank * cnt * es;
  const sscRedOp_t fillOp = reduces(c.coll) ? c.op : sscSum;
  // Global index of local input element k, as the reference defines contributions.
  const uint64_t global0 = c.coll == Coll::kAllToAll ? g_rank * n * cnt : 0;
  const int from = c.coll == Coll::kAllGather || c.coll == Coll::kAllToAll ? 0 : g_rank;
  const int64_t extra = c.coll == Coll::kAllGather ? g_rank % 2 : 0;
  fillPeriodic(c.type, in, inElems, [&](uint64_t k) {
    return static_cast<double>(inputValue(from, global0 + k, c.type, fillOp) + extra);
  });
  sscRedOp_t op = c.op;
  if (reduces(c.coll) && c.op == sscNumOps) {
    std::vector<char> scalar(8);
    setElementFromDouble(c.type, scalar.data(), 0, static_cast<double>(preMulScalar(g_rank)));
    if (sscRedOpCreatePreMulSum(&op, scalar.data(), c.type, sscScalarHostImmediate, g_comm) !=
        sscSuccess)
      return -1;
  }
  sscResult_t r = sscSuccess;
  switch (c.coll) {
    case Coll::kAllReduce: r = sscAllReduce(in, out, cnt, c.type, op, g_comm, g_stream); break;
    case Coll::kReduceScatter:
      r = sscReduceScatter(in, out, cnt, c.type, op, g_comm, g_stream);
      break;
    case Coll::kAllGather: r = sscAllGather(in, out, cnt, c.type, g_comm, g_stream); break;
    case Coll::kBroadcast: r = sscBroadcast(in, out, cnt, c.type, c.root, g_comm, g_stream); break;
    case Coll::kReduce: r = sscReduce(in, out, cnt, c.type, op, c.root, g_comm, g_stream); break;
    case Coll::kAllToAll: r = sscAllToAll(in, out, cnt, c.type, g_comm, g_stream); break;
  }
  if (r == sscSuccess) r = sscStreamSynchronize(g_stream);
  if (op != c.op) sscRedOpDestroy(op, g_comm);
  if (r != sscSuccess) {
    *why = fmt::format("{}: {}", sscGetErrorString(r), sscGetLastError(g_comm));
    if (!c.registered && !c.kept) sscMemFree(outBuf), sscMemFree(inBuf);
    return -1;
  }
  long long wrong = 0;
  // Output elements [first, first + cnt) against want(i), i < cnt (periodic_data.h).
  auto checkBlock = [&](uint64_t first, auto want) {
    wrong += checkPeriodic(
        c.type, c.op, g_n, out + first * es, cnt, want, [&](uint64_t k, double got, double w) {
          if (why->empty())
            *why = fmt::format("rank {} out[{}] = {} want {}", g_rank, first + k, got, w);
        });
  };
  switch (c.coll) {
    case Coll::kAllReduce:
      checkBlock(0, [&](uint64_t i) { return reduceReference(g_n, i, c.type, c.op); });
      break;
    case Coll::kReduceScatter:
      checkBlock(0,
                 [&](uint64_t i) { return reduceReference(g_n, g_rank * cnt + i, c.type, c.op); });
      break;
    case Coll::kReduce:
      if (g_rank == c.root)
        checkBlock(0, [&](uint64_t i) { return reduceReference(g_n, i, c.type, c.op); });
      break;
    case Coll::kBroadcast:
      checkBlock(0, [&](uint64_t i) {
        return static_cast<double>(inputValue(c.root, i, c.type, sscSum));
      });
      break;
    case Coll::kAllGather:
      for (int j = 0; j < g_n; ++j)
        checkBlock(j * cnt, [&](uint64_t i) {
          return static_cast<double>(inputValue(0, i, c.type, sscSum) + j % 2);
        });
      break;
    case Coll::kAllToAll:
      for (int j = 0; j < g_n; ++j)
        checkBlock(j * cnt, [&](uint64_t i) {
          return static_cast<double>(inputValue(0, j * n * cnt + g_rank * cnt + i, c.type, sscSum));
        });
      break;
  }
  if (!c.registered && !c.kept) sscMemFree(outBuf), sscMemFree(inBuf);
  return wrong;
}

// Runs the case on every rank and expects no wrong element anywhere (one MPI reduction of the
// ranks' verdicts: ranks that saw an API error, wrong elements).
void expectCase(const Case& c, const char* algo) {
  std::string why;
  const long long local = runCase(c, &why);
  long long mine[2] = {local < 0 ? 1 : 0, local > 0 ? local : 0}, all[2] = {0, 0};
  MPI_Allreduce(mine, all, 2, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_EQ(all[0], 0) << "ranks with an API error; " << c.describe(algo) << ": " << why;
  EXPECT_EQ(all[1], 0) << "wrong elements; " << c.describe(algo) << ": " << why;
}

TEST(MpiCollectives, SmallCountsEveryTypeOpAndAlgorithm) {
  // Every algorithm x collective x type x count x placement; the op of a reducing case follows
  // caseOp (every op for each algorithm, collective and type at the nonzero counts). Count 0 is a
  // call that moves nothing, 1 fewer elements than ranks, 7 uneven slices, 1000 several elements
  // per slice in every type; slot and chunk boundaries are the larger tests' (40009, 100003,
  // 2^20 + 3 elements against 64 KiB slots and 256 KiB chunks).
  const uint64_t counts[] = {0, 1, 7, 1000};
  for (const char* algo : kAlgos) {
    forceAlgo(algo);
    for (int ci = 0; ci < 6; ++ci) {
      Coll coll = static_cast<Coll>(ci);
      for (int t = 0; t < sscNumTypes; ++t)
        for (int slot = 0; slot < 8; ++slot) {
          const uint64_t count = counts[slot / 2];
          const bool inPlace = slot % 2 == 1;
          const sscRedOp_t op = reduces(coll) ? caseOp(t, slot) : sscSum;
          Case c{coll,    static_cast<sscDataType_t>(t), op, count,
                 inPlace, static_cast<int>(count % g_n)};
          c.kept = true;  // a forced algorithm
          expectCase(c, algo);
          if (::testing::Test::HasFailure()) return;
        }
    }
  }
  forceAlgo("");
}

TEST(MpiCollectives, UnregisteredBuffersOnTheDefaultAlgorithm) {
  // The tuner's own choice on plain buffers: with staging buffers (STARSCREAM_STAGING_BYTES)
  // all-reduce, reduce-scatter and all-gather that fit them run zero-copy through them, larger
  // ones and pre-multiplied sums fall back to the FIFO algorithms; both must be exact.
  forceAlgo("");
  const char* staging = std::getenv("STARSCREAM_STAGING_BYTES");
  if (staging != nullptr && std::atoi(staging) > 0) {
    ASSERT_NE(g_comm->staging.bytes, 0u)
        << "STARSCREAM_STAGING_BYTES=" << staging << " set up no staging";
  }
  const uint64_t stagedBefore = g_comm->staging.calls.load();
  // Ops as in SmallCounts (caseOp): every type at every count and placement, every op for each
  // type at the nonzero counts; every op at every count where staging is on (one ctest entry, and
  // the only path that copies through staging buffers). 40009 elements cross 64 KiB slots in every
  // type but int8.
  const uint64_t counts[] = {0, 1, 7, 1000, 40009};
  const int opsPerCase = g_comm->staging.bytes != 0 ? kOpRotations : 1;
  for (Coll coll : {Coll::kAllReduce, Coll::kReduceScatter, Coll::kAllGather})
    for (int t = 0; t < sscNumTypes; ++t)
      for (int slot = 0; slot < 10; ++slot)
        for (int o = 0; o < (reduces(coll) ? opsPerCase : 1); ++o) {
          const sscRedOp_t op = reduces(coll) ? caseOp(t, slot + o) : sscSum;
          expectCase(
              Case{coll, static_cast<sscDataType_t>(t), op, counts[slot / 2], slot % 2 == 1, 0},
              "default");
          if (::testing::Test::HasFailure()) return;
        }
  // With staging on, the small calls must have taken it (every rank decides alike).
  if (g_comm->staging.bytes != 0) {
    EXPECT_GT(g_comm->staging.calls.load(), stagedBefore);
  }
}

TEST(MpiCollectives, PlainBuffersRunZeroCopyFromTheirSecondUse) {
  // sscMemAlloc memory never registered, as PyTorch or nccl-tests pass it: the communicator maps
  // its peers' allocations on first use (transports/usr/peer_cache.h) and the calls after that run
  // the symmetric algorithm on them. Then the buffers are freed and new ones allocated (often at
  // the same address): the results must stay right, through fresh exports.
  forceAlgo("");
  if (g_n < 2) GTEST_SKIP() << "one rank: collectives are copies";
  if (g_comm->topo.nnodes != 1) GTEST_SKIP() << "emulated nodes: peers' memory is not mappable";
  ASSERT_NE(g_comm->peerCache, nullptr) << "one rank per process on one node: the cache must exist";
  const uint64_t count = 50001;  // odd; 200 KB of float32, above STARSCREAM_ZERO_COPY_MIN_BYTES
  for (int generation = 0; generation < 2; ++generation) {
    const PeerMemoryCache::Stats before = g_comm->peerCache->stats();
    void* in = nullptr;
    void* out = nullptr;
    ASSERT_EQ(sscMemAlloc(&in, count * g_n * 4 + 4096), sscSuccess);
    ASSERT_EQ(sscMemAlloc(&out, count * g_n * 4 + 4096), sscSuccess);
    char* inBytes = static_cast<char*>(in) + 4096;  // not at the allocation's start
    long long wrong = 0;
    for (int rep = 0; rep < 3; ++rep)
      for (Coll coll : {Coll::kAllReduce, Coll::kReduceScatter, Coll::kAllGather})
        for (bool inPlace : {false, true}) {
          const uint64_t inElems = coll == Coll::kReduceScatter ? count * g_n : count;
          float* src = reinterpret_cast<float*>(inBytes);
          float* dst = static_cast<float*>(out);
          if (inPlace) dst = coll == Coll::kReduceScatter ? src + g_rank * count : src;
          if (inPlace && coll == Coll::kAllGather) src = dst + g_rank * count;
          for (uint64_t k = 0; k < inElems; ++k) src[k] = static_cast<float>(g_rank + 1 + (k % 7));
          sscResult_t r = sscSuccess;
          if (coll == Coll::kAllReduce)
            r = sscAllReduce(src, dst, count, sscFloat32, sscSum, g_comm, g_stream);
          if (coll == Coll::kReduceScatter)
            r = sscReduceScatter(src, dst, count, sscFloat32, sscSum, g_comm, g_stream);
          if (coll == Coll::kAllGather)
            r = sscAllGather(src, dst, count, sscFloat32, g_comm, g_stream);
          ASSERT_EQ(r, sscSuccess) << sscGetLastError(g_comm);
          ASSERT_EQ(sscStreamSynchronize(g_stream), sscSuccess) << sscGetLastError(g_comm);
          const float ranks = static_cast<float>(g_n) * (g_n + 1) / 2;
          for (uint64_t i = 0; i < count * (coll == Coll::kAllGather ? g_n : 1); ++i) {
            float want = 0;
            if (coll == Coll::kAllReduce) want = ranks + g_n * static_cast<float>(i % 7);
            if (coll == Coll::kReduceScatter)
              want = ranks + g_n * static_cast<float>((g_rank * count + i) % 7);
            if (coll == Coll::kAllGather)
              want = static_cast<float>(i / count + 1 + (i % count) % 7);
            wrong += dst[i] != want;
          }
        }
    EXPECT_EQ(allSum(wrong), 0) << "generation " << generation;
    const PeerMemoryCache::Stats after = g_comm->peerCache->stats();
    // 18 calls: each new export costs one fallback call, everything after runs zero-copy.
    EXPECT_GE(after.zeroCopyCalls - before.zeroCopyCalls, 14u) << "generation " << generation;
    EXPECT_LE(after.exports - before.exports, 2u) << "one export per allocation";
    EXPECT_LE(after.opens - before.opens, 2u * (g_n - 1)) << "each peer allocation opened once";
    ASSERT_EQ(sscMemFree(in), sscSuccess);
    ASSERT_EQ(sscMemFree(out), sscSuccess);
  }
}

TEST(MpiCollectives, CapturedCallsRunZeroCopyAndPinTheirMappingsUntilTheGraphGoes) {
  // A call captured into a CUDA graph runs zero-copy on plain buffers too, from its very first
  // use (a captured call confirms new exports at once: the graph would keep a fallback forever),
  // and the peers' mappings it uses stay pinned until the graph is destroyed. The host backend
  // has no graphs: the stream pretends to capture (host_stream.h), the work runs as queued.
  forceAlgo("");
  if (g_n < 2) GTEST_SKIP() << "one rank: collectives are copies";
  if (g_comm->topo.nnodes != 1) GTEST_SKIP() << "emulated nodes: peers' memory is not mappable";
  ASSERT_NE(g_comm->peerCache, nullptr);
  sscStream_t stream = nullptr;
  ASSERT_EQ(sscStreamCreate(&stream), sscSuccess);
  ssc::HostStream* host = ssc::HostStream::fromHandle(stream);
  ASSERT_NE(host, nullptr);
  const uint64_t count = 40009;  // 160 KB of float32: above STARSCREAM_ZERO_COPY_MIN_BYTES
  float* buf = nullptr;
  ASSERT_EQ(sscMemAlloc(reinterpret_cast<void**>(&buf), count * 4), sscSuccess);
  long long wrong = 0;
  host->pretendCapture(true);
  for (int rep = 0; rep < 3; ++rep) {
    const PeerMemoryCache::Stats before = g_comm->peerCache->stats();
    for (uint64_t k = 0; k < count; ++k) buf[k] = static_cast<float>(g_rank + rep + k % 5);
    ASSERT_EQ(sscAllReduce(buf, buf, count, sscFloat32, sscSum, g_comm, stream), sscSuccess)
        << sscGetLastError(g_comm);
    ASSERT_EQ(sscStreamSynchronize(stream), sscSuccess) << sscGetLastError(g_comm);
    EXPECT_EQ(g_comm->peerCache->stats().zeroCopyCalls - before.zeroCopyCalls, 1u)
        << "captured call " << rep << " (the first brings the new export) did not run zero-copy";
    for (uint64_t k = 0; k < count; ++k)
      wrong +=
          buf[k] != static_cast<float>(g_n) * (g_n - 1) / 2 + g_n * static_cast<float>(rep + k % 5);
  }
  EXPECT_EQ(allSum(wrong), 0);
  EXPECT_EQ(g_comm->peerCache->pinnedMappings(), static_cast<size_t>(g_n - 1))
      << "each peer's allocation pinned by the captured calls";
  host->pretendCapture(false);
  host->destroyPretendGraph();
  // The next call (eager) sweeps the released pins.
  for (uint64_t k = 0; k < count; ++k) buf[k] = 1.0f;
  ASSERT_EQ(sscAllReduce(buf, buf, count, sscFloat32, sscSum, g_comm, stream), sscSuccess);
  ASSERT_EQ(sscStreamSynchronize(stream), sscSuccess) << sscGetLastError(g_comm);
  EXPECT_EQ(buf[count - 1], static_cast<float>(g_n));
  EXPECT_EQ(g_comm->peerCache->pinnedMappings(), 0u) << "the destroyed graph's pins were kept";
  ASSERT_EQ(sscMemFree(buf), sscSuccess);
  ASSERT_EQ(sscStreamDestroy(stream), sscSuccess);
}

TEST(MpiCollectives, ZeroCopyOnRegisteredBuffersEveryTypeAndOp) {
  // The symmetric algorithm needs buffers registered on every rank; the pool is. Counts cover
  // one-shot (small) and two-shot (large) all-reduce, in place and not; broadcast and reduce
  // from every root. (Broadcast, reduce and all-to-all agree on their buffers through the peer
  // cache, as plain buffers do; an in-place all-to-all swaps pairs of blocks.)
  forceAlgo("symmetric");
  // Ops as in SmallCounts (caseOp): every type at every count and placement, every op for each
  // type at the nonzero counts.
  const uint64_t counts[] = {0, 1, 7, 1000, 100003};
  for (int ci = 0; ci < 6; ++ci) {
    const Coll coll = static_cast<Coll>(ci);
    const bool rooted = coll == Coll::kBroadcast || coll == Coll::kReduce;
    for (int t = 0; t < sscNumTypes; ++t)
      for (int slot = 0; slot < 10; ++slot)
        for (int root = 0; root < (rooted ? g_n : 1); ++root) {
          // Every root for one type per collective; root 0 and the last for the others.
          if (rooted && t != 0 && root != 0 && root != g_n - 1) continue;
          const sscRedOp_t op = reduces(coll) ? caseOp(t, slot) : sscSum;
          Case c{coll, static_cast<sscDataType_t>(t), op, counts[slot / 2], slot % 2 == 1, root};
          c.registered = true;
          expectCase(c, "symmetric");
          if (::testing::Test::HasFailure()) return;
        }
  }
  forceAlgo("");
}

TEST(MpiCollectives, PlainBufferBroadcastReduceAndAllToAllRunZeroCopy) {
  // As NCCL programs call them: plain allocations, and no buffer at all where the API ignores it
  // (a broadcast's sendbuff off the root, a reduce's recvbuff off the root). From the second use
  // of an allocation every call runs zero-copy, from every root (an in-place all-to-all as
  // pairwise swaps of blocks).
  forceAlgo("");
  if (g_n < 2) GTEST_SKIP() << "one rank: collectives are copies";
  if (g_comm->topo.nnodes != 1) GTEST_SKIP() << "emulated nodes: peers' memory is not mappable";
  ASSERT_NE(g_comm->peerCache, nullptr);
  const uint64_t count = 30011;  // odd; above STARSCREAM_ZERO_COPY_MIN_BYTES in int32
  std::vector<int32_t*> bufs(2, nullptr);
  for (auto& b : bufs)
    ASSERT_EQ(sscMemAlloc(reinterpret_cast<void**>(&b), count * g_n * 4), sscSuccess);
  int32_t* in = bufs[0];
  int32_t* out = bufs[1];
  long long wrong = 0;
  uint64_t zeroCopy = 0;
  for (int rep = 0; rep < 2; ++rep)
    for (int root = 0; root < g_n; ++root)
      for (Coll coll : {Coll::kBroadcast, Coll::kReduce, Coll::kAllToAll})
        for (bool inPlace : {false, true}) {
          const uint64_t inElems = coll == Coll::kAllToAll ? count * g_n : count;
          for (uint64_t k = 0; k < inElems; ++k) in[k] = static_cast<int32_t>(g_rank * 1000003 + k);
          int32_t* src = in;
          int32_t* dst = inPlace ? in : out;
          const bool isRoot = g_rank == root;
          const uint64_t before = g_comm->peerCache->stats().zeroCopyCalls;
          sscResult_t r = sscSuccess;
          if (coll == Coll::kBroadcast)
            r = sscBroadcast(isRoot || inPlace ? src : nullptr, dst, count, sscInt32, root, g_comm,
                             g_stream);
          if (coll == Coll::kReduce)
            r = sscReduce(src, isRoot || inPlace ? dst : nullptr, count, sscInt32, sscSum, root,
                          g_comm, g_stream);
          if (coll == Coll::kAllToAll) r = sscAllToAll(src, dst, count, sscInt32, g_comm, g_stream);
          ASSERT_EQ(r, sscSuccess) << sscGetLastError(g_comm);
          ASSERT_EQ(sscStreamSynchronize(g_stream), sscSuccess) << sscGetLastError(g_comm);
          if (rep == 1) zeroCopy += g_comm->peerCache->stats().zeroCopyCalls - before;
          for (uint64_t i = 0; i < count * (coll == Coll::kAllToAll ? g_n : 1); ++i) {
            int64_t want = 0;
            if (coll == Coll::kBroadcast) want = root * 1000003 + static_cast<int64_t>(i);
            if (coll == Coll::kReduce) {
              if (!isRoot) break;
              want = static_cast<int64_t>(g_n) * (g_n - 1) / 2 * 1000003 +
                     g_n * static_cast<int64_t>(i);
            }
            if (coll == Coll::kAllToAll)
              want = static_cast<int64_t>(i / count) * 1000003 + g_rank * count + i % count;
            wrong += dst[i] != static_cast<int32_t>(want);
          }
        }
  EXPECT_EQ(allSum(wrong), 0);
  // Second round: all 6 calls per root run zero-copy.
  EXPECT_EQ(zeroCopy, 6u * g_n);
  for (auto* b : bufs) ASSERT_EQ(sscMemFree(b), sscSuccess);
}

TEST(MpiCollectives, LargeCountEveryTypeAndOp) {
  // 2^20 + 3 elements: many chunks per call, uneven slices. Every dtype and every op appears for
  // every algorithm and collective (cycled, to keep the run short on 2 cores). Forced algorithms
  // only: the cases share g_kept's buffers.
  const uint64_t count = (1u << 20) + 3;
  int k = 0;
  for (const char* algo : kAlgos) {
    forceAlgo(algo);
    for (int ci = 0; ci < 6; ++ci) {
      Coll coll = static_cast<Coll>(ci);
      for (int t = 0; t < sscNumTypes; t += 1) {
        sscRedOp_t op = reduces(coll) ? kOps[k++ % 6] : sscSum;
        // The large all-to-all moves n x count per rank: one type per algorithm keeps it short.
        if (coll == Coll::kAllToAll && t != (k % sscNumTypes)) continue;
        if (coll != Coll::kAllReduce && t % 3 != 0) continue;
        Case c{coll, static_cast<sscDataType_t>(t), op, count, (t / 3) % 2 == 1, g_n - 1};
        c.kept = true;
        expectCase(c, algo);
        if (::testing::Test::HasFailure()) return;
      }
    }
  }
  forceAlgo("");
}

}  // namespace
}  // namespace ssc::test

int main(int argc, char** argv) {
  ssc::test::mpiGtestInit(&argc, &argv, &ssc::test::g_rank, &ssc::test::g_n);
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], "--case-rotation=", 16) == 0)
      ssc::test::g_rotation = std::abs(std::atoi(argv[i] + 16)) % ssc::test::kOpRotations;
  int rc = 1;
  if (!ssc::test::referencePeriodHolds(ssc::test::g_n)) {
    fprintf(
        stderr,
        "rank %d: tests/support/reference.cc's inputValue is no longer periodic with period %d: "
        "update kRefPeriod (tests/integration/periodic_data.h)\n",
        ssc::test::g_rank, static_cast<int>(ssc::test::kRefPeriod));
  } else if (sscCommInitMpi(MPI_COMM_WORLD, &ssc::test::g_comm) != sscSuccess) {
    fprintf(stderr, "rank %d: sscCommInitMpi failed: %s\n", ssc::test::g_rank,
            sscGetLastError(nullptr));
  } else if (sscStreamCreate(&ssc::test::g_stream) != sscSuccess) {
    fprintf(stderr, "rank %d: sscStreamCreate failed\n", ssc::test::g_rank);
  } else {
    // Collective registration: every rank registers its pool buffers in the same order.
    if (sscMemAlloc(&ssc::test::g_poolIn, ssc::test::kPoolBytes) != sscSuccess ||
        sscMemAlloc(&ssc::test::g_poolOut, ssc::test::kPoolBytes) != sscSuccess ||
        sscCommRegister(ssc::test::g_comm, ssc::test::g_poolIn, ssc::test::kPoolBytes,
                        &ssc::test::g_poolHandles[0]) != sscSuccess ||
        sscCommRegister(ssc::test::g_comm, ssc::test::g_poolOut, ssc::test::kPoolBytes,
                        &ssc::test::g_poolHandles[1]) != sscSuccess) {
      fprintf(stderr, "rank %d: registering the pool failed: %s\n", ssc::test::g_rank,
              sscGetLastError(ssc::test::g_comm));
    } else {
      rc = RUN_ALL_TESTS();
      sscCommDeregister(ssc::test::g_comm, ssc::test::g_poolHandles[0]);
      sscCommDeregister(ssc::test::g_comm, ssc::test::g_poolHandles[1]);
    }
    sscMemFree(ssc::test::g_poolIn);
    sscMemFree(ssc::test::g_poolOut);
    sscMemFree(ssc::test::g_kept.in);
    sscMemFree(ssc::test::g_kept.out);
    sscStreamDestroy(ssc::test::g_stream);
    sscCommDestroy(ssc::test::g_comm);
  }
  return ssc::test::mpiGtestFinish(rc);
}
