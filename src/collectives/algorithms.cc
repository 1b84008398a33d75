// SPDX-License-Identifier: MIT
#include "src/collectives/algorithms.h"

#include <algorithm>

#include "src/collectives/algorithms_internal.h"
#include "src/core/errors.h"

namespace ssc {

bool algoSupports(const Topology& topo, CollKind coll, Algo algo) {
  switch (algo) {
    case Algo::kDirect: return coll != CollKind::kSendRecv;
    case Algo::kRing:
    case Algo::kBidirRing: return coll != CollKind::kAllToAll && coll != CollKind::kSendRecv;
    case Algo::kHierarchical:
      return coll != CollKind::kAllToAll && coll != CollKind::kSendRecv && topo.uniformPartitions();
    case Algo::kSymmetric:
      // Also needs registered buffers: the caller checks (CollArgs::symmetric). Peers' memory
      // is mapped within a node only.
      return topo.nnodes == 1 && coll != CollKind::kSendRecv;
    default: return false;
  }
}

uint64_t collInputElems(const CollArgs& a, int nranks) {
  const bool perRank = a.coll == CollKind::kReduceScatter || a.coll == CollKind::kAllToAll;
  return a.count * (perRank ? static_cast<uint64_t>(nranks) : 1);
}

uint64_t collOutputElems(const CollArgs& a, int nranks) {
  const bool perRank = a.coll == CollKind::kAllGather || a.coll == CollKind::kAllToAll;
  return a.count * (perRank ? static_cast<uint64_t>(nranks) : 1);
}

sscResult_t buildCollPlan(const Topology& topo, int rank, const CollArgs& args, Algo algo,
                          const PlanParams& params, RankPlan* out) {
  const int nranks = topo.nranks();
  if (rank < 0 || rank >= nranks) return SSC_INTERNAL("plan for rank {} of {}", rank, nranks);
  if (params.chunkElems == 0) return SSC_INTERNAL("plan chunk of 0 elements");
  if (algo == Algo::kSymmetric && !args.symmetric)
    return fail(sscInvalidUsage,
                "algorithm symmetric needs buffers registered with "
                "sscCommRegister on every rank");
  if (!algoSupports(topo, args.coll, algo))
    return fail(sscInvalidUsage, "algorithm {} cannot run {} on topology '{}'", algoName(algo),
                collName(args.coll), topo.name);
  *out = RankPlan{};
  out->coll = args.coll;
  out->algo = algo;
  out->rank = rank;
  out->nranks = nranks;
  out->bufElems = {collInputElems(args, nranks), collOutputElems(args, nranks)};
  CallShape shape{topo, rank, nranks, args, params};
  switch (algo) {
    case Algo::kRing: buildRing(shape, false, out); break;
    case Algo::kBidirRing: buildRing(shape, true, out); break;
    case Algo::kDirect: buildDirect(shape, params.elemBytes, out); break;
    case Algo::kHierarchical: buildHierarchical(shape, out); break;
    case Algo::kSymmetric: buildSymmetric(shape, params, out); break;
    default: return SSC_INTERNAL("no generator for algorithm {}", algoName(algo));
  }
  out->bufElems.push_back(out->scratchElems);
  out->inPlace = args.inPlace;
  const int64_t blockShift = static_cast<int64_t>(rank) * static_cast<int64_t>(args.count);
  if (args.inPlace && args.coll == CollKind::kAllGather) out->inAliasShift = blockShift;
  if (args.inPlace && args.coll == CollKind::kReduceScatter) out->inAliasShift = -blockShift;
  return sscSuccess;
}

sscResult_t buildP2pPlan(int rank, int nranks, const std::vector<P2pOp>& ops,
                         const PlanParams& params, RankPlan* out,
                         const std::vector<uint8_t>& directPeers) {
  *out = RankPlan{};
  out->coll = CollKind::kSendRecv;
  out->algo = Algo::kDirect;
  out->rank = rank;
  out->nranks = nranks;
  out->bufElems = {0, 0, 0};
  out->channels.resize(static_cast<size_t>(std::max(1, params.maxChannels)));
  const uint64_t chunk = params.chunkElems;
  for (const auto& op : ops) {
    if (op.peer < 0 || op.peer >= nranks)
      return fail(sscInvalidArgument, "peer {} out of range [0, {})", op.peer, nranks);
    out->bufElems.push_back(op.bytes);
  }
  // A send to self pairs with the receive from self in posting order: both become local copies.
  std::vector<size_t> selfSends, selfRecvs;
  for (size_t i = 0; i < ops.size(); ++i)
    if (ops[i].peer == rank) (ops[i].isSend ? selfSends : selfRecvs).push_back(i);
  if (selfSends.size() != selfRecvs.size())
    return fail(sscInvalidUsage, "group has {} send(s) to self but {} receive(s) from self",
                selfSends.size(), selfRecvs.size());
  for (size_t k = 0; k < selfSends.size(); ++k)
    if (ops[selfSends[k]].bytes != ops[selfRecvs[k]].bytes)
      return fail(sscInvalidUsage, "send to self of {} bytes matched with a receive of {} bytes",
                  ops[selfSends[k]].bytes, ops[selfRecvs[k]].bytes);
  // One-copy handshakes (plan.h) with the peers that have one, on channel 0 ahead of every FIFO
  // step: all offers, then all pushes, then all waits. An offer waits on nothing but a FIFO slot
  // (the pair's only one in that direction so far), a push only on its peer's offer, a wait only
  // on its peer's push, so the three rounds complete on every rank whatever the order of peers,
  // and the FIFO steps after them are those of the plan without handshakes, less the skipped
  // messages (the same on both ends).
  {
    std::vector<uint8_t> sendsTo(static_cast<size_t>(nranks), 0),
        recvsFrom(static_cast<size_t>(nranks), 0);
    for (const P2pOp& op : ops)
      if (op.peer != rank && static_cast<size_t>(op.peer) < directPeers.size() &&
          directPeers[op.peer])
        (op.isSend ? sendsTo : recvsFrom)[op.peer] = 1;
    std::vector<Step>& steps = out->channels[0].steps;
    const auto handshake = [&](StepOp op, int recvPeer, int sendPeer) {
      steps.push_back(Step{op, kFlagNone, kBufIn, kBufIn, recvPeer, sendPeer, 0, 0, 0,
                           op == StepOp::kP2pOffer ? kP2pOfferTag : kP2pDoneTag});
    };
    for (int p = 0; p < nranks; ++p)
      if (recvsFrom[p]) handshake(StepOp::kP2pOffer, -1, p);
    for (int p = 0; p < nranks; ++p)
      if (sendsTo[p]) handshake(StepOp::kP2pPush, p, -1);
    for (int p = 0; p < nranks; ++p)
      if (recvsFrom[p]) handshake(StepOp::kP2pWait, p, -1);
  }
  // The sends to one peer form one byte stream (posting order), and so do the receives from
  // one peer; both sides cut their streams at the same op and chunk boundaries, so the steps and
  // their slot sizes match. A stream of at least params.p2pSplitBytes is cut into one contiguous
  // part per channel (at 16-byte multiples, so the vector path stays aligned): a channel is a block
  // group of its own with its own connections, so parts move in parallel (one channel moved
  // 8 GB/s on the H200). The cut depends only on the stream's length, which both ends know.
  // Within a channel, round c carries bytes [c, c + 1) x chunk of every part: first every
  // part's sends, then its receives. A round puts at most half a FIFO on each connection, so
  // the sends of round c never wait on receives of round c (see plan.h), however many ops of the
  // group share a peer.
  struct Stream {
    bool isSend;
    int peer;
    std::vector<size_t> ops;  // in posting order
    uint64_t bytes = 0;
  };
  std::vector<Stream> streams;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].peer == rank) continue;
    auto it = std::find_if(streams.begin(), streams.end(), [&](const Stream& st) {
      return st.isSend == ops[i].isSend && st.peer == ops[i].peer;
    });
    if (it == streams.end())
      it = streams.insert(streams.end(), Stream{ops[i].isSend, ops[i].peer, {}, 0});
    it->ops.push_back(i);
    it->bytes += ops[i].bytes;
  }
  const int channels = std::max(1, params.maxChannels);
  // Part h of a stream: bytes [partBegin(h), partBegin(h + 1)).
  const auto parts = [&](const Stream& st) {
    return st.bytes >= params.p2pSplitBytes ? static_cast<uint64_t>(channels) : uint64_t{1};
  };
  const auto partBegin = [&](const Stream& st, uint64_t h) {
    const uint64_t n = parts(st);
    return h >= n ? st.bytes : 16 * splitOffset(st.bytes / 16, n, h);
  };
  for (int h = 0; h < channels; ++h) {
    uint64_t longest = 0;
    for (const Stream& st : streams)
      if (static_cast<uint64_t>(h) < parts(st))
        longest = std::max(longest, partBegin(st, h + 1) - partBegin(st, h));
    PlanEmitter e(out, h);
    for (uint64_t lo = 0; lo < longest; lo += chunk) {
      for (bool sends : {true, false}) {
        for (const Stream& st : streams) {
          if (st.isSend != sends || static_cast<uint64_t>(h) >= parts(st)) continue;
          const uint64_t pb = partBegin(st, h), pe = partBegin(st, h + 1);
          e.setTag(p2pTag(st.bytes));
          const uint64_t clo = pb + lo, chi = std::min(pb + lo + chunk, pe);  // stream bytes
          uint64_t start = 0;  // of the current op within the stream
          for (size_t i : st.ops) {
            const uint64_t end = start + ops[i].bytes;
            const uint64_t a = std::max(clo, start), b = std::min(chi, end);
            if (a < b) {
              const Ref ref{static_cast<uint16_t>(kBufUserBase + i), a - start};
              if (sends)
                e.send(st.peer, ref, b - a);
              else
                e.recv(st.peer, ref, b - a);
            }
            start = end;
          }
        }
      }
    }
  }
  PlanEmitter e(out, 0);
  for (size_t k = 0; k < selfSends.size(); ++k)
    e.copy(Ref{static_cast<uint16_t>(kBufUserBase + selfSends[k]), 0},
           Ref{static_cast<uint16_t>(kBufUserBase + selfRecvs[k]), 0}, ops[selfSends[k]].bytes);
  // Channels past the last one with steps would only launch idle blocks.
  while (out->channels.size() > 1 && out->channels.back().steps.empty()) out->channels.pop_back();
  return sscSuccess;
}

}  // namespace ssc
