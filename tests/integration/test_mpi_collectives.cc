// mpirun integration tests on the host backend: every collective x algorithm x dtype x op, in
// place and out of place, counts 0, 1, 7, 1000 and 2^20+3, each rank checking its own output
// against a reference it computes itself. Launched by ctest under mpirun with several rank counts
// and emulated topologies (tests/integration/CMakeLists.txt).
#include <gtest/gtest.h>
#include <fmt/format.h>
#include <mpi.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "src/comm/comm.h"
#include "src/device/host/host_stream.h"
#include "src/kernels/host/reduce.h"
#include "transports/usr/peer_cache.h"
#include "starscream/starscream.h"
#include "starscream/starscream_mpi.h"
#include "tests/support/mpi_gtest.h"
#include "tests/support/reference.h"

namespace ssc::test {
namespace {

sscComm_t g_comm = nullptr;
// Buffers registered (symmetrically) once, for the zero-copy algorithm's cases.
void* g_poolIn = nullptr;
void* g_poolOut = nullptr;
void* g_poolHandles[2] = {nullptr, nullptr};
constexpr size_t kPoolBytes = 64u << 20;
sscStream_t g_stream = nullptr;
int g_rank = 0, g_n = 1;

enum class Coll { kAllReduce, kReduceScatter, kAllGather, kBroadcast, kReduce, kAllToAll };
const char* kCollNames[] = {"allreduce", "reducescatter", "allgather", "broadcast", "reduce", "alltoall"};
const char* kAlgos[] = {"ring", "bidir_ring", "direct", "hierarchical"};
const sscRedOp_t kOps[] = {sscSum, sscProd, sscMax, sscMin, sscAvg, sscNumOps /* premulsum */};

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
  std::string describe(const char* algo) const {
    return fmt::format("{} {} {} {} count {} {} root {}", algo, kCollNames[static_cast<int>(coll)],
                       dtypeName(type), opName(op), count, inPlace ? "in-place" : "out-of-place", root);
  }
};

// Sum over ranks of `local`.
long long allSum(long long local) {
  long long total = 0;
  MPI_Allreduce(&local, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  return total;
}

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
  } else {
    if (sscMemAlloc(&outBuf, std::max<uint64_t>(outElems, inElems) * es + 64) != sscSuccess) return -1;
    if (separateIn && sscMemAlloc(&inBuf, inElems * es + 64) != sscSuccess) return -1;
  }
  char* out = static_cast<char*>(outBuf);
  char* in = separateIn ? static_cast<char*>(inBuf) : out;
  if (c.inPlace && c.coll == Coll::kReduceScatter) out = in + g_rank * cnt * es;
  if (c.inPlace && c.coll == Coll::kAllGather) in = out + g_rank * cnt * es;
  const sscRedOp_t fillOp = reduces(c.coll) ? c.op : sscSum;
  // Global index of local input element k, as the reference defines contributions.
  for (uint64_t k = 0; k < inElems; ++k) {
    uint64_t global = k;
    if (c.coll == Coll::kAllToAll) global = g_rank * n * cnt + k;
    setElementFromDouble(c.type, in, k, static_cast<double>(
        inputValue(c.coll == Coll::kAllGather || c.coll == Coll::kAllToAll ? 0 : g_rank, global, c.type, fillOp)
        + (c.coll == Coll::kAllGather ? static_cast<int64_t>(g_rank) % 2 : 0)));
  }
  sscRedOp_t op = c.op;
  if (reduces(c.coll) && c.op == sscNumOps) {
    std::vector<char> scalar(8);
    setElementFromDouble(c.type, scalar.data(), 0, static_cast<double>(preMulScalar(g_rank)));
    if (sscRedOpCreatePreMulSum(&op, scalar.data(), c.type, sscScalarHostImmediate, g_comm) != sscSuccess) return -1;
  }
  sscResult_t r = sscSuccess;
  switch (c.coll) {
    case Coll::kAllReduce: r = sscAllReduce(in, out, cnt, c.type, op, g_comm, g_stream); break;
    case Coll::kReduceScatter: r = sscReduceScatter(in, out, cnt, c.type, op, g_comm, g_stream); break;
    case Coll::kAllGather: r = sscAllGather(in, out, cnt, c.type, g_comm, g_stream); break;
    case Coll::kBroadcast: r = sscBroadcast(in, out, cnt, c.type, c.root, g_comm, g_stream); break;
    case Coll::kReduce: r = sscReduce(in, out, cnt, c.type, op, c.root, g_comm, g_stream); break;
    case Coll::kAllToAll: r = sscAllToAll(in, out, cnt, c.type, g_comm, g_stream); break;
  }
  if (r == sscSuccess) r = sscStreamSynchronize(g_stream);
  if (op != c.op) sscRedOpDestroy(op, g_comm);
  if (r != sscSuccess) {
    *why = fmt::format("{}: {}", sscGetErrorString(r), sscGetLastError(g_comm));
    if (!c.registered) sscMemFree(outBuf), sscMemFree(inBuf);
    return -1;
  }
  long long wrong = 0;
  auto check = [&](uint64_t k, double want) {
    double got = getElementAsDouble(c.type, out, k);
    if (closeEnough(got, want, c.type, c.op, g_n)) return;
    if (wrong++ == 0) *why = fmt::format("rank {} out[{}] = {} want {}", g_rank, k, got, want);
  };
  auto agValue = [&](int j, uint64_t i) {
    return static_cast<double>(inputValue(0, i, c.type, sscSum) + j % 2);
  };
  for (uint64_t i = 0; i < cnt; ++i) {
    switch (c.coll) {
      case Coll::kAllReduce: check(i, reduceReference(g_n, i, c.type, c.op)); break;
      case Coll::kReduceScatter: check(i, reduceReference(g_n, g_rank * cnt + i, c.type, c.op)); break;
      case Coll::kReduce:
        if (g_rank == c.root) check(i, reduceReference(g_n, i, c.type, c.op));
        break;
      case Coll::kBroadcast: check(i, static_cast<double>(inputValue(c.root, i, c.type, sscSum))); break;
      case Coll::kAllGather:
        for (int j = 0; j < g_n; ++j) check(j * cnt + i, agValue(j, i));
        break;
      case Coll::kAllToAll:
        for (int j = 0; j < g_n; ++j)
          check(j * cnt + i, static_cast<double>(inputValue(0, j * n * cnt + g_rank * cnt + i, c.type, sscSum)));
        break;
    }
  }
  if (!c.registered) sscMemFree(outBuf), sscMemFree(inBuf);
  return wrong;
}

