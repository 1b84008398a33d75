// SPDX-License-Identifier: MIT
// PlanEmitter appends steps to one channel of a RankPlan, and the ring primitives build the
// classic ring schedules over any ordered group of ranks ("ring"), so every tier of every
// algorithm uses the same, tested schedules.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "src/collectives/plan.h"

namespace ssc {

// A position in one of the call's buffers, in elements.
struct Ref {
  uint16_t buf = kBufIn;
  uint64_t off = 0;
  Ref at(uint64_t delta) const { return Ref{buf, off + delta}; }
};

// Splits `len` elements into `parts` nearly equal pieces; piece j starts at splitOffset.
inline uint64_t splitOffset(uint64_t len, uint64_t parts, uint64_t j) {
  uint64_t base = len / parts, rem = len % parts;
  return j * base + (j < rem ? j : rem);
}
inline uint64_t splitCount(uint64_t len, uint64_t parts, uint64_t j) {
  return len / parts + (j < len % parts ? 1 : 0);
}

class PlanEmitter {
 public:
  PlanEmitter(RankPlan* plan, int channel) : steps_(&plan->channels.at(channel).steps) {}

  // Zero-element steps are dropped: both ends of a connection compute the same counts, so they
  // drop the same steps and the pairing stays intact.
  void copy(Ref src, Ref dst, uint64_t n, uint8_t flags = kFlagNone);
  void reduce(Ref src, Ref dst, uint64_t n, uint8_t flags = kFlagNone);  // dst = dst (+) src
  void send(int peer, Ref src, uint64_t n, uint8_t flags = kFlagNone);
  void recv(int peer, Ref dst, uint64_t n);
  void recvReduceSend(int from, int to, Ref src, uint64_t n, uint8_t flags);
  void recvReduceCopy(int from, Ref src, Ref dst, uint64_t n, uint8_t flags);
  void recvReduceCopySend(int from, int to, Ref src, Ref dst, uint64_t n, uint8_t flags);
  void recvCopySend(int from, int to, Ref dst, uint64_t n);
  // Steps pushed from now on carry `tag` (Step::tag).
  void setTag(uint32_t tag) { tag_ = tag; }

 private:
  void push(StepOp op, uint8_t flags, Ref src, Ref dst, int recvPeer, int sendPeer, uint64_t n);
  std::vector<Step>* steps_;
  uint32_t tag_ = 0;
};

// A group of ranks in ring order and this rank's position in it.
struct RingGroup {
  std::vector<int> ranks;
  int pos = 0;
  int size() const { return static_cast<int>(ranks.size()); }
  int at(int p) const {
    int m = size();
    return ranks[((p % m) + m) % m];
  }
  int next() const { return at(pos + 1); }
  int prev() const { return at(pos - 1); }
  RingGroup reversed() const;
  // The same ring rotated so that the member at position `first` comes first.
  RingGroup rotated(int first) const;
};

// Builds a RingGroup from members in order, for the member `rank` (which must be in it).
RingGroup makeRing(std::vector<int> members, int rank);

// Slice j of a ring schedule: where it is read from and written to, and its length. Must give
// the same count for the same j on every rank of the ring.
struct Slice {
  Ref src;
  Ref dst;
  uint64_t count = 0;
};
using SliceFn = std::function<Slice(int j)>;

// All-reduce of m slices (m = ring size): reduce-scatter then all-gather around the ring. The
// final value of each slice is computed once and forwarded, so every rank gets identical bits.
// srcFlags: kFlagPreOp when src is this rank's own user input. final: the reduction completes
// here (apply the post-op).
void ringAllReduce(PlanEmitter& e, const RingGroup& ring, const SliceFn& slice, uint8_t srcFlags,
                   bool final);

// Reduce-scatter: slice j (read at slice(j).src on every rank) ends reduced at slice(pos).dst on
// the rank at position j.
void ringReduceScatter(PlanEmitter& e, const RingGroup& ring, const SliceFn& slice,
                       uint8_t srcFlags, bool final);

// All-gather: the rank at position j contributes slice(j).src (read only on that rank); every
// rank ends with slice j at slice(j).dst.
void ringAllGather(PlanEmitter& e, const RingGroup& ring, const SliceFn& slice);

// Broadcast from position 0 along the ring: n elements from src (position 0) to dst everywhere
// (including position 0, when dst differs from src).
void ringBroadcast(PlanEmitter& e, const RingGroup& ring, Ref src, Ref dst, uint64_t n);

// Reduce to the last position of the ring: dst is written only there.
void ringReduce(PlanEmitter& e, const RingGroup& ring, Ref src, Ref dst, uint64_t n,
                uint8_t srcFlags, bool final);

}  // namespace ssc
