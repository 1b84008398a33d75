// SPDX-License-Identifier: MIT
#include "src/collectives/emitter.h"

#include <algorithm>

namespace ssc {

void PlanEmitter::push(StepOp op, uint8_t flags, Ref src, Ref dst, int recvPeer, int sendPeer,
                       uint64_t n) {
  if (n == 0) return;
  steps_->push_back(
      Step{op, flags, src.buf, dst.buf, recvPeer, sendPeer, src.off, dst.off, n, tag_});
}

void PlanEmitter::copy(Ref src, Ref dst, uint64_t n, uint8_t flags) {
  // A plain copy onto itself (in-place calls) moves nothing.
  if (flags == kFlagNone && src.buf == dst.buf && src.off == dst.off) return;
  push(StepOp::kCopy, flags, src, dst, -1, -1, n);
}
void PlanEmitter::reduce(Ref src, Ref dst, uint64_t n, uint8_t flags) {
  push(StepOp::kReduce, flags, src, dst, -1, -1, n);
}
void PlanEmitter::send(int peer, Ref src, uint64_t n, uint8_t flags) {
  push(StepOp::kSend, flags, src, Ref{}, -1, peer, n);
}
void PlanEmitter::recv(int peer, Ref dst, uint64_t n) {
  push(StepOp::kRecv, kFlagNone, Ref{}, dst, peer, -1, n);
}
void PlanEmitter::recvReduceSend(int from, int to, Ref src, uint64_t n, uint8_t flags) {
  push(StepOp::kRecvReduceSend, flags, src, Ref{}, from, to, n);
}
void PlanEmitter::recvReduceCopy(int from, Ref src, Ref dst, uint64_t n, uint8_t flags) {
  push(StepOp::kRecvReduceCopy, flags, src, dst, from, -1, n);
}
void PlanEmitter::recvReduceCopySend(int from, int to, Ref src, Ref dst, uint64_t n,
                                     uint8_t flags) {
  push(StepOp::kRecvReduceCopySend, flags, src, dst, from, to, n);
}
void PlanEmitter::recvCopySend(int from, int to, Ref dst, uint64_t n) {
  push(StepOp::kRecvCopySend, kFlagNone, Ref{}, dst, from, to, n);
}

RingGroup RingGroup::reversed() const {
  RingGroup r;
  r.ranks.assign(ranks.rbegin(), ranks.rend());
  r.pos = size() - 1 - pos;
  return r;
}

RingGroup RingGroup::rotated(int first) const {
  RingGroup r;
  int m = size();
  for (int i = 0; i < m; ++i) r.ranks.push_back(at(first + i));
  r.pos = ((pos - first) % m + m) % m;
  return r;
}

RingGroup makeRing(std::vector<int> members, int rank) {
  RingGroup r;
  r.ranks = std::move(members);
  auto it = std::find(r.ranks.begin(), r.ranks.end(), rank);
  r.pos = static_cast<int>(it - r.ranks.begin());
  return r;
}

namespace {
int mod(int a, int m) { return ((a % m) + m) % m; }
uint8_t post(bool final) { return final ? kFlagPostOp : kFlagNone; }
}  // namespace

void ringAllReduce(PlanEmitter& e, const RingGroup& ring, const SliceFn& slice, uint8_t srcFlags,
                   bool final) {
  const int m = ring.size(), p = ring.pos;
  if (m == 1) {
    Slice s = slice(0);
    e.copy(s.src, s.dst, s.count, srcFlags | post(final));
    return;
  }
  // Reduce-scatter part: at step k this rank forwards the partial sum of slice p-k.
  Slice s = slice(p);
  e.send(ring.next(), s.src, s.count, srcFlags);
  for (int k = 1; k < m - 1; ++k) {
    s = slice(mod(p - k, m));
    e.recvReduceSend(ring.prev(), ring.next(), s.src, s.count, srcFlags);
  }
  // Slice p+1 completes here: store it and start forwarding the final value.
  s = slice(mod(p + 1, m));
  e.recvReduceCopySend(ring.prev(), ring.next(), s.src, s.dst, s.count, srcFlags | post(final));
  for (int j = 1; j < m - 1; ++j) {
    s = slice(mod(p + 1 - j, m));
    e.recvCopySend(ring.prev(), ring.next(), s.dst, s.count);
  }
  s = slice(mod(p + 2, m));
  e.recv(ring.prev(), s.dst, s.count);
}

void ringReduceScatter(PlanEmitter& e, const RingGroup& ring, const SliceFn& slice,
                       uint8_t srcFlags, bool final) {
  const int m = ring.size(), p = ring.pos;
  Slice own = slice(p);
  if (m == 1) {
    e.copy(own.src, own.dst, own.count, srcFlags | post(final));
    return;
  }
  Slice s = slice(mod(p - 1, m));
  e.send(ring.next(), s.src, s.count, srcFlags);
  for (int k = 1; k < m - 1; ++k) {
    s = slice(mod(p - 1 - k, m));
    e.recvReduceSend(ring.prev(), ring.next(), s.src, s.count, srcFlags);
  }
  e.recvReduceCopy(ring.prev(), own.src, own.dst, own.count, srcFlags | post(final));
}

void ringAllGather(PlanEmitter& e, const RingGroup& ring, const SliceFn& slice) {
  const int m = ring.size(), p = ring.pos;
  Slice own = slice(p);
  e.copy(own.src, own.dst, own.count);
  if (m == 1) return;
  e.send(ring.next(), own.src, own.count);
  for (int k = 1; k < m - 1; ++k) {
    Slice s = slice(mod(p - k, m));
    e.recvCopySend(ring.prev(), ring.next(), s.dst, s.count);
  }
  Slice last = slice(mod(p + 1, m));
  e.recv(ring.prev(), last.dst, last.count);
}

void ringBroadcast(PlanEmitter& e, const RingGroup& ring, Ref src, Ref dst, uint64_t n) {
  const int m = ring.size(), p = ring.pos;
  if (p == 0) {
    if (m > 1) e.send(ring.next(), src, n);
    e.copy(src, dst, n);
  } else if (p < m - 1) {
    e.recvCopySend(ring.prev(), ring.next(), dst, n);
  } else {
    e.recv(ring.prev(), dst, n);
  }
}

void ringReduce(PlanEmitter& e, const RingGroup& ring, Ref src, Ref dst, uint64_t n,
                uint8_t srcFlags, bool final) {
  const int m = ring.size(), p = ring.pos;
  if (m == 1) {
    e.copy(src, dst, n, srcFlags | post(final));
  } else if (p == 0) {
    e.send(ring.next(), src, n, srcFlags);
  } else if (p < m - 1) {
    e.recvReduceSend(ring.prev(), ring.next(), src, n, srcFlags);
  } else {
    e.recvReduceCopy(ring.prev(), src, dst, n, srcFlags | post(final));
  }
}

}  // namespace ssc
