// SPDX-License-Identifier: MIT
// Flat ring and bidirectional ("direction-optimized") ring over all ranks in rank order. This is
// the chiplet-oblivious baseline: it treats every link alike, so its bandwidth is that of the
// slowest link on the ring.
#include "src/collectives/algorithms_internal.h"

namespace ssc {

namespace {

// One channel's share of a ring schedule over [base, base + len) of the call.
void ringChannel(const CallShape& c, PlanEmitter& e, const RingGroup& ring, uint64_t base,
                 uint64_t len) {
  const int n = ring.size();
  const uint64_t chunk = c.params.chunkElems;
  switch (c.args.coll) {
    case CollKind::kAllReduce:
      for (uint64_t lo = 0; lo < len; lo += n * chunk) {
        uint64_t loopLen = std::min<uint64_t>(n * chunk, len - lo);
        ringAllReduce(
            e, ring,
            [&](int j) {
              uint64_t off = base + lo + splitOffset(loopLen, n, j);
              return Slice{Ref{kBufIn, off}, Ref{kBufOut, off}, splitCount(loopLen, n, j)};
            },
            kFlagPreOp, true);
      }
      break;
    case CollKind::kReduceScatter:
      for (uint64_t lo = base; lo < base + len; lo += chunk) {
        uint64_t n1 = std::min<uint64_t>(chunk, base + len - lo);
        ringReduceScatter(
            e, ring,
            [&](int j) {
              return Slice{Ref{kBufIn, ring.at(j) * c.args.count + lo}, Ref{kBufOut, lo}, n1};
            },
            kFlagPreOp, true);
      }
      break;
    case CollKind::kAllGather:
      for (uint64_t lo = base; lo < base + len; lo += chunk) {
        uint64_t n1 = std::min<uint64_t>(chunk, base + len - lo);
        ringAllGather(e, ring, [&](int j) {
          return Slice{Ref{kBufIn, lo}, Ref{kBufOut, ring.at(j) * c.args.count + lo}, n1};
        });
      }
      break;
    case CollKind::kBroadcast: {
      RingGroup r = ring.rotated(indexOf(ring.ranks, c.args.root));
      for (uint64_t lo = base; lo < base + len; lo += chunk)
        ringBroadcast(e, r, Ref{kBufIn, lo}, Ref{kBufOut, lo}, std::min(chunk, base + len - lo));
      break;
    }
    case CollKind::kReduce: {
      // Rotate so the root is last: the partial sum arrives there.
      RingGroup r = ring.rotated(indexOf(ring.ranks, c.args.root) + 1);
      for (uint64_t lo = base; lo < base + len; lo += chunk)
        ringReduce(e, r, Ref{kBufIn, lo}, Ref{kBufOut, lo}, std::min(chunk, base + len - lo),
                   kFlagPreOp, true);
      break;
    }
    default: break;
  }
}

}  // namespace

void buildRing(const CallShape& c, bool bidirectional, RankPlan* plan) {
  std::vector<int> all(c.nranks);
  for (int r = 0; r < c.nranks; ++r) all[r] = r;
  RingGroup ring = makeRing(all, c.rank);
  const uint64_t len = perRankLength(c.args);
  // One direction per channel: a transport with one channel (STARSCREAM_HOST_CHANNELS=1) gets
  // the plain ring, which moves the same data over the same links, only one way round.
  if (!bidirectional || c.params.maxChannels < 2) {
    plan->channels.resize(1);
    PlanEmitter e(plan, 0);
    ringChannel(c, e, ring, 0, len);
    return;
  }
  // Each half of the data goes round the ring in its own direction, so every link carries
  // traffic both ways and each direction moves half the bytes.
  plan->channels.resize(2);
  uint64_t half = len / 2;
  PlanEmitter forward(plan, 0), backward(plan, 1);
  ringChannel(c, forward, ring, 0, half);
  ringChannel(c, backward, ring.reversed(), half, len - half);
}

}  // namespace ssc
