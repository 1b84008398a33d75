// SPDX-License-Identifier: MIT
#include "src/device/host/host_executor.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "src/collectives/p2p_wire.h"
#include "src/collectives/step_semantics.h"
#include "src/core/errors.h"
#include "src/kernels/host/reduce.h"

namespace ssc {

namespace {

// Executes one channel's steps; holds the per-call state the steps share.
class ChannelRunner {
 public:
  ChannelRunner(ShmTransport& t, const Work& w, int channel, const std::atomic<bool>* abort,
                char* scratch, std::vector<uint8_t>* direct)
      : t_(t),
        w_(w),
        channel_(channel),
        abort_(abort),
        scratch_(scratch),
        direct_(direct),
        esize_(w.elemBytes),
        slotElems_(slotElemsOf(t.slotBytes(), w.elemBytes)),
        tmp_(t.slotBytes()) {
    if (w.reduce.hasPreScale)
      scale_ = w.reduce.preScaleDevice ? scalarFromElement(w.reduce.dtype, w.reduce.preScaleDevice)
                                       : w.reduce.preScale;
  }

  sscResult_t run(const std::vector<Step>& steps) {
    for (const Step& s : steps) SSC_CHECK(runStep(s));
    return sscSuccess;
  }

 private:
  char* bufPtr(uint16_t buf, uint64_t off) const {
    char* base = buf == kBufScratch ? scratch_ : static_cast<char*>(w_.buffers[buf]);
    return base + off * esize_;
  }

  // Brings the caller's own contribution in: scaled for PreMulSum / float Avg, else as is.
  // Where the pre- and post-steps apply is step_semantics.h's, as in the plan kernel.
  const char* pre(const Step& s, const char* src, size_t n) {
    if (!stepAppliesPreOp(s.flags, w_.reduce.hasPreScale)) return src;
    hostScale(w_.reduce.dtype, src, tmp_.data(), n, scale_);
    return tmp_.data();
  }
  void post(const Step& s, char* dst, size_t n) {
    if (stepAppliesPostOp(s.op, s.flags, w_.reduce.postDivisor))
      hostDivide(w_.reduce.dtype, dst, dst, n, w_.reduce.postDivisor);
  }
  void combine(const char* a, const char* b, char* dst, size_t n) {
    hostReduce(w_.reduce.dtype, w_.reduce.kind, a, b, dst, n);
  }

  // What a slot's size word holds: the step's tag (Step::tag) above its byte count, so that the
  // receiver checks both (a point-to-point message of another length fails even where one
  // slot's size matches).
  static uint64_t slotWord(const Step& s, size_t bytes) { return fifoSlotWord(s.tag, bytes); }

  // Waits for the next incoming slot from `peer`, whose size word must be `word`; returns its data.
  // With `gotBytes`, only the tag (the word's upper half) must match and *gotBytes is the size.
  sscResult_t recvSlot(int peer, uint64_t word, const char** data, ShmFifo* fifo,
                       size_t* gotBytes = nullptr) {
    *fifo = t_.recvFifo(peer, channel_);
    ShmFifoCtrl* c = fifo->ctrl;
    uint64_t head = c->head.load(std::memory_order_relaxed);
    SSC_CHECK(shmWait(
        &c->tailWord, [&] { return c->tail.load(std::memory_order_acquire) > head; }, abort_,
        "receive from", peer, t_.waits()));
    int slot = static_cast<int>(head % t_.slots());
    const uint64_t posted = c->slotBytes[slot];
    if (gotBytes != nullptr && fifoSlotTag(posted) == fifoSlotTag(word))
      *gotBytes = fifoSlotBytes(posted);
    else if (posted != word)
      return fail(sscInvalidUsage,
                  "rank {} sent {} bytes (tag {:#x}) to rank {}, which expected {} "
                  "(tag {:#x}): the ranks called with different counts, types or peers (or a send "
                  "and its receive of different sizes, or groups that do not pair up)",
                  peer, fifoSlotBytes(posted), fifoSlotTag(posted), t_.rank(), fifoSlotBytes(word),
                  fifoSlotTag(word));
    *data = fifo->data + slot * t_.slotBytes();
    return sscSuccess;
  }
  void recvDone(const ShmFifo& fifo) {
    fifo.ctrl->head.fetch_add(1, std::memory_order_release);
    shmNotify(&fifo.ctrl->headWord);
  }
  // Waits for a free slot towards `peer`; returns where to write.
  sscResult_t sendSlot(int peer, char** data, ShmFifo* fifo) {
    *fifo = t_.sendFifo(peer, channel_);
    ShmFifoCtrl* c = fifo->ctrl;
    uint64_t tail = c->tail.load(std::memory_order_relaxed);
    const uint64_t slots = static_cast<uint64_t>(t_.slots());
    SSC_CHECK(shmWait(
        &c->headWord, [&] { return tail - c->head.load(std::memory_order_acquire) < slots; },
        abort_, "send to", peer, t_.waits()));
    *data = fifo->data + (tail % slots) * t_.slotBytes();
    return sscSuccess;
  }
  void sendDone(const ShmFifo& fifo, uint64_t word) {
    ShmFifoCtrl* c = fifo.ctrl;
    uint64_t tail = c->tail.load(std::memory_order_relaxed);
    c->slotBytes[tail % t_.slots()] = word;
    c->tail.store(tail + 1, std::memory_order_release);
    shmNotify(&c->tailWord);
  }

