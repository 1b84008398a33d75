#include "src/device/host/host_executor.h"

#include <cstring>
#include <vector>

#include "src/core/errors.h"
#include "src/kernels/host/reduce.h"

namespace ssc {

namespace {

// Executes one channel's steps; holds the per-call state the steps share.
class ChannelRunner {
 public:
  ChannelRunner(ShmTransport& t, const Work& w, int channel, const std::atomic<bool>* abort,
                char* scratch)
      : t_(t), w_(w), channel_(channel), abort_(abort), scratch_(scratch),
        esize_(w.elemBytes), slotElems_(t.slotBytes() / w.elemBytes),
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
  const char* pre(const Step& s, const char* src, size_t n) {
    if (!(s.flags & kFlagPreOp) || !w_.reduce.hasPreScale) return src;
    hostScale(w_.reduce.dtype, src, tmp_.data(), n, scale_);
    return tmp_.data();
  }
  void post(const Step& s, char* dst, size_t n) {
    if ((s.flags & kFlagPostOp) && w_.reduce.postDivisor != 0)
      hostDivide(w_.reduce.dtype, dst, dst, n, w_.reduce.postDivisor);
  }
  void combine(const char* a, const char* b, char* dst, size_t n) {
    hostReduce(w_.reduce.dtype, w_.reduce.kind, a, b, dst, n);
  }

  // What a slot's size word holds: the step's tag (Step::tag) above its byte count, so that the
  // receiver checks both (a point-to-point message of another length fails even where one
  // slot's size matches). Slots never reach 4 GiB (the transport bounds them).
  static uint64_t slotWord(const Step& s, size_t bytes) {
    return (static_cast<uint64_t>(s.tag) << 32) | static_cast<uint64_t>(bytes);
  }

  // Waits for the next incoming slot from `peer`, whose size word must be `word`; returns its data.
  sscResult_t recvSlot(int peer, uint64_t word, const char** data, ShmFifo* fifo) {
    *fifo = t_.recvFifo(peer, channel_);
    ShmFifoCtrl* c = fifo->ctrl;
    uint64_t head = c->head.load(std::memory_order_relaxed);
    SSC_CHECK(shmWait(&c->tailWord, [&] { return c->tail.load(std::memory_order_acquire) > head; },
                      abort_, "receive from", peer));
    int slot = static_cast<int>(head % t_.slots());
    const uint64_t posted = c->slotBytes[slot];
    if (posted != word)
      return fail(sscInvalidUsage, "rank {} sent {} bytes (tag {:#x}) where {} (tag {:#x}) were "
                  "expected: the ranks called with different counts, types or peers (or a send "
                  "and its receive of different sizes)", peer, posted & 0xffffffffu, posted >> 32,
                  word & 0xffffffffu, word >> 32);
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
    SSC_CHECK(shmWait(&c->headWord,
                      [&] { return tail - c->head.load(std::memory_order_acquire) < slots; },
                      abort_, "send to", peer));
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
      SSC_CHECK(shmWait(&peer->word, [&] {
        seen = peer->state.load(std::memory_order_acquire);
        return static_cast<int32_t>(static_cast<uint32_t>(seen >> 32) - epoch) >= 0;
      }, abort_, "meet at a barrier with", q));
      if (static_cast<uint32_t>(seen >> 32) == epoch && static_cast<uint32_t>(seen) != w_.callHash)
        return fail(sscInvalidUsage, "rank {} reached this zero-copy collective with different "
                    "arguments (count, type, op, root or buffer offsets) than rank {}", q, t_.rank());
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
      const size_t m = static_cast<size_t>(std::min<uint64_t>(slotElems_, s.count - done));
      for (int q = first; q <= last; ++q) {
        const char* v = pre(s, peerPtr(q, s.srcBuf, s.srcOff + done), m);
        if (q == first) std::memcpy(acc.data(), v, m * esize_);
        else combine(acc.data(), v, acc.data(), m);
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

  sscResult_t runStep(const Step& s) {
    switch (s.op) {
      case StepOp::kBarrier: return barrier();
      case StepOp::kPeerReduce: return peerReduce(s, false);
      case StepOp::kPeerReduceBcast: return peerReduce(s, true);
      case StepOp::kPeerPush:
        for (int q = 0; q < t_.nranks(); ++q)
          std::memmove(peerPtr(q, s.dstBuf, s.dstOff), bufPtr(s.srcBuf, s.srcOff), s.count * esize_);
        return sscSuccess;
      case StepOp::kPeerGather:
        for (int q = 0; q < t_.nranks(); ++q)
          std::memmove(bufPtr(s.dstBuf, s.dstOff + static_cast<uint64_t>(q) * s.count),
                       peerPtr(q, s.srcBuf, s.srcOff), s.count * esize_);
        return sscSuccess;
      default:
        break;
    }
    for (uint64_t done = 0; done < s.count; done += slotElems_) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(slotElems_, s.count - done));
      const size_t bytes = n * esize_;
      const char* src = nullptr;
      char* dst = nullptr;
      if (s.op != StepOp::kRecv && s.op != StepOp::kRecvCopySend) src = bufPtr(s.srcBuf, s.srcOff + done);
      if (s.op != StepOp::kSend && s.op != StepOp::kRecvReduceSend) dst = bufPtr(s.dstBuf, s.dstOff + done);
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
        case StepOp::kReduce:
          combine(dst, pre(s, src, n), dst, n);
          break;
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
        default:
          return SSC_INTERNAL("host executor: step {} in the wrong place", stepOpName(s.op));
      }
    }
    return sscSuccess;
  }

  ShmTransport& t_;
  const Work& w_;
  int channel_;
  const std::atomic<bool>* abort_;
  char* scratch_;
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
  // Channels are independent rings/groups, so running them one after the other cannot deadlock:
  // every rank finishes channel c before c+1, and channel c only waits on channel c of peers.
  for (size_t c = 0; c < plan.channels.size(); ++c) {
    ChannelRunner runner(transport, work, static_cast<int>(c), abort, scratch.data());
    SSC_CHECK(runner.run(plan.channels[c].steps));
  }
  return sscSuccess;
}

}  // namespace ssc
