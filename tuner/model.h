// SPDX-License-Identifier: MIT
// The cost model: the predicted time of a call is the launch overhead plus, along the busiest
// channel of the slowest rank, the sum over the plan's steps of (latency + bytes / bandwidth) of
// the tier and protocol each step uses. Step counts and bytes come from the plan the algorithm
// builds (buildCollPlan), so a new algorithm is modelled without a line here. One Tuner belongs to
// one communicator: built once at init from its topology and profile, queried per call.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "src/collectives/plan.h"
#include "src/topology/topology.h"
#include "tuner/anchors.h"
#include "tuner/profile.h"

namespace ssc {

// The cost model's revision: a change to what the features count (and so to what fitted figures
// mean) bumps it, which retires every cached calibration (tuner/calibrate.h).
inline constexpr int kCostModelRevision = 2;

// What the executor does with a plan, which the model must know: the FIFO chunk (steps are at
// most this large), the channels, and up to which size a symmetric all-reduce runs as LL packets.
// Defaults are the GPU backend's (8 slots of 512 KiB, 2 channels, LL up to 64 KiB).
// Positional order is kept by callers that brace-initialise the first four fields.
struct ModelLimits {
  uint64_t chunkBytes = 2ull << 20;
  int channels = 2;
  uint64_t llMaxBytes = 64 << 10;
  size_t elemBytes = 4;
  // A FIFO slot, the pipelining grain: receivers start once one is in. 0: chunkBytes / 4 (a
  // chunk is half a FIFO of 8 slots on both backends).
  uint64_t pipelineBytes = 0;
  // Every rank's buffers live in one physical memory (the host backend): the topology's tiers are
  // labels there, so all steps are costed at the USR figures and no link is shared.
  bool oneMemory = false;  // float32, what the benchmarks and most training traffic move
  // Blocks of the FIFO plan kernel per channel (the GPU backend's FifoShape, set per
  // communicator by its launch census: 4, 8, 16 on the H200 at K = 8, 4, 2). Block b moves piece
  // b (slot / blocks bytes) of every slot, so a FIFO step shorter than a slot leaves blocks idle
  // and takes as long as its busiest block (fifoCostBytes). 1: a step costs its bytes.
  int blocksPerChannel = 1;
  // The GPU executor cuts a zero-copy push on the wide grid into launches of at most this many
  // bytes of output (src/kernels/gpu/sym_kernel.h, kSymPushMaxBytes); each pays the launch and
  // its two barriers. 0: one launch.
  uint64_t pushLaunchBytes = uint64_t{256} << 20;
};

// The bytes a FIFO step of `bytes` costs at the channel's bandwidth: the channel's blocks split
// each slot into `blocks` pieces, so a step's time is its busiest block's, times the block count
// to keep the channel's bandwidth as the unit. Whole slots cost their bytes; the last, partial
// slot costs blocks x min(its bytes, piece): a step of up to one piece costs `blocks` times its
// bytes, one between a piece and a slot costs a whole slot. A ring all-reduce sweep shows it: at
// 8 blocks a channel (64 KiB pieces) calls whose steps are 128 - 512 KiB take about the same time,
// then the time grows with the bytes once steps hold whole slots.
double fifoCostBytes(double bytes, uint64_t slotBytes, int blocks);

// A prediction is linear in the profile's parameters: launches * launch + sum calls[p] * launch
// extra[p] + sum latency[t][p] * alpha[t][p] + sum bytes[t][p] / beta[t][p] + sum storeBytes[t][p]
// / store beta[t][p] + copyBytes / copy. starscream-tune fits the parameters on them.
struct Features {
  double latency[kNumTiers][kNumProtocols] = {};     // steps paying the (tier, protocol) latency
  double bytes[kNumTiers][kNumProtocols] = {};       // bytes at the (tier, protocol) bandwidth
  double storeBytes[kNumTiers][kNumProtocols] = {};  // zero-copy stores into peers' memory
  double copyBytes = 0;                              // local copies and reductions
  double calls[kNumProtocols] = {};                  // launches of the call's protocol's kernel
  double launches = 0;                               // kernel launches (each pays the launch)
};

struct Estimate {
  Algo algo = Algo::kAuto;
  Protocol protocol = Protocol::kFifo;
  bool valid = false;
  std::string why;  // when not valid: why the algorithm cannot serve the call
  double timeUs = 0;
  Features features;  // of the critical channel of the slowest rank
};

// What the tuner picks for a call: the algorithm and the protocol its steps take (for the
// symmetric algorithm: LL packets, or zero-copy on the bulk or the wide grid).
struct Choice {
  Algo algo = Algo::kRing;
  Protocol protocol = Protocol::kFifo;
  bool operator==(const Choice&) const = default;
};

// A choice and where it came from (Tuner::explain; starscream-model prints it).
struct Decision {
  Choice choice;
  // The calibration's measured anchors ranked the chosen way against the other measured ones
  // (tuner/anchors.h); false: the model's predictions did.
  bool measured = false;
  std::string why;  // the measured times that decided, or why the model did; "" when no anchor
};

struct StagingVerdict;  // tuner/select.h

class Tuner {
 public:
  // `anchors`: the calibration sweep's measured times on this machine (tuner/anchors.h), which
  // rank the algorithms they reach; none: the model ranks every algorithm.
  Tuner(Topology topo, TunerProfile profile, ModelLimits limits = {}, Anchors anchors = {});

