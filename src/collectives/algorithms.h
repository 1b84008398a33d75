// SPDX-License-Identifier: MIT
// Algorithm generators: each compiles one call into this rank's RankPlan (see plan.h).
// Ring primitives work over a "ring group" (the ranks of one tier in ring order) so the flat
// ring, the bidirectional ring and the tiers of the hierarchical algorithms share one code path.
#pragma once

#include <cstdint>
#include <vector>

#include "src/collectives/plan.h"
#include "src/topology/topology.h"

namespace ssc {

// What the algorithms need to know about a call. `count` has the API's meaning for the
// collective: all-reduce/broadcast/reduce count, reduce-scatter recvcount, all-gather sendcount,
// all-to-all count per peer.
struct CollArgs {
  CollKind coll = CollKind::kAllReduce;
  uint64_t count = 0;
  int root = 0;
  bool symmetric = false;  // both buffers are symmetric registrations (zero-copy possible)
  bool inPlace = false;    // sendbuff and recvbuff are the same memory (per the API's rules)
  // Each rank pre-multiplies its input by its own scalar (PreMulSum): only algorithms that scale
  // a contribution where it is read, on its own rank, are right; anything that reads peers' raw
  // inputs (zero-copy, the GPU's LL packets) would apply the reader's scalar to all of them.
  bool rankScaled = false;
  // The call is being captured into a graph: a replay repeats the launch's arguments, so every
  // algorithm's protocol state lives in device memory (FIFO counters, the symmetric kernels'
  // barrier epochs and LL rounds) and plans do not depend on it; the plain-buffer exchange
  // pins the peers' mappings to the graph and never waits for the device then.
  bool captured = false;
};

// One point-to-point operation of a group (kSendRecv plans): buffer kBufUserBase + index.
struct P2pOp {
  bool isSend = false;
  int peer = 0;
  uint64_t bytes = 0;
};

// A point-to-point stream (a group's bytes to or from one peer) at least this long is split over
// every channel; shorter ones stay on channel 0, where one more block group would only add a
// launch-wide wait for nothing.
constexpr uint64_t kP2pSplitBytes = 64 << 10;

struct PlanParams {
  uint64_t chunkElems = 1;  // largest step: at most half a connection FIFO, in elements
  int maxChannels = 2;      // channels the transport provides (plans never use more)
  size_t elemBytes = 4;     // element size (the direct all-reduce switches on bytes)
  // The executor runs a small one-shot zero-copy all-reduce as packets that read only local
  // memory (the GPU's LL path), so one-shot is safe in place and needs no registered buffers.
  bool packetOneShot = false;
  // Point-to-point streams at least this long are split over every channel (tests lower it).
  uint64_t p2pSplitBytes = kP2pSplitBytes;
};

// Elements of the call's input and output buffer on each rank: `count` each for all-reduce,
// broadcast and reduce; reduce-scatter reads nranks x count and writes count, all-gather the
// reverse; all-to-all nranks x count both ways.
uint64_t collInputElems(const CollArgs& args, int nranks);
uint64_t collOutputElems(const CollArgs& args, int nranks);

// Builds this rank's plan for `args` with algorithm `algo` (never kAuto: selection happens in
// tuner/). Returns sscInvalidUsage with a message when the algorithm cannot serve the call on this
// topology (callers fall back), sscInvalidArgument for bad arguments.
sscResult_t buildCollPlan(const Topology& topo, int rank, const CollArgs& args, Algo algo,
                          const PlanParams& params, RankPlan* out);

// Builds the fused plan of a group's sends and receives (counts in bytes, element = 1 byte).
// Sends and receives are interleaved chunk by chunk so that any matching set of groups on all
// ranks completes, whatever the order the user posted them in. directPeers[q] != 0: messages
// with rank q may go one-copy (the handshake steps of plan.h come first); it must be the same
// relation on every rank (q is direct for r exactly when r is direct for q).
sscResult_t buildP2pPlan(int rank, int nranks, const std::vector<P2pOp>& ops,
                         const PlanParams& params, RankPlan* out,
                         const std::vector<uint8_t>& directPeers = {});

// Which of this rank's two buffers its peers read (in) or write (out) under the symmetric
// algorithm (symmetric.cc): all-reduce both; reduce-scatter and all-to-all the input, all-gather
// the output; broadcast the root's input and every output; reduce every input and the root's
// output. Only those buffers must be mapped by the peers.
struct PeerAccess {
  bool in = false;
  bool out = false;
};
PeerAccess symmetricPeerAccess(CollKind coll, bool isRoot);

// Whether `algo` can serve `coll` on `topo` (hierarchical needs uniform partitions, etc.).
bool algoSupports(const Topology& topo, CollKind coll, Algo algo);

}  // namespace ssc
