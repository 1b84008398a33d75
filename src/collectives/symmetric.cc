// SPDX-License-Identifier: MIT
// Zero-copy direct algorithms over symmetric (registered) buffers: every rank reads and writes the
// other ranks' buffers in place, with a barrier before (inputs ready, outputs free) and after
// (nobody still reads this rank's input or writes its output). No data passes through a FIFO,
// so each input byte is read once and each output byte written once: the copy roofline.
//   all-reduce, small: one-shot (every rank reduces the whole vector from all inputs);
//   all-reduce, large: two-shot (rank r reduces slice r and stores it into every output);
//   reduce-scatter: rank r reduces block r from all inputs; all-gather: every rank pushes its
//   block into every output;
//   broadcast: rank r copies slice r of the root's input into every output; reduce: rank r
//   reduces slice r of all inputs into the root's output (so every rank's SMs share the work,
//   not only the root's);
//   all-to-all: rank r gathers block r of every rank's input into its output; in place (a gather
//   would read blocks a peer has already overwritten) every pair of ranks swaps its two blocks,
//   each rank one half of each pair (kPeerSwap): one read and one write of every byte, as out
//   of place, and no scratch.
#include "src/collectives/algorithms_internal.h"

namespace ssc {

PeerAccess symmetricPeerAccess(CollKind coll, bool isRoot) {
  PeerAccess a;
  a.in = coll != CollKind::kAllGather && coll != CollKind::kSendRecv &&
         (coll != CollKind::kBroadcast || isRoot);
  a.out = coll != CollKind::kReduceScatter && coll != CollKind::kAllToAll &&
          coll != CollKind::kSendRecv && (coll != CollKind::kReduce || isRoot);
  return a;
}

void buildSymmetric(const CallShape& c, const PlanParams& params, RankPlan* plan) {
  const size_t elemBytes = params.elemBytes;
  plan->channels.resize(1);
  std::vector<Step>& steps = plan->channels[0].steps;
  const uint64_t count = c.args.count;
  const uint64_t n = static_cast<uint64_t>(c.nranks), r = static_cast<uint64_t>(c.rank);
  auto step = [](StepOp op, uint8_t flags, uint16_t src, uint64_t srcOff, uint16_t dst,
                 uint64_t dstOff,
                 uint64_t cnt) { return Step{op, flags, src, dst, -1, -1, srcOff, dstOff, cnt}; };
  const Step barrier = step(StepOp::kBarrier, kFlagNone, kBufIn, 0, kBufOut, 0, 0);
  steps.push_back(barrier);
  const uint8_t reduceFlags = kFlagPreOp | kFlagPostOp;
  switch (c.args.coll) {
    case CollKind::kAllReduce:
      // One-shot reads every peer's whole input, so in place it would read values a peer has
      // already overwritten; two-shot reads and writes slice r only on rank r and is safe.
      // Packets carry the inputs instead (PlanParams::packetOneShot): then in place is fine.
      if (count * elemBytes <= kDirectOneShotMaxBytes &&
          (!c.args.inPlace || params.packetOneShot)) {
        steps.push_back(step(StepOp::kPeerReduce, reduceFlags, kBufIn, 0, kBufOut, 0, count));
      } else {
        uint64_t off = splitOffset(count, n, r), cnt = splitCount(count, n, r);
        if (cnt > 0)
          steps.push_back(
              step(StepOp::kPeerReduceBcast, reduceFlags, kBufIn, off, kBufOut, off, cnt));
      }
      break;
    case CollKind::kReduceScatter:
      steps.push_back(step(StepOp::kPeerReduce, reduceFlags, kBufIn, r * count, kBufOut, 0, count));
      break;
    case CollKind::kAllGather:
      steps.push_back(step(StepOp::kPeerPush, kFlagNone, kBufIn, 0, kBufOut, r * count, count));
      break;
    case CollKind::kBroadcast:
    case CollKind::kReduce: {
      const uint64_t off = splitOffset(count, n, r), cnt = splitCount(count, n, r);
      if (cnt == 0) break;
      if (c.args.coll == CollKind::kBroadcast) {
        Step s = step(StepOp::kPeerReduceBcast, kFlagNone, kBufIn, off, kBufOut, off, cnt);
        s.recvPeer = c.args.root;
        steps.push_back(s);
      } else {
        Step s = step(StepOp::kPeerReduce, reduceFlags, kBufIn, off, kBufOut, off, cnt);
        s.sendPeer = c.args.root;
        steps.push_back(s);
      }
      break;
    }
    case CollKind::kAllToAll:
      if (c.args.inPlace)
        steps.push_back(step(StepOp::kPeerSwap, kFlagNone, kBufIn, 0, kBufIn, 0, count));
      else
        steps.push_back(step(StepOp::kPeerGather, kFlagNone, kBufIn, r * count, kBufOut, 0, count));
      break;
    default: break;
  }
  steps.push_back(barrier);
}

}  // namespace ssc
