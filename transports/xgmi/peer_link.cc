// SPDX-License-Identifier: MIT
#include "transports/xgmi/peer_link.h"

#include "src/core/errors.h"
#include "src/platform/gpu_runtime.h"

namespace ssc::gpu {

sscResult_t checkPeerLink(int localDevice, const char* peerBusId, int peerRank) {
  int ndev = 0;
  if (hipGetDeviceCount(&ndev) != hipSuccess)
    return fail(sscUnhandledDeviceError, "cannot count devices to reach rank {}'s GPU", peerRank);
  // The peer's GPU must be visible to this process (CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES
  // masking a peer's GPU breaks IPC) and peer-accessible from ours.
  for (int d = 0; d < ndev; ++d) {
    char bus[64] = {};
    if (hipDeviceGetPCIBusId(bus, sizeof(bus), d) != hipSuccess) continue;
    if (std::string_view(bus) != peerBusId) continue;
    int can = 0;
    if (hipDeviceCanAccessPeer(&can, localDevice, d) != hipSuccess || !can)
      return fail(sscInvalidUsage,
                  "rank {}'s GPU {} is not peer-accessible from device {} (no "
                  "XGMI/NVLink/P2P path)",
                  peerRank, peerBusId, localDevice);
    return sscSuccess;
  }
  return fail(sscInvalidUsage,
              "rank {}'s GPU {} is not visible to this process; do not mask "
              "GPUs of one node from each other (CUDA_VISIBLE_DEVICES/HIP_VISIBLE_DEVICES)",
              peerRank, peerBusId);
}

}  // namespace ssc::gpu
