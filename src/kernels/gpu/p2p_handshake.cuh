// SPDX-License-Identifier: MIT
// The plan kernel's one-copy point-to-point handshake (plan_kernel.h, P2pArgs): the kP2pOffer,
// kP2pPush and kP2pWait steps of src/collectives/plan.h with the host executor's slot formats
// and decisions (src/device/host/host_executor.cc), run by the whole grid before any FIFO step:
//   1. global block 0, thread 0: posts this rank's offer to each sender (channel 0, block 0's
//      sub-FIFO), takes each receiver's offer, checks it against this rank's sends (number and
//      sizes) and lists the stores: an offered send goes straight into the offered buffer, an
//      exchange both sides offered is swapped half by each rank;
//   2. grid barrier; every block stores its share of every listed message;
//   3. grid barrier (the stores are done); block 0 answers each receiver, then takes its own
//      senders' answers (its offered receives are complete), while the other blocks go on to
//      the FIFO steps of the messages that did not go one-copy.
// Every offer waits on nothing but a FIFO slot, every take on a peer's offer or answer, and the
// answers come after stores that wait on nothing, so the rounds complete on every rank whatever
// the order of the peers, as on the host. The slots' formats, tags and matching rules are
// src/collectives/p2p_wire.h's, which the host executor uses too. Device compilers only.
#pragma once

#include <cstdint>

#include "src/collectives/p2p_wire.h"
#include "src/collectives/step_semantics.h"
#include "src/kernels/gpu/device_common.h"
#include "src/kernels/gpu/plan_kernel.h"
#include "src/kernels/gpu/plan_signals.cuh"
#include "src/platform/gpu_runtime.h"

