// SPDX-License-Identifier: MIT
// The symmetric (zero-copy) executor's interface: plans of Algo::kSymmetric ([kBarrier, one peer
// step, kBarrier]) run as one launch of a dedicated kernel that loads and stores peers' registered
// buffers directly. Plain structs, no runtime headers: g++ and the device compilers include it.
//
// Two kernels:
//  - bulk (symKernel): the plan's steps as written. Every peer step is split over ALL blocks of
//    the launch (grid-stride over 16-byte vectors); barriers are per block (below). Reductions
//    and the all-gather on the wide grid (the tuner's choice per call) run in kernels of their
//    own (sym_bulk.cuh: kAnyDataOp, symPushKernel), for speed; the host sees one entry point,
//    launchSymKernel.
//  - LL (llAllReduceKernel): a one-shot all-reduce of at most kLLMaxBytes runs without touching
//    peers' buffers at all: each rank pushes its input as LL packets (data and flag in one 8-byte
//    store) into every peer's inbox in the IPC segment and reduces what arrives. One one-way
//    latency instead of barrier + reads + barrier; same result bits as the bulk one-shot.
//
// Barrier protocol (kBarrier), per block. Rank r's control area holds one slot per block index
// b: {epoch, hash[2]}. Barrier numbers are counted on the device, never by the host, so a launch
// captured into a CUDA/HIP graph replays correctly any number of times, interleaved with eager
// launches: block b of every rank passes the same barriers in the same order (grids are equal on
// all ranks for every call, the host sizes them from the call alone), so block b's own slot holds
// how many barriers block b has passed on this communicator, and its next one is that + 1. At the
// start of a launch every thread of block b reads its own slot (only thread 0 of block b of this
// rank ever writes it, in launch order); barrier number E is then that + k for the launch's k-th.
// At barrier E: every thread of the block finishes its earlier work (bar.sync), thread 0 writes
// hash[E & 1] = callHash and then epoch = E with a release store; threads 0..n-1 each wait until
// peer q's slot b has epoch >= E (acquire), and if it is == E compare q's hash[E & 1] (a peer at
// E cannot overwrite that word before this rank reaches E + 1). Block b of one rank thus meets
// block b of every other rank, never the whole grid, and for the first and last barrier of a
// plan that is enough:
//  - first: peer q's block b has started, so q's kernel has started, so everything before it on
//    q's stream (writing q's input, reading q's previous output) is done;
//  - last: this rank's kernel ends only when all its blocks pass, i.e. when every block of every
//    peer has finished the peer step, so nobody still touches this rank's buffers.
// A barrier in the middle of a plan (none emitted today) first syncs the local grid (an arrival
// counter the last arriving block resets, then a generation word it bumps: no count carried
// between launches), so that each peer's slot b then stands for all of that peer's blocks; that
// needs the whole grid resident, so the host gives such plans half the SM share (MPS clients
// may share SMs).
// LL rounds are counted on the device too: the round word in the control area is read by every
// block at the start of an LL launch, and the last block of the launch to finish (an arrival
// counter again) advances it (llNextRound) and, at the 32-bit flag wrap, clears the inbox parity
// it just read (llClearsAfterRound). Launches of one communicator are ordered (LaunchOrder;
// graph launches by the caller, as NCCL requires), so no two of them use these words at once.
// Memory scope: device scope when all ranks share one GPU (MPS partitions), system otherwise.
#pragma once

#include <cstdint>

#include "src/kernels/gpu/plan_kernel.h"