// Runs the case on every rank and expects no wrong element anywhere.
void expectCase(const Case& c, const char* algo) {
  std::string why;
  long long local = runCase(c, &why);
  long long errors = allSum(local < 0 ? 1000000 : 0);
  long long wrong = allSum(local > 0 ? local : 0);
  EXPECT_EQ(errors, 0) << c.describe(algo) << ": " << why;
  EXPECT_EQ(wrong, 0) << c.describe(algo) << ": " << why;
}

// The communicator reads STARSCREAM_ALGO once, at init: switch its choice in place.
void forceAlgo(const char* algo) { ASSERT_EQ(ssc::commForceAlgo(g_comm, algo), sscSuccess) << algo; }

TEST(MpiCollectives, SmallCountsEveryTypeOpAndAlgorithm) {
  for (const char* algo : kAlgos) {
    forceAlgo(algo);
    for (int ci = 0; ci < 6; ++ci) {
      Coll coll = static_cast<Coll>(ci);
      for (int t = 0; t < sscNumTypes; ++t) {
        for (sscRedOp_t op : kOps) {
          if (!reduces(coll) && op != sscSum) continue;
          for (uint64_t count : {0, 1, 7, 1000}) {
            for (bool inPlace : {false, true}) {
              int root = static_cast<int>(count % g_n);
              expectCase(Case{coll, static_cast<sscDataType_t>(t), op, count, inPlace, root}, algo);
              if (::testing::Test::HasFailure()) return;
            }
          }
        }
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
    ASSERT_NE(g_comm->staging.bytes, 0u) << "STARSCREAM_STAGING_BYTES=" << staging << " set up no staging";
  }
  const uint64_t stagedBefore = g_comm->staging.calls.load();
  for (Coll coll : {Coll::kAllReduce, Coll::kReduceScatter, Coll::kAllGather})
    for (int t = 0; t < sscNumTypes; ++t)
      for (sscRedOp_t op : kOps) {
        if (!reduces(coll) && op != sscSum) continue;
        for (uint64_t count : {0, 1, 7, 1000, 40009})
          for (bool inPlace : {false, true}) {
            expectCase(Case{coll, static_cast<sscDataType_t>(t), op, count, inPlace, 0}, "default");
            if (::testing::Test::HasFailure()) return;
          }
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
          if (coll == Coll::kAllReduce) r = sscAllReduce(src, dst, count, sscFloat32, sscSum, g_comm, g_stream);
          if (coll == Coll::kReduceScatter) r = sscReduceScatter(src, dst, count, sscFloat32, sscSum, g_comm, g_stream);
          if (coll == Coll::kAllGather) r = sscAllGather(src, dst, count, sscFloat32, g_comm, g_stream);
          ASSERT_EQ(r, sscSuccess) << sscGetLastError(g_comm);
          ASSERT_EQ(sscStreamSynchronize(g_stream), sscSuccess) << sscGetLastError(g_comm);
          const float ranks = static_cast<float>(g_n) * (g_n + 1) / 2;
          for (uint64_t i = 0; i < count * (coll == Coll::kAllGather ? g_n : 1); ++i) {
            float want = 0;
            if (coll == Coll::kAllReduce) want = ranks + g_n * static_cast<float>(i % 7);
            if (coll == Coll::kReduceScatter) want = ranks + g_n * static_cast<float>((g_rank * count + i) % 7);
            if (coll == Coll::kAllGather) want = static_cast<float>(i / count + 1 + (i % count) % 7);
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
      wrong += buf[k] != static_cast<float>(g_n) * (g_n - 1) / 2 + g_n * static_cast<float>(rep + k % 5);
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
  // cache, as plain buffers do; an in-place all-to-all takes the FIFOs.)
  forceAlgo("symmetric");
  for (int ci = 0; ci < 6; ++ci) {
    const Coll coll = static_cast<Coll>(ci);
    const bool rooted = coll == Coll::kBroadcast || coll == Coll::kReduce;
    for (int t = 0; t < sscNumTypes; ++t)
      for (sscRedOp_t op : kOps) {
        if (!reduces(coll) && op != sscSum) continue;
        for (uint64_t count : {0, 1, 7, 1000, 100003})
          for (bool inPlace : {false, true})
            for (int root = 0; root < (rooted ? g_n : 1); ++root) {
              // Every root for one type per collective; root 0 and the last for the others.
              if (rooted && t != 0 && root != 0 && root != g_n - 1) continue;
              Case c{coll, static_cast<sscDataType_t>(t), op, count, inPlace, root};
              c.registered = true;
              expectCase(c, "symmetric");
              if (::testing::Test::HasFailure()) return;
            }
      }
  }
  forceAlgo("");
}

TEST(MpiCollectives, PlainBufferBroadcastReduceAndAllToAllRunZeroCopy) {
  // As NCCL programs call them: plain allocations, and no buffer at all where the API ignores it
  // (a broadcast's sendbuff off the root, a reduce's recvbuff off the root). From the second use
  // of an allocation every call but the in-place all-to-all runs zero-copy, from every root.
  forceAlgo("");
  if (g_n < 2) GTEST_SKIP() << "one rank: collectives are copies";
  if (g_comm->topo.nnodes != 1) GTEST_SKIP() << "emulated nodes: peers' memory is not mappable";
  ASSERT_NE(g_comm->peerCache, nullptr);
  const uint64_t count = 30011;  // odd; above STARSCREAM_ZERO_COPY_MIN_BYTES in int32
  std::vector<int32_t*> bufs(2, nullptr);
  for (auto& b : bufs) ASSERT_EQ(sscMemAlloc(reinterpret_cast<void**>(&b), count * g_n * 4), sscSuccess);
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
            r = sscBroadcast(isRoot || inPlace ? src : nullptr, dst, count, sscInt32, root, g_comm, g_stream);
          if (coll == Coll::kReduce)
            r = sscReduce(src, isRoot || inPlace ? dst : nullptr, count, sscInt32, sscSum, root, g_comm, g_stream);
          if (coll == Coll::kAllToAll) r = sscAllToAll(src, dst, count, sscInt32, g_comm, g_stream);
          ASSERT_EQ(r, sscSuccess) << sscGetLastError(g_comm);
          ASSERT_EQ(sscStreamSynchronize(g_stream), sscSuccess) << sscGetLastError(g_comm);
          if (rep == 1 && !(coll == Coll::kAllToAll && inPlace))
            zeroCopy += g_comm->peerCache->stats().zeroCopyCalls - before;
          for (uint64_t i = 0; i < count * (coll == Coll::kAllToAll ? g_n : 1); ++i) {
            int64_t want = 0;
            if (coll == Coll::kBroadcast) want = root * 1000003 + static_cast<int64_t>(i);
            if (coll == Coll::kReduce) {
              if (!isRoot) break;
              want = static_cast<int64_t>(g_n) * (g_n - 1) / 2 * 1000003 + g_n * static_cast<int64_t>(i);
            }
            if (coll == Coll::kAllToAll)
              want = static_cast<int64_t>(i / count) * 1000003 + g_rank * count + i % count;
            wrong += dst[i] != static_cast<int32_t>(want);
          }
        }
  EXPECT_EQ(allSum(wrong), 0);
  // Second round: 5 zero-copy calls per root (the in-place all-to-all is the one that is not).
  EXPECT_EQ(zeroCopy, 5u * g_n);
  for (auto* b : bufs) ASSERT_EQ(sscMemFree(b), sscSuccess);
}

TEST(MpiCollectives, LargeCountEveryTypeAndOp) {
  // 2^20 + 3 elements: many chunks per call, uneven slices. Every dtype and every op appears for
  // every algorithm and collective (cycled, to keep the run short on 2 cores).
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
        expectCase(Case{coll, static_cast<sscDataType_t>(t), op, count, (t / 3) % 2 == 1, g_n - 1}, algo);
        if (::testing::Test::HasFailure()) return;
      }
    }
  }
  forceAlgo("");
}

