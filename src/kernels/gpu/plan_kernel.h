// SPDX-License-Identifier: MIT
// The GPU plan executor's interface: plain structs shared by the host side of the backend (which
// lays out FIFOs and uploads plans) and the kernel (which runs them). No runtime or library
// headers here, so both g++ and the device compilers include it.
//
// FIFO protocol (the host executor's, transports/host/shm_transport.h, split per block): a
// connection (sender, receiver, channel) is `slots` slots of `slotBytes` in the receiver's
// memory. Each channel runs on `blocksPerChannel` blocks; block b owns bytes
// [b * pieceBytes, (b+1) * pieceBytes) of every slot and has its own pair of monotonic counters,
// so blocks never wait for each other to post a slot. A sub-FIFO is a FIFO exactly as on the
// host: tail (slots posted, written by the sender into the receiver's memory), head (slots
// consumed, written by the receiver into the sender's memory, so each side polls local memory),
// and the byte count of every posted slot for the size check (with the step's tag in its upper
// half: point-to-point messages carry their length there). Nothing is ever reset.
#pragma once

#include <cstdint>

#include "src/kernels/gpu/kernel_timing.h"

namespace ssc::gpu {

constexpr int kMaxSlots = 16;
constexpr int kMaxChannels = 4;
constexpr int kMaxBuffers = 132;  // kBufUserBase + 2 x 64 point-to-point buffers
constexpr int kThreadsPerBlock = 512;
// Plans of at most this many steps (every point-to-point group of a few peers, small
// collectives) travel inside the kernel's parameters: no device memory, no upload, nothing to
// free, and a captured CUDA graph keeps its own copy.
constexpr int kInlineSteps = 16;

// Error codes a kernel records (first one wins); the host turns them into sscResult_t.
enum KernelError : uint32_t {
  kKernelOk = 0,
  kKernelTimeout = 1,       // a wait passed STARSCREAM_TIMEOUT
  kKernelSizeMismatch = 2,  // a peer posted a slot of another size (mismatched calls)
  kKernelCallMismatch = 3,  // a peer reached the same barrier with another call (callHash)
  kKernelAborted = 4,       // the communicator was aborted while a wait was pending
  // One-copy point-to-point: a pair's sends and receives in one group do not match. Words 1..7
  // of the error area: the other rank, kind (kP2pCounts/kP2pSizes) | kP2pThisRankSends, the
  // message index, then the sender's and the receiver's counts or bytes (two 64-bit words).
  kKernelP2pMismatch = 5,
};
enum : uint32_t { kP2pCounts = 1, kP2pSizes = 2, kP2pThisRankSends = 1u << 16 };

// Receiver-side control of one sub-FIFO (channel, sender, block), in the receiver's memory.
struct alignas(128) RecvCtrl {
  uint64_t tail;  // written by the sender (release), polled by the receiver (acquire)
  uint64_t pad[15];
  uint64_t slotBytes[kMaxSlots];  // per slot: (step tag << 32) | bytes, checked by the receiver
};

// Sender-side control of one sub-FIFO (channel, receiver, block), in the sender's memory.
struct alignas(128) SendCtrl {
  uint64_t head;  // written by the receiver, polled by the sender
  uint64_t pad[15];
};

// This rank's own copies of the counters it advances (only one block ever touches each).
struct alignas(16) LocalCounters {
  uint64_t sentTail;  // towards the peer: slots posted
  uint64_t recvHead;  // from the peer: slots consumed
};

// Everything one block needs about the connection with one peer on its channel. Arrays are
// indexed by block within the channel.
struct Conn {
  char* recvData;           // my FIFO from the peer (slots x slotBytes)
  RecvCtrl* recvCtrl;       // mine, [block]
  SendCtrl* recvHeadOut;    // the peer's SendCtrl for me, [block] (I write head there)
  char* sendData;           // the peer's FIFO from me
  RecvCtrl* sendCtrlOut;    // the peer's RecvCtrl for me, [block] (I write tail there)
  SendCtrl* sendHeadIn;     // mine: the head the peer writes, [block]
  LocalCounters* counters;  // mine, [block]
};

// ssc::StepOp / StepFlag (src/collectives/plan.h) as device code sees them (it cannot include
// plan.h); gpu_plan_cache.cc static_asserts that the values agree.
enum DevOp : uint8_t {
  kOpCopy,
  kOpReduce,
  kOpSend,
  kOpRecv,
  kOpRecvReduceSend,
  kOpRecvReduceCopy,
  kOpRecvReduceCopySend,
  kOpRecvCopySend,
  kOpBarrier,
  kOpPeerReduce,
  kOpPeerReduceBcast,
  kOpPeerPush,
  kOpPeerGather,
  kOpPeerSwap,
  kOpP2pOffer,
  kOpP2pPush,
  kOpP2pWait
};
enum : uint8_t { kPreOpFlag = 1, kPostOpFlag = 2 };

// A plan step as the kernel reads it (src/collectives/plan.h's Step plus one executor flag).
struct DevStep {
  uint8_t op;       // ssc::StepOp
  uint8_t flags;    // ssc::StepFlag
  uint8_t barrier;  // 1: all blocks of the channel must finish earlier steps first (see below)
  uint8_t pad;
  uint16_t srcBuf;
  uint16_t dstBuf;
  int32_t recvPeer;
  int32_t sendPeer;
  uint32_t tag;  // ssc::Step::tag: sent with every slot in the size word's upper half
  uint64_t srcOff;
  uint64_t dstOff;
  uint64_t count;
};

// How the call reduces: dtype/op plus NCCL's pre-scale and post-divide.
struct DevReduce {
  uint32_t dtype;  // sscDataType_t
  uint32_t kind;   // ssc::ReduceKind
  uint32_t hasPreScale;
  uint32_t scaleIsInteger;
  int64_t scaleInt;         // integer types: the wrapped multiplier
  double scaleFloat;        // float types
  const void* scaleDevice;  // non-null: read the scalar (of dtype) from here when the kernel runs
  uint64_t postDivisor;     // integer Avg: 0 = none
};

// One-copy point-to-point (the kP2pOffer / kP2pPush / kP2pWait steps of src/collectives/plan.h;
// transports/usr/p2p_directory.h). The handshake runs ahead of every FIFO step, on all blocks of
// the grid at once: global block 0 posts this rank's offers, takes its peers' offers and checks
// them against its sends, and lists what to store where; every block then stores its share of
// each offered message; block 0 answers each sender and waits for its own senders' answers.
// Blocks read the outcome (which operations went one-copy, so their FIFO steps are skipped on
// both sides) from P2pScratch after the first grid barrier.

// Receives per group that can be offered one-copy on the GPU (later ones take the FIFOs; the
// receiver lists them as not offered, so both sides agree).
constexpr int kMaxP2pOffers = 64;
constexpr int kMaxP2pOps = kMaxBuffers - 3;  // kBufUserBase

// A group operation as the handshake needs it: static for a plan, computed and uploaded with it.
struct DevP2pOp {
  uint64_t bytes;
  int32_t peer;
  uint16_t isSend;
  uint16_t pairIndex;    // among this rank's operations with `peer` in the same direction
  uint16_t pairCount;    // how many operations with `peer` in the same direction
  uint16_t recvOrdinal;  // receives: among the group's receives (indexes P2pArgs::offer)
  int16_t mirror;        // the operation in the other direction with `peer` and the same
                         // pairIndex (-1: none): a send's candidate exchange partner
  uint16_t pad;
};

// One store of the push phase: `bytes` from src to dst, or (swap) the two ranges trade places.
struct P2pTask {
  char* dst;
  char* src;
  uint64_t bytes;
  uint64_t swap;
};

// The answer a sender posts for each offer it took (plan.h: kP2pPush), in its FIFO slot.
struct P2pDone {
  uint32_t status;  // 0, kP2pCounts or kP2pSizes
  uint32_t index;   // kP2pSizes: which message of the pair (0-based)
  uint64_t sent;    // the sender's sends (kP2pCounts) or bytes (kP2pSizes)
  uint64_t expected;
};

// Per communicator, device memory, zero at creation; only the communicator's own launches, which
// never overlap, touch it.
struct P2pScratch {
  uint64_t gridCounters[kMaxChannels];  // [channels - 1]: grid barriers of grids that size
  uint32_t ntasks;
  uint32_t failed;             // block 0 found a mismatch: every block stops after the copy
  uint8_t direct[kMaxP2pOps];  // per operation: moved one-copy (its FIFO steps are skipped)
  P2pTask tasks[kMaxP2pOps];   // at most one per send
  P2pDone done[kMaxP2pOps];    // per push step, in step order
};

struct P2pArgs {
  const DevP2pOp* ops;  // the plan's operations (device memory); null: no handshake
  uint32_t nops;
  uint32_t pad;
  P2pScratch* scratch;
  // Per receive, by its rank among the group's receives: the address at which its sender has
  // the buffer mapped (0: through the FIFOs), and whether it is offered for a swap.
  uint64_t offer[kMaxP2pOffers];
  uint64_t swapMask;
};

struct KernelArgs {
  const DevStep* steps;                  // all channels' steps, concatenated (null: inlineSteps)
  uint32_t stepBegin[kMaxChannels + 1];  // channel c runs steps [stepBegin[c], stepBegin[c+1])
  const Conn* conns;                     // [channel][peer]
  int rank;
  int nranks;
  int blocksPerChannel;
  int slots;
  uint32_t elemBytes;
  uint32_t deviceScope;  // 1: every peer is on this GPU (signals at .gpu scope)
  uint64_t slotBytes;
  uint64_t pieceBytes;        // bytes of each slot a block owns (multiple of 16)
  uint64_t* barrierCounters;  // [channel], monotonic
  uint32_t* errorDevice;      // device word all waits poll: stop when non-zero
  uint32_t* errorHost;        // host-mapped: {code, peer, channel, detail}
  const uint32_t* abortHost;  // host-mapped: non-zero once the comm is aborted
  uint64_t timeoutTicks;      // 0: wait forever
  DevReduce reduce;
  void* buffers[kMaxBuffers];         // by BufId; kBufScratch filled in by the backend
  DevStep inlineSteps[kInlineSteps];  // the steps when `steps` is null
  P2pArgs p2p;
  KernelTiming timing;  // a traced call's stamps (kernel_timing.h); slot null: untimed
};
static_assert(sizeof(KernelArgs) <= 4000, "kernel parameters are limited to 4 KiB");

// Launches the plan kernel: grid = channels x blocksPerChannel. Returns 0 or the runtime's
// error code of the launch (a kernel's own failures are reported through errorHost).
int launchPlanKernel(const KernelArgs& args, int channels, void* stream);

// Blocks of the plan kernel one SM holds at once (occupancy API, at least 1): the backend keeps
// every launch's grid within what its share of the GPU holds, since blocks wait on each other.
int planKernelBlocksPerSM();

// Diagnostic (benchmarks): launches `blocks` x `threads` on the default stream and reports how
// many distinct SMs ran them and whether all blocks were resident at once. 0 or a runtime error.
int probeResidency(int blocks, int threads, int* distinctSms, int* allResident);

}  // namespace ssc::gpu