namespace ssc::gpu {

constexpr int kMaxSymPeers = 64;  // peer tables travel in the kernel parameters
constexpr int kMaxSymSteps = 8;
constexpr int kMaxSymBlocks = 512;  // barrier slots per rank
constexpr int kSymThreads = 512;
constexpr int kLLThreads = 256;
constexpr uint64_t kLLMaxBytes = 64 << 10;  // LL inbox size: LL one-shot up to this many bytes
// Where LL is used by default. On the H200 under MPS, with a grid of the rank's SM share, LL
// beats or matches the bulk one-shot (barrier + reads + barrier) up to 64 KiB (K = 4: 12.5 vs
// 19 us at 64 KiB); with a 1-block grid it lost above ~4 KiB.
constexpr uint64_t kLLDefaultMaxBytes = kLLMaxBytes;

// One rank's symmetric control area, inside its IPC segment (every peer maps it).
struct alignas(128) SymBarrierSlot {
  uint64_t epoch;    // last barrier this block reached (release)
  uint32_t hash[2];  // callHash of barrier E at [E & 1]
  uint32_t pad[28];
};

// LL inbox line 0 of each (parity, sender) is a header {callHash, flag, count, flag}; data lines
// follow, 8 data bytes each.
constexpr uint64_t kLLLinesPerPeer = kLLMaxBytes / 8 + 1;
constexpr uint64_t kLLPeerStride = (kLLLinesPerPeer * 16 + 127) / 128 * 128;

// LL rounds are 64-bit and never reused; a packet line carries the low 32 bits as its flag. A
// line left in the inbox 2^32 rounds ago would carry the same flag as the current round, so when
// the low bits are about to wrap, each parity's inbox is cleared once after its last use, and the
// round whose low bits are 0 (the value of a cleared line) is skipped with its successor, so
// parities still alternate. Clearing after the last two rounds before the wrap (one per parity)
// needs no synchronisation with peers: this rank's launch of that round has finished reading,
// and a peer writes this parity again only in a round two later, whose launch starts after the
// peer received this rank's lines of the round in between, sent after the clear (stream order).
constexpr uint64_t llNextRound(uint64_t round) {
  return static_cast<uint32_t>(round + 1) == 0 ? round + 3 : round + 1;
}
constexpr bool llClearsAfterRound(uint64_t round) {
  return static_cast<uint32_t>(round) >= 0xFFFFFFFEu;
}

// constexpr: device code calls these too (nvcc --expt-relaxed-constexpr; clang treats them as
// host+device).
struct SymCtrlLayout {
  static constexpr uint64_t kBarriers = 0;
  // 256 bytes of this rank's own counters (peers never touch them), uint64 each:
  static constexpr uint64_t kGridCounter = kBarriers + kMaxSymBlocks * sizeof(SymBarrierSlot);
  static constexpr uint64_t kGridArrive = kGridCounter;  // blocks at the grid sync (0 between)
  static constexpr uint64_t kGridGeneration = kGridCounter + 8;  // grid syncs completed
  static constexpr uint64_t kLLDone = kGridCounter + 16;         // blocks done with the LL launch
  static constexpr uint64_t kLLRound = kGridCounter + 24;        // the next LL launch's round
  static constexpr uint64_t kInbox = kGridCounter + 256;         // [parity][sender] x kLLPeerStride
  static constexpr uint64_t bytes(int nranks) {
    return kInbox + 2 * static_cast<uint64_t>(nranks) * kLLPeerStride;
  }
  static constexpr uint64_t inbox(int parity, int sender, int nranks) {
    return kInbox + (static_cast<uint64_t>(parity) * nranks + sender) * kLLPeerStride;
  }
};

struct SymArgs {
  DevStep steps[kMaxSymSteps];
  int nsteps;
  int nranks;
  int rank;
  uint32_t elemBytes;
  uint32_t callHash;
  uint32_t deviceScope;   // 1: every peer is on this GPU (acquire/release at .gpu scope)
  uint32_t wideGrid;      // 1: a push plan runs in the push kernel (RankPlan::wideGrid)
  uint64_t timeoutTicks;  // 0: wait forever
  uint32_t* errorDevice;
  uint32_t* errorHost;
  const uint32_t* abortHost;  // host-mapped: non-zero once the communicator is aborted
  DevReduce reduce;
  void* local[2];               // this rank's kBufIn / kBufOut for the call
  char* ctrl[kMaxSymPeers];     // every rank's control area as mapped here
  void* peer[2][kMaxSymPeers];  // [kBufIn / kBufOut][rank]: registered buffers, at the call
  KernelTiming timing;          // a traced call's stamps (kernel_timing.h); slot null: untimed
};

// The bulk kernel a plan runs in (sym_bulk.cuh, symKernel): a reduction of its own, op, for the
// plans [barrier, op, barrier] with op kOpPeerReduce or kOpPeerReduceBcast (every symmetric
// reduction), else the kernel for any plan, kAnyDataOp.
constexpr int kAnyDataOp = 0;  // kOpCopy's value: no symmetric plan has that step
inline int symReductionOp(const SymArgs& a) {
  if (a.nsteps != 3 || a.steps[0].op != kOpBarrier || a.steps[2].op != kOpBarrier)
    return kAnyDataOp;
  const int op = a.steps[1].op;
  return op == kOpPeerReduce || op == kOpPeerReduceBcast ? op : kAnyDataOp;
}

// All-gather's push ([barrier, kPeerPush, barrier]) on the wide grid (the tuner's choice per call,
// RankPlan::wideGrid) runs in a kernel of its own with 256-thread blocks, up to
// kSymPushBlocksPerSM of them per SM, one launch per kSymPushMaxBytes of output at most (the host
// splits larger calls: symPushChunkElems). perf/bulk_shapes.cu on the H200 moved the push pattern
// at K = 2 (256 MiB) in 225 us with that shape against 261 us with the bulk kernel's 512 x 1;
// through nccl-tests it took 8 MiB in 13.9 us (19.0 before), 64 MiB in 62.8 (76.2), 256 MiB in
// 229 (269). In one launch it lost above that (1 GiB: 1110-1160 us against the bulk kernel's
// 1052), while the same loop between plain flag barriers moved 1 GiB in 869 us (perf/bulk_ab.cu):
// cut into launches of kSymPushMaxBytes, each runs at the 256 MiB speed. At K = 4 and 8 a push
// kernel won at 4 MiB (K = 8: 44 -> 32 us) and lost from 64 MiB up: which grid a size gets is the
// calibrated model's call.
constexpr int kSymPushThreads = 256;
constexpr int kSymPushBlocksPerSM = 8;
constexpr uint64_t kSymPushMaxBytes = uint64_t{256} << 20;
inline bool symIsPushPlan(const SymArgs& a) {
  return a.wideGrid != 0 && a.nsteps == 3 && a.steps[0].op == kOpBarrier &&
         a.steps[1].op == kOpPeerPush && a.steps[2].op == kOpBarrier;
}
inline bool symUsesPushKernel(const SymArgs& a) {
  return symIsPushPlan(a) &&
         a.steps[1].count * a.elemBytes * static_cast<uint64_t>(a.nranks) <= kSymPushMaxBytes;
}
// Elements of the push step per launch for a push plan (symIsPushPlan): the whole step when it
// fits kSymPushMaxBytes of output, else the most that does, rounded down to a multiple of 4 KiB
// so every launch's pointers keep the first one's 16-byte alignment.
inline uint64_t symPushChunkElems(const SymArgs& a) {
  const uint64_t count = a.steps[1].count,
                 outPerElem = a.elemBytes * static_cast<uint64_t>(a.nranks);
  if (outPerElem == 0 || count * outPerElem <= kSymPushMaxBytes) return count;
  const uint64_t align = 4096 / a.elemBytes;  // elemBytes divides 4096 (1, 2, 4 or 8)
  return kSymPushMaxBytes / outPerElem / align * align;
}

// Whether every data step of a plan can run on the bulk kernels' 16-byte vectors: the pointers a
// step reads and writes together share one 16-byte misalignment, a multiple of the element size
// (sym_bulk.cuh, headOf). Otherwise those kernels would go element by element (an all-gather or
// reduce-scatter whose per-rank block is not a multiple of 16 bytes), and the plan runs in the
// kernel of sym_unaligned.cuh instead. Ranks may disagree (a push checks the rank's own source);
// that is harmless: both kernels take the same grid and block size and meet at the same
// barriers (IPC mappings keep an allocation's offsets, so peers' pointers are judged alike).
inline bool symVectorAligned(const SymArgs& a) {
  const uint64_t es = a.elemBytes;
  const auto mis = [](const void* p) {
    return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(p) & 15u);
  };
  const auto peerAt = [&](uint16_t buf, int q, uint64_t off) {
    return static_cast<const char*>(a.peer[buf][q]) + off * es;
  };
  const auto localAt = [&](uint16_t buf, uint64_t off) {
    return static_cast<const char*>(a.local[buf]) + off * es;
  };
  for (int i = 0; i < a.nsteps; ++i) {
    const DevStep& s = a.steps[i];
    if (s.count == 0) continue;
    switch (s.op) {
      case kOpPeerReduce:
      case kOpPeerReduceBcast: {
        const bool bcast = s.op == kOpPeerReduceBcast;
        const char* d0 = bcast             ? peerAt(s.dstBuf, 0, s.dstOff)
                         : s.sendPeer >= 0 ? peerAt(s.dstBuf, s.sendPeer, s.dstOff)
                                           : localAt(s.dstBuf, s.dstOff);
        const uint32_t m = mis(d0);
        if (m % es != 0) return false;
        for (int q = s.recvPeer >= 0 ? s.recvPeer : 0;
             q < (s.recvPeer >= 0 ? s.recvPeer + 1 : a.nranks); ++q)
          if (mis(peerAt(s.srcBuf, q, s.srcOff)) != m) return false;
        for (int k = 1; bcast && k < a.nranks; ++k)
          if (mis(peerAt(s.dstBuf, k, s.dstOff)) != m) return false;
        break;
      }
      case kOpPeerPush: {
        const uint32_t m = mis(localAt(s.srcBuf, s.srcOff));
        if (m % es != 0) return false;
        for (int k = 0; k < a.nranks; ++k)
          if (mis(peerAt(s.dstBuf, k, s.dstOff)) != m) return false;
        break;
      }
      case kOpPeerGather:
        for (int q = 0; q < a.nranks; ++q) {
          const uint32_t m = mis(localAt(s.dstBuf, s.dstOff + static_cast<uint64_t>(q) * s.count));
          if (m % es != 0 || mis(peerAt(s.srcBuf, q, s.srcOff)) != m) return false;
        }
        break;
      case kOpPeerSwap:  // the bulk kernel's swap handles any misalignment (element by element)
        break;
      default: break;
    }
  }
  return true;
}

// Launches the bulk kernel with `blocks` blocks (equal on all ranks). 0 or the runtime's error.
int launchSymKernel(const SymArgs& args, int blocks, void* stream);
// Launches the LL one-shot all-reduce; args.steps[args.nsteps == 1 ? 0 : 1] is its kPeerReduce.
int launchLLAllReduce(const SymArgs& args, int blocks, void* stream);
// Occupancy of the bulk kernel (blocks per SM, at least 1), for sizing grids.
int symKernelBlocksPerSM();

}  // namespace ssc::gpu
