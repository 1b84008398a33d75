// SPDX-License-Identifier: MIT
// Algorithm selection for one call: the communicator's STARSCREAM_ALGO choice when it forces one,
// else the cost model of the communicator's Tuner (tuner/model.h): the least predicted time.
#pragma once

#include <cstdint>
#include <string>

#include "src/collectives/plan.h"
#include "src/device/comm_config.h"
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
// Parses a STARSCREAM_ALGO value into the per-collective choices a communicator keeps (its
// CommConfig, read once at init): sscInvalidArgument naming the variable and the accepted values
// when checkAlgoSpec refuses it.
sscResult_t parseForcedAlgos(const std::string& spec, ForcedAlgos* out);

// The most ranks the zero-copy (symmetric) algorithm serves: its kernels keep a pointer per peer.
inline constexpr int kSymmetricMaxRanks = 64;

class Tuner;
struct Choice;

// Picks the algorithm and protocol for a call moving `bytes` (the per-rank buffer size of the
// call); `symmetric`: both buffers are symmetric registrations, so the zero-copy algorithm can run.
// `forced`: the communicator's STARSCREAM_ALGO choice for `coll` (its CommConfig; kAuto: none).
// Forced algorithms that cannot serve the call fall back to the model's choice, with an INFO log.
// `grid`: STARSCREAM_ZERO_COPY_GRID, which pins the grid of a zero-copy all-gather (other calls
// have one grid and ignore it).
Choice selectCall(const Tuner& tuner, CollKind coll, uint64_t bytes, bool symmetric,
                  Algo forced = Algo::kAuto, ZeroCopyGrid grid = ZeroCopyGrid::kAuto);
// selectCall's algorithm.
Algo selectAlgo(const Tuner& tuner, CollKind coll, uint64_t bytes, bool symmetric,
                Algo forced = Algo::kAuto);
// The same with a throw-away Tuner of the topology's default profile (tests, tools without a
// communicator); it builds plans on every call, so the call path uses the overload above.
Algo selectAlgo(const Topology& topo, CollKind coll, uint64_t bytes, bool symmetric,
                Algo forced = Algo::kAuto);

// Whether a call on unregistered buffers runs faster zero-copy through staging buffers (the input
// copied in, the symmetric algorithm, the result copied out) than with the FIFO algorithm the
// tuner picks for plain buffers. Where the calibration measured both at this size, their measured
// times decide, as they decide the choice between them on registered buffers; elsewhere the
// model's estimates. The two copies are the model's either way: a launch each, and their bytes at
// the copy rate. Decided once per size class (tuner/model.h), at the class's size, and cached.
bool stagingPaysOff(const Tuner& tuner, CollKind coll, uint64_t bytes);
// Whether the symmetric algorithm can serve a staged call of this size (the staging buffers are
// symmetric): what a forced `symmetric` stages on. Cached with stagingPaysOff's answer.
bool stagingServes(const Tuner& tuner, CollKind coll, uint64_t bytes);

// Both answers for the size class of `bytes`, computed once (the estimates behind them build
// plans for every rank: tens of microseconds, too slow for every call).
struct StagingVerdict {
  bool serves = false;  // stagingServes
  bool pays = false;    // stagingPaysOff
};
StagingVerdict stagingVerdict(const Tuner& tuner, CollKind coll, uint64_t bytes);

}  // namespace ssc