namespace ssc::gpu {
namespace {

struct P2pShared {
  int ok;
  uint32_t failed;
  uint32_t ntasks;
};

__device__ __forceinline__ uint64_t p2pOfferCapacity(const KernelArgs& a) {
  return ssc::p2pOfferCapacity(a.pieceBytes);  // block 0's piece of a slot carries the handshake
}

// Slots of the handshake travel on channel 0, block 0's sub-FIFO with the peer, as the first
// slots of the group's traffic there (thread 0 of global block 0 only).
__device__ char* p2pBeginPost(const KernelArgs& a, int peer) {
  const Conn* c = a.conns + peer;
  const uint64_t tail = sscLoadVolatile(&c->counters[0].sentTail);
  const uint64_t slots = static_cast<uint64_t>(a.slots);
  if (!boundedWait(
          a, [&] { return tail - acquireSignal(a, &c->sendHeadIn[0].head) < slots; }, peer, 0))
    return nullptr;
  return c->sendData + (tail % slots) * a.slotBytes;
}

__device__ void p2pEndPost(const KernelArgs& a, int peer, uint32_t tag, uint64_t bytes) {
  const Conn* c = a.conns + peer;
  LocalCounters* lc = c->counters;
  const uint64_t tail = sscLoadVolatile(&lc->sentTail);
  RecvCtrl* rc = c->sendCtrlOut;
  rc->slotBytes[tail % a.slots] = fifoSlotWord(tag, bytes);
  lc->sentTail = tail + 1;
  releaseSignal(a, &rc->tail, tail + 1, true);
}

// Waits for the peer's next slot on the handshake's sub-FIFO; null when the wait failed or the
// slot is not a handshake slot with `tag` (the ranks' groups differ: recorded as a mismatch).
__device__ const char* p2pTake(const KernelArgs& a, int peer, uint32_t tag, uint64_t* bytes) {
  const Conn* c = a.conns + peer;
  const uint64_t head = sscLoadVolatile(&c->counters[0].recvHead);
  if (!boundedWait(
          a, [&] { return acquireSignal(a, &c->recvCtrl[0].tail) > head; }, peer, 0))
    return nullptr;
  const uint64_t word = sscLoadVolatile(&c->recvCtrl[0].slotBytes[head % a.slots]);
  if (fifoSlotTag(word) != tag) {
    recordError(a, kKernelSizeMismatch, peer, 0, word);
    return nullptr;
  }
  *bytes = fifoSlotBytes(word);
  return c->recvData + (head % a.slots) * a.slotBytes;
}

__device__ void p2pRelease(const KernelArgs& a, int peer) {
  const Conn* c = a.conns + peer;
  LocalCounters* lc = c->counters;
  const uint64_t head = sscLoadVolatile(&lc->recvHead) + 1;
  lc->recvHead = head;
  releaseSignal(a, &c->recvHeadOut[0].head, head, false);
}

__device__ __forceinline__ uint64_t p2pLoad(const char* p) {
  return sscLoadVolatile(reinterpret_cast<const uint64_t*>(p));
}

__device__ __forceinline__ bool p2pSwapOffered(const KernelArgs& a, uint32_t ordinal) {
  return ordinal < kMaxP2pOffers && a.p2p.offer[ordinal] != 0 && ((a.p2p.swapMask >> ordinal) & 1);
}

// Step 1 (thread 0 of global block 0): offers, then the offers of the receivers, checked and
// turned into tasks. False when a wait failed (the error is recorded).
__device__ bool p2pDecide(const KernelArgs& a, const DevStep* steps, uint32_t begin, uint32_t end,
                          P2pShared* sh) {
  P2pScratch* S = a.p2p.scratch;
  const DevP2pOp* ops = a.p2p.ops;
  const uint32_t n = a.p2p.nops;
  const uint64_t capacity = p2pOfferCapacity(a);
  // Until the decisions are complete the other blocks must find none: no task, and a failure
  // (they stop after the barriers when this returns false).
  S->ntasks = 0;
  S->failed = 1;
  for (uint32_t i = 0; i < n; ++i) S->direct[i] = 0;
  for (uint32_t si = begin; si < end; ++si) {
    if (steps[si].op != kOpP2pOffer) continue;
    const int q = steps[si].sendPeer;
    char* out = p2pBeginPost(a, q);
    if (out == nullptr) return false;
    uint32_t count = 0, listed = 0;
    for (uint32_t i = 0; i < n; ++i) {
      const DevP2pOp op = ops[i];
      if (op.isSend || op.peer != q) continue;
      ++count;
      if (op.pairIndex >= capacity) continue;
      const uint64_t address = op.recvOrdinal < kMaxP2pOffers ? a.p2p.offer[op.recvOrdinal] : 0;
      const bool swap = p2pSwapOffered(a, op.recvOrdinal);
      char* e = out + p2pOfferEntryOffset(op.pairIndex);
      *reinterpret_cast<uint64_t*>(e + kP2pEntryAddress) = address;
      *reinterpret_cast<uint64_t*>(e + kP2pEntryBytes) = op.bytes;
      *reinterpret_cast<uint64_t*>(e + kP2pEntrySwap) = swap ? 1 : 0;
      listed = op.pairIndex + 1u;
      // A plain offer is a decision: the sender stores it (or both fail on a mismatch).
      if (p2pPlainOffer(address, swap, op.pairIndex, capacity)) S->direct[i] = 1;
    }
    *reinterpret_cast<uint64_t*>(out) = p2pOfferHeaderWord(count, listed);
    p2pEndPost(a, q, kP2pOfferTag, p2pOfferBytes(listed));
  }
  uint32_t ntasks = 0, push = 0, failed = 0;
  const int me = a.rank;
  for (uint32_t si = begin; si < end; ++si) {
    if (steps[si].op != kOpP2pPush) continue;
    const int p = steps[si].recvPeer;
    uint64_t got = 0;
    const char* in = p2pTake(a, p, kP2pOfferTag, &got);
    if (in == nullptr) return false;
    const P2pOfferHeader h = p2pOfferHeaderOf(p2pLoad(in));
    const uint32_t count = h.count, listed = h.listed;
    if (!p2pOfferSizeOk(got, listed)) {
      recordError(a, kKernelSizeMismatch, p, 0, got);
      return false;
    }
    P2pDone d{kP2pDoneOk, 0, 0, 0};
    for (uint32_t i = 0; i < n && d.status == kP2pDoneOk; ++i) {
      const DevP2pOp op = ops[i];
      if (!op.isSend || op.peer != p) continue;
      if (op.pairCount != count) {
        d = p2pCheckCounts(op.pairCount, count);
      } else if (op.pairIndex < listed) {
        const uint64_t bytes = p2pLoad(in + p2pOfferEntryOffset(op.pairIndex) + kP2pEntryBytes);
        d = p2pCheckSize(op.pairIndex, op.bytes, bytes);
      }
    }
    // Tasks: only for a pair whose calls match (else both ranks fail and nothing is stored).
    for (uint32_t i = 0; i < n && d.status == kP2pDoneOk; ++i) {
      const DevP2pOp op = ops[i];
      if (!op.isSend || op.peer != p || op.pairIndex >= listed) continue;
      const char* e = in + p2pOfferEntryOffset(op.pairIndex);
      const uint64_t address = p2pLoad(e + kP2pEntryAddress);
      if (address == 0) continue;
      char* mine = static_cast<char*>(a.buffers[3 + i]);  // kBufUserBase
      char* theirs = reinterpret_cast<char*>(address);
      if (p2pLoad(e + kP2pEntrySwap) == 0) {
        S->tasks[ntasks++] = P2pTask{theirs, mine, op.bytes, 0};
        S->direct[i] = 1;
        continue;
      }
      // An exchange runs only when this rank offered its side too (its pairIndex-th receive
      // from p is this send's buffer); then each rank swaps its half, else both take the FIFOs.
      if (!p2pExchangeRuns(op.mirror >= 0, op.pairIndex, capacity,
                           op.mirror >= 0 && p2pSwapOffered(a, ops[op.mirror].recvOrdinal)))
        continue;
      uint64_t lo = 0, hi = 0;
      p2pSwapRange(me, p, op.bytes, &lo, &hi);
      S->tasks[ntasks++] = P2pTask{theirs + lo, mine + lo, hi - lo, 1};
      S->direct[i] = S->direct[op.mirror] = 1;
    }
    p2pRelease(a, p);
    S->done[push++] = d;
    failed |= d.status;
  }
  S->ntasks = ntasks;
  S->failed = failed;
  sh->ntasks = ntasks;
  sh->failed = failed;
  return true;
}

// All blocks of the grid: generation counting on a counter kept per grid size (every launch of
// one size passes its barriers with all of its blocks, so the counter stays a multiple of it).
// `system`: the stores before it must be visible to other GPUs too.
__device__ bool p2pGridBarrier(const KernelArgs& a, P2pShared* sh, bool system) {
  __syncthreads();
  if (threadIdx.x == 0) {
    if (system)
      __threadfence_system();
    else
      __threadfence();
    uint64_t* ctr = a.p2p.scratch->gridCounters + (gridDim.x / a.blocksPerChannel - 1);
    const uint64_t b = gridDim.x;
    const uint64_t target =
        (atomicAdd(reinterpret_cast<unsigned long long*>(ctr), 1ull) / b + 1) * b;
    sh->ok = boundedWait(
        a, [&] { return sscLoadVolatile(ctr) >= target; }, -1, 0);
    __threadfence();
  }
  __syncthreads();
  return sh->ok != 0;
}

// Block `g` of `G`: its share of [0, bytes), cut at 16-byte multiples so vector paths stay
// aligned.
__device__ void p2pStore(char* dst, char* src, uint64_t bytes, bool swap, uint32_t g, uint32_t G) {
  const uint64_t share = ((bytes + G - 1) / G + 15) & ~uint64_t{15};
  const uint64_t lo = min(bytes, g * share), hi = min(bytes, lo + share);
  dst += lo;
  src += lo;
  const uint64_t n = hi - lo;
  const uint64_t step = blockDim.x;
  uint64_t first = 0;
  if (((reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src)) & 15u) == 0) {
    const uint64_t nvec = n / 16;
    uint4* d = reinterpret_cast<uint4*>(dst);
    uint4* s = reinterpret_cast<uint4*>(src);
    uint64_t i = threadIdx.x;
    if (swap) {
      for (; i < nvec; i += step) {
        const uint4 x = sscLoadCg(s + i), y = sscLoadCg(d + i);
        d[i] = x;
        s[i] = y;
      }
    } else {
      for (; i + 3 * step < nvec; i += 4 * step) {
        const uint4 x0 = sscLoadCg(s + i), x1 = sscLoadCg(s + i + step);
        const uint4 x2 = sscLoadCg(s + i + 2 * step), x3 = sscLoadCg(s + i + 3 * step);
        d[i] = x0;
        d[i + step] = x1;
        d[i + 2 * step] = x2;
        d[i + 3 * step] = x3;
      }
      for (; i < nvec; i += step) d[i] = sscLoadCg(s + i);
    }
    first = nvec * 16;
  }
  for (uint64_t i = first + threadIdx.x; i < n; i += step) {
    const char x = *reinterpret_cast<volatile char*>(src + i);
    if (swap) src[i] = *reinterpret_cast<volatile char*>(dst + i);
    dst[i] = x;
  }
}

// Steps 2 and 3 for every block; block 0 also answers and waits. False: stop the kernel (a wait
// failed or the pair's calls do not match; the error is recorded).
__device__ bool p2pHandshake(const KernelArgs& a, const DevStep* steps, uint32_t begin,
                             uint32_t end) {
  __shared__ P2pShared sh;
  const bool lead = blockIdx.x == 0;
  if (lead && threadIdx.x == 0) sh.ok = p2pDecide(a, steps, begin, end, &sh);
  __syncthreads();
  if (lead && !sh.ok) {
    // Let the other blocks through the barriers, then stop them all: the error is recorded.
    sh.ntasks = 0;
  }
  const bool decided = !lead || sh.ok;
  if (!p2pGridBarrier(a, &sh, false) || !decided) return false;
  P2pScratch* S = a.p2p.scratch;
  if (threadIdx.x == 0 && !lead) {
    sh.ntasks = *reinterpret_cast<volatile uint32_t*>(&S->ntasks);
    sh.failed = *reinterpret_cast<volatile uint32_t*>(&S->failed);
  }
  __syncthreads();
  const uint32_t ntasks = sh.ntasks, failed = sh.failed;
  for (uint32_t t = 0; t < ntasks; ++t) {
    const uint64_t* w = reinterpret_cast<const uint64_t*>(S->tasks + t);
    p2pStore(reinterpret_cast<char*>(sscLoadVolatile(w)),
             reinterpret_cast<char*>(sscLoadVolatile(w + 1)), sscLoadVolatile(w + 2),
             sscLoadVolatile(w + 3) != 0, blockIdx.x, gridDim.x);
  }
  if (!p2pGridBarrier(a, &sh, !a.deviceScope)) return false;
  if (!lead) return failed == 0;
  if (threadIdx.x == 0) {
    int ok = 1;
    uint32_t push = 0;
    for (uint32_t si = begin; si < end && ok; ++si) {
      if (steps[si].op != kOpP2pPush) continue;
      const int p = steps[si].recvPeer;
      char* out = p2pBeginPost(a, p);
      if (out == nullptr) {
        ok = 0;
        break;
      }
      const P2pDone d = S->done[push++];
      uint64_t* w = reinterpret_cast<uint64_t*>(out);
      w[0] = p2pDoneWord(d.status, d.index);
      w[1] = d.sent;
      w[2] = d.expected;
      p2pEndPost(a, p, kP2pDoneTag, sizeof(P2pDone));
      if (d.status != 0)
        recordP2pMismatch(errorSink(a), p, d.status | kP2pThisRankSends, d.index, d.sent,
                          d.expected);
    }
    for (uint32_t si = begin; si < end && ok; ++si) {
      if (steps[si].op != kOpP2pWait) continue;
      const int p = steps[si].recvPeer;
      uint64_t got = 0;
      const char* in = p2pTake(a, p, kP2pDoneTag, &got);
      if (in == nullptr) {
        ok = 0;
        break;
      }
      const uint64_t w0 = p2pLoad(in + offsetof(P2pDone, status));
      const uint64_t sent = p2pLoad(in + offsetof(P2pDone, sent));
      const uint64_t expected = p2pLoad(in + offsetof(P2pDone, expected));
      p2pRelease(a, p);
      if (got != sizeof(P2pDone)) {
        recordError(a, kKernelSizeMismatch, p, 0, got);
        ok = 0;
      } else if (static_cast<uint32_t>(w0) != kP2pDoneOk) {
        recordP2pMismatch(errorSink(a), p, static_cast<uint32_t>(w0),
                          static_cast<uint32_t>(w0 >> 32), sent, expected);
        ok = 0;
      }
    }
    sh.ok = ok && failed == 0;
  }
  __syncthreads();
  return sh.ok != 0;
}

// A FIFO step of a message that went one-copy: both ends skip it (after the handshake).
__device__ __forceinline__ bool p2pSkipped(const KernelArgs& a, const DevStep& s) {
  const int i = stepP2pOp(static_cast<StepOp>(s.op), s.srcBuf, s.dstBuf);
  return i >= 0 && static_cast<uint32_t>(i) < a.p2p.nops &&
         *reinterpret_cast<const volatile uint8_t*>(a.p2p.scratch->direct + i) != 0;
}

}  // namespace
}  // namespace ssc::gpu
