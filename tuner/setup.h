// SPDX-License-Identifier: MIT
// A communicator's Tuner: built once at init from its topology, the profile
// (STARSCREAM_TUNER_PROFILE, the shipped one for the GPU model, or the topology's links) and the
// backend's limits.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

#include "tuner/model.h"

namespace ssc {

// allGather(data, bytes): the communicator's bootstrap all-gather of `bytes` per rank (data holds
// nranks x bytes, this rank's entry filled in). Ranks must choose alike, so a rank whose profile
// differs from its peers' (another STARSCREAM_TUNER_PROFILE) fails init, naming the rank.
sscResult_t createTuner(const Topology& topo, const ModelLimits& limits, int rank, int nranks,
                        const std::function<sscResult_t(void*, size_t)>& allGather,
                        std::shared_ptr<const Tuner>* out);

}  // namespace ssc
