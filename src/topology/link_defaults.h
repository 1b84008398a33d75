// SPDX-License-Identifier: MIT
// Link figures used when neither the emulation file nor a discovery provider gives one. Every
// figure carries its source in LinkSpec::source, so `starscream-topo` shows whether a number
// is a vendor specification, a derived "usable" estimate or a plain guess.
// The table and its references are documented in docs/topology-format.md ("Defaults").
#pragma once

#include <string>
#include <string_view>

#include "src/topology/topology.h"

namespace ssc {

// The default spec of `tier` for GPUs of `model` ("MI300X", "H200", ...; unknown models get
// the MI300X figures, said so in the source). partitionsPerGpu matters where the intra-GPU
// path is one shared resource rather than point-to-point links (H200 under MPS: every
// partition copies through the same HBM, so each of P partitions gets 1/P of it).
LinkSpec defaultLinkSpec(std::string_view model, LinkTier tier, int partitionsPerGpu);

// Maps a runtime device name ("AMD Instinct MI300X", "NVIDIA H200", "gfx942") onto the short
// model names the defaults table and topology files use; unknown names come back trimmed.
std::string normalizeGpuModel(std::string_view deviceName);

}  // namespace ssc
