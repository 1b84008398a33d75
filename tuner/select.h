// Algorithm selection for one call: STARSCREAM_ALGO when it forces one, else a rule table with
// named thresholds. The cost-model tuner will replace the rule table behind this same function.
#pragma once

#include <cstdint>
#include <string>

#include "src/collectives/plan.h"
#include "src/topology/topology.h"

namespace ssc {

// Parses an algorithm name (ring, flat_ring, bidir_ring, direct, hierarchical, auto).
bool parseAlgoName(const std::string& name, Algo* out);

// The algorithm STARSCREAM_ALGO forces for `coll` (kAuto when it forces none). Malformed
// entries are reported once with a warning and ignored.
Algo forcedAlgo(CollKind coll);

// The most ranks the zero-copy (symmetric) algorithm serves: its kernels keep a pointer per peer.
inline constexpr int kSymmetricMaxRanks = 64;

// Picks the algorithm for a call moving `bytes` (the per-rank buffer size of the call);
// `symmetric`: both buffers are symmetric registrations, so the zero-copy algorithm can run.
// Forced algorithms that cannot serve the call fall back to the rule table, with an INFO log.
Algo selectAlgo(const Topology& topo, CollKind coll, uint64_t bytes, bool symmetric);

}  // namespace ssc
