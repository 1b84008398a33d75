// SPDX-License-Identifier: MIT
#include "src/device/gpu/gpu_census.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

#include "src/device/backend.h"
#include "src/core/errors.h"
#include "src/core/log.h"
#include "src/platform/gpu_check.h"
#include "src/platform/gpu_runtime.h"
#include "src/kernels/gpu/plan_kernel.h"
#include "src/kernels/gpu/sym_kernel.h"

namespace ssc::gpu {

namespace {

struct Mine {
  char host[64];           // gethostname: a UUID names a GPU only within one host's view
  unsigned char uuid[16];  // the device's UUID (every MPS client of one GPU sees the same)
  char busId[32];
  int32_t sms;
  int32_t mpsPercent;  // 100 when not limited
  int32_t planPerSM;   // occupancy of the FIFO kernel
  int32_t symPerSM;    // occupancy of the symmetric kernel
};

int largestPow2AtMost(int v) {
  int p = 1;
  while (p * 2 <= v) p *= 2;
  return p;
}

}  // namespace

sscResult_t agreeLaunchLimits(CommView* comm, int channels, LaunchLimits* out) {
  std::vector<Mine> all(comm->nranks);
  Mine& me = all[comm->rank];
  std::memset(&me, 0, sizeof(me));
  int device = 0, sms = 0;
  hipError_t e = hipGetDevice(&device);
  if (e == hipSuccess) e = hipDeviceGetPCIBusId(me.busId, sizeof(me.busId), device);
  if (e == hipSuccess)
    e = hipDeviceGetAttribute(&sms, hipDeviceAttributeMultiprocessorCount, device);
  if (e != hipSuccess) return SSC_GPU_FAIL(e, "querying the GPU");
  me.sms = sms;
  if (gethostname(me.host, sizeof(me.host) - 1) != 0) std::strcpy(me.host, "?");
  if (!sscDeviceUuid(device, me.uuid))
    return fail(sscUnhandledDeviceError, "querying the GPU's UUID failed");
  me.mpsPercent = 100;
  // As the communicator read it at its creation (the runtime applied it when the process began).
  const std::string cap = comm->settings.external("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
  if (!cap.empty()) {
    const double v = std::atof(cap.c_str());
    if (v > 0 && v < 100) me.mpsPercent = static_cast<int32_t>(v);
  }
  me.planPerSM = planKernelBlocksPerSM();
  me.symPerSM = symKernelBlocksPerSM();
  SSC_CHECK(comm->bootstrap->allGather(all.data(), sizeof(Mine)));

  int perChannel = 32, symBlocks = kMaxSymBlocks, shareMin = 1 << 30;
  bool same = true;
  for (const Mine& r : all) {
    // One GPU = one (host, UUID). Not the PCI bus id: on an MI300X in CPX mode every XCD
    // partition is its own agent with its own L2 (and its own UUID) behind the same bus, so
    // partitions of one package are not "one device" for the memory model.
    int sharing = 0;
    for (const Mine& q : all)
      sharing +=
          std::strncmp(q.host, r.host, sizeof(r.host)) == 0 && std::memcmp(q.uuid, r.uuid, 16) == 0;
    same = same && sharing == comm->nranks;
    // Under an MPS cap the runtime already reports the capped count (measured on the H200:
    // 14, 16, 32, 66 SMs at 12, 12.5, 25, 50%), so that count is the share; without a cap, ranks on
    // one GPU split its SMs.
    const int share = std::max(1, r.mpsPercent < 100 ? r.sms : r.sms / sharing);
    shareMin = std::min(shareMin, share);
    // FIFO kernel: resident, and at most half the share per channel. Measured on the H200: 4
    // blocks per channel at K = 8 beat the full share, 2x.
    const int fifoFit = std::max(1, share * r.planPerSM / channels);
    const int fifoHalf = std::max(1, (share + 2 * channels - 1) / (2 * channels));
    perChannel = std::min({perChannel, fifoFit, fifoHalf});
    symBlocks = std::min(symBlocks, std::max(1, share * r.symPerSM));
  }
  out->blocksPerChannel = largestPow2AtMost(perChannel);
  out->symBlocks = symBlocks;
  out->shareSMs = shareMin;
#if defined(SSC_GPU_IS_HIP)
  // Device (agent) scope only orders memory within one agent. Until a test on partitioned AMD
  // hardware shows that partitions sharing a UUID also share coherent caches, AMD keeps
  // system-scope signals everywhere.
  same = false;
#endif
  out->sameDevice = same;
  SSC_LOG(kInfo,
          "GPU launch limits: SM share {}, {} FIFO block(s) per channel, symmetric grid "
          "<= {} blocks ({} per SM), {}",
          shareMin, out->blocksPerChannel, symBlocks, me.symPerSM,
          same ? "all ranks on one GPU (device-scope flags)" : "ranks on several GPUs");
  return sscSuccess;
}

}  // namespace ssc::gpu