  // Trades the contents of two ranges of `bytes`, a slot at a time through tmp_.
  void swapRanges(char* a, char* b, size_t bytes) {
    for (size_t done = 0; done < bytes; done += tmp_.size()) {
      const size_t m = std::min(tmp_.size(), bytes - done);
      std::memcpy(tmp_.data(), a + done, m);
      std::memcpy(a + done, b + done, m);
      std::memcpy(b + done, tmp_.data(), m);
    }
  }

  char* peerPtr(int q, uint16_t buf, uint64_t off) const {
    return static_cast<char*>(w_.peerBuffers[buf][q]) + off * esize_;
  }

  // Every rank publishes (epoch, call hash) and waits for all others to reach the same epoch;
  // a peer at the same epoch with another hash called with other arguments.
  sscResult_t barrier() {
    const uint32_t epoch = t_.nextBarrierEpoch();
    const uint64_t state = (static_cast<uint64_t>(epoch) << 32) | w_.callHash;
    ShmBarrierCtrl* own = t_.barrier(t_.rank());
    own->state.store(state, std::memory_order_release);
    shmNotify(&own->word);
    for (int q = 0; q < t_.nranks(); ++q) {
      if (q == t_.rank()) continue;
      ShmBarrierCtrl* peer = t_.barrier(q);
      uint64_t seen = 0;
      SSC_CHECK(shmWait(
          &peer->word,
          [&] {
            seen = peer->state.load(std::memory_order_acquire);
            return static_cast<int32_t>(static_cast<uint32_t>(seen >> 32) - epoch) >= 0;
          },
          abort_, "meet at a barrier with", q, t_.waits()));
      if (static_cast<uint32_t>(seen >> 32) == epoch && static_cast<uint32_t>(seen) != w_.callHash)
        return fail(sscInvalidUsage,
                    "rank {} reached this zero-copy collective with different "
                    "arguments (count, type, op, root or buffer offsets) than rank {}",
                    q, t_.rank());
    }
    return sscSuccess;
  }

  // dst = (+) over ranks in order of pre(src@q) (or pre(src@recvPeer) alone); the result is
  // stored to this rank's dst, to dst@sendPeer, or (toAll) to every rank's dst.
  sscResult_t peerReduce(const Step& s, bool toAll) {
    const int n = t_.nranks();
    const int first = s.recvPeer >= 0 ? s.recvPeer : 0, last = s.recvPeer >= 0 ? s.recvPeer : n - 1;
    std::vector<char> acc(t_.slotBytes());
    for (uint64_t done = 0; done < s.count; done += slotElems_) {
      const size_t m = static_cast<size_t>(stepChunkElems(s.count, done, slotElems_));
      for (int q = first; q <= last; ++q) {
        const char* v = pre(s, peerPtr(q, s.srcBuf, s.srcOff + done), m);
        if (q == first)
          std::memcpy(acc.data(), v, m * esize_);
        else
          combine(acc.data(), v, acc.data(), m);
      }
      post(s, acc.data(), m);
      if (!toAll) {
        char* dst = s.sendPeer >= 0 ? peerPtr(s.sendPeer, s.dstBuf, s.dstOff + done)
                                    : bufPtr(s.dstBuf, s.dstOff + done);
        std::memcpy(dst, acc.data(), m * esize_);
      } else {
        for (int q = 0; q < n; ++q)
          std::memcpy(peerPtr(q, s.dstBuf, s.dstOff + done), acc.data(), m * esize_);
      }
    }
    return sscSuccess;
  }

