// SPDX-License-Identifier: MIT
#include "src/collectives/plan.h"

#include <fmt/format.h>

#include <array>
#include <map>
#include <tuple>

namespace ssc {

const char* collName(CollKind kind) {
  switch (kind) {
    case CollKind::kAllReduce: return "allreduce";
    case CollKind::kReduceScatter: return "reducescatter";
    case CollKind::kAllGather: return "allgather";
    case CollKind::kBroadcast: return "broadcast";
    case CollKind::kReduce: return "reduce";
    case CollKind::kAllToAll: return "alltoall";
    case CollKind::kSendRecv: return "sendrecv";
  }
  return "?";
}

const char* algoName(Algo algo) {
  switch (algo) {
    case Algo::kRing: return "ring";
    case Algo::kBidirRing: return "bidir_ring";
    case Algo::kDirect: return "direct";
    case Algo::kHierarchical: return "hierarchical";
    case Algo::kSymmetric: return "symmetric";
    case Algo::kAuto: return "auto";
  }
  return "?";
}

const char* stepOpName(StepOp op) {
  switch (op) {
    case StepOp::kCopy: return "copy";
    case StepOp::kReduce: return "reduce";
    case StepOp::kSend: return "send";
    case StepOp::kRecv: return "recv";
    case StepOp::kRecvReduceSend: return "recvReduceSend";
    case StepOp::kRecvReduceCopy: return "recvReduceCopy";
    case StepOp::kRecvReduceCopySend: return "recvReduceCopySend";
    case StepOp::kRecvCopySend: return "recvCopySend";
    case StepOp::kBarrier: return "barrier";
    case StepOp::kPeerReduce: return "peerReduce";
    case StepOp::kPeerReduceBcast: return "peerReduceBcast";
    case StepOp::kPeerPush: return "peerPush";
    case StepOp::kPeerGather: return "peerGather";
    case StepOp::kPeerSwap: return "peerSwap";
    case StepOp::kP2pOffer: return "p2pOffer";
    case StepOp::kP2pPush: return "p2pPush";
    case StepOp::kP2pWait: return "p2pWait";
  }
  return "?";
}

namespace {

bool isP2pHandshake(StepOp op) {
  return op == StepOp::kP2pOffer || op == StepOp::kP2pPush || op == StepOp::kP2pWait;
}
bool readsSrc(StepOp op) {
  return op != StepOp::kRecv && op != StepOp::kRecvCopySend && op != StepOp::kBarrier &&
         !isP2pHandshake(op);
}
bool writesDst(StepOp op) {
  return op == StepOp::kCopy || op == StepOp::kReduce || op == StepOp::kRecv ||
         op == StepOp::kRecvReduceCopy || op == StepOp::kRecvReduceCopySend ||
         op == StepOp::kRecvCopySend || isPeerStep(op);
}
bool sends(StepOp op) {
  return op == StepOp::kSend || op == StepOp::kRecvReduceSend ||
         op == StepOp::kRecvReduceCopySend || op == StepOp::kRecvCopySend;
}
bool receives(StepOp op) {
  return op == StepOp::kRecv || op == StepOp::kRecvReduceSend || op == StepOp::kRecvReduceCopy ||
         op == StepOp::kRecvReduceCopySend || op == StepOp::kRecvCopySend;
}

std::string bufName(uint16_t b) {
  switch (b) {
    case kBufIn: return "in";
    case kBufOut: return "out";
    case kBufScratch: return "scratch";
    default: return fmt::format("user{}", b - kBufUserBase);
  }
}

}  // namespace

std::string formatPlan(const RankPlan& plan) {
  std::string out = fmt::format("plan {} {} rank {}/{} scratch {} elements{}\n",
                                collName(plan.coll), algoName(plan.algo), plan.rank, plan.nranks,
                                plan.scratchElems, plan.wideGrid ? " wide grid" : "");
  for (size_t c = 0; c < plan.channels.size(); ++c) {
    out += fmt::format("  channel {}: {} steps\n", c, plan.channels[c].steps.size());
    size_t i = 0;
    for (const Step& s : plan.channels[c].steps) {
      out += fmt::format("    {:4} {:<18}", i++, stepOpName(s.op));
      const bool peerOp =
          s.op == StepOp::kPeerReduce || s.op == StepOp::kPeerReduceBcast || isP2pHandshake(s.op);
      if (receives(s.op) || (peerOp && s.recvPeer >= 0)) out += fmt::format(" from {}", s.recvPeer);
      if (sends(s.op) || (peerOp && s.sendPeer >= 0)) out += fmt::format(" to {}", s.sendPeer);
      if (readsSrc(s.op)) out += fmt::format(" src {}[{}]", bufName(s.srcBuf), s.srcOff);
      if (writesDst(s.op)) out += fmt::format(" dst {}[{}]", bufName(s.dstBuf), s.dstOff);
      out += fmt::format(" n {}", s.count);
      if (s.flags & kFlagPreOp) out += " +pre";
      if (s.flags & kFlagPostOp) out += " +post";
      if (s.tag != 0) out += fmt::format(" tag {:#x}", s.tag);
      out += "\n";
    }
  }
  return out;
}

uint32_t p2pTag(uint64_t bytes) {
  // splitmix64's finalizer: nearby lengths get unrelated tags.
  uint64_t z = bytes + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  const uint32_t t = static_cast<uint32_t>(z ^ (z >> 32));
  return t != 0 ? t : 1;
}

std::string validatePlans(const std::vector<RankPlan>& plans) {
  const int n = static_cast<int>(plans.size());
  // (sender, receiver, channel) -> (count, tag) of each step in order
  std::map<std::tuple<int, int, int>, std::vector<std::pair<uint64_t, uint32_t>>> sent, received;
  // One-copy handshake: (receiver, sender) -> offers made, offers taken, answers awaited.
  std::map<std::pair<int, int>, std::array<int, 3>> handshakes;
  for (int r = 0; r < n; ++r) {
    const RankPlan& p = plans[r];
    for (size_t c = 0; c < p.channels.size(); ++c) {
      for (const Step& s : p.channels[c].steps) {
        auto inBounds = [&](uint16_t buf, uint64_t off, uint64_t count) {
          return buf < p.bufElems.size() && off + count <= p.bufElems[buf];
        };
        if (isP2pHandshake(s.op)) {
          const int peer = s.op == StepOp::kP2pOffer ? s.sendPeer : s.recvPeer;
          if (c != 0 || peer < 0 || peer >= n || peer == r)
            return fmt::format("rank {} ch {}: {} with peer {}", r, c, stepOpName(s.op), peer);
          if (s.op == StepOp::kP2pOffer) ++handshakes[{r, peer}][0];
          if (s.op == StepOp::kP2pPush) ++handshakes[{peer, r}][1];
          if (s.op == StepOp::kP2pWait) ++handshakes[{r, peer}][2];
          continue;
        }
        // A gather writes one block of `count` per rank; a swap reads and writes one per rank.
        const bool perRank = s.op == StepOp::kPeerGather || s.op == StepOp::kPeerSwap;
        const uint64_t written = perRank ? s.count * static_cast<uint64_t>(n) : s.count;
        const uint64_t read = s.op == StepOp::kPeerSwap ? written : s.count;
        if (s.op == StepOp::kPeerSwap && s.srcBuf != s.dstBuf)
          return fmt::format("rank {} ch {}: peerSwap between two buffers", r, c);
        if (readsSrc(s.op) && !inBounds(s.srcBuf, s.srcOff, read))
          return fmt::format("rank {} ch {}: {} reads {}[{}..+{}) past its end", r, c,
                             stepOpName(s.op), bufName(s.srcBuf), s.srcOff, read);
        if (writesDst(s.op) && !inBounds(s.dstBuf, s.dstOff, written))
          return fmt::format("rank {} ch {}: {} writes {}[{}..+{}) past its end", r, c,
                             stepOpName(s.op), bufName(s.dstBuf), s.dstOff, written);
        // Peer steps name a single source or destination rank, or -1 for all / this rank.
        if (s.op == StepOp::kPeerReduce || s.op == StepOp::kPeerReduceBcast) {
          if (s.recvPeer < -1 || s.recvPeer >= n || s.sendPeer < -1 || s.sendPeer >= n ||
              (s.op == StepOp::kPeerReduceBcast && s.sendPeer != -1))
            return fmt::format("rank {} ch {}: {} with source {} and destination {}", r, c,
                               stepOpName(s.op), s.recvPeer, s.sendPeer);
          continue;
        }
        if (sends(s.op)) {
          if (s.sendPeer < 0 || s.sendPeer >= n || s.sendPeer == r)
            return fmt::format("rank {} ch {}: bad send peer {}", r, c, s.sendPeer);
          sent[{r, s.sendPeer, static_cast<int>(c)}].push_back({s.count, s.tag});
        }
        if (receives(s.op)) {
          if (s.recvPeer < 0 || s.recvPeer >= n || s.recvPeer == r)
            return fmt::format("rank {} ch {}: bad receive peer {}", r, c, s.recvPeer);
          received[{s.recvPeer, r, static_cast<int>(c)}].push_back({s.count, s.tag});
        }
      }
    }
  }
  for (const auto& [key, counts] : sent) {
    auto it = received.find(key);
    if (it == received.end() || it->second != counts)
      return fmt::format(
          "connection {}->{} ch {}: {} send(s) do not match {} receive(s) (count or tag)",
          std::get<0>(key), std::get<1>(key), std::get<2>(key), counts.size(),
          it == received.end() ? 0 : it->second.size());
  }
  for (const auto& [key, k] : handshakes)
    if (k[0] != 1 || k[1] != 1 || k[2] != 1)
      return fmt::format("one-copy pair {}<-{}: {} offer(s), {} push(es), {} wait(s) (one each)",
                         key.first, key.second, k[0], k[1], k[2]);
  for (const auto& [key, counts] : received)
    if (!sent.count(key))
      return fmt::format("connection {}->{} ch {}: {} receive(s) with no send", std::get<0>(key),
                         std::get<1>(key), std::get<2>(key), counts.size());
  return "";
}

}  // namespace ssc
