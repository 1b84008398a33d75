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
#include "src/collectives/step_semantics.h"
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

// BufId, StepOp, StepFlag and what each step reads, writes and how it chunks: step_semantics.h.
// The handshake's slot tags and formats, and where an exchange splits: p2p_wire.h.
const char* stepOpName(StepOp op);

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