TEST(MpiCollectives, HierarchicalEqualsFlatRingBitForBit) {
  // Integer-valued data is exact in every type, so any correct algorithm gives identical bits.
  for (int t = 0; t < sscNumTypes; ++t)
    for (sscRedOp_t op : kOps) {
      const uint64_t count = 4099;
      const size_t es = dtypeSize(static_cast<sscDataType_t>(t));
      std::vector<std::vector<char>> results;
      for (const char* algo : {"ring", "hierarchical"}) {
        forceAlgo(algo);
        std::vector<char> in(count * es), out(count * es);
        for (uint64_t i = 0; i < count; ++i)
          setElementFromDouble(static_cast<sscDataType_t>(t), in.data(), i,
                               static_cast<double>(inputValue(g_rank, i, static_cast<sscDataType_t>(t), op == sscNumOps ? sscSum : op)));
        sscRedOp_t useOp = op == sscNumOps ? sscSum : op;
        ASSERT_EQ(sscAllReduce(in.data(), out.data(), count, static_cast<sscDataType_t>(t), useOp, g_comm, g_stream), sscSuccess);
        ASSERT_EQ(sscStreamSynchronize(g_stream), sscSuccess);
        results.push_back(out);
      }
      // Float sums of small integers stay exact except in the fp8 types' coarse ranges and avg.
      bool exact = !(t == sscFloat8e5m2 || op == sscAvg);
      if (exact) {
        EXPECT_EQ(allSum(results[0] != results[1]), 0) << dtypeName(static_cast<sscDataType_t>(t)) << " " << opName(op);
      }
    }
  forceAlgo("");
}

