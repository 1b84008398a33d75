// SPDX-License-Identifier: MIT
#include "tuner/model.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "src/collectives/algorithms.h"
#include "tuner/select.h"

namespace ssc {
namespace {

constexpr Algo kAlgos[] = {Algo::kRing, Algo::kBidirRing, Algo::kDirect, Algo::kHierarchical,
                           Algo::kSymmetric};

int tierIndex(LinkTier t) { return static_cast<int>(t); }

// *to += d, with d's bytes scaled by frac and its latencies by latFrac (a step's first slot:
// one slot's latency and bytes).
void add(Features* to, const Features& d, double frac, double latFrac) {
  to->copyBytes += d.copyBytes * frac;
  for (int t = 0; t < kNumTiers; ++t)
    for (int p = 0; p < kNumProtocols; ++p) {
      to->latency[t][p] += d.latency[t][p] * latFrac;
      to->bytes[t][p] += d.bytes[t][p] * frac;
      to->storeBytes[t][p] += d.storeBytes[t][p] * frac;
    }
}

// The slowest tier any two ranks of the topology talk over: barriers wait on it.
LinkTier widestTier(const Topology& topo) {
  if (topo.nnodes > 1) return LinkTier::kNetwork;
  return topo.gpus.size() > 1 ? LinkTier::kInterGpu : LinkTier::kIntraGpu;
}

// A local copy or reduction of `bytes`. In a FIFO plan the plan kernel's blocks of the channel
// do it (the last receive of a ring copies out of the FIFO, a reduce-scatter's own chunk...), at
// the rate they stream anything: the (USR, FIFO) figure (fitted that way, the model's worst
// error on a FIFO sweep falls markedly: `starscream-tune --check` reports it). Other protocols'
// local work runs at the copy rate.
// Those blocks split each slot into pieces as for a send (fifoCostBytes).
void addLocal(Features* f, double bytes, int protocol, uint64_t slot, int blocks) {
  if (protocol == static_cast<int>(Protocol::kFifo))
    f->bytes[0][protocol] += fifoCostBytes(bytes, slot, blocks);
  else
    f->copyBytes += bytes;
}

// One rank: every collective is one copy of the call's buffer (the API short-cuts it, as the
// real NCCL does: every algorithm then runs at the copy roofline). A copy whose input and output
// fit in the last-level cache costs its launch only: back-to-back calls find the data there
// (a 1-rank all_reduce_perf sweep shows the step from launch cost to the HBM rate where twice
// the buffer passes the cache's size).
Estimate oneRankCopy(Estimate e, uint64_t bytes, double cacheMB) {
  e.protocol = Protocol::kFifo;
  e.features = Features{};
  if (2.0 * static_cast<double>(bytes) > cacheMB * 1e6)
    e.features.copyBytes = static_cast<double>(bytes);
  e.valid = true;
  return e;
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace

int sizeClass(uint64_t bytes) {
  return bytes == 0 ? -1 : static_cast<int>(std::ceil(4 * std::log2(double(bytes))));
}
uint64_t classBytes(int cls) {
  return cls < 0 ? 0 : static_cast<uint64_t>(std::llround(std::exp2(cls / 4.0)));
}

double fifoCostBytes(double bytes, uint64_t slotBytes, int blocks) {
  if (bytes <= 0 || slotBytes == 0 || blocks <= 1) return std::max(bytes, 0.0);
  const double slot = static_cast<double>(slotBytes), piece = slot / blocks;
  const double whole = std::floor(bytes / slot), rest = bytes - whole * slot;
  return whole * slot + std::min(rest, piece) * blocks;
}

uint64_t countForBytes(CollKind coll, uint64_t bytes, int nranks, size_t elemBytes) {
  uint64_t elems = bytes / std::max<size_t>(elemBytes, 1);
  if (coll == CollKind::kReduceScatter || coll == CollKind::kAllGather ||
      coll == CollKind::kAllToAll)
    elems /= static_cast<uint64_t>(std::max(nranks, 1));
  return std::max<uint64_t>(elems, 1);
}

double busBandwidthGBps(CollKind coll, uint64_t bytes, int nranks, double us) {
  if (us <= 0) return 0;
  const double n = nranks, algbw = static_cast<double>(bytes) / us * 1e-3;
  switch (coll) {
    case CollKind::kAllReduce: return algbw * 2 * (n - 1) / n;
    case CollKind::kReduceScatter:
    case CollKind::kAllGather:
    case CollKind::kAllToAll: return algbw * (n - 1) / n;
    default: return algbw;
  }
}

Tuner::Tuner(Topology topo, TunerProfile profile, ModelLimits limits, Anchors anchors)
    : topo_(std::move(topo)),
      profile_(std::move(profile)),
      limits_(limits),
      anchors_(std::move(anchors)) {
  if (profile_.variants.empty()) profile_ = defaultProfile(topo_);
  variant_ = &profile_.variantFor(topo_.maxPartitions());
  // What the profile leaves out comes from the topology's links (see defaultProfile).
  const TunerProfile fallback = defaultProfile(topo_);
  constexpr int kZc = static_cast<int>(Protocol::kZeroCopy),
                kWide = static_cast<int>(Protocol::kZeroCopyWide);
  // Without a measured FIFO figure the link's is the rate of a kernel that streams on every
  // compute unit the rank has; the FIFO kernel runs channels x blocks-per-channel blocks, so it
  // keeps only that share of them busy (memory bandwidth grows with the units issuing loads and
  // stores until the memory saturates). Zero-copy kernels run a block per unit.
  int units = 0;
  for (const GpuInfo& gpu : topo_.gpus)
    if (gpu.computeUnits > 0)
      units = units == 0 ? gpu.computeUnits : std::min(units, gpu.computeUnits);
  const double fifoBlocks =
      static_cast<double>(std::max(limits_.channels, 1)) * std::max(limits_.blocksPerChannel, 1);
  const double fifoShare = limits_.oneMemory || units <= 0
                               ? 1.0
                               : std::min(1.0, fifoBlocks / static_cast<double>(units));
  for (int t = 0; t < kNumTiers; ++t)
    for (int p = 0; p < kNumProtocols; ++p) {
      AlphaBeta ab = variant_->tiers[t][p];
      // No wide-grid figure: the bulk grid's (resolved above: kZc < kWide), so the tie keeps the
      // bulk grid. A link's figure would pit a guess against a measurement.
      if (ab.bandwidthGBps <= 0 && p == kWide) ab = params_[t][kZc];
      if (ab.bandwidthGBps <= 0) {
        const double latency = ab.latencyUs;
        ab = fallback.variants[0].tiers[t][p];
        if (p == static_cast<int>(Protocol::kFifo)) {
          ab.bandwidthGBps = topo_.link(static_cast<LinkTier>(t)).bandwidthGBps * fifoShare;
          if (latency > 0) ab.latencyUs = latency;
        }
      }
      if (ab.bandwidthGBps <= 0) ab.bandwidthGBps = 1;  // a link without a figure: never chosen
      if (ab.storeBandwidthGBps <= 0) ab.storeBandwidthGBps = ab.bandwidthGBps;
      params_[t][p] = ab;
    }
  copyGBps_ =
      variant_->copyGBps > 0 ? variant_->copyGBps : std::max(1.0, topo_.intraGpu.bandwidthGBps);
  limits_.elemBytes = std::max<size_t>(limits_.elemBytes, 1);
  limits_.channels = std::max(limits_.channels, 1);
}

double Tuner::timeOf(const Features& f) const {
  double us = std::max(1.0, f.launches) * variant_->launchUs + f.copyBytes / copyGBps_ * 1e-3;
  for (int p = 0; p < kNumProtocols; ++p) us += f.calls[p] * variant_->launchExtraUs[p];
  for (int t = 0; t < kNumTiers; ++t)
    for (int p = 0; p < kNumProtocols; ++p)
      us += f.latency[t][p] * params_[t][p].latencyUs +
            f.bytes[t][p] / params_[t][p].bandwidthGBps * 1e-3 +
            f.storeBytes[t][p] / params_[t][p].storeBandwidthGBps * 1e-3;
  return us;
}

// How many FIFO connections of one call share the busiest physical link of each tier: all
// partitions of a GPU reach another GPU over the same XGMI/NVLink link, and all GPUs of a node
// share... one NIC each. Taken from every rank's plan of a small call (the connection pattern
// does not depend on the size), so it holds for any algorithm.
std::array<double, kNumTiers> Tuner::sharing(CollKind coll, Algo algo) const {
  const auto key = std::make_pair(static_cast<int>(coll), static_cast<int>(algo));
  if (auto it = sharing_.find(key); it != sharing_.end()) return it->second;
  std::array<double, kNumTiers> out{1, 1, 1};
  const int n = topo_.nranks();
  CollArgs args;
  args.coll = coll;
  args.count = static_cast<uint64_t>(n) * 4;
  PlanParams pp;
  pp.chunkElems = 1 << 20;
  pp.maxChannels = limits_.channels;
  pp.elemBytes = limits_.elemBytes;
  std::set<std::tuple<int, int, size_t>> conns;
  for (int r = 0; r < n; ++r) {
    RankPlan plan;
    if (buildCollPlan(topo_, r, args, algo, pp, &plan) != sscSuccess) break;
    for (size_t c = 0; c < plan.channels.size(); ++c)
      for (const Step& s : plan.channels[c].steps)
        if (s.sendPeer >= 0 && s.sendPeer != r) conns.insert({r, s.sendPeer, c});
  }
  // A rank's channel talks to its peers of one tier one after the other: each of its k peers
  // on a tier has the link a k-th of the time (a ring: the whole time; direct: 1/(n-1)).
  std::map<std::tuple<int, size_t, int>, int> peersOf;  // (rank, channel, tier) -> peers
  for (const auto& [a, b, c] : conns) ++peersOf[{a, c, tierIndex(topo_.tierBetween(a, b))}];
  std::map<std::tuple<int, int, int>, double> perLink;  // (tier, from, to) -> connections
  for (const auto& [a, b, c] : conns) {
    const LinkTier t = topo_.tierBetween(a, b);
    const double w = 1.0 / peersOf[{a, c, tierIndex(t)}];
    if (t == LinkTier::kInterGpu) perLink[{1, topo_.ranks[a].gpu, topo_.ranks[b].gpu}] += w;
    if (t == LinkTier::kNetwork) perLink[{2, topo_.ranks[a].node, topo_.ranks[b].node}] += w;
  }
  const double gpusPerNode =
      std::max<double>(1, static_cast<double>(topo_.gpus.size()) / std::max(topo_.nnodes, 1));
  for (const auto& [k, count] : perLink) {
    const int t = std::get<0>(k);
    const double share = t == 2 ? std::max(1.0, count / gpusPerNode) : count;
    out[t] = std::max(out[t], std::max(1.0, share));
  }
  sharing_.emplace(key, out);
  return out;
}

Estimate Tuner::estimate(CollKind coll, uint64_t bytes, Algo algo, bool symmetric,
                         const Protocol* as) const {
  Estimate e;
  e.algo = algo;
  const int n = topo_.nranks();
  if (algo == Algo::kAuto) {
    e.why = "auto is not an algorithm";
    return e;
  }
  if (!algoSupports(topo_, coll, algo)) {
    e.why = fmt::format("{} cannot run {} on this topology", algoName(algo), collName(coll));
    return e;
  }
  if (algo == Algo::kSymmetric) {
    if (!symmetric) {
      e.why = "needs registered (symmetric) buffers";
      return e;
    }
    if (topo_.nnodes != 1 || n > kSymmetricMaxRanks) {
      e.why = "peers are not mappable (several nodes, or more ranks than the kernels serve)";
      return e;
    }
  }
  if (n == 1) {
    e = oneRankCopy(e, bytes, variant_->cacheMB);
    e.features.launches = 1;
    e.features.calls[static_cast<int>(e.protocol)] = 1;
    e.timeUs = timeOf(e.features);
    return e;
  }
  const bool sym = algo == Algo::kSymmetric;
  const bool llFits =
      sym && coll == CollKind::kAllReduce && limits_.llMaxBytes > 0 && bytes <= limits_.llMaxBytes;
  // All-gather's zero-copy push runs on either grid (RankPlan::wideGrid): the faster one.
  if (sym && coll == CollKind::kAllGather && as == nullptr) {
    const Protocol bulk = Protocol::kZeroCopy, wide = Protocol::kZeroCopyWide;
    Estimate b = estimate(coll, bytes, algo, symmetric, &bulk);
    Estimate w = estimate(coll, bytes, algo, symmetric, &wide);
    return w.valid && (!b.valid || w.timeUs < b.timeUs) ? w : b;
  }
  if (sym && as != nullptr) {
    if (*as == Protocol::kFifo) {
      e.why = "the symmetric algorithm has no FIFO steps";
      return e;
    }
    if (*as == Protocol::kLL && !llFits) {
      e.why = "LL packets serve only all-reduces up to the LL limit";
      return e;
    }
    if (*as == Protocol::kZeroCopyWide && coll != CollKind::kAllGather) {
      e.why = "the wide grid serves only all-gather's zero-copy push";
      return e;
    }
    if (*as == Protocol::kZeroCopyWide && variant_->wideGridMaxBytes > 0 &&
        static_cast<double>(bytes) > variant_->wideGridMaxBytes) {
      e.why = fmt::format(
          "the wide grid was measured slower than the bulk grid above {} bytes "
          "(the profile's wide_grid_max_bytes)",
          variant_->wideGridMaxBytes);
      return e;
    }
  }
  const bool ll = sym && (as != nullptr ? *as == Protocol::kLL : llFits);
  e.protocol = !sym ? Protocol::kFifo : ll ? Protocol::kLL : Protocol::kZeroCopy;
  if (as != nullptr) e.protocol = *as;
  const int proto = static_cast<int>(e.protocol);
  CollArgs args;
  args.coll = coll;
  args.count = countForBytes(coll, bytes, n, limits_.elemBytes);
  args.symmetric = algo == Algo::kSymmetric;
  PlanParams pp;
  pp.elemBytes = limits_.elemBytes;
  pp.chunkElems = std::max<uint64_t>(1, limits_.chunkBytes / limits_.elemBytes);
  pp.maxChannels = limits_.channels;
  pp.packetOneShot = ll;
  std::lock_guard<std::mutex> g(mu_);
  // One memory (the host backend): the tiers are labels on the same RAM, not links; every step
  // is costed at the USR figures and no link is shared.
  const bool one = limits_.oneMemory;
  const std::array<double, kNumTiers> share =
      one ? std::array<double, kNumTiers>{1, 1, 1} : sharing(coll, algo);
  const int widest = one ? 0 : tierIndex(widestTier(topo_));
  const uint64_t pipe = limits_.pipelineBytes > 0 ? limits_.pipelineBytes
                                                  : std::max<uint64_t>(1, limits_.chunkBytes / 4);
  const bool fifo = e.protocol == Protocol::kFifo;
  const int blocks = one ? 1 : limits_.blocksPerChannel;
  std::vector<RankPlan> plans(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r)
    if (buildCollPlan(topo_, r, args, algo, pp, &plans[r]) != sscSuccess) {
      e.why = fmt::format("{} cannot build a plan for this call", algoName(algo));
      return e;
    }
  double otherParts = 0;  // the most partitions of a GPU (zero-copy link load between GPUs)
  for (const GpuInfo& gpu : topo_.gpus) otherParts = std::max<double>(otherParts, gpu.ranks.size());
  // Each step costs its latency plus its bytes over its tier; it starts when the previous step
  // of its channel has ended and, for a receive, when the matching send has delivered. Walking
  // every rank's plan this way gives the critical path: pipelined loops for large calls (each
  // rank's own steps), the hop chain across ranks for small ones (2(n-1) hops of a ring).
  struct Point {
    Features f;
  };
  auto later = [&](const Point& a, const Point& b) { return timeOf(a.f) >= timeOf(b.f) ? a : b; };
  struct Sent {
    Point first, end;  // the first slot delivered; the whole step delivered
  };
  std::map<std::tuple<int, int, size_t>, std::vector<Sent>> delivered;  // (from, to, channel)
  std::map<std::tuple<int, int, size_t>, size_t> taken;
  std::vector<std::vector<Point>> barrierArrivals;  // [barrier k] one point per rank arrived
  struct Cursor {
    size_t next = 0;
    int barriers = 0;
    bool waiting = false;  // arrived at a barrier, waiting for the other ranks
    Point at;
  };
  std::vector<std::vector<Cursor>> cur(static_cast<size_t>(n));
  size_t remaining = 0;
  for (int r = 0; r < n; ++r) {
    cur[r].resize(plans[r].channels.size());
    for (const auto& ch : plans[r].channels) remaining += ch.steps.size();
  }
  for (bool progress = true; progress && remaining > 0;) {
    progress = false;
    for (int r = 0; r < n; ++r) {
      const double myParts =
          one ? n : static_cast<double>(topo_.gpus[topo_.ranks[r].gpu].ranks.size());
      for (size_t c = 0; c < plans[r].channels.size(); ++c) {
        Cursor& k = cur[r][c];
        const auto& steps = plans[r].channels[c].steps;
        while (k.next < steps.size()) {
          const Step& s = steps[k.next];
          Point start = k.at;
          const Sent* from = nullptr;
          const bool peerStep = isPeerStep(s.op);
          if (!peerStep && s.recvPeer >= 0 && s.recvPeer != r) {
            const auto key = std::make_tuple(s.recvPeer, r, c);
            auto& q = delivered[key];
            size_t& t = taken[key];
            if (t >= q.size()) break;  // not sent yet
            from = &q[t++];
            start = later(start, from->first);
          }
          if (s.op == StepOp::kBarrier) {
            const size_t b = static_cast<size_t>(k.barriers);
            if (barrierArrivals.size() <= b) barrierArrivals.resize(b + 1);
            auto& arr = barrierArrivals[b];
            if (!k.waiting) {
              arr.push_back(start);
              k.waiting = true;
            }
            if (arr.size() < static_cast<size_t>(n)) break;  // a barrier spans every rank
            Point all = arr[0];
            for (const Point& p : arr) all = later(all, p);
            // LL packets carry their own flags: no barrier round trips.
            if (!ll) all.f.latency[widest][proto] += 1;
            k.at = all;
            ++k.barriers;
            k.waiting = false;
            ++k.next;
            --remaining;
            progress = true;
            continue;
          }
          Features f;                // this step's own cost
          bool slotLatency = false;  // f's latency is one per slot (a send within the GPU)
          const double b = static_cast<double>(s.count) * static_cast<double>(limits_.elemBytes);
          switch (s.op) {
            case StepOp::kCopy:
            case StepOp::kReduce: addLocal(&f, b, proto, pipe, blocks); break;
            case StepOp::kPeerReduce:
            case StepOp::kPeerReduceBcast:
            case StepOp::kPeerPush:
            case StepOp::kPeerGather:
            case StepOp::kPeerSwap: {
              // Every rank loads from (or stores to) every peer at once: USR carries this rank's
              // own traffic with its P-1 neighbours, an inter-GPU link the traffic of all
              // partition pairs of the two GPUs. `loads` and `stores`: peer transfers of the
              // step's size per peer, 1 for a load from all (a store to all); a single source
              // (broadcast) or destination (reduce) moves 1/(n-1) of that.
              const double share = 1.0 / std::max(n - 1, 1);  // one peer's part
              const bool reduces = s.op == StepOp::kPeerReduce || s.op == StepOp::kPeerReduceBcast;
              // A swap (in-place all-to-all) loads and stores half of each pair's block.
              const bool swaps = s.op == StepOp::kPeerSwap;
              const double loads = swaps                        ? 0.5
                                   : s.op == StepOp::kPeerPush  ? 0
                                   : reduces && s.recvPeer >= 0 ? share
                                                                : 1;
              const double stores = swaps ? 0.5
                                    : s.op == StepOp::kPeerReduceBcast || s.op == StepOp::kPeerPush
                                        ? 1
                                    : s.op == StepOp::kPeerReduce && s.sendPeer >= 0 ? share
                                                                                     : 0;
              // Loads and stores move at their own rates (AlphaBeta::storeBandwidthGBps).
              f.latency[widest][proto] += 1;
              f.copyBytes += s.op == StepOp::kPeerGather || swaps ? b * n : b;
              f.bytes[0][proto] += b * loads * (myParts - 1);
              f.storeBytes[0][proto] += b * stores * (myParts - 1);
              if (!one && topo_.gpus.size() > 1) {
                f.bytes[widest][proto] += b * loads * myParts * otherParts;
                f.storeBytes[widest][proto] += b * stores * myParts * otherParts;
              }
              break;
            }
            default: {
              if (s.sendPeer < 0 || s.sendPeer == r) {
                addLocal(&f, b, proto, pipe,
                         blocks);  // a receive: the data is here, the step copies it out
                break;
              }
              const int t = one ? 0 : tierIndex(topo_.tierBetween(r, s.sendPeer));
              // Through a FIFO within a GPU every slot is a handshake (wait for the receiver's
              // free slot, publish the slot's size and flag), so each slot pays the latency
              // (without it the model's median error on FIFO sweeps within a GPU roughly
              // doubles). Links between GPUs and nodes keep one latency per step, NCCL's form,
              // until a sweep over such links measures them.
              slotLatency = fifo && t == 0;
              f.latency[t][proto] +=
                  slotLatency ? std::max(1.0, std::ceil(b / static_cast<double>(pipe))) : 1.0;
              f.bytes[t][proto] += (fifo ? fifoCostBytes(b, pipe, blocks) : b) * share[t];
              // A FIFO moves each byte twice: the sender's kernel stores it into the slot (the
              // link figure above), the receiver's loads it out again, a pass through memory
              // that a zero-copy step, loading straight from the peer's buffer, never makes.
              // That second pass runs at the copy rate on every tier, measured or not.
              if (fifo) f.copyBytes += b;
            }
          }
          // FIFO steps pipeline by slot: the receiver starts once the first slot is in and
          // ends no earlier than one slot after the sender ended. A slot: one slot's latency,
          // its share of the step's cost bytes.
          const double b0 = static_cast<double>(s.count) * static_cast<double>(limits_.elemBytes);
          const double slots = std::max(1.0, std::ceil(b0 / static_cast<double>(pipe)));
          const double firstSlot = std::min<double>(b0, static_cast<double>(pipe));
          const double frac =
              b0 <= 0 ? 1
              : fifo  ? fifoCostBytes(firstSlot, pipe, blocks) / fifoCostBytes(b0, pipe, blocks)
                      : std::min(1.0, static_cast<double>(pipe) / b0);
          const double latFrac = fifo && slotLatency ? 1 / slots : 1;
          Point done = start;
          add(&done.f, f, 1, 1);
          if (from != nullptr) {
            Point tail = from->end;
            add(&tail.f, f, frac, latFrac);
            done = later(done, tail);
          }
          if (!peerStep && s.sendPeer >= 0 && s.sendPeer != r) {
            Point first = start;
            add(&first.f, f, frac, latFrac);
            delivered[{r, s.sendPeer, c}].push_back({first, done});
          }
          k.at = done;
          ++k.next;
          --remaining;
          progress = true;
        }
      }
    }
  }
  if (remaining > 0) {
    e.why = fmt::format("{}: the plan's sends and receives do not pair up", algoName(algo));
    return e;
  }
  Point last;
  for (const auto& rank : cur)
    for (const Cursor& k : rank) last = later(last, k.at);
  e.features = last.f;
  // A wide-grid push beyond pushLaunchBytes of output runs as several launches (the executor's
  // cut): each more pays the launch, the kernel's extra and its two barriers and step.
  double launches = 1;
  if (e.protocol == Protocol::kZeroCopyWide && limits_.pushLaunchBytes > 0 && !one)
    launches = std::max(
        1.0, std::ceil(static_cast<double>(bytes) / static_cast<double>(limits_.pushLaunchBytes)));
  e.features.launches = launches;
  // The kernel's extra: every algorithm but the symmetric one runs the FIFO plan kernel, whatever
  // protocol its steps are costed with (`as`: the NCCL plugin's LL ring).
  e.features.calls[sym ? proto : static_cast<int>(Protocol::kFifo)] = launches;
  e.features.latency[widest][proto] += 3 * (launches - 1);
  e.timeUs = timeOf(e.features);
  e.valid = true;
  return e;
}

std::string Tuner::boundBy(const Features& f) const {
  static const char* const kTierNames[kNumTiers] = {"usr", "xgmi", "net"};
  const double total = timeOf(f);
  if (!(total > 0)) return "";
  std::string what = "launch";
  double most = std::max(1.0, f.launches) * variant_->launchUs;
  for (int p = 0; p < kNumProtocols; ++p) most += f.calls[p] * variant_->launchExtraUs[p];
  auto consider = [&](double us, std::string name) {
    if (us > most) {
      most = us;
      what = std::move(name);
    }
  };
  consider(f.copyBytes / copyGBps_ * 1e-3, "copy");
  for (int t = 0; t < kNumTiers; ++t)
    for (int p = 0; p < kNumProtocols; ++p) {
      const std::string pair =
          fmt::format("{} {}", kTierNames[t], protocolName(static_cast<Protocol>(p)));
      consider(f.latency[t][p] * params_[t][p].latencyUs, pair + " latency");
      consider(f.bytes[t][p] / params_[t][p].bandwidthGBps * 1e-3 +
                   f.storeBytes[t][p] / params_[t][p].storeBandwidthGBps * 1e-3,
               pair + " bytes");
    }
  return fmt::format("{} {:.0f}%", what, 100 * most / total);
}

std::vector<Estimate> Tuner::estimateAll(CollKind coll, uint64_t bytes, bool symmetric) const {
  std::vector<Estimate> out;
  for (Algo a : kAlgos) out.push_back(estimate(coll, bytes, a, symmetric));
  return out;
}

std::vector<RankedCandidate> Tuner::candidates(CollKind coll, uint64_t bytes, bool symmetric,
                                               Algo only) const {
  // An algorithm with the protocol it runs at this size (the symmetric all-reduce's LL packets
  // follow the size alone), and all-gather's two grids.
  std::vector<RankedCandidate> cands;
  for (Algo a : kAlgos) {
    if (only != Algo::kAuto && a != only) continue;
    if (a == Algo::kSymmetric && coll == CollKind::kAllGather) {
      for (Protocol p : {Protocol::kZeroCopy, Protocol::kZeroCopyWide}) {
        const Estimate e = estimate(coll, bytes, a, symmetric, &p);
        if (e.valid) cands.push_back({a, p, e.timeUs});
      }
      continue;
    }
    const Estimate e = estimate(coll, bytes, a, symmetric);
    if (e.valid) cands.push_back({a, e.protocol, e.timeUs});
  }
  return cands;
}

Decision Tuner::decide(CollKind coll, uint64_t rep, bool symmetric, Algo only) const {
  Decision d;
  // One memory (the host backend): its profile is an estimate, not a measurement, so it does not
  // overturn what the GPU sweeps measure (the symmetric algorithm fastest at every size where it
  // can run; docs/benchmarks.md): zero-copy whenever it can serve the call, the model among the
  // FIFO algorithms otherwise.
  if (only == Algo::kAuto && limits_.oneMemory && symmetric) {
    const Estimate e = estimate(coll, rep, Algo::kSymmetric, true);
    if (e.valid) {
      d.choice = {Algo::kSymmetric, e.protocol};
      return d;
    }
  }
  const std::vector<RankedCandidate> cands = candidates(coll, rep, symmetric, only);
  if (cands.empty()) {
    // Nothing valid: a forced algorithm keeps its usual protocol, else the ring; the builder
    // reports why.
    d.choice = {only == Algo::kAuto ? Algo::kRing : only,
                only == Algo::kSymmetric ? Protocol::kZeroCopy : Protocol::kFifo};
    return d;
  }
  const AnchoredRanking r = rankWithAnchors(anchors_, coll, rep, cands);
  d.choice = {cands[r.best].algo, cands[r.best].protocol};
  d.measured = r.measured;
  d.why = r.why;
  return d;
}

Choice Tuner::choose(CollKind coll, uint64_t bytes, bool symmetric, Algo only) const {
  const int cls = sizeClass(bytes);
  const auto key = std::make_tuple(static_cast<int>(coll), symmetric, cls, static_cast<int>(only));
  {
    std::lock_guard<std::mutex> g(mu_);
    if (auto it = choices_.find(key); it != choices_.end()) return it->second;
  }
  const Choice best = decide(coll, classBytes(cls), symmetric, only).choice;
  std::lock_guard<std::mutex> g(mu_);
  if (choices_.size() > 4096) choices_.clear();
  choices_.emplace(key, best);
  return best;
}

Decision Tuner::explain(CollKind coll, uint64_t bytes, bool symmetric, Algo only) const {
  return decide(coll, classBytes(sizeClass(bytes)), symmetric, only);
}

uint64_t Tuner::fingerprint() const {
  // The anchors choose too; none leaves the fingerprint of an uncalibrated tuner as it was.
  return fnv1a(fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}{}", profileToJson(profile_), topo_.name,
                           topo_.nranks(), limits_.chunkBytes, limits_.channels, limits_.llMaxBytes,
                           limits_.elemBytes, limits_.blocksPerChannel, limits_.pushLaunchBytes,
                           anchors_.empty() ? "" : "|" + anchorsToJson(anchors_)));
}

}  // namespace ssc
