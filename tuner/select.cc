// SPDX-License-Identifier: MIT
#include "tuner/select.h"

#include <iterator>
#include <sstream>

#include "src/collectives/algorithms.h"
#include "src/core/errors.h"
#include "src/core/log.h"
#include "tuner/model.h"

namespace ssc {

namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(tolower(c));
  return s;
}

}  // namespace

bool parseAlgoName(const std::string& raw, Algo* out) {
  std::string name = lower(raw);
  if (name == "ring" || name == "flat_ring" || name == "flat")
    *out = Algo::kRing;
  else if (name == "bidir_ring" || name == "bidir")
    *out = Algo::kBidirRing;
  else if (name == "direct")
    *out = Algo::kDirect;
  else if (name == "hierarchical" || name == "hier")
    *out = Algo::kHierarchical;
  else if (name == "symmetric" || name == "zero_copy")
    *out = Algo::kSymmetric;
  else if (name == "auto" || name.empty())
    *out = Algo::kAuto;
  else
    return false;
  return true;
}

namespace {

constexpr CollKind kAllColls[] = {
    CollKind::kAllReduce, CollKind::kReduceScatter, CollKind::kAllGather, CollKind::kBroadcast,
    CollKind::kReduce,    CollKind::kAllToAll,      CollKind::kSendRecv};

// A parsed STARSCREAM_ALGO: the global choice and one per collective (kAuto: none).
struct AlgoSpec {
  Algo global = Algo::kAuto;
  Algo per[std::size(kAllColls)] = {Algo::kAuto, Algo::kAuto, Algo::kAuto, Algo::kAuto,
                                    Algo::kAuto, Algo::kAuto, Algo::kAuto};
  std::string error;  // "" or what checkAlgoSpec reports
};

AlgoSpec parseSpec(const std::string& spec) {
  AlgoSpec out;
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const auto eq = item.find('=');
    const std::string name = eq == std::string::npos ? item : item.substr(eq + 1);
    Algo a;
    if (!parseAlgoName(name, &a) || (name.empty() && eq != std::string::npos)) {
      if (out.error.empty())
        out.error = fmt::format(
            "'{}' is not an algorithm (accepted: {}; or per collective "
            "COLL=ALGO,... e.g. allreduce=hierarchical,allgather=ring)",
            name, kAlgoNameList);
      continue;
    }
    if (eq == std::string::npos) {
      out.global = a;
      continue;
    }
    const std::string coll = lower(item.substr(0, eq));
    bool found = false;
    for (size_t k = 0; k < std::size(kAllColls); ++k)
      if (coll == collName(kAllColls[k])) {
        out.per[k] = a;
        found = true;
      }
    if (!found && out.error.empty()) {
      std::string names;
      for (CollKind k : kAllColls) names += (names.empty() ? "" : ", ") + std::string(collName(k));
      out.error = fmt::format("'{}' is not a collective (accepted: {})", coll, names);
    }
  }
  return out;
}

// STARSCREAM_ZERO_COPY_GRID pins the grid of a zero-copy all-gather (the one call with two).
Choice withGrid(Choice c, CollKind coll, ZeroCopyGrid grid) {
  if (c.algo == Algo::kSymmetric && coll == CollKind::kAllGather && c.protocol != Protocol::kFifo &&
      grid != ZeroCopyGrid::kAuto)
    c.protocol = grid == ZeroCopyGrid::kWide ? Protocol::kZeroCopyWide : Protocol::kZeroCopy;
  return c;
}

}  // namespace

std::string checkAlgoSpec(const std::string& spec) {
  if (spec.empty()) return "";
  return parseSpec(spec).error;
}

sscResult_t parseForcedAlgos(const std::string& spec, ForcedAlgos* out) {
  *out = noForcedAlgos();
  if (spec.empty()) return sscSuccess;
  const AlgoSpec parsed = parseSpec(spec);
  if (!parsed.error.empty())
    return fail(sscInvalidArgument, "STARSCREAM_ALGO='{}': {}", spec, parsed.error);
  for (size_t k = 0; k < std::size(kAllColls); ++k)
    (*out)[static_cast<size_t>(kAllColls[k])] =
        parsed.per[k] != Algo::kAuto ? parsed.per[k] : parsed.global;
  return sscSuccess;
}