TEST(MpiCollectives, SendRecvRingWithSelfAndLargeMessages) {
  // 200001: odd and long enough to be split over the channels (kP2pSplitBytes).
  for (uint64_t bytes : {uint64_t{1}, uint64_t{1000}, uint64_t{200001}, uint64_t{3u << 20}}) {
    std::vector<char> a(bytes), b(bytes), self(bytes), selfOut(bytes);
    for (uint64_t i = 0; i < bytes; ++i) a[i] = static_cast<char>(g_rank * 31 + i), self[i] = static_cast<char>(i * 7);
    int next = (g_rank + 1) % g_n, prev = (g_rank + g_n - 1) % g_n;
    ASSERT_EQ(sscGroupStart(), sscSuccess);
    // Receive posted first on purpose: the fused plan must not care about posting order.
    ASSERT_EQ(sscRecv(b.data(), bytes, sscUint8, prev, g_comm, g_stream), sscSuccess);
    ASSERT_EQ(sscSend(a.data(), bytes, sscUint8, next, g_comm, g_stream), sscSuccess);
    ASSERT_EQ(sscSend(self.data(), bytes, sscUint8, g_rank, g_comm, g_stream), sscSuccess);
    ASSERT_EQ(sscRecv(selfOut.data(), bytes, sscUint8, g_rank, g_comm, g_stream), sscSuccess);
    ASSERT_EQ(sscGroupEnd(), sscSuccess);
    ASSERT_EQ(sscStreamSynchronize(g_stream), sscSuccess);
    long long bad = 0;
    for (uint64_t i = 0; i < bytes; ++i)
      bad += b[i] != static_cast<char>(prev * 31 + i) || selfOut[i] != self[i];
    EXPECT_EQ(allSum(bad), 0) << bytes << " bytes";
  }
}