 public:
  // Entries of an offer slot (the same on every rank: the slot size is the communicator's).
  static size_t offerCapacity(size_t slotBytes) {
    return static_cast<size_t>(p2pOfferCapacity(slotBytes));
  }

 private:
  // This rank's operations with `peer` in one direction, in posting order.
  std::vector<size_t> opsWith(int peer, bool sends) const {
    std::vector<size_t> out;
    for (size_t i = 0; i < w_.p2p->ops.size(); ++i)
      if (w_.p2p->ops[i].peer == peer && w_.p2p->ops[i].isSend == sends) out.push_back(i);
    return out;
  }
  char* userBuffer(size_t op) const { return static_cast<char*>(w_.buffers[kBufUserBase + op]); }

  // One-copy point-to-point (plan.h); the slots' formats are p2p_wire.h's.
  sscResult_t p2pOffer(const Step& s) {
    const std::vector<size_t> recvs = opsWith(s.sendPeer, false);
    const size_t listed = std::min(recvs.size(), offerCapacity(t_.slotBytes()));
    char* out = nullptr;
    ShmFifo sf;
    SSC_CHECK(sendSlot(s.sendPeer, &out, &sf));
    const P2pOfferHeader h{static_cast<uint32_t>(recvs.size()), static_cast<uint32_t>(listed)};
    std::memcpy(out, &h, sizeof(h));
    for (size_t k = 0; k < listed; ++k) {
      const size_t i = recvs[k];
      const P2pOfferEntry e{w_.p2p->offer[i], w_.p2p->ops[i].bytes, w_.p2p->swap[i]};
      std::memcpy(out + p2pOfferEntryOffset(k), &e, sizeof(e));
    }
    sendDone(sf, slotWord(s, p2pOfferBytes(listed)));
    return sscSuccess;
  }

  sscResult_t p2pPush(const Step& s) {
    const int p = s.recvPeer, me = t_.rank();
    const char* in = nullptr;
    ShmFifo rf;
    size_t got = 0;
    SSC_CHECK(recvSlot(p, fifoSlotWord(kP2pOfferTag, 0), &in, &rf, &got));
    P2pOfferHeader h{};
    std::memcpy(&h, in, std::min(got, sizeof(h)));
    if (!p2pOfferSizeOk(got, h.listed))
      return SSC_INTERNAL("one-copy offer of {} bytes from rank {}", got, p);
    std::vector<P2pOfferEntry> offers(h.listed);
    std::memcpy(offers.data(), in + p2pOfferEntryOffset(0), h.listed * sizeof(P2pOfferEntry));
    recvDone(rf);
    const std::vector<size_t> sends = opsWith(p, true), recvs = opsWith(p, false);
    const std::vector<P2pOp>& ops = w_.p2p->ops;
    P2pDone d = p2pCheckCounts(sends.size(), h.count);
    for (size_t k = 0; k < offers.size() && d.status == kP2pDoneOk; ++k)
      d = p2pCheckSize(static_cast<uint32_t>(k), ops[sends[k]].bytes, offers[k].bytes);
    const size_t capacity = offerCapacity(t_.slotBytes());
    for (size_t k = 0; k < offers.size() && d.status == kP2pDoneOk; ++k) {
      const P2pOfferEntry& e = offers[k];
      if (e.address == 0) continue;
      const size_t i = sends[k];
      const uint64_t n = ops[i].bytes;
      char* peerBuf = reinterpret_cast<char*>(e.address);
      if (e.swap == 0) {
        std::memcpy(peerBuf, userBuffer(i), n);
        (*direct_)[i] = 1;
        continue;
      }
      // An exchange runs only when this rank offered its side too (its k-th receive from p is
      // its k-th send's buffer); then each rank swaps its half, else both take the FIFOs.
      if (!p2pExchangeRuns(k < recvs.size(), k, capacity,
                           k < recvs.size() && w_.p2p->swap[recvs[k]] != 0))
        continue;
      uint64_t lo = 0, hi = 0;
      p2pSwapRange(me, p, n, &lo, &hi);
      swapRanges(userBuffer(i) + lo, peerBuf + lo, hi - lo);
      (*direct_)[i] = (*direct_)[recvs[k]] = 1;
    }
    char* out = nullptr;
    ShmFifo sf;
    SSC_CHECK(sendSlot(p, &out, &sf));
    std::memcpy(out, &d, sizeof(d));
    sendDone(sf, slotWord(s, sizeof(d)));
    return d.status == kP2pDoneOk ? sscSuccess : mismatch(me, p, d);
  }