  const Topology& topology() const { return topo_; }
  const TunerProfile& profile() const { return profile_; }
  const ProfileVariant& variant() const { return *variant_; }
  const ModelLimits& limits() const { return limits_; }
  const Anchors& anchors() const { return anchors_; }

  // `bytes` as selectAlgo counts them: the larger of the call's per-rank input and output.
  // `symmetric`: registered (or zero-copy-able) buffers, so the symmetric algorithm may run.
  // The symmetric algorithm's protocol is the model's too: LL packets for all-reduces up to the
  // LL limit, else zero-copy, on whichever grid (bulk or wide, all-gather only) it predicts
  // faster. `as`: cost the steps with this protocol (the NCCL tuner plugin asks what NCCL's ring
  // would take with LL packets; calibration pins the symmetric algorithm's protocol as the
  // benchmark did). Invalid where the executor has no such path (LL beyond its limit or for
  // another collective, the wide grid for anything but all-gather).
  Estimate estimate(CollKind coll, uint64_t bytes, Algo algo, bool symmetric,
                    const Protocol* as = nullptr) const;
  // Every algorithm (kRing .. kSymmetric), valid or not, in enum order.
  std::vector<Estimate> estimateAll(CollKind coll, uint64_t bytes, bool symmetric) const;
  // Every way the executor can run the call, with the model's time: each valid algorithm with the
  // protocol it runs at this size, and all-gather's zero-copy push on both grids. `only`: that
  // algorithm's alone. What choose ranks (and online tuning tries, tuner/refine.h).
  std::vector<RankedCandidate> candidates(CollKind coll, uint64_t bytes, bool symmetric,
                                          Algo only = Algo::kAuto) const;
  // The fastest valid algorithm and its protocol; ties go to the earlier algorithm in enum order
  // (and to the bulk grid). Where the calibration's anchors reach the size, the measured
  // algorithms are ranked by their measured times (rankWithAnchors). `only`: that algorithm
  // (forced by STARSCREAM_ALGO), with its fastest protocol; when it cannot serve the call, {only,
  // its usual protocol}. Cached per size class (a quarter octave), so a call costs a map lookup
  // once its class has been seen.
  Choice choose(CollKind coll, uint64_t bytes, bool symmetric, Algo only = Algo::kAuto) const;
  // choose's answer with where it came from (uncached: for tools and logs).
  Decision explain(CollKind coll, uint64_t bytes, bool symmetric, Algo only = Algo::kAuto) const;

  double timeOf(const Features& f) const;
  // The rate local copies run at (GB/s a rank copies while every rank does), as the model uses it.
  double copyGBps() const { return copyGBps_; }
  // Why a prediction is what it is: its largest term and that term's share of the time, e.g.
  // "usr zero_copy bytes 71%", "launch 64%", "xgmi fifo latency 52%", "copy 40%".
  std::string boundBy(const Features& f) const;
  // Hash of what the choices depend on: ranks of one communicator must agree on it.
  uint64_t fingerprint() const;

 private:
  Topology topo_;
  TunerProfile profile_;
  const ProfileVariant* variant_;
  ModelLimits limits_;
  Anchors anchors_;
  std::array<std::array<AlphaBeta, kNumProtocols>, kNumTiers> params_{};  // resolved, all > 0
  double copyGBps_ = 0;
  mutable std::mutex mu_;
  mutable std::map<std::tuple<int, bool, int, int>, Choice>
      choices_;  // (coll, symmetric, class, only)
  // Connections sharing one physical link, per (coll, algo) and tier: see sharing().
  mutable std::map<std::pair<int, int>, std::array<double, kNumTiers>> sharing_;

  // stagingVerdict's answers (serves, pays) per (collective, size class), under mu_
  // (tuner/select.cc).
  mutable std::map<std::pair<int, int>, std::pair<bool, bool>> staging_;
  friend StagingVerdict stagingVerdict(const Tuner& tuner, CollKind coll, uint64_t bytes);

  std::array<double, kNumTiers> sharing(CollKind coll, Algo algo) const;
  // choose's work for the size class represented by `rep`.
  Decision decide(CollKind coll, uint64_t rep, bool symmetric, Algo only) const;
};

// Size classes of a quarter octave, represented by their upper end (classBytes): a size never
// exceeds its class's, so protocol limits at powers of two (LL up to 64 KiB) fall on the right
// side. Choices made per class (Tuner::choose, stagingPaysOff, online tuning) are made once.
int sizeClass(uint64_t bytes);
uint64_t classBytes(int cls);

// The per-call count an algorithm sees for `bytes` (see CollArgs::count), at least 1.
uint64_t countForBytes(CollKind coll, uint64_t bytes, int nranks, size_t elemBytes);
// busbw as nccl-tests defines it, GB/s, for a call of `bytes` taking `us`.
double busBandwidthGBps(CollKind coll, uint64_t bytes, int nranks, double us);

}  // namespace ssc
