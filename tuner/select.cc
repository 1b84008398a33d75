#include "tuner/select.h"

#include <mutex>
#include <sstream>

#include "src/collectives/algorithms.h"
#include "src/core/env.h"
#include "src/core/log.h"

namespace ssc {

namespace {

// Rule table. Thresholds are per-rank bytes of the call.
// Below kSmallMessageBytes latency dominates: direct algorithms finish in one or two hops while
// a ring needs 2(n-1) of them.
constexpr uint64_t kSmallMessageBytes = 64 * 1024;
// Partitioned GPUs (more than one rank per GPU) use the two-tier algorithms from this size up:
// below it the extra phase boundaries cost more than the inter-GPU bytes they save.
constexpr uint64_t kHierarchicalMinBytes = 64 * 1024;
// The GPU's zero-copy kernels keep one pointer per peer in kernel arguments (64 at most).

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(tolower(c));
  return s;
}

}  // namespace

bool parseAlgoName(const std::string& raw, Algo* out) {
  std::string name = lower(raw);
  if (name == "ring" || name == "flat_ring" || name == "flat") *out = Algo::kRing;
  else if (name == "bidir_ring" || name == "bidir") *out = Algo::kBidirRing;
  else if (name == "direct") *out = Algo::kDirect;
  else if (name == "hierarchical" || name == "hier") *out = Algo::kHierarchical;
  else if (name == "symmetric" || name == "zero_copy") *out = Algo::kSymmetric;
  else if (name == "auto" || name.empty()) *out = Algo::kAuto;
  else return false;
  return true;
}

Algo forcedAlgo(CollKind coll) {
  std::string spec = env::getString("STARSCREAM_ALGO");
  if (spec.empty()) return Algo::kAuto;
  Algo global = Algo::kAuto, mine = Algo::kAuto;
  bool bad = false;
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ',')) {
    auto eq = item.find('=');
    Algo a;
    if (eq == std::string::npos) {
      if (parseAlgoName(item, &a)) global = a; else bad = true;
    } else if (!parseAlgoName(item.substr(eq + 1), &a)) {
      bad = true;
    } else if (lower(item.substr(0, eq)) == collName(coll)) {
      mine = a;
    }
  }
  if (bad) {
    static std::once_flag once;
    std::call_once(once, [&] {
      SSC_LOG(kWarn, "STARSCREAM_ALGO='{}' has entries that are not algorithms (ring, bidir_ring, "
                     "direct, hierarchical, symmetric, auto); ignoring them", spec);
    });
  }
  return mine != Algo::kAuto ? mine : global;
}

Algo selectAlgo(const Topology& topo, CollKind coll, uint64_t bytes, bool symmetric) {
  Algo forced = forcedAlgo(coll);
  if (forced != Algo::kAuto) {
    if (algoSupports(topo, coll, forced) && (forced != Algo::kSymmetric || symmetric)) return forced;
    SSC_LOG(kInfo, "STARSCREAM_ALGO: {} cannot run {} here; choosing automatically",
            algoName(forced), collName(coll));
  }
  if (coll == CollKind::kAllToAll || coll == CollKind::kSendRecv) return Algo::kDirect;
  // Registered buffers on one node: every rank reads its peers' memory directly, each byte
  // crosses the fabric once and no FIFO copy is made. Across nodes peers are not mappable.
  if (symmetric && topo.nnodes == 1 && topo.nranks() <= kSymmetricMaxRanks &&
      algoSupports(topo, coll, Algo::kSymmetric))
    return Algo::kSymmetric;
  const bool partitioned = topo.maxPartitions() > 1 && topo.uniformPartitions();
  if (bytes < kSmallMessageBytes && coll != CollKind::kBroadcast && coll != CollKind::kReduce)
    return Algo::kDirect;
  if (partitioned && bytes >= kHierarchicalMinBytes) return Algo::kHierarchical;
  return Algo::kBidirRing;
}

}  // namespace ssc
