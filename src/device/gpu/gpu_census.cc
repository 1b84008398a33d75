#include "src/device/gpu/gpu_census.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "src/core/comm.h"
#include "src/core/errors.h"
#include "src/core/log.h"
#include "src/device/gpu/gpu_runtime.h"
#include "src/kernels/gpu/plan_kernel.h"
#include "src/kernels/gpu/sym_kernel.h"

namespace ssc::gpu {

namespace {

struct Mine {
  char busId[32];
  int32_t sms;
  int32_t mpsPercent;    // 100 when not limited
  int32_t planPerSM;     // occupancy of the FIFO kernel
  int32_t symPerSM;      // occupancy of the symmetric kernel
};

int largestPow2AtMost(int v) {
  int p = 1;
  while (p * 2 <= v) p *= 2;
  return p;
}

}  // namespace

sscResult_t agreeLaunchLimits(sscComm* comm, int channels, LaunchLimits* out) {
  std::vector<Mine> all(comm->nranks);
  Mine& me = all[comm->rank];
  std::memset(&me, 0, sizeof(me));
  int device = 0, sms = 0;
  hipError_t e = hipGetDevice(&device);
  if (e == hipSuccess) e = hipDeviceGetPCIBusId(me.busId, sizeof(me.busId), device);
  if (e == hipSuccess) e = hipDeviceGetAttribute(&sms, hipDeviceAttributeMultiprocessorCount, device);
  if (e != hipSuccess)
    return fail(sscUnhandledDeviceError, "querying the GPU failed: {}", hipGetErrorString(e));
  me.sms = sms;
  me.mpsPercent = 100;
  if (const char* p = std::getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE")) {
    const double v = std::atof(p);
    if (v > 0 && v < 100) me.mpsPercent = static_cast<int32_t>(v);
  }
  me.planPerSM = planKernelBlocksPerSM();
  me.symPerSM = symKernelBlocksPerSM();
  SSC_CHECK(comm->bootstrap->allGather(all.data(), sizeof(Mine)));

  int perChannel = 32, symBlocks = kMaxSymBlocks, shareMin = 1 << 30;
  bool same = true;
  for (const Mine& r : all) {
    int sharing = 0;
    for (const Mine& q : all) sharing += std::strncmp(q.busId, r.busId, sizeof(r.busId)) == 0;
    same = same && sharing == comm->nranks;
    // Under an MPS cap the runtime already reports the capped count (measured on the H200:
    // 14, 32, 66 SMs at 12, 25, 50%), so that count is the share; without a cap, ranks on one
    // GPU split its SMs.
    const int share = std::max(1, r.mpsPercent < 100 ? r.sms : r.sms / sharing);
    shareMin = std::min(shareMin, share);
    // FIFO kernel: resident, and at most half the share per channel. Measured on the H200 (run
    // 1 vs 2, perf/RESULTS.md): 4 blocks per channel at K = 8 beat the full share, 2x.
    const int fifoFit = std::max(1, share * r.planPerSM / channels);
    const int fifoHalf = std::max(1, (share + 2 * channels - 1) / (2 * channels));
    perChannel = std::min({perChannel, fifoFit, fifoHalf});
    symBlocks = std::min(symBlocks, std::max(1, share * r.symPerSM));
  }
  out->blocksPerChannel = largestPow2AtMost(perChannel);
  out->symBlocks = symBlocks;
  out->shareSMs = shareMin;
  out->sameDevice = same;
  SSC_LOG(kInfo, "GPU launch limits: SM share {}, {} FIFO block(s) per channel, symmetric grid "
          "<= {} blocks ({} per SM), {}", shareMin, out->blocksPerChannel, symBlocks, me.symPerSM,
          same ? "all ranks on one GPU (device-scope flags)" : "ranks on several GPUs");
  return sscSuccess;
}

}  // namespace ssc::gpu
