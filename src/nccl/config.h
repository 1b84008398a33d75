// SPDX-License-Identifier: MIT
// ncclConfig_t parsing. The struct is versioned by its leading size/magic/version fields: a
// program built against an older nccl.h passes a shorter struct, one built against a newer
// header a longer one. Only the fields that lie inside the caller's `size` are read.
#pragma once

#include <string>

#include "src/nccl/shim.h"

namespace ssc::nccl {

// What the shim keeps of a configuration. Starscream chooses its own channels, CTAs and
// transports, so the performance hints (cgaClusterSize, min/maxCTAs, netName, trafficClass,
// collnetEnable, CTAPolicy, nvlsCTAs, nChannelsPerNetPeer, nvlinkCentricSched) are validated
// like NCCL validates them and then ignored; sharing of resources with a parent
// (splitShare/shrinkShare) is an optimisation Starscream does not make, so they do not change
// results either.
struct ShimConfig {
  bool blocking = true;
  bool splitShare = false;
  bool shrinkShare = false;
  std::string commName;
};

// The magic NCCL_CONFIG_INITIALIZER stores (nccl.h spells it only inside the macro).
constexpr unsigned int kConfigMagic = 0xcafebeef;

// Parses `config` into *out. NULL means the defaults, or `*inherit` when given: NCCL's rule for
// ncclCommSplit/ncclCommShrink ("if config is NULL, the new communicator will inherit the
// original communicator's configuration"). Fails with ncclInvalidArgument and a message naming
// the field for a struct that was not initialised with NCCL_CONFIG_INITIALIZER or a field
// value NCCL itself rejects.
ncclResult_t parseConfig(const char* fn, const ncclConfig_t* config, const ShimConfig* inherit,
                         ShimConfig* out);

}  // namespace ssc::nccl
