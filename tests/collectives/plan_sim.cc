// SPDX-License-Identifier: MIT
#include "tests/collectives/plan_sim.h"

#include <algorithm>
#include <deque>
#include <fmt/format.h>
#include <map>
#include <tuple>

namespace ssc::test {

namespace {

using Piece = std::vector<SymElem>;
// A posted slot: its data and the sender's step tag (Step::tag), which the receiver checks as the
// executors do.
struct Slot {
  uint32_t tag = 0;
  Piece data;
};

struct RankState {
  size_t channel = 0;
  size_t step = 0;
  uint64_t done = 0;  // elements of the current step already processed
  int barriers = 0;   // barriers this rank has entered
};

bool isRecv(StepOp op) {
  return op == StepOp::kRecv || op == StepOp::kRecvReduceSend || op == StepOp::kRecvReduceCopy ||
         op == StepOp::kRecvReduceCopySend || op == StepOp::kRecvCopySend;
}
bool isSend(StepOp op) {
  return op == StepOp::kSend || op == StepOp::kRecvReduceSend ||
         op == StepOp::kRecvReduceCopySend || op == StepOp::kRecvCopySend;
}

// In place (RankPlan::inPlace), kBufIn and kBufOut are one memory: both live in one vector (kept
// in the kBufOut slot while the plan runs), element e of kBufIn at inBase + e and element e of
// kBufOut at outBase + e, with inBase - outBase = inAliasShift. A write through either name is
// then seen through the other, so a plan that overwrites input it has yet to read is caught.
struct Alias {
  bool on = false;
  uint64_t inBase = 0, outBase = 0, inElems = 0, outElems = 0;
};

std::string combine(const SymElem& a, const SymElem& b, SymElem* out) {
  if (a.tag != b.tag) return fmt::format("reduces element {} with element {}", a.tag, b.tag);
  if (a.ranks & b.ranks) return fmt::format("element {} reduces a contribution twice", a.tag);
  *out = SymElem{a.tag, a.ranks | b.ranks, a.pre | b.pre, a.post + b.post};
  return "";
}

}  // namespace

SimResult simulatePlans(const std::vector<RankPlan>& plans,
                        std::vector<std::vector<std::vector<SymElem>>> bufs, uint64_t slotElems,
                        int slots) {
  SimResult res;
  const int n = static_cast<int>(plans.size());
  std::map<std::tuple<int, int, size_t>, std::deque<Slot>> fifo;  // (from, to, channel)
  std::vector<RankState> st(n);
  std::vector<Alias> alias(n);
  for (int r = 0; r < n; ++r) {
    if (!plans[r].inPlace || bufs[r].size() <= kBufOut) continue;
    Alias& a = alias[r];
    a.on = true;
    const int64_t shift = plans[r].inAliasShift;
    a.inBase = shift > 0 ? static_cast<uint64_t>(shift) : 0;
    a.outBase = shift < 0 ? static_cast<uint64_t>(-shift) : 0;
    a.inElems = bufs[r][kBufIn].size();
    a.outElems = bufs[r][kBufOut].size();
    // The caller's input content is what the shared memory holds where the input lies.
    std::vector<SymElem> mem(std::max(a.inBase + a.inElems, a.outBase + a.outElems));
    std::copy(bufs[r][kBufOut].begin(), bufs[r][kBufOut].end(), mem.begin() + a.outBase);
    std::copy(bufs[r][kBufIn].begin(), bufs[r][kBufIn].end(), mem.begin() + a.inBase);
    bufs[r][kBufOut] = std::move(mem);
    bufs[r][kBufIn].clear();
  }
  // Element `off` of buffer `buf` of rank r, through the alias when the plan runs in place.
  auto cell = [&](int r, uint16_t buf, uint64_t off) -> SymElem& {
    const Alias& a = alias[r];
    if (a.on && buf == kBufIn) return bufs[r][kBufOut][a.inBase + off];
    if (a.on && buf == kBufOut) return bufs[r][kBufOut][a.outBase + off];
    return bufs[r][buf][off];
  };
  auto finished = [&](int r) { return st[r].channel >= plans[r].channels.size(); };
  auto normalize = [&](int r) {
    while (!finished(r) && st[r].step >= plans[r].channels[st[r].channel].steps.size()) {
      ++st[r].channel;
      st[r].step = 0;
    }
  };
  for (int r = 0; r < n; ++r) normalize(r);

  // Race detection for peer steps: per barrier interval, per memory cell, the thread that wrote
  // it and the threads that read it. A thread is (rank, step, element, source block).
  using Thread = std::tuple<int, size_t, uint64_t, int>;
  struct Access {
    bool written = false, read = false, manyReaders = false;
    Thread writer{}, reader{};
  };
  std::map<int, std::map<const SymElem*, Access>> intervals;
  auto touch = [&](int r, const SymElem& c, const Thread& t, bool write) -> std::string {
    Access& a = intervals[st[r].barriers][&c];
    const auto who = [](const Thread& x) {
      return fmt::format("rank {} step {} element {}", std::get<0>(x), std::get<1>(x),
                         std::get<2>(x));
    };
    if (a.written && a.writer != t)
      return fmt::format("race: {} {} an element {} wrote between the same barriers", who(t),
                         write ? "writes" : "reads", who(a.writer));
    if (write && a.read && (a.manyReaders || a.reader != t))
      return fmt::format("race: {} writes an element {} read between the same barriers", who(t),
                         who(a.manyReaders ? (a.reader == t ? Thread{} : a.reader) : a.reader));
    if (write) {
      a.written = true;
      a.writer = t;
    } else if (!a.read) {
      a.read = true;
      a.reader = t;
    } else if (a.reader != t) {
      a.manyReaders = true;
    }
    return "";
  };
  auto runPeerStep = [&](int r, const Step& s, size_t stepIdx) -> std::string {
    // Sources and destinations as plan.h defines them for each op.
    std::vector<int> srcRanks, dstRanks;
    const bool single = s.op == StepOp::kPeerReduce || s.op == StepOp::kPeerReduceBcast;
    for (int q = 0; q < n; ++q) {
      if (!single || s.recvPeer < 0 || s.recvPeer == q) srcRanks.push_back(q);
      const bool toAll = s.op == StepOp::kPeerReduceBcast || s.op == StepOp::kPeerPush;
      if (toAll || (s.op == StepOp::kPeerReduce && q == (s.sendPeer < 0 ? r : s.sendPeer)))
        dstRanks.push_back(q);
    }
    if (s.op == StepOp::kPeerSwap) {
      // Block q of this rank and block r of rank q trade their elements [lo, hi): one thread per
      // element reads and writes both cells.
      for (int q = 0; q < n; ++q) {
        if (q == r) continue;
        uint64_t lo = 0, hi = 0;
        peerSwapHalf(r, q, s.count, &lo, &hi);
        for (uint64_t k = lo; k < hi; ++k) {
          const Thread t{r, stepIdx, k, q};
          SymElem& a = cell(r, s.srcBuf, s.srcOff + static_cast<uint64_t>(q) * s.count + k);
          SymElem& b = cell(q, s.srcBuf, s.srcOff + static_cast<uint64_t>(r) * s.count + k);
          for (SymElem* c : {&a, &b})
            for (bool write : {false, true})
              if (std::string e = touch(r, *c, t, write); !e.empty()) return e;
          std::swap(a, b);
        }
      }
      return "";
    }
    for (uint64_t k = 0; k < s.count; ++k) {
      if (s.op == StepOp::kPeerGather) {
        for (int q = 0; q < n; ++q) {
          const Thread t{r, stepIdx, k, q};
          SymElem& from = cell(q, s.srcBuf, s.srcOff + k);
          if (std::string e = touch(r, from, t, false); !e.empty()) return e;
          const SymElem v = from;
          SymElem& to = cell(r, s.dstBuf, s.dstOff + static_cast<uint64_t>(q) * s.count + k);
          if (std::string e = touch(r, to, t, true); !e.empty()) return e;
          to = v;
        }
        continue;
      }
      const Thread t{r, stepIdx, k, 0};
      SymElem v;
      if (s.op == StepOp::kPeerPush) {
        SymElem& from = cell(r, s.srcBuf, s.srcOff + k);
        if (std::string e = touch(r, from, t, false); !e.empty()) return e;
        v = from;
      } else {
        bool first = true;
        for (int q : srcRanks) {
          SymElem& from = cell(q, s.srcBuf, s.srcOff + k);
          if (std::string e = touch(r, from, t, false); !e.empty()) return e;
          SymElem c = from;
          if (s.flags & kFlagPreOp) c.pre |= c.ranks;
          if (first) {
            v = c;
            first = false;
            continue;
          }
          if (std::string e = combine(v, c, &v); !e.empty()) return e;
        }
        if (s.flags & kFlagPostOp) ++v.post;
      }
      for (int q : dstRanks) {
        SymElem& to = cell(q, s.dstBuf, s.dstOff + k);
        if (std::string e = touch(r, to, t, true); !e.empty()) return e;
        to = v;
      }
    }
    return "";
  };

  for (;;) {
    bool progress = false, allDone = true;
    for (int r = 0; r < n; ++r) {
      if (finished(r)) continue;
      allDone = false;
      const Step& s = plans[r].channels[st[r].channel].steps[st[r].step];
      const size_t ch = st[r].channel;
      if (s.op == StepOp::kBarrier) {
        // Entering is progress; leaving waits until every rank has entered this barrier.
        if (st[r].done == 0) {
          ++st[r].barriers;
          st[r].done = 1;
          progress = true;
        }
        bool all = true;
        for (int q = 0; q < n; ++q) all = all && st[q].barriers >= st[r].barriers;
        if (!all) continue;
        st[r].done = 0;
        ++st[r].step;
        normalize(r);
        progress = true;
        continue;
      }
      if (isPeerStep(s.op)) {
        // Zero-copy steps touch peers' buffers directly; the barriers around them order them.
        // Within one barrier interval the GPU runs every rank's peer steps at once, element by
        // element on different threads, so the simulator checks that no memory cell is written
        // by one thread and read or written by another there (race), in place included.
        const std::string err = runPeerStep(r, s, st[r].step);
        if (!err.empty()) {
          res.error = fmt::format("rank {} {}: {}", r, stepOpName(s.op), err);
          return res;
        }
        ++st[r].step;
        normalize(r);
        progress = true;
        continue;
      }
      const uint64_t m = std::min(slotElems, s.count - st[r].done);
      auto* inQ = isRecv(s.op) ? &fifo[{s.recvPeer, r, ch}] : nullptr;
      auto* outQ = isSend(s.op) ? &fifo[{r, s.sendPeer, ch}] : nullptr;
      if (inQ && inQ->empty()) continue;                                 // waits for data
      if (outQ && outQ->size() >= static_cast<size_t>(slots)) continue;  // waits for credit
      Piece got;
      if (inQ) {
        Slot slot = std::move(inQ->front());
        inQ->pop_front();
        got = std::move(slot.data);
        if (got.size() != m) {
          res.error = fmt::format("rank {} expected {} elements from {} but got {}", r, m,
                                  s.recvPeer, got.size());
          return res;
        }
        if (slot.tag != s.tag) {
          res.error = fmt::format("rank {} expected tag {:#x} from {} but got {:#x}", r, s.tag,
                                  s.recvPeer, slot.tag);
          return res;
        }
      }
      auto src = [&](uint64_t k) {
        SymElem e = cell(r, s.srcBuf, s.srcOff + st[r].done + k);
        if (s.flags & kFlagPreOp) e.pre |= e.ranks;
        return e;
      };
      auto dstRef = [&](uint64_t k) -> SymElem& {
        return cell(r, s.dstBuf, s.dstOff + st[r].done + k);
      };
      Piece out(m);
      for (uint64_t k = 0; k < m; ++k) {
        SymElem v;
        std::string err;
        switch (s.op) {
          case StepOp::kCopy:
          case StepOp::kSend: v = src(k); break;
          case StepOp::kReduce: err = combine(dstRef(k), src(k), &v); break;
          case StepOp::kRecv:
          case StepOp::kRecvCopySend: v = got[k]; break;
          default: err = combine(got[k], src(k), &v); break;
        }
        if (!err.empty()) {
          res.error = fmt::format("rank {} ch {} step {} ({}): {}", r, ch, st[r].step,
                                  stepOpName(s.op), err);
          return res;
        }
        if (s.flags & kFlagPostOp) v.post += 1;
        out[k] = v;
        if (s.op != StepOp::kSend && s.op != StepOp::kRecvReduceSend) dstRef(k) = v;
      }
      if (outQ) outQ->push_back(Slot{s.tag, std::move(out)});
      progress = true;
      st[r].done += m;
      if (st[r].done >= s.count) {
        st[r].done = 0;
        ++st[r].step;
        normalize(r);
      }
    }
    if (allDone) break;
    if (!progress) {
      std::string where;
      for (int r = 0; r < n; ++r)
        if (!finished(r))
          where += fmt::format(" rank {} at ch {} step {};", r, st[r].channel, st[r].step);
      res.error = "deadlock:" + where;
      return res;
    }
  }
  for (const auto& [key, q] : fifo)
    if (!q.empty()) {
      res.error = fmt::format("{} unread piece(s) left on connection {}->{}", q.size(),
                              std::get<0>(key), std::get<1>(key));
      return res;
    }
  // Split the shared memory of in-place ranks back into the two views the caller expects.
  for (int r = 0; r < n; ++r) {
    const Alias& a = alias[r];
    if (!a.on) continue;
    const std::vector<SymElem> mem = std::move(bufs[r][kBufOut]);
    bufs[r][kBufIn].assign(mem.begin() + a.inBase, mem.begin() + a.inBase + a.inElems);
    bufs[r][kBufOut].assign(mem.begin() + a.outBase, mem.begin() + a.outBase + a.outElems);
  }
  res.buffers = std::move(bufs);
  return res;
}

}  // namespace ssc::test