  sscResult_t p2pWait(const Step& s) {
    const char* in = nullptr;
    ShmFifo rf;
    SSC_CHECK(recvSlot(s.recvPeer, slotWord(s, sizeof(P2pDone)), &in, &rf));
    P2pDone d{};
    std::memcpy(&d, in, sizeof(d));
    recvDone(rf);
    return d.status == kP2pDoneOk ? sscSuccess : mismatch(s.recvPeer, t_.rank(), d);
  }

  // The error both ranks of a pair whose calls do not match report, alike.
  static sscResult_t mismatch(int sender, int receiver, const P2pDone& d) {
    if (d.status == kP2pDoneCounts)
      return fail(sscInvalidUsage,
                  "rank {} posted {} send(s) to rank {} in this group, but rank {} "
                  "posted {} receive(s) from rank {} in its matching group",
                  sender, d.sent, receiver, receiver, d.expected, sender);
    return fail(sscInvalidUsage,
                "rank {} sends {} bytes to rank {}, whose matching receive "
                "(message {} of the pair in this group) is {} bytes: counts or types differ",
                sender, d.sent, receiver, d.index + 1, d.expected);
  }

  // A FIFO step of a message that went one-copy: both ends skip it.
  bool skipped(const Step& s) const {
    if (direct_ == nullptr || direct_->empty()) return false;
    const int i = stepP2pOp(s.op, s.srcBuf, s.dstBuf);
    return i >= 0 && static_cast<size_t>(i) < direct_->size() && (*direct_)[i] != 0;
  }

  sscResult_t runStep(const Step& s) {
    if (skipped(s)) return sscSuccess;
    if (isP2pHandshakeStep(s.op) && w_.p2p == nullptr)
      return SSC_INTERNAL("host executor: a one-copy step without the group's operations");
    switch (s.op) {
      case StepOp::kP2pOffer: return p2pOffer(s);
      case StepOp::kP2pPush: return p2pPush(s);
      case StepOp::kP2pWait: return p2pWait(s);
      case StepOp::kBarrier: return barrier();
      case StepOp::kPeerReduce: return peerReduce(s, false);
      case StepOp::kPeerReduceBcast: return peerReduce(s, true);
      case StepOp::kPeerPush:
        for (int q = 0; q < t_.nranks(); ++q)
          std::memmove(peerPtr(q, s.dstBuf, s.dstOff), bufPtr(s.srcBuf, s.srcOff),
                       s.count * esize_);
        return sscSuccess;
      case StepOp::kPeerGather:
        for (int q = 0; q < t_.nranks(); ++q)
          std::memmove(bufPtr(s.dstBuf, peerBlockOff(s.dstOff, q, s.count)),
                       peerPtr(q, s.srcBuf, s.srcOff), s.count * esize_);
        return sscSuccess;
      case StepOp::kPeerSwap:
        for (int q = 0; q < t_.nranks(); ++q) {
          if (q == t_.rank()) continue;
          uint64_t lo = 0, hi = 0;
          peerSwapHalf(t_.rank(), q, s.count, &lo, &hi);
          swapRanges(bufPtr(s.srcBuf, peerBlockOff(s.srcOff, q, s.count) + lo),
                     peerPtr(q, s.srcBuf, peerBlockOff(s.srcOff, t_.rank(), s.count) + lo),
                     (hi - lo) * esize_);
        }
        return sscSuccess;
      default: break;
    }
    // FIFO and local steps, a slot's worth at a time (step_semantics.h: the chunks, and which
    // buffers each op reads and writes).
    for (uint64_t done = 0; done < s.count; done += slotElems_) {
      const size_t n = static_cast<size_t>(stepChunkElems(s.count, done, slotElems_));
      const size_t bytes = n * esize_;
      const char* src = nullptr;
      char* dst = nullptr;
      if (stepReadsSrc(s.op)) src = bufPtr(s.srcBuf, s.srcOff + done);
      if (stepWritesDst(s.op)) dst = bufPtr(s.dstBuf, s.dstOff + done);
      const char* in = nullptr;
      char* out = nullptr;
      ShmFifo rf, sf;
      switch (s.op) {
        case StepOp::kCopy: {
          const char* v = pre(s, src, n);
          if (v != dst) std::memmove(dst, v, bytes);
          post(s, dst, n);
          break;
        }
        case StepOp::kReduce: combine(dst, pre(s, src, n), dst, n); break;
        case StepOp::kSend:
          SSC_CHECK(sendSlot(s.sendPeer, &out, &sf));
          std::memcpy(out, pre(s, src, n), bytes);
          sendDone(sf, slotWord(s, bytes));
          break;
        case StepOp::kRecv:
          SSC_CHECK(recvSlot(s.recvPeer, slotWord(s, bytes), &in, &rf));
          std::memcpy(dst, in, bytes);
          recvDone(rf);
          break;
        case StepOp::kRecvReduceSend:
          SSC_CHECK(recvSlot(s.recvPeer, slotWord(s, bytes), &in, &rf));
          SSC_CHECK(sendSlot(s.sendPeer, &out, &sf));
          combine(in, pre(s, src, n), out, n);
          recvDone(rf);
          sendDone(sf, slotWord(s, bytes));
          break;
        case StepOp::kRecvReduceCopy:
          SSC_CHECK(recvSlot(s.recvPeer, slotWord(s, bytes), &in, &rf));
          combine(in, pre(s, src, n), dst, n);
          recvDone(rf);
          post(s, dst, n);
          break;
        case StepOp::kRecvReduceCopySend:
          SSC_CHECK(recvSlot(s.recvPeer, slotWord(s, bytes), &in, &rf));
          combine(in, pre(s, src, n), dst, n);
          recvDone(rf);
          post(s, dst, n);
          SSC_CHECK(sendSlot(s.sendPeer, &out, &sf));
          std::memcpy(out, dst, bytes);
          sendDone(sf, slotWord(s, bytes));
          break;
        case StepOp::kRecvCopySend:
          SSC_CHECK(recvSlot(s.recvPeer, slotWord(s, bytes), &in, &rf));
          SSC_CHECK(sendSlot(s.sendPeer, &out, &sf));
          std::memcpy(dst, in, bytes);
          std::memcpy(out, in, bytes);
          recvDone(rf);
          sendDone(sf, slotWord(s, bytes));
          break;
        default: return SSC_INTERNAL("host executor: step {} in the wrong place", stepOpName(s.op));
      }
    }
    return sscSuccess;
  }