TEST(MpiCollectives, SplitByParityAndNoColor) {
  int color = g_rank == g_n - 1 && g_n > 2 ? SSC_SPLIT_NOCOLOR : g_rank % 2;
  sscComm_t sub = nullptr;
  ASSERT_EQ(sscCommSplit(g_comm, color, -g_rank, &sub, nullptr), sscSuccess) << sscGetLastError(g_comm);
  if (color == SSC_SPLIT_NOCOLOR) {
    EXPECT_EQ(sub, nullptr);
    return;
  }
  ASSERT_NE(sub, nullptr);
  int subN = 0, subRank = 0;
  ASSERT_EQ(sscCommCount(sub, &subN), sscSuccess);
  ASSERT_EQ(sscCommUserRank(sub, &subRank), sscSuccess);
  // key = -rank orders the members in reverse.
  int expectN = 0, expectRank = 0;
  for (int r = 0; r < g_n; ++r) {
    bool member = (r % 2 == g_rank % 2) && !(r == g_n - 1 && g_n > 2);
    if (!member) continue;
    ++expectN;
    if (r > g_rank) ++expectRank;
  }
  EXPECT_EQ(subN, expectN);
  EXPECT_EQ(subRank, expectRank);
  int64_t mine = g_rank, sum = 0;
  for (const char* algo : kAlgos) {
    forceAlgo(algo);
    ASSERT_EQ(sscAllReduce(&mine, &sum, 1, sscInt64, sscSum, sub, nullptr), sscSuccess);
    ASSERT_EQ(sscStreamSynchronize(nullptr), sscSuccess);
    int64_t expect = 0;
    for (int r = g_rank % 2; r < g_n; r += 2)
      if (!(r == g_n - 1 && g_n > 2)) expect += r;
    EXPECT_EQ(sum, expect) << algo;
  }
  forceAlgo("");
  EXPECT_EQ(sscCommDestroy(sub), sscSuccess);
}

