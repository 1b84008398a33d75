// Algorithm selection for one call: STARSCREAM_ALGO when it forces one, else the cost model of the
// communicator's Tuner (tuner/model.h): the algorithm with the least predicted time.
#pragma once

#include <cstdint>
#include <string>

#include "src/collectives/plan.h"
#include "src/topology/topology.h"

namespace ssc {

// The algorithm names STARSCREAM_ALGO and the perf tools' -A accept, for messages and help.
inline constexpr const char* kAlgoNameList =
    "ring, flat_ring (= ring), bidir_ring, direct, hierarchical, symmetric, auto";

// Parses an algorithm name (those of kAlgoNameList, any case; also the aliases flat, bidir,
// hier and zero_copy).
bool parseAlgoName(const std::string& name, Algo* out);

// Checks a STARSCREAM_ALGO value ("ring", "allreduce=hierarchical,allgather=ring", ...): ""
// when every entry names an algorithm (and, before '=', a collective), else why not.
std::string checkAlgoSpec(const std::string& spec);
// Communicator init: sscInvalidArgument, naming the variable and the accepted values, when
// STARSCREAM_ALGO is set to something checkAlgoSpec refuses.
sscResult_t validateAlgoEnv();

// The algorithm STARSCREAM_ALGO forces for `coll` (kAuto when it forces none). The variable is
// read on every call; malformed entries (possible only when it changed after init) are reported
// once on stderr and ignored.
Algo forcedAlgo(CollKind coll);

// The most ranks the zero-copy (symmetric) algorithm serves: its kernels keep a pointer per peer.
inline constexpr int kSymmetricMaxRanks = 64;

class Tuner;

// Picks the algorithm for a call moving `bytes` (the per-rank buffer size of the call);
// `symmetric`: both buffers are symmetric registrations, so the zero-copy algorithm can run.
// Forced algorithms that cannot serve the call fall back to the model's choice, with an INFO log.
Algo selectAlgo(const Tuner& tuner, CollKind coll, uint64_t bytes, bool symmetric);
// The same with a throw-away Tuner of the topology's default profile (tests, tools without a
// communicator); it builds plans on every call, so the call path uses the overload above.
Algo selectAlgo(const Topology& topo, CollKind coll, uint64_t bytes, bool symmetric);

}  // namespace ssc