  ShmTransport& t_;
  const Work& w_;
  int channel_;
  const std::atomic<bool>* abort_;
  char* scratch_;
  std::vector<uint8_t>* direct_;  // per point-to-point op: moved one-copy (its FIFO steps skip)
  size_t esize_;
  uint64_t slotElems_;
  std::vector<char> tmp_;
  Scalar scale_;
};

}  // namespace

sscResult_t runPlanOnHost(ShmTransport& transport, const Work& work,
                          const std::atomic<bool>* abort) {
  const RankPlan& plan = *work.plan;
  if (plan.channels.size() > static_cast<size_t>(transport.channels()))
    return SSC_INTERNAL("plan uses {} channels, transport has {}", plan.channels.size(),
                        transport.channels());
  std::vector<char> scratch(plan.scratchElems * work.elemBytes);
  // One-copy point-to-point: the receives this rank offered plainly are pushed by their senders
  // (or the pair's calls do not match, and both fail); exchanges are marked when their offers
  // meet (kP2pPush). Offers past an offer slot's capacity were not listed: the FIFOs.
  std::vector<uint8_t> direct;
  if (work.p2p != nullptr) {
    const Work::P2pDirect& p2p = *work.p2p;
    direct.assign(p2p.ops.size(), 0);
    const size_t capacity = ChannelRunner::offerCapacity(transport.slotBytes());
    std::vector<size_t> index(static_cast<size_t>(transport.nranks()), 0);  // receives per peer
    for (size_t i = 0; i < p2p.ops.size(); ++i) {
      if (p2p.ops[i].isSend) continue;
      const size_t k = index[p2p.ops[i].peer]++;
      direct[i] = p2pPlainOffer(p2p.offer[i], p2p.swap[i] != 0, k, capacity);
    }
  }
  // Channels are independent rings/groups, so running them one after the other cannot deadlock:
  // every rank finishes channel c before c+1, and channel c only waits on channel c of peers
  // (the one-copy handshake, on channel 0, only on the handshakes of channel 0).
  for (size_t c = 0; c < plan.channels.size(); ++c) {
    ChannelRunner runner(transport, work, static_cast<int>(c), abort, scratch.data(), &direct);
    SSC_CHECK(runner.run(plan.channels[c].steps));
  }
  return sscSuccess;
}

}  // namespace ssc
