// SPDX-License-Identifier: MIT
// Direct algorithms: every rank exchanges with every peer itself, in one hop. Few steps, so they
// win for small messages and for all-to-all; peers are visited starting from rank+1 so that at
// any moment each rank talks to a different peer.
#include "src/collectives/algorithms_internal.h"

namespace ssc {

namespace {

int peerAt(int rank, int i, int n) { return (rank + i) % n; }

// One-shot all-reduce of [lo, lo+n1): every rank sends its whole input to every peer and reduces
// all contributions itself, in rank order 0..n-1 so that every rank computes identical bits.
void oneShot(PlanEmitter& e, int rank, int nranks, uint64_t lo, uint64_t n1, Ref scratch) {
  for (int i = 1; i < nranks; ++i) e.send(peerAt(rank, i, nranks), Ref{kBufIn, lo}, n1, kFlagPreOp);
  for (int q = 0; q < nranks; ++q) {
    if (q == rank) {
      if (q == 0)
        e.copy(Ref{kBufIn, lo}, scratch, n1, kFlagPreOp);
      else
        e.reduce(Ref{kBufIn, lo}, scratch, n1, kFlagPreOp);
    } else if (q == 0) {
      e.recv(q, scratch, n1);
    } else {
      e.recvReduceCopy(q, scratch, scratch, n1, kFlagNone);
    }
  }
  e.copy(scratch, Ref{kBufOut, lo}, n1, kFlagPostOp);
}

using CountFn = std::function<uint64_t(int)>;
using RefFn = std::function<Ref(int)>;

// Reduce-scatter step of the two-shot all-reduce and of the direct reduce-scatter: slice j of
// the input (countOf(j) elements) goes to rank j, which reduces its slice into dst: its own
// contribution first, then the peers' from rank-1 downwards (the order they send in).
void directReduceScatter(PlanEmitter& e, int rank, int n, const RefFn& srcOf, Ref dst,
                         const CountFn& countOf) {
  for (int i = 1; i < n; ++i) {
    int peer = peerAt(rank, i, n);
    e.send(peer, srcOf(peer), countOf(peer), kFlagPreOp);
  }
  uint64_t mine = countOf(rank);
  e.copy(srcOf(rank), dst, mine, kFlagPreOp | (n == 1 ? kFlagPostOp : kFlagNone));
  for (int i = 1; i < n; ++i)
    e.recvReduceCopy(peerAt(rank, n - i, n), dst, dst, mine, i == n - 1 ? kFlagPostOp : kFlagNone);
}

// Every rank sends its slice (countOf(rank) elements from src) to every peer and receives
// theirs into dstOf(peer).
void directAllGather(PlanEmitter& e, int rank, int n, Ref src, const RefFn& dstOf,
                     const CountFn& countOf) {
  for (int i = 1; i < n; ++i) e.send(peerAt(rank, i, n), src, countOf(rank));
  e.copy(src, dstOf(rank), countOf(rank));
  for (int i = 1; i < n; ++i) {
    int peer = peerAt(rank, n - i, n);
    e.recv(peer, dstOf(peer), countOf(peer));
  }
}

}  // namespace

void buildDirect(const CallShape& c, size_t elemBytes, RankPlan* plan) {
  plan->channels.resize(1);
  PlanEmitter e(plan, 0);
  const int n = c.nranks, r = c.rank;
  const uint64_t chunk = c.params.chunkElems, count = c.args.count;
  switch (c.args.coll) {
    case CollKind::kAllReduce:
      if (count * elemBytes <= kDirectOneShotMaxBytes || n == 1) {
        plan->scratchElems = std::min(chunk, count);
        for (uint64_t lo = 0; lo < count; lo += chunk)
          oneShot(e, r, n, lo, std::min(chunk, count - lo), Ref{kBufScratch, 0});
        break;
      }
      for (uint64_t lo = 0; lo < count; lo += n * chunk) {
        uint64_t loopLen = std::min<uint64_t>(n * chunk, count - lo);
        auto off = [&](int j) { return lo + splitOffset(loopLen, n, j); };
        auto cnt = [&](int j) { return splitCount(loopLen, n, j); };
        directReduceScatter(
            e, r, n,
            [&](int j) {
              return Ref{kBufIn, off(j)};
            },
            Ref{kBufOut, off(r)}, cnt);
        directAllGather(
            e, r, n, Ref{kBufOut, off(r)},
            [&](int j) {
              return Ref{kBufOut, off(j)};
            },
            cnt);
      }
      break;
    case CollKind::kReduceScatter:
      for (uint64_t lo = 0; lo < count; lo += chunk) {
        uint64_t n1 = std::min(chunk, count - lo);
        directReduceScatter(
            e, r, n,
            [&](int j) {
              return Ref{kBufIn, j * count + lo};
            },
            Ref{kBufOut, lo}, [n1](int) { return n1; });
      }
      break;
    case CollKind::kAllGather:
      for (uint64_t lo = 0; lo < count; lo += chunk) {
        uint64_t n1 = std::min(chunk, count - lo);
        directAllGather(
            e, r, n, Ref{kBufIn, lo},
            [&](int j) {
              return Ref{kBufOut, j * count + lo};
            },
            [n1](int) { return n1; });
      }
      break;
    case CollKind::kBroadcast:
      for (uint64_t lo = 0; lo < count; lo += chunk) {
        uint64_t n1 = std::min(chunk, count - lo);
        if (r == c.args.root) {
          for (int i = 1; i < n; ++i) e.send(peerAt(r, i, n), Ref{kBufIn, lo}, n1);
          e.copy(Ref{kBufIn, lo}, Ref{kBufOut, lo}, n1);
        } else {
          e.recv(c.args.root, Ref{kBufOut, lo}, n1);
        }
      }
      break;
    case CollKind::kReduce:
      for (uint64_t lo = 0; lo < count; lo += chunk) {
        uint64_t n1 = std::min(chunk, count - lo);
        if (r != c.args.root) {
          e.send(c.args.root, Ref{kBufIn, lo}, n1, kFlagPreOp);
          continue;
        }
        Ref dst{kBufOut, lo};
        e.copy(Ref{kBufIn, lo}, dst, n1, kFlagPreOp | (n == 1 ? kFlagPostOp : kFlagNone));
        for (int i = 1; i < n; ++i)
          e.recvReduceCopy(peerAt(r, i, n), dst, dst, n1, i == n - 1 ? kFlagPostOp : kFlagNone);
      }
      break;
    case CollKind::kAllToAll:
      // Chunk round [lo, lo+n1): block p's chunk goes to every peer p, then every peer q's chunk
      // lands in block q. The same schedule is safe in place (kBufIn == kBufOut, no shift): the
      // only step that writes chunk lo of block q is the receive from q, and the only step that
      // reads it is the send to q, which comes earlier in the same round and has copied it into
      // the FIFO before returning (host executor; on the GPU the send and the receive have the
      // same offset and count, so the same block owns each element and runs them in order).
      // Other rounds touch other chunks. Deadlock freedom is the out-of-place argument: one
      // step per connection per round, each at most half a FIFO. No extra memory is needed.
      for (uint64_t lo = 0; lo < count; lo += chunk) {
        uint64_t n1 = std::min(chunk, count - lo);
        for (int i = 1; i < n; ++i) {
          int peer = peerAt(r, i, n);
          e.send(peer, Ref{kBufIn, peer * count + lo}, n1);
        }
        // In place the own block is already where it belongs.
        if (!c.args.inPlace) e.copy(Ref{kBufIn, r * count + lo}, Ref{kBufOut, r * count + lo}, n1);
        for (int i = 1; i < n; ++i) {
          int peer = peerAt(r, n - i, n);
          e.recv(peer, Ref{kBufOut, peer * count + lo}, n1);
        }
      }
      break;
    default: break;
  }
}

}  // namespace ssc