Choice selectCall(const Tuner& tuner, CollKind coll, uint64_t bytes, bool symmetric, Algo forced,
                  ZeroCopyGrid grid) {
  const Topology& topo = tuner.topology();
  Choice c{Algo::kAuto, Protocol::kFifo};
  if (forced != Algo::kAuto) {
    if (algoSupports(topo, coll, forced) && (forced != Algo::kSymmetric || symmetric)) {
      // The forced algorithm with the protocol the model gives it (LL, or a zero-copy grid).
      c = tuner.choose(coll, bytes, symmetric, forced);
    } else {
      SSC_LOG(kInfo, "STARSCREAM_ALGO: {} cannot run {} here; choosing automatically",
              algoName(forced), collName(coll));
    }
  }
  // Point-to-point has one algorithm: every rank talks to each peer directly. So has
  // all-to-all, but for zero-copy: reading each block once from the peer's own buffer beats
  // moving it through a FIFO (a copy in, a copy out) at every size measured (H200, K = 8: the
  // FIFO path took 81 us for 512 bytes and 24 GB/s busbw at 1 GiB).
  if (c.algo != Algo::kAuto) return withGrid(c, coll, grid);
  if (coll == CollKind::kSendRecv) {
    c = {Algo::kDirect, Protocol::kFifo};
  } else if (coll == CollKind::kAllToAll) {
    c = symmetric && algoSupports(topo, coll, Algo::kSymmetric)
            ? Choice{Algo::kSymmetric, Protocol::kZeroCopy}
            : Choice{Algo::kDirect, Protocol::kFifo};
  } else {
    c = tuner.choose(coll, bytes, symmetric);
  }
  return withGrid(c, coll, grid);
}

Algo selectAlgo(const Tuner& tuner, CollKind coll, uint64_t bytes, bool symmetric, Algo forced) {
  return selectCall(tuner, coll, bytes, symmetric, forced).algo;
}

Algo selectAlgo(const Topology& topo, CollKind coll, uint64_t bytes, bool symmetric, Algo forced) {
  const Tuner tuner(topo, defaultProfile(topo));
  return selectAlgo(tuner, coll, bytes, symmetric, forced);
}

namespace {

StagingVerdict stagingVerdictAt(const Tuner& tuner, CollKind coll, uint64_t bytes) {
  const Estimate zc = tuner.estimate(coll, bytes, Algo::kSymmetric, true);
  if (!zc.valid) return {false, false};
  const Choice fifo = tuner.choose(coll, bytes, false);
  const Estimate direct = tuner.estimate(coll, bytes, fifo.algo, false);
  if (!direct.valid) return {true, true};
  double zcUs = zc.timeUs, fifoUs = direct.timeUs;
  // A model estimate set against a measured time would weigh two kinds of error against each
  // other: both measured, or both the model's. (Where the sweep timed the FIFO algorithm faster
  // than the zero-copy kernel, the model alone could still send the call through staging, at the
  // zero-copy kernel's time plus two copies: slower than either.)
  double measuredZc = 0, measuredFifo = 0;
  if (tuner.anchors().timeAt(coll, Algo::kSymmetric, zc.protocol, bytes, &measuredZc) &&
      tuner.anchors().timeAt(coll, fifo.algo, fifo.protocol, bytes, &measuredFifo)) {
    zcUs = measuredZc;
    fifoUs = measuredFifo;
  }
  // Each copy is a kernel (or copy) launch of its own on the caller's stream besides its bytes: at
  // the smallest sizes the launches are all the copies cost, and two of them can exceed what the
  // zero-copy kernel saves over a FIFO algorithm.
  const double copiesUs =
      2.0 * (tuner.variant().launchUs + static_cast<double>(bytes) / tuner.copyGBps() * 1e-3);
  return {true, zcUs + copiesUs < fifoUs};
}

}  // namespace

StagingVerdict stagingVerdict(const Tuner& tuner, CollKind coll, uint64_t bytes) {
  const int cls = sizeClass(bytes);
  const std::pair<int, int> key{static_cast<int>(coll), cls};
  {
    std::lock_guard<std::mutex> g(tuner.mu_);
    if (auto it = tuner.staging_.find(key); it != tuner.staging_.end())
      return {it->second.first, it->second.second};
  }
  // Once per size class, at the class's size, as Tuner::choose decides.
  const StagingVerdict v = stagingVerdictAt(tuner, coll, classBytes(cls));
  std::lock_guard<std::mutex> g(tuner.mu_);
  if (tuner.staging_.size() > 4096) tuner.staging_.clear();
  tuner.staging_.emplace(key, std::make_pair(v.serves, v.pays));
  return v;
}

bool stagingPaysOff(const Tuner& tuner, CollKind coll, uint64_t bytes) {
  return stagingVerdict(tuner, coll, bytes).pays;
}

bool stagingServes(const Tuner& tuner, CollKind coll, uint64_t bytes) {
  return stagingVerdict(tuner, coll, bytes).serves;
}

}  // namespace ssc
