// SPDX-License-Identifier: MIT
// transports/xgmi: reaching another GPU of the node (XGMI on AMD, NVLink/PCIe P2P on NVIDIA).
// Peers' memory is mapped through the same IPC handles as intra-GPU peers (transports/usr); what
// differs is that the two devices must be able to address each other, which this checks up
// front so a missing link is a clear error at init rather than a fault in a kernel.
#pragma once

#include "starscream/starscream.h"

namespace ssc::gpu {

// sscSuccess when `localDevice` can load/store memory of the GPU with PCI bus id `peerBusId`
// (a different GPU of this node). Same-GPU peers need no check. sscInvalidUsage with a message
// when no peer path exists, sscUnhandledDeviceError when the runtime fails.
sscResult_t checkPeerLink(int localDevice, const char* peerBusId, int peerRank);

}  // namespace ssc::gpu
