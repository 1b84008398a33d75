// SPDX-License-Identifier: MIT
// A plan is what an algorithm compiles a call into: for each rank and channel, a list of steps
// (copy, send, receive, receive-reduce-send, ...) over chunk ranges of the call's buffers. One
// executor runs plans on the GPU, another on the host backend, so the plan the tests check is the
// plan the GPU runs.
//
// Data moves over connections: a connection (sender, receiver, channel) is a FIFO of slots that
// lives in the receiver's memory, with monotonically increasing head/tail counters (never reset
// between calls). A Send of n elements fills ceil(bytes / slotBytes) slots; the matching Recv on
// the peer drains the same number. Plans therefore must pair every send with a receive of the
// same count, in the same order, on each connection (validatePlans checks this).
//
// Deadlock freedom: ranks run their steps in order and a send blocks only while the FIFO is full.
// Generators keep every step at most `chunkElems` (half a FIFO), so a rank can always post one
// step's worth of data ahead of its receiver; together with a global order of steps (loop, phase,
// step) this makes every plan deadlock-free.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/collectives/p2p_wire.h"
#include "starscream/starscream.h"

namespace ssc {

// What a call asks for, independent of algorithm.
enum class CollKind : uint8_t {
  kAllReduce,
  kReduceScatter,
  kAllGather,
  kBroadcast,
  kReduce,
  kAllToAll,
  kSendRecv
};
const char* collName(CollKind kind);

// kSymmetric is the zero-copy direct algorithm: ranks read and write each other's registered
// buffers (one-shot / two-shot) with a barrier before and after; it needs symmetric buffers.
enum class Algo : uint8_t { kRing, kBidirRing, kDirect, kHierarchical, kSymmetric, kAuto };
const char* algoName(Algo algo);

// Buffers a step can name. Point-to-point plans add one buffer per send/recv (kUserBase + i).
enum BufId : uint16_t { kBufIn = 0, kBufOut = 1, kBufScratch = 2, kBufUserBase = 3 };

enum class StepOp : uint8_t {
  kCopy,                // src -> dst (local)
  kReduce,              // dst = dst (+) src (local)
  kSend,                // src -> conn(sendPeer)
  kRecv,                // conn(recvPeer) -> dst
  kRecvReduceSend,      // conn(recvPeer) (+) src -> conn(sendPeer)
  kRecvReduceCopy,      // conn(recvPeer) (+) src -> dst
  kRecvReduceCopySend,  // conn(recvPeer) (+) src -> dst and conn(sendPeer)
  kRecvCopySend,        // conn(recvPeer) -> dst and conn(sendPeer)
  // Zero-copy steps over symmetric (registered) buffers: "src@q" is buffer srcBuf of rank q at
  // the same offset, mapped into this rank. They need Work::peerBuffers.
  // kPeerReduce and kPeerReduceBcast read every rank's src (recvPeer < 0) or only recvPeer's
  // (recvPeer = q: a copy of src@q, with the op's pre/post steps where the flags say); kPeerReduce
  // stores to this rank's dst (sendPeer < 0) or to dst@sendPeer. Single sources serve broadcast
  // (every rank copies its slice of the root's input into every output), single destinations
  // reduce (every rank reduces its slice into the root's output), so all ranks share the work.
  kBarrier,          // every rank has reached this point (inputs ready, outputs free)
  kPeerReduce,       // dst (or dst@sendPeer) = (+) over q = 0..n-1 of src@q (or src@recvPeer)
  kPeerReduceBcast,  // as kPeerReduce, and the result is stored to dst@q for every q
  kPeerPush,         // dst@q = src for every q
  kPeerGather,       // dst[q * count ..] = src@q[..], for every q (all-to-all: one block per rank)
  // In-place all-to-all: for every q != rank, block q of this rank's src and block `rank` of
  // src@q trade places (srcBuf == dstBuf, blocks of `count`). Each pair of blocks is swapped by
  // both of its ranks, each half of it: the lower rank the first count / 2 elements, the higher
  // rank the rest (peerSwapHalf). Every element is touched by one rank only, so no scratch.
  kPeerSwap,
  // One-copy point-to-point (transports/usr/p2p_directory.h), on channel 0 before the FIFO steps
  // of a kSendRecv plan, per peer pair on one node. The receiver decides per receive, the sender
  // follows; both learn the decision from the one slot that carries it:
  //   kP2pOffer to sendPeer: one slot listing this rank's receives from it, in posting order,
  //     each as the address at which sendPeer has the buffer mapped (0: through the FIFOs) and
  //     whether it is offered for a swap (the in-place exchange of one buffer with that peer).
  //   kP2pPush from recvPeer: takes recvPeer's offer slot, checks that this rank's sends to it
  //     pair with its receives (number and sizes), stores each offered send straight into the
  //     offered buffer (or swaps this rank's half of an exchange both sides offered), and
  //     answers with one slot: done, or the mismatch.
  //   kP2pWait from recvPeer: takes that answer (the receives it pushed are complete).
  // FIFO steps of a message that went one-copy are skipped by both executors. Every plan emits
  // the offers of all its peers first, then the pushes, then the waits, so none of them waits on
  // a step that comes later on a peer (see buildP2pPlan).
  kP2pOffer,
  kP2pPush,
  kP2pWait,
};

// The handshake's slot tags and formats, and where an exchange splits: p2p_wire.h.
const char* stepOpName(StepOp op);

// The zero-copy steps over peers' mapped buffers (kBarrier excluded): their recvPeer/sendPeer
// name ranks whose memory they touch, not FIFO connections.
inline bool isPeerStep(StepOp op) {
  return op == StepOp::kPeerReduce || op == StepOp::kPeerReduceBcast || op == StepOp::kPeerPush ||
         op == StepOp::kPeerGather || op == StepOp::kPeerSwap;
}

// The part [*lo, *hi) of a block of `count` elements that `rank` swaps with `peer` (kPeerSwap).
inline void peerSwapHalf(int rank, int peer, uint64_t count, uint64_t* lo, uint64_t* hi) {
  const uint64_t mid = count / 2;
  *lo = rank < peer ? 0 : mid;
  *hi = rank < peer ? mid : count;
}

// Step flags. kPreOp: the step reads this rank's own contribution from src, so the op's pre-step
// (PreMulSum / float Avg scaling) applies to it exactly once. kPostOp: the step produces the final
// reduced value, so the op's post-step (integer Avg division) applies before it is stored/sent.
enum StepFlag : uint8_t { kFlagNone = 0, kFlagPreOp = 1, kFlagPostOp = 2 };

struct Step {
  StepOp op;
  uint8_t flags;
  uint16_t srcBuf;
  uint16_t dstBuf;
  int32_t recvPeer;  // -1 when unused
  int32_t sendPeer;  // -1 when unused
  uint64_t srcOff;   // elements
  uint64_t dstOff;   // elements
  uint64_t count;    // elements
  // FIFO steps: a word both ends of a connection agree on, carried with every slot (0 = none).
  // Point-to-point steps carry their message's length (p2pTag), so a send and a receive of
  // different sizes fail at the first slot even where a slot's size happens to match.
  uint32_t tag = 0;
};

// The tag of the FIFO steps of a point-to-point stream of `bytes` (a mix of the length; never 0).
uint32_t p2pTag(uint64_t bytes);

struct ChannelPlan {
  std::vector<Step> steps;
};

// One rank's plan for one call.
struct RankPlan {
  CollKind coll = CollKind::kAllReduce;
  Algo algo = Algo::kRing;
  int rank = 0;
  int nranks = 1;
  uint64_t scratchElems = 0;  // size of kBufScratch this call needs
  // In place, kBufIn and kBufOut are one memory: element e of kBufIn is element
  // e + inAliasShift of kBufOut. Executors that reorder work across steps (the GPU's blocks)
  // must see that a write to one is a write to the other.
  bool inPlace = false;
  int64_t inAliasShift = 0;
  std::vector<uint64_t> bufElems;  // declared size of each buffer (bounds-checked in tests)
  std::vector<ChannelPlan> channels;
  // A zero-copy push (all-gather's one kPeerPush step) runs on the wide grid: several small
  // blocks per SM instead of the bulk kernel's one large block per SM. The tuner's choice per
  // call (tuner/model.h, Protocol::kZeroCopyWide); executors without such a kernel ignore it.
  bool wideGrid = false;
};

// Human-readable dump (STARSCREAM_DUMP_PLAN=1).
std::string formatPlan(const RankPlan& plan);

// Cross-rank checks on a full set of plans (index = rank): every connection's sends and receives
// pair up with equal counts in order, offsets stay in bounds. Returns "" when valid, else what is
// wrong. Used by tests and, cheaply, by debug builds.
std::string validatePlans(const std::vector<RankPlan>& plans);

}  // namespace ssc
