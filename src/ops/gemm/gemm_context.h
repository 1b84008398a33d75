// SPDX-License-Identifier: MIT
// The context behind sscGemm_t and the backend-specific halves of the fused GEMM-collectives:
// the host backend's (host_gemm.cc: the reference GEMM on the CPU, then the core's collectives)
// and the GPU backend's (gpu_gemm.cc and its neighbours: cuBLASLt / hipBLASLt, the steps on the
// caller's stream; SSC_GEMM_COPY_ENGINE's copies on a stream of the context's). Each is an
// engine (gemm_engine.h) for the op's one algorithm (gemm_run.cc), which executes the Plan
// (gemm_plan.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "src/core/futex_wait.h"
#include "src/device/services.h"
#include "src/ops/gemm/gemm_plan.h"
#include "starscream/starscream_ops.h"

struct sscComm;

namespace ssc {
class Backend;
}

namespace ssc::gemm {

class GpuGemmState;  // gpu_gemm_state.h: BLAS handle, side stream, cached algorithms

// A validated call.
struct Call {
  Problem p;
  Plan plan;
  int rank = 0;
  sscDataType_t inType = sscBfloat16;
  sscDataType_t outType = sscBfloat16;
  bool weightKN = false;
  const void* x = nullptr;
  const void* w = nullptr;
  void* y = nullptr;
  void* xGathered = nullptr;   // all-gather: also receives the gathered X (or NULL)
  const void* bias = nullptr;  // [n] of outType added to the rows of y this rank holds (or NULL)
  // SSC_GEMM_COPY_ENGINE: the fused variant orders the ranks with stream memory operations
  // (gpu_gemm_ce.cc); the host backend runs the same flag protocol. Only where the caller's
  // flag asks (sscGemmAuto never chooses it, autoPicksFused says why).
  bool copyEngine = false;
};

}  // namespace ssc::gemm

struct sscGemmContext {
  static constexpr uint64_t kMagic = 0x53534347454d4d31ull;
  uint64_t magic = kMagic;
  sscComm* comm = nullptr;
  // Kept apart from comm so destroy frees with the right backend and device.
  ssc::Backend* backend = nullptr;
  int device = -1;
  // The backend's device services (null on the host backend): the GPU half's runtime calls.
  ssc::DeviceServices* dev = nullptr;
  bool onGpu = false;  // dev != nullptr: the GPU half runs the calls
  size_t workspaceBytes = 0;
  // The GPU half vets the vendor BLAS's algorithm for each new GEMM shape (STARSCREAM_GEMM_PROBE,
  // probeWanted in gemm_plan.h; gpu_gemm_probe.h).
  bool probe = false;
  // How long the ops' waits on the peers' flags may take: STARSCREAM_TIMEOUT as sscGemmCreate
  // found it (read then, once, with STARSCREAM_GEMM_PROBE).
  ssc::WaitLimits waits;
  // The unfused and chunked variants hold each collective until every rank reached it
  // (STARSCREAM_GEMM_BARRIER, barrierWanted in gemm_plan.h; kernelArrivalBarrier in
  // gpu_gemm_fused.cc): the workspace is then mapped into the peers at the first such call, and
  // arriveUses counts the barriers (the value of the arrive flags; the same on every rank).
  bool barrier = false;
  uint32_t arriveUses = 0;
  // backend memory: [slot 0][slot 1][pad] in workspaceBytes, then kFusedFlagBytes of flags
  // (zeroed at creation) for the fused variant
  void* workspace = nullptr;
  ssc::gemm::GpuGemmState* gpu = nullptr;
  // The workspace mapped into every peer (registered at the first fused call, or the first call
  // with a collective when `barrier` is on, collectively; fusedPeers[q] is rank q's workspace as
  // mapped here) and the number of chunks run fused so far (the flags' values; the same on every
  // rank, as calls are collective).
  bool fusedTried = false;
  std::vector<void*> fusedPeers;
  uint32_t fusedUses = 0;
  // sscGemmAuto's rates (gemm_rates.h) per (op, size class of the collective, its element
  // size): a few estimates of the communicator's tuner each, made at the first call of a class.
  // A function of the key alone, so every rank holds the same rates. Guarded by ratesMu.
  std::mutex ratesMu;
  std::map<std::tuple<int, int, int>, ssc::gemm::GemmRates> rates;
  // The index of the done flags the latest fused use wrote (the reduce-scatter's slot, the
  // all-gather's use % 2): SSC_GEMM_COPY_ENGINE's gate waits on that word only (gpu_gemm_ce.cc).
  int lastDoneIndex = 0;
};

namespace ssc::gemm {

sscResult_t hostRun(sscGemmContext* g, const Call& c, sscStream_t stream);

// Element size of x, w or y, and byte offsets into them (the host and GPU halves alike).
inline size_t typeBytes(sscDataType_t t) { return t == sscFloat32 ? 4 : 2; }
inline const char* cbyte(const void* p, size_t off) { return static_cast<const char*>(p) + off; }
inline char* byte(void* p, size_t off) { return static_cast<char*>(p) + off; }

// The rows of y this rank holds after a call: its block of the sum (reduce-scatter), or all m
// (all-gather). The bias goes into these.
inline int64_t heldRows(const Call& c) {
  return c.p.op == Op::kReduceScatter ? rowShard(c.p.m, c.p.nranks, c.rank).count : c.p.m;
}

// The fused variant's flags in rank q's workspace (fusedPeers[q]; q = own rank: local).
uint32_t* fusedReady(sscGemmContext* g, int q, int slot);
uint32_t* fusedDone(sscGemmContext* g, int q, int slot, int owner);
// The fused all-gather's from[slot][producer] in rank q's flags: producer's rows are there (push)
// or in the producer's own slot (per rank), for the use number it holds.
uint32_t* fusedFrom(sscGemmContext* g, int q, int slot, int producer);
uint32_t* fusedBell(sscGemmContext* g, int q);
// The arrival barrier's arrive[producer] in rank q's flags.
uint32_t* fusedArrive(sscGemmContext* g, int q, int producer);
// SSC_GEMM_COPY_ENGINE's reduce-scatter: readyFrom[fi][producer] in rank q's flags.
uint32_t* fusedReadyFrom(sscGemmContext* g, int q, int fi, int producer);

// GPU backend (built only with one; the API reports sscInternalError otherwise).
sscResult_t gpuCreate(sscGemmContext* g);
void gpuDestroy(sscGemmContext* g);
sscResult_t gpuRun(sscGemmContext* g, const Call& c, sscStream_t stream);
// Copies the first `bytes` of this rank's fused flags to host memory (false on failure).
bool gpuFusedFlags(sscGemmContext* g, uint32_t* out, size_t bytes);

}  // namespace ssc::gemm
