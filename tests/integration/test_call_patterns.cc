// SPDX-License-Identifier: MIT
// Call patterns of NCCL's clients that the NCCL shim cannot express on the host backend (there
// it completes every call before returning): several streams on ONE communicator, collectives
// issued round-robin across them with no synchronisation in between, every rank issuing in the
// same order (PyTorch's per-collective streams, nccl-tests' -t/-g modes sharing a communicator).
// NCCL's rule is that the operations of one communicator execute in issue order whatever the
// stream, so every result must be exact. A broken implementation interleaves two streams' steps
// on the shared FIFOs and hangs or corrupts data: every wait is bounded by STARSCREAM_TIMEOUT
// (set by ctest), so a hang is reported as an error. Launched under mpirun by ctest
// (tests/integration/CMakeLists.txt).
#include <gtest/gtest.h>
#include <fmt/format.h>
#include <mpi.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "starscream/starscream.h"
#include "starscream/starscream_mpi.h"
#include "tests/support/mpi_gtest.h"

namespace ssc::test {
namespace {

sscComm_t g_comm = nullptr;
int g_rank = 0, g_n = 1;
constexpr int kStreams = 3;
sscStream_t g_streams[kStreams] = {};

long long allSum(long long local) {
  long long total = 0;
  MPI_Allreduce(&local, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  return total;
}

enum class Kind { kAllReduce, kAllGather, kReduceScatter, kBroadcast, kSendRecv };
const char* kKindNames[] = {"allreduce", "allgather", "reducescatter", "broadcast", "sendrecv"};

// One operation of the sequence: its own buffers, so the operations share no data and only
// their order on the communicator matters.
struct Op {
  Kind kind;
  int index;  // position in the issue order
  int stream;
  uint64_t count;
  int root = 0;
  std::vector<float> fin, fout;    // all-reduce, reduce-scatter
  std::vector<int32_t> iin, iout;  // all-gather, broadcast, send/recv
  std::string describe() const {
    return fmt::format("op {} ({} count {} on stream {})", index,
                       kKindNames[static_cast<int>(kind)], count, stream);
  }
};

int32_t word(int rank, int index, uint64_t k) {
  return rank * 100000 + index * 1000 + static_cast<int32_t>(k % 997);
}

// Makes op's inputs and enqueues it on its stream; returns the call's result.
sscResult_t issue(Op* op) {
  const uint64_t c = op->count, n = static_cast<uint64_t>(g_n);
  const int next = (g_rank + 1) % g_n, prev = (g_rank + g_n - 1) % g_n;
  sscStream_t s = g_streams[op->stream];
  switch (op->kind) {
    case Kind::kAllReduce:
      op->fin.resize(c), op->fout.assign(c, -1.0f);
      for (uint64_t k = 0; k < c; ++k)
        op->fin[k] = static_cast<float>(g_rank + 1 + (k + op->index) % 7);
      return sscAllReduce(op->fin.data(), op->fout.data(), c, sscFloat32, sscSum, g_comm, s);
    case Kind::kReduceScatter:
      op->fin.resize(n * c), op->fout.assign(c, -1.0f);
      for (uint64_t k = 0; k < n * c; ++k)
        op->fin[k] = static_cast<float>(g_rank + 1 + (k + op->index) % 5);
      return sscReduceScatter(op->fin.data(), op->fout.data(), c, sscFloat32, sscSum, g_comm, s);
    case Kind::kAllGather:
      op->iin.resize(c), op->iout.assign(n * c, -1);
      for (uint64_t k = 0; k < c; ++k) op->iin[k] = word(g_rank, op->index, k);
      return sscAllGather(op->iin.data(), op->iout.data(), c, sscInt32, g_comm, s);
    case Kind::kBroadcast:
      op->iin.resize(c), op->iout.assign(c, -1);
      for (uint64_t k = 0; k < c; ++k) op->iin[k] = word(g_rank, op->index, k);
      return sscBroadcast(op->iin.data(), op->iout.data(), c, sscInt32, op->root, g_comm, s);
    case Kind::kSendRecv: {
      op->iin.resize(c), op->iout.assign(c, -1);
      for (uint64_t k = 0; k < c; ++k) op->iin[k] = word(g_rank, op->index, k);
      sscResult_t r = sscGroupStart();
      if (r != sscSuccess) return r;
      r = sscSend(op->iin.data(), c, sscInt32, next, g_comm, s);
      if (r == sscSuccess) r = sscRecv(op->iout.data(), c, sscInt32, prev, g_comm, s);
      sscResult_t e = sscGroupEnd();
      return r != sscSuccess ? r : e;
    }
  }
  return sscInternalError;
}

// Counts op's wrong elements, describing the first in *why.
long long verify(const Op& op, std::string* why) {
  const uint64_t c = op.count, n = static_cast<uint64_t>(g_n);
  const double ranks = static_cast<double>(g_n) * (g_n + 1) / 2;
  long long wrong = 0;
  auto expect = [&](uint64_t k, double got, double want) {
    if (got == want) return;
    if (wrong++ == 0 && why->empty())
      *why = fmt::format("rank {}: {}: element {} is {}, want {}", g_rank, op.describe(), k, got,
                         want);
  };
  for (uint64_t k = 0; k < c; ++k) {
    switch (op.kind) {
      case Kind::kAllReduce:
        expect(k, op.fout[k], ranks + g_n * static_cast<double>((k + op.index) % 7));
        break;
      case Kind::kReduceScatter:
        expect(k, op.fout[k], ranks + g_n * static_cast<double>((g_rank * c + k + op.index) % 5));
        break;
      case Kind::kAllGather:
        for (uint64_t j = 0; j < n; ++j)
          expect(j * c + k, op.iout[j * c + k], word(static_cast<int>(j), op.index, k));
        break;
      case Kind::kBroadcast: expect(k, op.iout[k], word(op.root, op.index, k)); break;
      case Kind::kSendRecv:
        expect(k, op.iout[k], word((g_rank + g_n - 1) % g_n, op.index, k));
        break;
    }
  }
  return wrong;
}

// Issues `ops` in order on every rank with no synchronisation in between, then synchronises the
// streams (in `syncOrder`) and checks every result on every rank.
void runSequence(std::vector<Op>& ops, const std::vector<int>& syncOrder) {
  std::string why;
  long long errors = 0;
  for (Op& op : ops) {
    sscResult_t r = issue(&op);
    if (r != sscSuccess) {
      if (errors++ == 0)
        why = fmt::format("rank {}: issuing {}: {}: {}", g_rank, op.describe(),
                          sscGetErrorString(r), sscGetLastError(g_comm));
    }
  }
  for (int s : syncOrder) {
    sscResult_t r = sscStreamSynchronize(g_streams[s]);
    if (r != sscSuccess && errors++ == 0)
      why = fmt::format("rank {}: sscStreamSynchronize(stream {}): {}: {}", g_rank, s,
                        sscGetErrorString(r), sscGetLastError(g_comm));
  }
  long long wrong = 0;
  if (errors == 0)
    for (const Op& op : ops) wrong += verify(op, &why);
  const long long allErrors = allSum(errors), allWrong = allSum(wrong);
  EXPECT_EQ(allErrors, 0) << why;
  EXPECT_EQ(allWrong, 0) << why;
}

std::vector<Op> makeOps(const std::vector<Kind>& kinds, const std::vector<uint64_t>& counts,
                        int total) {
  std::vector<Op> ops;
  for (int i = 0; i < total; ++i) {
    Op op;
    op.kind = kinds[i % kinds.size()];
    op.index = i;
    op.stream = i % kStreams;
    op.count = counts[(i / kinds.size()) % counts.size()];
    op.root = i % g_n;
    ops.push_back(std::move(op));
  }
  return ops;
}

// Each test gets a communicator and three streams of its own, so a failure (which leaves the
// communicator failed) is reported by its own test and does not spill into the next ones.
class MultiStream : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(sscCommInitMpi(MPI_COMM_WORLD, &g_comm), sscSuccess) << sscGetLastError(nullptr);
    for (sscStream_t& s : g_streams)
      ASSERT_EQ(sscStreamCreate(&s), sscSuccess) << sscGetLastError(nullptr);
  }
  void TearDown() override {
    for (sscStream_t& s : g_streams)
      if (s != nullptr) sscStreamDestroy(s), s = nullptr;
    if (g_comm != nullptr) sscCommDestroy(g_comm), g_comm = nullptr;
  }
};

TEST_F(MultiStream, AllReduceAndAllGatherRoundRobinOverThreeStreams) {
  // 30 calls alternating all-reduce and all-gather, each on the next stream, sizes from one
  // element (LL packets) to 256 Ki elements (FIFO chunks).
  std::vector<Op> ops = makeOps({Kind::kAllReduce, Kind::kAllGather},
                                {1, 7, 1000, 4099, 65539, 262147, 33, 16384}, 30);
  runSequence(ops, {0, 1, 2});
}

TEST_F(MultiStream, EveryKindRoundRobinSynchronisedInReverse) {
  // All-reduce, all-gather, reduce-scatter, broadcast (rotating root) and a send/recv ring group,
  // 40 calls over the three streams, the streams synchronised last-first.
  std::vector<Op> ops = makeOps(
      {Kind::kAllReduce, Kind::kAllGather, Kind::kReduceScatter, Kind::kBroadcast, Kind::kSendRecv},
      {3, 4099, 100003, 512, 65536}, 40);
  runSequence(ops, {2, 1, 0});
}

TEST_F(MultiStream, ManySmallCallsWithoutSynchronisation) {
  // 150 small calls (latency path), the issue order interleaving the streams.
  std::vector<Op> ops =
      makeOps({Kind::kAllReduce, Kind::kAllGather, Kind::kBroadcast}, {1, 2, 17, 255, 1000}, 150);
  runSequence(ops, {1, 0, 2});
}

}  // namespace
}  // namespace ssc::test

int main(int argc, char** argv) {
  ssc::test::mpiGtestInit(&argc, &argv, &ssc::test::g_rank, &ssc::test::g_n);
  return ssc::test::mpiGtestFinish(RUN_ALL_TESTS());
}
