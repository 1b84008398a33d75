// SPDX-License-Identifier: MIT
// Checked mode (STARSCREAM_CHECK=1, src/comm/call_check.h) under mpirun on the host backend.
// Without it, ranks that pass the same collective with a different datatype of the same size, a
// different op, count or root get wrong data, a hang, or an error one call late. With it every
// rank must fail that very call with sscInvalidUsage, naming the field, and the communicator must
// keep working for the next matching call. Launched with STARSCREAM_CHECK=1 by
// tests/integration/CMakeLists.txt at several rank counts and topologies (the exchange runs
// through the peer cache's call table on one node, through a table of its own across emulated
// nodes, and through the bootstrap once a test drops that table).
#include <gtest/gtest.h>
#include <fmt/format.h>
#include <mpi.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "src/comm/call_check.h"
#include "src/comm/comm.h"
#include "starscream/starscream.h"
#include "starscream/starscream_mpi.h"
#include "tests/support/mpi_gtest.h"
#include "transports/usr/shm_allgather.h"

namespace ssc::test {
namespace {

sscComm_t g_comm = nullptr;
sscStream_t g_stream = nullptr;
int g_rank = 0, g_n = 1;

enum class Coll { kAllReduce, kReduceScatter, kAllGather, kBroadcast, kReduce, kAllToAll };
const Coll kColls[] = {Coll::kAllReduce, Coll::kReduceScatter, Coll::kAllGather,
                       Coll::kBroadcast, Coll::kReduce,        Coll::kAllToAll};
const char* collName(Coll c) {
  const char* names[] = {"sscAllReduce", "sscReduceScatter", "sscAllGather",
                         "sscBroadcast", "sscReduce",        "sscAllToAll"};
  return names[static_cast<int>(c)];
}
bool reduces(Coll c) {
  return c == Coll::kAllReduce || c == Coll::kReduceScatter || c == Coll::kReduce;
}
bool rooted(Coll c) { return c == Coll::kBroadcast || c == Coll::kReduce; }

// One rank's arguments for a call.
struct Args {
  Coll coll;
  uint64_t count;
  sscDataType_t type = sscFloat32;
  sscRedOp_t op = sscSum;
  int root = 0;
  bool inPlace = false;
};

// Buffers big enough for any call here: n x count elements of 8 bytes, each side.
struct Buffers {
  std::vector<char> in, out;
  explicit Buffers(uint64_t count) : in((count + 8) * 8 * g_n), out((count + 8) * 8 * g_n) {}
};

sscResult_t issue(const Args& a, Buffers* b) {
  char* out = b->out.data();
  char* in = a.inPlace ? out : b->in.data();
  const size_t es = 4;  // float32 and int32 alike; mismatched types here are same-size
  if (a.inPlace && a.coll == Coll::kReduceScatter) out = in + g_rank * a.count * es;
  if (a.inPlace && a.coll == Coll::kAllGather) in = out + g_rank * a.count * es;
  switch (a.coll) {
    case Coll::kAllReduce: return sscAllReduce(in, out, a.count, a.type, a.op, g_comm, g_stream);
    case Coll::kReduceScatter:
      return sscReduceScatter(in, out, a.count, a.type, a.op, g_comm, g_stream);
    case Coll::kAllGather: return sscAllGather(in, out, a.count, a.type, g_comm, g_stream);
    case Coll::kBroadcast: return sscBroadcast(in, out, a.count, a.type, a.root, g_comm, g_stream);
    case Coll::kReduce: return sscReduce(in, out, a.count, a.type, a.op, a.root, g_comm, g_stream);
    case Coll::kAllToAll: return sscAllToAll(in, out, a.count, a.type, g_comm, g_stream);
  }
  return sscInternalError;
}

long long allSum(long long local) {
  long long total = 0;
  MPI_Allreduce(&local, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  return total;
}

// Runs a matching float32 sum call and checks every output element on every rank. Returns the
// number of wrong elements over all ranks (or a large number when a call failed).
long long runMatching(Coll coll, uint64_t count, bool inPlace, std::string* why) {
  Buffers b(count);
  Args a{coll, count};
  a.inPlace = inPlace;
  a.root = g_n - 1;
  const uint64_t n = static_cast<uint64_t>(g_n);
  const uint64_t inElems =
      coll == Coll::kReduceScatter || coll == Coll::kAllToAll ? n * count : count;
  float* out = reinterpret_cast<float*>(b.out.data());
  float* in = inPlace ? out : reinterpret_cast<float*>(b.in.data());
  if (inPlace && coll == Coll::kAllGather) in = out + g_rank * count;
  // Rank r's element k is r + 1 + k % 5 (k indexes its whole input).
  for (uint64_t k = 0; k < inElems; ++k) in[k] = static_cast<float>(g_rank + 1 + k % 5);
  if (inPlace && coll == Coll::kReduceScatter) out = in + g_rank * count;
  sscResult_t r = issue(a, &b);
  if (r == sscSuccess) r = sscStreamSynchronize(g_stream);
  long long wrong = 0;
  if (r != sscSuccess) {
    *why = fmt::format("rank {}: {}", g_rank, sscGetLastError(g_comm));
    wrong = 1000000;
  } else {
    const float ranks = static_cast<float>(g_n * (g_n + 1) / 2);
    auto expect = [&](uint64_t i, float want) {
      if (out[i] == want) return;
      if (wrong++ == 0) *why = fmt::format("rank {} out[{}] = {} want {}", g_rank, i, out[i], want);
    };
    for (uint64_t i = 0; i < count; ++i) {
      switch (coll) {
        case Coll::kAllReduce: expect(i, ranks + g_n * static_cast<float>(i % 5)); break;
        case Coll::kReduceScatter:
          expect(i, ranks + g_n * static_cast<float>((g_rank * count + i) % 5));
          break;
        case Coll::kReduce:
          if (g_rank == a.root) expect(i, ranks + g_n * static_cast<float>(i % 5));
          break;
        case Coll::kBroadcast: expect(i, static_cast<float>(a.root + 1 + i % 5)); break;
        case Coll::kAllGather:
          for (int j = 0; j < g_n; ++j) expect(j * count + i, static_cast<float>(j + 1 + i % 5));
          break;
        case Coll::kAllToAll:
          for (int j = 0; j < g_n; ++j)
            expect(j * count + i, static_cast<float>(j + 1 + (g_rank * count + i) % 5));
          break;
      }
    }
  }
  return allSum(wrong);
}

// Every rank must have failed its call with `code` (sscInvalidUsage unless told), and every
// rank's error must name `field` and checked mode. Returns a description of what went wrong ("").
std::string expectRefusedEverywhere(sscResult_t r, const char* field, const std::string& what,
                                    sscResult_t ownCode = sscInvalidUsage, int ownRank = -1) {
  const std::string text = sscGetLastError(g_comm);
  const sscResult_t want = g_rank == ownRank ? ownCode : sscInvalidUsage;
  bool ok = r == want;
  if (g_rank != ownRank)
    ok = ok && text.find(field) != std::string::npos &&
         text.find("STARSCREAM_CHECK=1") != std::string::npos;
  std::string mine = ok ? ""
                        : fmt::format("rank {}: {} gave {} ({}), want {} naming '{}'", g_rank, what,
                                      static_cast<int>(r), text, static_cast<int>(want), field);
  // Gather the first failing rank's description on every rank.
  int bad = ok ? 0 : 1;
  std::vector<int> all(g_n);
  MPI_Allgather(&bad, 1, MPI_INT, all.data(), 1, MPI_INT, MPI_COMM_WORLD);
  for (int q = 0; q < g_n; ++q)
    if (all[q] != 0) {
      int len = static_cast<int>(mine.size());
      MPI_Bcast(&len, 1, MPI_INT, q, MPI_COMM_WORLD);
      std::string got(len, ' ');
      if (g_rank == q) got = mine;
      MPI_Bcast(got.data(), len, MPI_CHAR, q, MPI_COMM_WORLD);
      return got;
    }
  return "";
}

// The last rank passes `odd` where every other rank passes `same`; every rank must fail the
// call with the field named, and the next matching call must give the right data.
void expectMismatchCaught(const Args& same, const Args& odd, const char* field) {
  Buffers b(same.count + odd.count);
  const Args& mine = g_rank == g_n - 1 ? odd : same;
  const sscResult_t r = issue(mine, &b);
  const std::string what =
      fmt::format("{} with a different {} on rank {}", collName(same.coll), field, g_n - 1);
  EXPECT_EQ(expectRefusedEverywhere(r, field, what), "");
  std::string why;
  EXPECT_EQ(runMatching(same.coll, same.count, false, &why), 0)
      << "the call after " << what << ": " << why;
}

class CheckedMode : public ::testing::TestWithParam<Coll> {
 protected:
  void SetUp() override {
    if (g_n < 2) GTEST_SKIP() << "one rank: nothing to compare";
    ASSERT_NE(g_comm->callCheck, nullptr) << "run with STARSCREAM_CHECK=1";
  }
};

// float32 against int32 (both 4 bytes): without the check this reduces bit patterns of one type
// as the other, silently. 50001 elements run the plain-buffer zero-copy exchange on one node,
// 3 run packets or FIFOs.
TEST_P(CheckedMode, DatatypeMismatchOfTheSameSizeFailsOnEveryRank) {
  for (uint64_t count : {uint64_t{3}, uint64_t{50001}}) {
    Args same{GetParam(), count};
    Args odd = same;
    odd.type = sscInt32;
    expectMismatchCaught(same, odd, "datatype");
  }
}

TEST_P(CheckedMode, CountMismatchFailsOnEveryRank) {
  Args same{GetParam(), 1000};
  Args odd = same;
  odd.count = 1001;
  expectMismatchCaught(same, odd, "count");
  // A rank with nothing to move still meets its peers at the call.
  Args none = same;
  none.count = 0;
  expectMismatchCaught(same, none, "count");
}

TEST_P(CheckedMode, OpMismatchFailsOnEveryRank) {
  if (!reduces(GetParam())) GTEST_SKIP() << "no reduction";
  Args same{GetParam(), 1000};
  Args odd = same;
  odd.op = sscMax;
  expectMismatchCaught(same, odd, "op");
}

TEST_P(CheckedMode, RootMismatchFailsOnEveryRankAtThatCall) {
  if (!rooted(GetParam())) GTEST_SKIP() << "no root";
  Args same{GetParam(), 1000};
  Args odd = same;
  odd.root = 1;
  expectMismatchCaught(same, odd, "root");
  // A root out of range on one rank: that rank refuses its own arguments (sscInvalidArgument)
  // and its peers fail the same call instead of waiting for it.
  Buffers b(1000);
  Args bad = same;
  bad.root = g_n + 3;
  const sscResult_t r = issue(g_rank == 0 ? bad : same, &b);
  EXPECT_EQ(expectRefusedEverywhere(r, "failed on rank 0", "a root out of range on rank 0",
                                    sscInvalidArgument, 0),
            "");
  std::string why;
  EXPECT_EQ(runMatching(GetParam(), 1000, false, &why), 0) << why;
}

TEST_P(CheckedMode, MatchingCallsPassInPlaceAndOutOfPlace) {
  for (uint64_t count : {uint64_t{1}, uint64_t{1000}, uint64_t{50001}})
    for (bool inPlace : {false, true}) {
      std::string why;
      EXPECT_EQ(runMatching(GetParam(), count, inPlace, &why), 0)
          << collName(GetParam()) << " count " << count << (inPlace ? " in place: " : ": ") << why;
    }
}

INSTANTIATE_TEST_SUITE_P(EveryCollective, CheckedMode, ::testing::ValuesIn(kColls),
                         [](const ::testing::TestParamInfo<Coll>& info) {
                           return std::string(collName(info.param) + 3);
                         });

TEST(CheckedModeGroup, MatchingGroupPassesAndAMismatchInsideFailsTheGroupEverywhere) {
  if (g_n < 2) GTEST_SKIP() << "one rank: nothing to compare";
  const uint64_t count = 4099;
  std::vector<float> a(count), sum(count), bcast(count);
  for (int round = 0; round < 3; ++round) {
    // Round 1: the last rank's broadcast names another root; rounds 0 and 2 match.
    const bool odd = round == 1 && g_rank == g_n - 1;
    for (uint64_t i = 0; i < count; ++i) a[i] = static_cast<float>(g_rank + i % 3), bcast[i] = -1;
    if (g_rank == 0) std::memcpy(bcast.data(), a.data(), count * sizeof(float));
    sscResult_t r = sscGroupStart();
    if (r == sscSuccess)
      r = sscAllReduce(a.data(), sum.data(), count, sscFloat32, sscSum, g_comm, g_stream);
    if (r == sscSuccess)
      r = sscBroadcast(bcast.data(), bcast.data(), count, sscFloat32, odd ? 1 : 0, g_comm,
                       g_stream);
    // A send/recv ring in the same group rides along.
    std::vector<int32_t> sendv(7, g_rank), recvv(7, -1);
    if (r == sscSuccess)
      r = sscSend(sendv.data(), 7, sscInt32, (g_rank + 1) % g_n, g_comm, g_stream);
    if (r == sscSuccess)
      r = sscRecv(recvv.data(), 7, sscInt32, (g_rank + g_n - 1) % g_n, g_comm, g_stream);
    const sscResult_t end = sscGroupEnd();
    ASSERT_EQ(r, sscSuccess);
    if (round == 1) {
      EXPECT_EQ(expectRefusedEverywhere(end, "root", "a group with a mismatched broadcast root"),
                "");
      continue;
    }
    ASSERT_EQ(end, sscSuccess) << sscGetLastError(g_comm);
    ASSERT_EQ(sscStreamSynchronize(g_stream), sscSuccess);
    long long wrong = 0;
    for (uint64_t i = 0; i < count; ++i) {
      wrong += sum[i] != static_cast<float>(g_n * (g_n - 1) / 2 + g_n * static_cast<int>(i % 3));
      wrong += bcast[i] != static_cast<float>(i % 3);
    }
    for (int v : recvv) wrong += v != (g_rank + g_n - 1) % g_n;
    EXPECT_EQ(allSum(wrong), 0) << "round " << round;
  }
}

TEST(CheckedModeGroup, ARankRefusingACallInsideAGroupFailsTheGroupEverywhere) {
  if (g_n < 2) GTEST_SKIP() << "one rank: nothing to compare";
  std::vector<float> a(100, 1.0f), b(100);
  ASSERT_EQ(sscGroupStart(), sscSuccess);
  (void)sscAllReduce(a.data(), b.data(), 100, sscFloat32, sscSum, g_comm, g_stream);
  // Rank 0 passes an invalid datatype: it refuses the call itself.
  (void)sscAllReduce(a.data(), b.data(), 100,
                     g_rank == 0 ? static_cast<sscDataType_t>(99) : sscFloat32, sscSum, g_comm,
                     g_stream);
  const sscResult_t end = sscGroupEnd();
  EXPECT_EQ(expectRefusedEverywhere(end, "failed on rank 0", "a group rank 0 refused",
                                    sscInvalidArgument, 0),
            "");
  std::string why;
  EXPECT_EQ(runMatching(Coll::kAllReduce, 100, false, &why), 0) << why;
}

TEST(CheckedModeTransport, TheBootstrapExchangeCatchesMismatchesToo) {
  // Communicators without the peer cache (emulated nodes here) keep a shared table of their own;
  // across hosts they exchange through the bootstrap. Dropping the table on every rank at this
  // same point moves the exchange to the bootstrap.
  if (g_n < 2) GTEST_SKIP() << "one rank: nothing to compare";
  if (g_comm->peerCache != nullptr)
    GTEST_SKIP() << "the peer cache's table carries the fingerprints";
  ASSERT_NE(g_comm->callCheck, nullptr);
  g_comm->callCheck->table.reset();
  for (Coll coll : {Coll::kAllReduce, Coll::kBroadcast}) {
    Args same{coll, 100};
    Args odd = same;
    if (coll == Coll::kAllReduce)
      odd.type = sscInt32;
    else
      odd.root = 1;
    expectMismatchCaught(same, odd, coll == Coll::kAllReduce ? "datatype" : "root");
  }
}

}  // namespace
}  // namespace ssc::test

int main(int argc, char** argv) {
  ssc::test::mpiGtestInit(&argc, &argv, &ssc::test::g_rank, &ssc::test::g_n);
  int rc = 1;
  if (sscCommInitMpi(MPI_COMM_WORLD, &ssc::test::g_comm) != sscSuccess) {
    fprintf(stderr, "rank %d: sscCommInitMpi failed: %s\n", ssc::test::g_rank,
            sscGetLastError(nullptr));
  } else if (sscStreamCreate(&ssc::test::g_stream) != sscSuccess) {
    fprintf(stderr, "rank %d: sscStreamCreate failed\n", ssc::test::g_rank);
  } else {
    rc = RUN_ALL_TESTS();
    sscStreamDestroy(ssc::test::g_stream);
    sscCommDestroy(ssc::test::g_comm);
  }
  return ssc::test::mpiGtestFinish(rc);
}