TEST(MpiCollectives, TopologyIsIdenticalOnEveryRankAndQueryable) {
  size_t size = 0;
  ASSERT_EQ(sscCommGetTopologyJson(g_comm, nullptr, &size), sscSuccess);
  std::string json(size, '\0');
  ASSERT_EQ(sscCommGetTopologyJson(g_comm, json.data(), &size), sscSuccess);
  // Every rank's graph is byte-for-byte rank 0's.
  int len = static_cast<int>(size);
  int len0 = len;
  MPI_Bcast(&len0, 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::string json0 = json;
  json0.resize(len0);
  MPI_Bcast(json0.data(), len0, MPI_CHAR, 0, MPI_COMM_WORLD);
  EXPECT_EQ(allSum(json != json0), 0);
  sscRankTopology_t info;
  ASSERT_EQ(sscCommGetRankTopology(g_comm, g_rank, &info), sscSuccess);
  EXPECT_GE(info.partition, 0);
  EXPECT_LT(info.partition, info.partitionsOnGpu);
  EXPECT_LT(info.gpu, info.gpus);
  // Partition counts add up to the rank count.
  long long mine = info.partition == 0 ? info.partitionsOnGpu : 0;
  EXPECT_EQ(allSum(mine), g_n);
  size_t tiny = 4;
  char buf[4];
  EXPECT_EQ(sscCommGetTopologyJson(g_comm, buf, &tiny), sscInvalidArgument);
  EXPECT_EQ(tiny, size);
}

TEST(MpiCollectives, DeviceScalarPreMulSumIsReadWhenTheOperationRuns) {
  float scalar = 1.0f;
  sscRedOp_t op;
  ASSERT_EQ(sscRedOpCreatePreMulSum(&op, &scalar, sscFloat32, sscScalarDevice, g_comm), sscSuccess);
  scalar = 3.0f;  // a device-resident scalar is read when the work runs, not at creation
  float in = 1.0f, out = 0.0f;
  ASSERT_EQ(sscAllReduce(&in, &out, 1, sscFloat32, op, g_comm, g_stream), sscSuccess);
  ASSERT_EQ(sscStreamSynchronize(g_stream), sscSuccess);
  EXPECT_EQ(out, 3.0f * g_n);
  EXPECT_EQ(sscRedOpDestroy(op, g_comm), sscSuccess);
}

}  // namespace
}  // namespace ssc::test

int main(int argc, char** argv) {
  ssc::test::mpiGtestInit(&argc, &argv, &ssc::test::g_rank, &ssc::test::g_n);
  int rc = 1;
  if (sscCommInitMpi(MPI_COMM_WORLD, &ssc::test::g_comm) != sscSuccess) {
    fprintf(stderr, "rank %d: sscCommInitMpi failed: %s\n", ssc::test::g_rank, sscGetLastError(nullptr));
  } else if (sscStreamCreate(&ssc::test::g_stream) != sscSuccess) {
    fprintf(stderr, "rank %d: sscStreamCreate failed\n", ssc::test::g_rank);
  } else {
    // Collective registration: every rank registers its pool buffers in the same order.
    if (sscMemAlloc(&ssc::test::g_poolIn, ssc::test::kPoolBytes) != sscSuccess ||
        sscMemAlloc(&ssc::test::g_poolOut, ssc::test::kPoolBytes) != sscSuccess ||
        sscCommRegister(ssc::test::g_comm, ssc::test::g_poolIn, ssc::test::kPoolBytes, &ssc::test::g_poolHandles[0]) != sscSuccess ||
        sscCommRegister(ssc::test::g_comm, ssc::test::g_poolOut, ssc::test::kPoolBytes, &ssc::test::g_poolHandles[1]) != sscSuccess) {
      fprintf(stderr, "rank %d: registering the pool failed: %s\n", ssc::test::g_rank, sscGetLastError(ssc::test::g_comm));
    } else {
      rc = RUN_ALL_TESTS();
      sscCommDeregister(ssc::test::g_comm, ssc::test::g_poolHandles[0]);
      sscCommDeregister(ssc::test::g_comm, ssc::test::g_poolHandles[1]);
    }
    sscMemFree(ssc::test::g_poolIn);
    sscMemFree(ssc::test::g_poolOut);
    sscStreamDestroy(ssc::test::g_stream);
    sscCommDestroy(ssc::test::g_comm);
  }
  return ssc::test::mpiGtestFinish(rc);
}
