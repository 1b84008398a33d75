// SPDX-License-Identifier: MIT
// What a plan step means, written once for the executors that run plans: the host executor
// (src/device/host/host_executor.cc) and the GPU's plan kernel (src/kernels/gpu/plan_kernel.cu,
// p2p_handshake.cuh) and symmetric kernels (sym_bulk.cuh). They must agree step for step (a
// plan the tests check on the host is the plan the GPU runs), so the buffers a step reads and
// writes, how it cuts its range into FIFO slots and a slot into the GPU blocks' pieces, where
// the pre- and post-steps of the reduction apply and which buffers a step's offsets index are
// decided here, by pure functions that g++, nvcc and hipcc all compile (no runtime headers;
// plan.h, which holds the rest of the plan format, includes this). The executors keep their own
// memory traffic and waits; tests/collectives/test_step_semantics.cc walks these functions on
// the host, so the arithmetic the GPU runs is checked in CI.
#pragma once

#include <cstdint>

#include "src/collectives/host_device.h"

namespace ssc {

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

// The zero-copy steps over peers' mapped buffers (kBarrier excluded): their recvPeer/sendPeer
// name ranks whose memory they touch, not FIFO connections.
SSC_HOST_DEVICE bool isPeerStep(StepOp op) {
  return op == StepOp::kPeerReduce || op == StepOp::kPeerReduceBcast || op == StepOp::kPeerPush ||
         op == StepOp::kPeerGather || op == StepOp::kPeerSwap;
}

// The part [*lo, *hi) of a block of `count` elements that `rank` swaps with `peer` (kPeerSwap).
SSC_HOST_DEVICE void peerSwapHalf(int rank, int peer, uint64_t count, uint64_t* lo, uint64_t* hi) {
  const uint64_t mid = count / 2;
  *lo = rank < peer ? 0 : mid;
  *hi = rank < peer ? mid : count;
}

// Step flags. kPreOp: the step reads this rank's own contribution from src, so the op's pre-step
// (PreMulSum / float Avg scaling) applies to it exactly once. kPostOp: the step produces the final
// reduced value, so the op's post-step (integer Avg division) applies before it is stored/sent.
enum StepFlag : uint8_t { kFlagNone = 0, kFlagPreOp = 1, kFlagPostOp = 2 };

// One-copy point-to-point handshake steps (p2p_wire.h has their slots).
SSC_HOST_DEVICE bool isP2pHandshakeStep(StepOp op) {
  return op == StepOp::kP2pOffer || op == StepOp::kP2pPush || op == StepOp::kP2pWait;
}

// FIFO and local steps (kCopy .. kRecvCopySend). A step that receives takes one slot from
// conn(recvPeer) per chunk; one that sends posts one slot to conn(sendPeer) per chunk.
SSC_HOST_DEVICE bool stepReceives(StepOp op) {
  return op == StepOp::kRecv || op == StepOp::kRecvReduceSend || op == StepOp::kRecvReduceCopy ||
         op == StepOp::kRecvReduceCopySend || op == StepOp::kRecvCopySend;
}
SSC_HOST_DEVICE bool stepSends(StepOp op) {
  return op == StepOp::kSend || op == StepOp::kRecvReduceSend ||
         op == StepOp::kRecvReduceCopySend || op == StepOp::kRecvCopySend;
}
// Reads this rank's src at srcOff (every FIFO or local step but the pure forwards).
SSC_HOST_DEVICE bool stepReadsSrc(StepOp op) {
  return op != StepOp::kRecv && op != StepOp::kRecvCopySend;
}
// Writes this rank's dst at dstOff (every FIFO or local step but those whose result only leaves).
SSC_HOST_DEVICE bool stepWritesDst(StepOp op) {
  return op != StepOp::kSend && op != StepOp::kRecvReduceSend;
}
// kReduce: dst is also the first operand (dst = dst (+) src).
SSC_HOST_DEVICE bool stepAccumulatesDst(StepOp op) { return op == StepOp::kReduce; }
// Combines two operands with the call's reduction: the received slot (or dst) and src.
SSC_HOST_DEVICE bool stepReduces(StepOp op) {
  return op == StepOp::kReduce || op == StepOp::kRecvReduceSend || op == StepOp::kRecvReduceCopy ||
         op == StepOp::kRecvReduceCopySend || op == StepOp::kPeerReduce ||
         op == StepOp::kPeerReduceBcast;
}
// Stores a value that may be the final one, so kFlagPostOp may apply to it: the local copy, the
// receive-reduce steps that keep their result (kRecvReduceCopySend also sends what it stored)
// and the peer reductions.
SSC_HOST_DEVICE bool stepMayPostOp(StepOp op) {
  return op == StepOp::kCopy || op == StepOp::kRecvReduceCopy ||
         op == StepOp::kRecvReduceCopySend || op == StepOp::kPeerReduce ||
         op == StepOp::kPeerReduceBcast;
}
// The reduction's pre-step (PreMulSum / float Avg scaling) applies to what the step reads from
// src when it is flagged and the call has one.
SSC_HOST_DEVICE bool stepAppliesPreOp(uint8_t flags, bool callHasPreScale) {
  return (flags & kFlagPreOp) != 0 && callHasPreScale;
}
// The post-step (integer Avg division) applies to the stored value when the step is flagged,
// may store a final value, and the call divides.
SSC_HOST_DEVICE bool stepAppliesPostOp(StepOp op, uint8_t flags, uint64_t postDivisor) {
  return (flags & kFlagPostOp) != 0 && stepMayPostOp(op) && postDivisor != 0;
}

// Chunking. A FIFO or local step of `count` elements runs in chunks of at most one slot:
// chunk c covers elements [c * slotElems, c * slotElems + stepChunkElems(..)), each chunk one
// slot on each connection it uses (plan.h: a Send of n elements fills ceil(bytes / slotBytes)
// slots).
SSC_HOST_DEVICE uint64_t slotElemsOf(uint64_t slotBytes, uint64_t elemBytes) {
  return slotBytes / elemBytes;
}
// Elements of the chunk that starts at element `done` of the step.
SSC_HOST_DEVICE uint64_t stepChunkElems(uint64_t count, uint64_t done, uint64_t slotElems) {
  return count - done < slotElems ? count - done : slotElems;
}
// Slots a step of `count` elements takes on each connection it uses.
SSC_HOST_DEVICE uint64_t stepSlots(uint64_t count, uint64_t slotElems) {
  return (count + slotElems - 1) / slotElems;
}

// The GPU splits every slot between the blocks of a channel: block b owns bytes
// [b * pieceBytes, (b + 1) * pieceBytes) of the slot and the same range of the chunk's local
// buffers (plan_kernel.h). A chunk of `bytes` gives block b the part [lo, lo + bytes) below.
struct SlotPiece {
  uint64_t lo;     // first byte of the piece in the slot (and the chunk)
  uint64_t bytes;  // 0: the chunk ends before this block's piece
};
SSC_HOST_DEVICE SlotPiece slotPiece(uint64_t chunkBytes, uint64_t block, uint64_t pieceBytes) {
  const uint64_t lo = block * pieceBytes;
  const uint64_t rest = chunkBytes > lo ? chunkBytes - lo : 0;
  return SlotPiece{lo, rest < pieceBytes ? rest : pieceBytes};
}

// Point-to-point plans name one buffer per send or receive (kBufUserBase + i). The operation a
// FIFO step moves (-1: none): a one-copy message's kSend and kRecv are skipped by both ends.
SSC_HOST_DEVICE int stepP2pOp(StepOp op, uint16_t srcBuf, uint16_t dstBuf) {
  const uint32_t b = op == StepOp::kSend ? srcBuf : op == StepOp::kRecv ? dstBuf : 0;
  return b >= kBufUserBase ? static_cast<int>(b - kBufUserBase) : -1;
}

// Zero-copy steps' blocks: kPeerGather's block q of dst and kPeerSwap's block q of src start
// `q` blocks of `count` elements past the step's offset.
SSC_HOST_DEVICE uint64_t peerBlockOff(uint64_t off, int q, uint64_t count) {
  return off + static_cast<uint64_t>(q) * count;
}

}  // namespace ssc
