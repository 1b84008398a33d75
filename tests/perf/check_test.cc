// SPDX-License-Identifier: MIT
// The check's layouts against collectives simulated on the host from the API's definitions in
// starscream.h: every rank's images are prepared, the collective is applied to them the way the
// header defines it (in place where the in-place rule says), and every rank's check must find
// nothing wrong; one flipped byte must be found.
#include "perf/common/check.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace ssc::perf {
namespace {

constexpr CollKind kKinds[] = {CollKind::kAllReduce, CollKind::kReduceScatter, CollKind::kAllGather,
                               CollKind::kBroadcast, CollKind::kReduce,        CollKind::kAllToAll,
                               CollKind::kSendRecv};

struct RankState {
  CallShape shape;
  BufferImages images;
  // Where the call's sendbuff / recvbuff point, inside the images.
  const unsigned char* send() const {
    if (!shape.inPlace) return images.send.data();
    return images.recv.data() + shape.counts.sendInplaceOffset * shape.rank * elt;
  }
  unsigned char* recv() {
    return images.recv.data() +
           (shape.inPlace ? shape.counts.recvInplaceOffset * shape.rank * elt : 0);
  }
  size_t elt = 0;
};

double element(sscDataType_t t, const unsigned char* base, size_t i) {
  return decode(t, base + i * typeSize(t));
}

// Applies the collective, exactly (the patterns make sum exact), to every rank's images.
void simulate(std::vector<RankState>& ranks, const Pattern& p) {
  const sscDataType_t t = p.type();
  const size_t elt = typeSize(t);
  const int n = static_cast<int>(ranks.size());
  const CallShape& s0 = ranks[0].shape;
  const size_t count = s0.counts.paramCount;
  // Inputs first: in place, outputs overwrite them.
  std::vector<std::vector<unsigned char>> in;
  for (const RankState& r : ranks) {
    in.emplace_back(r.send(), r.send() + r.shape.counts.sendCount * elt);
  }
  auto reduceAt = [&](size_t i) {
    double sum = 0;
    for (int r = 0; r < n; ++r) sum += element(t, in[r].data(), i);
    return sum;
  };
  for (int me = 0; me < n; ++me) {
    unsigned char* out = ranks[me].recv();
    switch (s0.kind) {
      case CollKind::kAllReduce:
        for (size_t i = 0; i < count; ++i) encode(t, reduceAt(i), out + i * elt);
        break;
      case CollKind::kReduceScatter:
        for (size_t i = 0; i < count; ++i) encode(t, reduceAt(me * count + i), out + i * elt);
        break;
      case CollKind::kAllGather:
        for (int r = 0; r < n; ++r) std::memcpy(out + r * count * elt, in[r].data(), count * elt);
        break;
      case CollKind::kBroadcast: std::memcpy(out, in[s0.root].data(), count * elt); break;
      case CollKind::kReduce:
        if (me == s0.root) {
          for (size_t i = 0; i < count; ++i) encode(t, reduceAt(i), out + i * elt);
        }
        break;
      case CollKind::kAllToAll:
        for (int p2 = 0; p2 < n; ++p2) {
          std::memcpy(out + p2 * count * elt, in[p2].data() + me * count * elt, count * elt);
        }
        break;
      case CollKind::kSendRecv: std::memcpy(out, in[(me - 1 + n) % n].data(), count * elt); break;
    }
  }
}

std::vector<RankState> prepare(CollKind kind, const Pattern& p, int n, size_t count, int root,
                               bool inPlace) {
  const size_t elt = typeSize(p.type());
  std::vector<RankState> ranks(n);
  for (int r = 0; r < n; ++r) {
    ranks[r].elt = elt;
    ranks[r].shape = CallShape{kind, collCounts(kind, count, elt, n), r, n, root, inPlace};
    ranks[r].images = prepareImages(ranks[r].shape, p);
  }
  return ranks;
}

int64_t wrongOf(RankState& r, const Pattern& p) {
  return countWrong(r.shape, p, r.images.recv.data() + resultOffsetBytes(r.shape, r.elt));
}

TEST(PerfCheck, SimulatedCollectivesPassAndCorruptionIsCaught) {
  for (CollKind kind : kKinds) {
    for (int n : {1, 3, 4}) {
      for (bool inPlace : {false, true}) {
        if (inPlace && !collRunsInPlace(kind)) continue;
        for (sscDataType_t t : {sscFloat32, sscFloat8e5m2, sscInt64}) {
          const int root = n - 1;
          const PerfOp op = collReduces(kind) ? PerfOp::kSum : PerfOp::kNone;
          // 200 elements: not a multiple of 16 bytes over 3 ranks, so rounding is exercised.
          const size_t count = 200;
          const Pattern p(t, op, n, 7);
          std::vector<RankState> ranks = prepare(kind, p, n, count, root, inPlace);
          simulate(ranks, p);
          for (RankState& r : ranks) {
            ASSERT_EQ(wrongOf(r, p), 0)
                << collName(kind) << " n=" << n << (inPlace ? " in place " : " ") << typeName(t)
                << " rank " << r.shape.rank;
          }
          // Flip a byte in the last rank's result region (if it has one to check).
          RankState& last = ranks.back();
          if (resultBytes(last.shape, last.elt) == 0) continue;
          last.images.recv[resultOffsetBytes(last.shape, last.elt) +
                           resultBytes(last.shape, last.elt) - 1] ^= 0x40;
          EXPECT_EQ(wrongOf(last, p), 1) << collName(kind) << " n=" << n;
        }
      }
    }
  }
}

TEST(PerfCheck, UntouchedBuffersAreChecked) {
  // reduce: a non-root's recvbuff must not be written (out of place) or changed (in place).
  const int n = 3;
  const Pattern p(sscInt32, PerfOp::kSum, n, 1);
  for (bool inPlace : {false, true}) {
    std::vector<RankState> ranks = prepare(CollKind::kReduce, p, n, 64, 0, inPlace);
    simulate(ranks, p);
    ranks[1].recv()[0] ^= 1;
    EXPECT_EQ(wrongOf(ranks[1], p), 1) << (inPlace ? "in place" : "out of place");
  }
}

TEST(PerfCheck, ImagesFollowTheInPlaceRules) {
  const Pattern p(sscFloat32, PerfOp::kNone, 4, 3);
  // all_gather in place: rank 2's input sits at block 2 of its receive buffer.
  const CallShape ag{
      CollKind::kAllGather, collCounts(CollKind::kAllGather, 64, 4, 4), 2, 4, 0, true};
  const BufferImages agImages = prepareImages(ag, p);
  EXPECT_TRUE(agImages.send.empty());
  ASSERT_EQ(agImages.recv.size(), 64u * 4);
  EXPECT_EQ(p.countInputMismatches(agImages.recv.data() + 2 * 16 * 4, 2, 0, 16), 0);
  EXPECT_EQ(p.countNonZero(agImages.recv.data(), 16), 0);
  EXPECT_EQ(resultOffsetBytes(ag, 4), 0u);
  // reduce_scatter in place: the result is block `rank` of the receive buffer.
  const CallShape rs{
      CollKind::kReduceScatter, collCounts(CollKind::kReduceScatter, 64, 4, 4), 3, 4, 0, true};
  EXPECT_EQ(resultOffsetBytes(rs, 4), 3u * 16 * 4);
  EXPECT_EQ(resultBytes(rs, 4), 16u * 4);
  // broadcast: only the root has data to send.
  const CallShape bc{
      CollKind::kBroadcast, collCounts(CollKind::kBroadcast, 8, 4, 4), 1, 4, 2, false};
  EXPECT_EQ(p.countNonZero(prepareImages(bc, p).send.data(), 8), 0);
}

}  // namespace
}  // namespace ssc::perf
