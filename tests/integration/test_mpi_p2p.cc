// SPDX-License-Identifier: MIT
// Point-to-point under mpirun, one rank per process as NCCL programs run: the patterns
// mixture-of-experts and pipeline parallelism send (all-to-allv as grouped sends and receives
// with uneven splits, in place as nccl-tests and PyTorch emit it, many messages to one peer,
// sends to self, zero-byte messages, several streams, a captured group) and the errors of calls
// that do not pair up. Buffers from sscMemAlloc go one-copy once the sender has mapped the
// receiver's allocation (transports/usr/p2p_directory.h: the first group into a new allocation
// takes the FIFOs); plain host vectors cannot be exported and take the FIFOs throughout. Every
// result is checked either way, and the one-copy cases check that offers were made. Waits are
// bounded by STARSCREAM_TIMEOUT (set by ctest), so a hang is reported as an error.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "src/comm/comm.h"
#include "src/device/host/host_stream.h"
#include "starscream/starscream.h"
#include "starscream/starscream_mpi.h"
#include "tests/support/mpi_gtest.h"
#include "transports/usr/p2p_directory.h"

namespace ssc::test {
namespace {

int g_rank = 0, g_n = 1;
sscComm_t g_comm = nullptr;
sscStream_t g_stream = nullptr;

long long allSum(long long local) {
  long long total = 0;
  MPI_Allreduce(&local, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  return total;
}

uint64_t oneCopyOffers() {
  return g_comm->p2pDirectory == nullptr ? 0 : g_comm->p2pDirectory->stats().oneCopyOffers;
}

// Elements rank `from` sends to rank `to` in round `round`: uneven, 0 and 1 included, odd.
uint64_t split(int from, int to, int round) {
  static const uint64_t kSizes[] = {0, 1, 7, 1000, 4099, 30011, 2, 65537};
  return kSizes[(from * 5 + to * 3 + round) % 8];
}

// The value element i of the message from -> to carries (every element distinct per message).
uint8_t byteOf(int from, int to, uint64_t i) {
  return static_cast<uint8_t>(from * 37 + to * 11 + i * 13 + 1);
}

// Storage for one test: device-like memory (sscMemAlloc: exportable, one-copy) or a vector (the
// host backend's stand-in for memory the runtime cannot share: the FIFOs).
struct Buffer {
  explicit Buffer(uint64_t bytes, bool exportable) : bytes_(bytes), exportable_(exportable) {
    if (exportable_) {
      EXPECT_EQ(sscMemAlloc(&p_, bytes_ == 0 ? 1 : bytes_), sscSuccess);
    } else {
      v_.resize(bytes_ == 0 ? 1 : bytes_);
      p_ = v_.data();
    }
  }
  ~Buffer() {
    if (exportable_) sscMemFree(p_);
  }
  uint8_t* get() const { return static_cast<uint8_t*>(p_); }

  uint64_t bytes_;
  bool exportable_;
  void* p_ = nullptr;
  std::vector<uint8_t> v_;
};

// All-to-allv of `esize`-byte elements as PyTorch's all_to_all_single with splits emits it: one
// group of a send to and a receive from every rank (self included), rounds of new splits over
// the same two buffers.
void allToAllv(bool exportable, size_t esize, sscDataType_t type, int rounds) {
  uint64_t maxIn = 0, maxOut = 0;
  for (int r = 0; r < rounds; ++r) {
    uint64_t in = 0, out = 0;
    for (int q = 0; q < g_n; ++q) in += split(g_rank, q, r), out += split(q, g_rank, r);
    maxIn = std::max(maxIn, in), maxOut = std::max(maxOut, out);
  }
  Buffer in(maxIn * esize, exportable), out(maxOut * esize, exportable);
  long long wrong = 0;
  for (int r = 0; r < rounds; ++r) {
    uint64_t off = 0;
    for (int q = 0; q < g_n; ++q)
      for (uint64_t i = 0; i < split(g_rank, q, r) * esize; ++i)
        in.get()[off++] = byteOf(g_rank, q, i);
    std::memset(out.get(), 0xee, maxOut * esize);
    ASSERT_EQ(sscGroupStart(), sscSuccess);
    uint64_t sOff = 0, rOff = 0;
    for (int q = 0; q < g_n; ++q) {
      const uint64_t s = split(g_rank, q, r), v = split(q, g_rank, r);
      ASSERT_EQ(sscSend(in.get() + sOff * esize, s, type, q, g_comm, g_stream), sscSuccess);
      ASSERT_EQ(sscRecv(out.get() + rOff * esize, v, type, q, g_comm, g_stream), sscSuccess);
      sOff += s, rOff += v;
    }
    ASSERT_EQ(sscGroupEnd(), sscSuccess) << sscGetLastError(g_comm);
    ASSERT_EQ(sscStreamSynchronize(g_stream), sscSuccess) << sscGetLastError(g_comm);
    rOff = 0;
    for (int q = 0; q < g_n; ++q) {
      const uint64_t v = split(q, g_rank, r) * esize;
      for (uint64_t i = 0; i < v; ++i) wrong += out.get()[rOff + i] != byteOf(q, g_rank, i);
      rOff += v;
    }
  }
  EXPECT_EQ(allSum(wrong), 0);
}

TEST(MpiP2p, AllToAllvUnevenSplitsOneCopy) {
  const uint64_t before = oneCopyOffers();
  allToAllv(true, 2, sscBfloat16, 4);
  allToAllv(true, 4, sscFloat32, 3);
  allToAllv(true, 1, sscUint8, 3);
  allToAllv(true, 8, sscFloat64, 2);
  // From the second round on the senders have mapped the receive buffers.
  if (g_comm->p2pDirectory != nullptr && g_n > 1) {
    EXPECT_GT(allSum(static_cast<long long>(oneCopyOffers() - before)), 0);
  }
}

TEST(MpiP2p, AllToAllvUnevenSplitsThroughTheFifos) {
  const uint64_t before = oneCopyOffers();
  allToAllv(false, 4, sscInt32, 2);
  allToAllv(false, 2, sscFloat16, 2);
  EXPECT_EQ(oneCopyOffers(), before) << "memory that cannot be exported was offered";
}

TEST(MpiP2p, ManySendsToOnePeerSelfSendsAndZeroBytes) {
  // Six messages to the next rank in one group (sizes 0, 1, odd, over a FIFO slot), as many from
  // the previous one, and two to self; repeated so the second round goes one-copy.
  const uint64_t sizes[] = {0, 1, 4099, 3, 200001, 64};
  const int next = (g_rank + 1) % g_n, prev = (g_rank + g_n - 1) % g_n;
  std::vector<std::unique_ptr<Buffer>> sendBufs, recvBufs;
  for (uint64_t s : sizes) {
    sendBufs.push_back(std::make_unique<Buffer>(s, true));
    recvBufs.push_back(std::make_unique<Buffer>(s, true));
  }
  Buffer self(1000, true), selfOut(1000, true), self2(5, false), self2Out(5, false);
  long long wrong = 0;
  for (int round = 0; round < 3; ++round) {
    for (size_t m = 0; m < std::size(sizes); ++m) {
      for (uint64_t i = 0; i < sizes[m]; ++i)
        sendBufs[m]->get()[i] = byteOf(g_rank, next, i + m + round);
      std::memset(recvBufs[m]->get(), 0, sizes[m]);
    }
    for (uint64_t i = 0; i < 1000; ++i) self.get()[i] = byteOf(g_rank, g_rank, i + round);
    for (uint64_t i = 0; i < 5; ++i) self2.get()[i] = byteOf(g_rank, g_rank, i * 3 + round);
    ASSERT_EQ(sscGroupStart(), sscSuccess);
    ASSERT_EQ(sscRecv(selfOut.get(), 1000, sscUint8, g_rank, g_comm, g_stream), sscSuccess);
    for (size_t m = 0; m < std::size(sizes); ++m) {
      ASSERT_EQ(sscRecv(recvBufs[m]->get(), sizes[m], sscUint8, prev, g_comm, g_stream),
                sscSuccess);
      ASSERT_EQ(sscSend(sendBufs[m]->get(), sizes[m], sscUint8, next, g_comm, g_stream),
                sscSuccess);
    }
    ASSERT_EQ(sscSend(self.get(), 1000, sscUint8, g_rank, g_comm, g_stream), sscSuccess);
    ASSERT_EQ(sscSend(self2.get(), 5, sscUint8, g_rank, g_comm, g_stream), sscSuccess);
    ASSERT_EQ(sscRecv(self2Out.get(), 5, sscUint8, g_rank, g_comm, g_stream), sscSuccess);
    ASSERT_EQ(sscGroupEnd(), sscSuccess) << sscGetLastError(g_comm);
    ASSERT_EQ(sscStreamSynchronize(g_stream), sscSuccess) << sscGetLastError(g_comm);
    for (size_t m = 0; m < std::size(sizes); ++m)
      for (uint64_t i = 0; i < sizes[m]; ++i)
        wrong += recvBufs[m]->get()[i] != byteOf(prev, g_rank, i + m + round);
    for (uint64_t i = 0; i < 1000; ++i)
      wrong += selfOut.get()[i] != byteOf(g_rank, g_rank, i + round);
    for (uint64_t i = 0; i < 5; ++i)
      wrong += self2Out.get()[i] != byteOf(g_rank, g_rank, i * 3 + round);
  }
  EXPECT_EQ(allSum(wrong), 0);
}

TEST(MpiP2p, UngroupedSendAndReceive) {
  // Outside a group: even ranks send first, odd ranks receive first (no host waits for a peer).
  if (g_n < 2) GTEST_SKIP() << "one rank";
  const uint64_t count = 30011;
  Buffer a(count * 4, true), b(count * 4, true);
  long long wrong = 0;
  const int partner = g_rank % 2 == 0 ? g_rank + 1 : g_rank - 1;
  for (int round = 0; round < 3; ++round) {
    for (uint64_t i = 0; i < count * 4; ++i) a.get()[i] = byteOf(g_rank, partner, i + round);
    if (partner < g_n) {
      if (g_rank % 2 == 0) {
        ASSERT_EQ(sscSend(a.get(), count, sscFloat32, partner, g_comm, g_stream), sscSuccess);
        ASSERT_EQ(sscRecv(b.get(), count, sscFloat32, partner, g_comm, g_stream), sscSuccess);
      } else {
        ASSERT_EQ(sscRecv(b.get(), count, sscFloat32, partner, g_comm, g_stream), sscSuccess);
        ASSERT_EQ(sscSend(a.get(), count, sscFloat32, partner, g_comm, g_stream), sscSuccess);
      }
      ASSERT_EQ(sscStreamSynchronize(g_stream), sscSuccess) << sscGetLastError(g_comm);
      for (uint64_t i = 0; i < count * 4; ++i)
        wrong += b.get()[i] != byteOf(partner, g_rank, i + round);
    }
  }
  EXPECT_EQ(allSum(wrong), 0);
}

// nccl-tests' in-place all-to-all and an in-place all_to_all_single: block q of one buffer is
// both the send to q and the receive from q. One-copy runs it as pairwise swaps (each rank one
// half of each pair), with no scratch.
void inPlaceAllToAll(uint64_t count, bool exportable, int rounds, long long* wrong) {
  Buffer buf(count * g_n * 4, exportable);
  for (int r = 0; r < rounds; ++r) {
    for (int q = 0; q < g_n; ++q)
      for (uint64_t i = 0; i < count * 4; ++i)
        buf.get()[q * count * 4 + i] = byteOf(g_rank, q, i + r);
    ASSERT_EQ(sscGroupStart(), sscSuccess);
    for (int q = 0; q < g_n; ++q) {
      ASSERT_EQ(sscSend(buf.get() + q * count * 4, count, sscInt32, q, g_comm, g_stream),
                sscSuccess);
      ASSERT_EQ(sscRecv(buf.get() + q * count * 4, count, sscInt32, q, g_comm, g_stream),
                sscSuccess);
    }
    ASSERT_EQ(sscGroupEnd(), sscSuccess) << sscGetLastError(g_comm);
    ASSERT_EQ(sscStreamSynchronize(g_stream), sscSuccess) << sscGetLastError(g_comm);
    for (int q = 0; q < g_n; ++q)
      for (uint64_t i = 0; i < count * 4; ++i)
        *wrong += buf.get()[q * count * 4 + i] != byteOf(q, g_rank, i + r);
  }
}

TEST(MpiP2p, InPlaceAllToAllAsGroupedSendRecv) {
  long long wrong = 0;
  const uint64_t before = oneCopyOffers();
  for (uint64_t count : {uint64_t{1}, uint64_t{7}, uint64_t{30011}})
    inPlaceAllToAll(count, true, 3, &wrong);
  inPlaceAllToAll(4099, false, 2, &wrong);
  EXPECT_EQ(allSum(wrong), 0);
  if (g_comm->p2pDirectory != nullptr && g_n > 1) {
    EXPECT_GT(allSum(static_cast<long long>(oneCopyOffers() - before)), 0);
  }
}

TEST(MpiP2p, InPlaceSscAllToAll) {
  // The collective itself, in place: pairwise swaps on the symmetric path once the buffer is
  // mapped (the first call maps it), the FIFOs on memory that cannot be shared.
  long long wrong = 0;
  for (bool exportable : {true, false})
    for (uint64_t count : {uint64_t{1}, uint64_t{3}, uint64_t{40009}}) {
      Buffer buf(count * g_n * 4, exportable);
      int32_t* p = reinterpret_cast<int32_t*>(buf.get());
      for (int rep = 0; rep < 2; ++rep) {
        for (uint64_t k = 0; k < count * g_n; ++k)
          p[k] = static_cast<int32_t>(g_rank * 1000003 + k + rep);
        ASSERT_EQ(sscAllToAll(p, p, count, sscInt32, g_comm, g_stream), sscSuccess)
            << sscGetLastError(g_comm);
        ASSERT_EQ(sscStreamSynchronize(g_stream), sscSuccess) << sscGetLastError(g_comm);
        for (uint64_t k = 0; k < count * g_n; ++k)
          wrong += p[k] !=
                   static_cast<int32_t>((k / count) * 1000003 + g_rank * count + k % count + rep);
      }
    }
  EXPECT_EQ(allSum(wrong), 0);
}

TEST(MpiP2p, RingOnTwoStreamsWithoutSynchronisation) {
  // batch_isend_irecv's ring (pipeline stages), alternating two streams with no synchronisation
  // in between: the communicator runs its groups in issue order whatever the stream.
  sscStream_t other = nullptr;
  ASSERT_EQ(sscStreamCreate(&other), sscSuccess);
  const int next = (g_rank + 1) % g_n, prev = (g_rank + g_n - 1) % g_n;
  const uint64_t count = 70001;
  constexpr int kSteps = 8;
  std::vector<std::unique_ptr<Buffer>> out, in;
  for (int k = 0; k < kSteps; ++k) {
    out.push_back(std::make_unique<Buffer>(count * 2, true));
    in.push_back(std::make_unique<Buffer>(count * 2, true));
    for (uint64_t i = 0; i < count * 2; ++i) out[k]->get()[i] = byteOf(g_rank, next, i + k);
  }
  for (int k = 0; k < kSteps; ++k) {
    sscStream_t s = k % 2 == 0 ? g_stream : other;
    ASSERT_EQ(sscGroupStart(), sscSuccess);
    ASSERT_EQ(sscSend(out[k]->get(), count, sscBfloat16, next, g_comm, s), sscSuccess);
    ASSERT_EQ(sscRecv(in[k]->get(), count, sscBfloat16, prev, g_comm, s), sscSuccess);
    ASSERT_EQ(sscGroupEnd(), sscSuccess) << sscGetLastError(g_comm);
  }
  ASSERT_EQ(sscStreamSynchronize(other), sscSuccess) << sscGetLastError(g_comm);
  ASSERT_EQ(sscStreamSynchronize(g_stream), sscSuccess) << sscGetLastError(g_comm);
  long long wrong = 0;
  for (int k = 0; k < kSteps; ++k)
    for (uint64_t i = 0; i < count * 2; ++i)
      wrong += in[k]->get()[i] != byteOf(prev, g_rank, i + k);
  EXPECT_EQ(allSum(wrong), 0);
  ASSERT_EQ(sscStreamDestroy(other), sscSuccess);
}

TEST(MpiP2p, CapturedGroupRunsOneCopy) {
  // A group captured into a graph: its offers are replayed, so the receive buffers' slots stay
  // pinned until the graph is destroyed. The host backend has no graphs: the stream pretends to
  // capture (host_stream.h) and the work runs as queued.
  if (g_n < 2 || g_comm->p2pDirectory == nullptr) GTEST_SKIP() << "no one-copy point-to-point here";
  sscStream_t stream = nullptr;
  ASSERT_EQ(sscStreamCreate(&stream), sscSuccess);
  HostStream* host = HostStream::fromHandle(stream);
  ASSERT_NE(host, nullptr);
  const int next = (g_rank + 1) % g_n, prev = (g_rank + g_n - 1) % g_n;
  const uint64_t count = 5003;
  Buffer a(count * 4, true), b(count * 4, true);
  long long wrong = 0;
  for (int round = 0; round < 4; ++round) {
    // Two eager rounds first: the receiver exports its buffer at the first, and the sender, whose
    // own next launch comes after that (its first send waited for the receive), maps it at the
    // second (closing a stale mapping of earlier memory at that address, which a capture would
    // not do).
    host->pretendCapture(round > 1);
    const uint64_t before = oneCopyOffers();
    for (uint64_t i = 0; i < count * 4; ++i) a.get()[i] = byteOf(g_rank, next, i + round);
    ASSERT_EQ(sscGroupStart(), sscSuccess);
    ASSERT_EQ(sscSend(a.get(), count, sscFloat32, next, g_comm, stream), sscSuccess);
    ASSERT_EQ(sscRecv(b.get(), count, sscFloat32, prev, g_comm, stream), sscSuccess);
    ASSERT_EQ(sscGroupEnd(), sscSuccess) << sscGetLastError(g_comm);
    ASSERT_EQ(sscStreamSynchronize(stream), sscSuccess) << sscGetLastError(g_comm);
    for (uint64_t i = 0; i < count * 4; ++i) wrong += b.get()[i] != byteOf(prev, g_rank, i + round);
    if (round >= 2) {
      EXPECT_EQ(oneCopyOffers() - before, 1u) << "the captured receive was not offered";
    }
  }
  host->pretendCapture(false);
  host->destroyPretendGraph();
  EXPECT_EQ(allSum(wrong), 0);
  ASSERT_EQ(sscStreamDestroy(stream), sscSuccess);
}

// Calls that do not pair up fail on both ranks of the pair with one message naming both, never
// hang or deliver a wrong answer. Each case on a communicator of its own (a failed one stays
// failed); ranks 0 and 1 take part, the others only create and destroy it.
void expectPairFails(bool exportable, uint64_t sent, uint64_t expected, int sends,
                     const std::string& needle) {
  if (g_n < 2) GTEST_SKIP() << "one rank";
  sscComm_t comm = nullptr;
  ASSERT_EQ(sscCommInitMpi(MPI_COMM_WORLD, &comm), sscSuccess);
  sscStream_t stream = nullptr;
  ASSERT_EQ(sscStreamCreate(&stream), sscSuccess);
  Buffer a(sent * 2, exportable), b(expected * 2, exportable);
  sscResult_t r = sscSuccess;
  std::string why;
  // A first, matching exchange maps the buffers, so the mismatch meets the one-copy handshake.
  for (int round = 0; round < 2 && r == sscSuccess && g_rank < 2; ++round) {
    const bool bad = round == 1;
    r = sscGroupStart();
    for (int k = 0; k < (bad ? sends : 1) && g_rank == 0; ++k)
      if (r == sscSuccess) r = sscSend(a.get(), bad ? sent : expected, sscUint8, 1, comm, stream);
    if (g_rank == 1 && r == sscSuccess) r = sscRecv(b.get(), expected, sscUint8, 0, comm, stream);
    if (r == sscSuccess) r = sscGroupEnd();
    if (r == sscSuccess) r = sscStreamSynchronize(stream);
    if (r != sscSuccess) why = sscGetLastError(comm);
  }
  // The other ranks abort only once the pair is done: an abort is seen by every peer at once.
  MPI_Barrier(MPI_COMM_WORLD);
  // Without the one-copy handshake (ranks on several nodes) only the receiver can tell: a send
  // that fits the FIFO completes, and the receive fails at its first slot, naming both ranks.
  const bool handshake = comm->p2pDirectory != nullptr;
  if (g_rank == 1 || (g_rank == 0 && handshake)) {
    EXPECT_EQ(r, sscInvalidUsage) << sscGetErrorString(r) << ": " << why;
    EXPECT_NE(why.find(handshake ? needle : "rank 0 sent"), std::string::npos) << why;
    EXPECT_NE(why.find("rank 1"), std::string::npos) << why;
  }
  sscStreamDestroy(stream);
  sscCommAbort(comm);
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(MpiP2p, MismatchedSizesFailOnBothRanksOneCopy) {
  expectPairFails(true, 100, 60, 1, "rank 0 sends 100 bytes to rank 1");
}

TEST(MpiP2p, MismatchedSizesFailOnBothRanksThroughTheFifos) {
  expectPairFails(false, 100, 60, 1, "to rank 1");
}

TEST(MpiP2p, MoreSendsThanReceivesFailOnBothRanks) {
  expectPairFails(true, 64, 64, 2, "rank 0 posted 2 send(s) to rank 1");
}

}  // namespace
}  // namespace ssc::test

int main(int argc, char** argv) {
  ssc::test::mpiGtestInit(&argc, &argv, &ssc::test::g_rank, &ssc::test::g_n);
  sscResult_t r = sscCommInitMpi(MPI_COMM_WORLD, &ssc::test::g_comm);
  if (r == sscSuccess) r = sscStreamCreate(&ssc::test::g_stream);
  if (r != sscSuccess) {
    std::fprintf(stderr, "init: %s\n", sscGetLastError(nullptr));
    return ssc::test::mpiGtestFinish(1);
  }
  const int rc = RUN_ALL_TESTS();
  sscStreamDestroy(ssc::test::g_stream);
  sscCommDestroy(ssc::test::g_comm);
  return ssc::test::mpiGtestFinish(rc);
}
