// SPDX-License-Identifier: MIT
// Two-tier algorithms (paper, section IV-D): traffic inside a physical GPU (USR tier) and between
// GPUs (XGMI tier) is decoupled. All-reduce runs in three phases: reduce-scatter among the
// partitions of each GPU, all-reduce among same-index partitions across GPUs (G participants,
// not G*P, so the inter-GPU tier moves 1/P of the data per partition), then all-gather inside
// each GPU. Reduce-scatter, all-gather, broadcast and reduce are decomposed the same way.
//
// Both tiers use rings; the data is split in halves that go round the rings in opposite
// directions on two channels ("direction-optimized" ring: both directions of every USR link
// carry traffic). Requires every GPU to have the same number of partitions (algoSupports).
//
// The P rings of same-index partitions run at once. On one node each takes its GPU order from
// disjointRingOrders (partition index q: order q mod (G-1)/2), so they spread over the links
// between GPUs instead of all crossing the same G of them: on 8 GPUs linked pairwise, 8 rings
// share a link at most 3 ways instead of 8. Across nodes the GPU order is kept (node-major: each
// ring crosses the network twice).
#include "src/collectives/algorithms_internal.h"
#include "src/collectives/gpu_rings.h"

namespace ssc {

namespace {

struct Tiers {
  RingGroup intra;  // the partitions of this rank's GPU, in XCD ring order
  RingGroup inter;  // same-index partitions of every GPU (order: see the top)
  std::vector<std::vector<int>> gpuRanks;  // ranks of GPU g by partition
  int gpu = 0;                             // this rank's GPU
  int part = 0;                            // this rank's partition index
  int P = 1;                               // partitions per GPU
  int G = 1;                               // GPUs
};

Tiers makeTiers(const Topology& topo, int rank) {
  Tiers t;
  t.gpu = topo.ranks[rank].gpu;
  t.part = indexOf(topo.gpus[t.gpu].ranks, rank);
  t.G = static_cast<int>(topo.gpus.size());
  t.P = static_cast<int>(topo.gpus[t.gpu].ranks.size());
  for (const auto& g : topo.gpus) t.gpuRanks.push_back(g.ranks);
  t.intra = makeRing(topo.gpus[t.gpu].ranks, rank);
  std::vector<int> gpuOrder(static_cast<size_t>(t.G));
  for (int g = 0; g < t.G; ++g) gpuOrder[static_cast<size_t>(g)] = g;
  if (topo.nnodes == 1) {
    const auto orders = disjointRingOrders(t.G);
    gpuOrder = orders[static_cast<size_t>(t.part) % orders.size()];
  }
  std::vector<int> peers;
  for (int g : gpuOrder) peers.push_back(topo.gpus[static_cast<size_t>(g)].ranks[t.part]);
  t.inter = makeRing(peers, rank);
  return t;
}

Tiers reversedTiers(const Tiers& t) {
  Tiers r = t;
  r.intra = t.intra.reversed();
  r.inter = t.inter.reversed();
  return r;
}

// One channel's share [base, base+len) of the per-rank range. `scratch` is this channel's
// scratch region (G * chunk elements).
void hierChannel(const CallShape& c, const Tiers& t, PlanEmitter& e, uint64_t base, uint64_t len,
                 uint64_t scratch) {
  const uint64_t chunk = c.params.chunkElems, count = c.args.count;
  const int P = t.P, G = t.G;
  switch (c.args.coll) {
    case CollKind::kAllReduce:
      for (uint64_t lo = base; lo < base + len; lo += P * chunk) {
        uint64_t loopLen = std::min<uint64_t>(P * chunk, base + len - lo);
        // Slices are indexed by partition index (= position in the unreversed intra ring).
        auto sliceOfPos = [&](const RingGroup& ring, int j) {
          int partIndex = indexOf(t.gpuRanks[t.gpu], ring.at(j));
          return std::pair(lo + splitOffset(loopLen, P, partIndex),
                           splitCount(loopLen, P, partIndex));
        };
        ringReduceScatter(
            e, t.intra,
            [&](int j) {
              auto [off, n1] = sliceOfPos(t.intra, j);
              return Slice{Ref{kBufIn, off}, Ref{kBufOut, off}, n1};
            },
            kFlagPreOp, G == 1);
        auto [myOff, myLen] = sliceOfPos(t.intra, t.intra.pos);
        if (G > 1) {
          ringAllReduce(
              e, t.inter,
              [&](int j) {
                uint64_t off = myOff + splitOffset(myLen, G, j);
                return Slice{Ref{kBufOut, off}, Ref{kBufOut, off}, splitCount(myLen, G, j)};
              },
              kFlagNone, true);
        }
        ringAllGather(e, t.intra, [&](int j) {
          auto [off, n1] = sliceOfPos(t.intra, j);
          return Slice{Ref{kBufOut, off}, Ref{kBufOut, off}, n1};
        });
      }
      break;
    case CollKind::kReduceScatter:
      // Phase A: inside each GPU, reduce the blocks destined for partition q of every GPU onto
      // this GPU's partition q (scratch, one chunk per destination GPU). Phase B: reduce-scatter
      // those G partial blocks among same-index partitions.
      for (uint64_t lo = base; lo < base + len; lo += chunk) {
        uint64_t n1 = std::min(chunk, base + len - lo);
        for (int g = 0; g < G; ++g) {
          Ref dst = G == 1 ? Ref{kBufOut, lo} : Ref{kBufScratch, scratch + g * chunk};
          ringReduceScatter(
              e, t.intra,
              [&](int j) {
                int owner = t.gpuRanks[g][indexOf(t.gpuRanks[t.gpu], t.intra.at(j))];
                return Slice{Ref{kBufIn, owner * count + lo}, dst, n1};
              },
              kFlagPreOp, G == 1);
        }
        if (G > 1) {
          ringReduceScatter(
              e, t.inter,
              [&](int j) {
                int gpu = c.topo.ranks[t.inter.at(j)].gpu;
                return Slice{Ref{kBufScratch, scratch + gpu * chunk}, Ref{kBufOut, lo}, n1};
              },
              kFlagNone, true);
        }
      }
      break;
    case CollKind::kAllGather:
      // Phase A: all-gather among same-index partitions into scratch (block per GPU); phase B:
      // inside each GPU, all-gather those blocks to every partition's output.
      for (uint64_t lo = base; lo < base + len; lo += chunk) {
        uint64_t n1 = std::min(chunk, base + len - lo);
        if (G > 1) {
          ringAllGather(e, t.inter, [&](int j) {
            int gpu = c.topo.ranks[t.inter.at(j)].gpu;
            return Slice{Ref{kBufIn, lo}, Ref{kBufScratch, scratch + gpu * chunk}, n1};
          });
        }
        for (int g = 0; g < G; ++g) {
          Ref src = G == 1 ? Ref{kBufIn, lo} : Ref{kBufScratch, scratch + g * chunk};
          ringAllGather(e, t.intra, [&](int j) {
            int owner = t.gpuRanks[g][indexOf(t.gpuRanks[t.gpu], t.intra.at(j))];
            return Slice{src, Ref{kBufOut, owner * count + lo}, n1};
          });
        }
      }
      break;
    case CollKind::kBroadcast: {
      // Root's partition index q0 carries the data across GPUs, then each GPU's partition q0
      // forwards it along the GPU's own ring.
      const int rootGpu = c.topo.ranks[c.args.root].gpu;
      const int q0 = indexOf(t.gpuRanks[rootGpu], c.args.root);
      const bool onCarrier = t.part == q0;
      for (uint64_t lo = base; lo < base + len; lo += chunk) {
        uint64_t n1 = std::min(chunk, base + len - lo);
        if (onCarrier) {
          RingGroup carriers = t.inter.rotated(indexOf(t.inter.ranks, c.args.root));
          ringBroadcast(e, carriers, Ref{kBufIn, lo}, Ref{kBufOut, lo}, n1);
        }
        RingGroup local = t.intra.rotated(indexOf(t.intra.ranks, t.gpuRanks[t.gpu][q0]));
        ringBroadcast(e, local, Ref{kBufOut, lo}, Ref{kBufOut, lo}, n1);
      }
      break;
    }
    case CollKind::kReduce: {
      const int rootGpu = c.topo.ranks[c.args.root].gpu;
      const int q0 = indexOf(t.gpuRanks[rootGpu], c.args.root);
      const bool isRoot = c.rank == c.args.root;
      for (uint64_t lo = base; lo < base + len; lo += chunk) {
        uint64_t n1 = std::min(chunk, base + len - lo);
        RingGroup local = t.intra.rotated(indexOf(t.intra.ranks, t.gpuRanks[t.gpu][q0]) + 1);
        Ref partial = (G == 1 && isRoot) ? Ref{kBufOut, lo} : Ref{kBufScratch, scratch};
        ringReduce(e, local, Ref{kBufIn, lo}, partial, n1, kFlagPreOp, G == 1);
        if (G > 1 && t.part == q0) {
          RingGroup carriers = t.inter.rotated(indexOf(t.inter.ranks, c.args.root) + 1);
          ringReduce(e, carriers, Ref{kBufScratch, scratch}, Ref{kBufOut, lo}, n1, kFlagNone, true);
        }
      }
      break;
    }
    default: break;
  }
}

}  // namespace

void buildHierarchical(const CallShape& c, RankPlan* plan) {
  Tiers t = makeTiers(c.topo, c.rank);
  const uint64_t len = perRankLength(c.args);
  const uint64_t chunk = c.params.chunkElems;
  const int channels = c.params.maxChannels >= 2 ? 2 : 1;
  plan->channels.resize(channels);
  const uint64_t scratchPerChannel = static_cast<uint64_t>(t.G) * chunk;
  plan->scratchElems = c.args.coll == CollKind::kAllReduce || c.args.coll == CollKind::kBroadcast
                           ? 0
                           : channels * scratchPerChannel;
  if (channels == 1) {
    PlanEmitter e(plan, 0);
    hierChannel(c, t, e, 0, len, 0);
    return;
  }
  uint64_t half = len / 2;
  PlanEmitter forward(plan, 0), backward(plan, 1);
  hierChannel(c, t, forward, 0, half, 0);
  hierChannel(c, reversedTiers(t), backward, half, len - half, scratchPerChannel);
}

}  // namespace ssc
