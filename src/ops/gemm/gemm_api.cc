// SPDX-License-Identifier: MIT
// C entry points of the fused GEMM-collectives and the 2D-sharding helper (starscream_ops.h):
// validate every argument (the host arguments are the same on every rank, so every rank reaches
// the same verdict before any collective starts), choose the plan, hand over to the backend's
// half (host_gemm.cc or gpu_gemm.cc), which runs the op's algorithm (gemm_run.cc) on its engine.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "src/api/api.h"
#include "src/core/env.h"
#include "src/core/futex_wait.h"
#include "src/core/log.h"
#include "src/device/backend.h"
#include "src/ops/gemm/gemm_context.h"
#include "src/ops/gemm/gemm_rates.h"
#include "src/topology/topology.h"

using namespace ssc;
using namespace ssc::gemm;

namespace {

std::mutex g_ctxMu;
std::set<sscGemmContext*> g_contexts;

sscResult_t checkContext(const char* fn, sscGemmContext* g) {
  if (g == nullptr) return fail(sscInvalidArgument, "{}: gemm is NULL", fn);
  std::lock_guard<std::mutex> lock(g_ctxMu);
  if (g_contexts.count(g) == 0)
    return fail(sscInvalidUsage, "{}: gemm {} is not a live context (destroyed or never created)",
                fn, static_cast<void*>(g));
  return sscSuccess;
}

// A fused call returns before every owner has read this rank's slots (the next call's first
// wait covers that), so before the workspace goes, wait here until they have: the done flags of
// the last use of each slot, from every rank. Bounded by STARSCREAM_TIMEOUT (then freed anyway,
// with a warning: a peer that never reads is gone or hung).
void waitFusedReaders(sscGemmContext* g) {
  const int K = g->comm->nranks;
  const auto start = std::chrono::steady_clock::now();
  const double limit = g->waits.timeoutSeconds;
  std::vector<uint32_t> flags((kFusedDoneOff + 2 * kFusedMaxRanks * 4) / 4);
  for (;;) {
    bool all = true;
    if (g->onGpu) {
      if (!gpuFusedFlags(g, flags.data(), flags.size() * 4)) return;
    } else {
      for (size_t i = 0; i < flags.size(); ++i)
        flags[i] =
            std::atomic_ref<uint32_t>(static_cast<uint32_t*>(static_cast<void*>(
                                          static_cast<char*>(g->workspace) + g->workspaceBytes))[i])
                .load(std::memory_order_acquire);
    }
    for (uint32_t back = 0; back < 2 && back < g->fusedUses; ++back) {
      const uint32_t use = g->fusedUses - back;
      for (int q = 0; q < K; ++q)
        all = all && static_cast<int32_t>(
                         flags[kFusedDoneOff / 4 + (use % 2) * kFusedMaxRanks + q] - use) >= 0;
    }
    if (all) return;
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (limit > 0 && waited > limit) {
      SSC_LOG(kWarn,
              "sscGemmDestroy: peers did not finish reading this rank's fused GEMM slots "
              "within STARSCREAM_TIMEOUT; freeing the workspace anyway");
      return;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

void freeContext(sscGemmContext* g) {
  if (!g->fusedPeers.empty()) {
    if (g->fusedUses > 0) waitFusedReaders(g);
    (void)g->backend->deregisterBuffer(g->comm, g->workspace, g->fusedPeers);  // local unmaps
  }
  if (g->onGpu) gpuDestroy(g);  // frees the workspace too, on the context's device
  if (g->workspace != nullptr) (void)g->backend->memFree(g->workspace);
  g->magic = 0;
  delete g;
}

// Elements of a rows x cols matrix stay far from overflowing size_t and int64 byte offsets.
constexpr int64_t kMaxElems = int64_t{1} << 56;

sscResult_t checkMatrix(const char* fn, const char* what, int64_t rows, int64_t cols) {
  if (rows > 0 && cols > kMaxElems / rows)
    return fail(sscInvalidArgument, "{}: {} of {} x {} elements is too large", fn, what, rows,
                cols);
  return sscSuccess;
}

// AUTO's rates for p on g's communicator (gemm_rates.h), cached per size class in the context.
GemmRates ratesFor(sscGemmContext* g, const Problem& p) {
  const auto key = std::make_tuple(static_cast<int>(p.op), rateClass(collectiveBytes(p)),
                                   static_cast<int>(p.collBytes()));
  std::lock_guard<std::mutex> lock(g->ratesMu);
  auto it = g->rates.find(key);
  if (it == g->rates.end())
    it = g->rates.emplace(key, gemmRates(*g->comm->tuner, p, g->barrier)).first;
  return it->second;
}

// Validates args for op on g and builds the call (plan included).
// checkPointers: false for sscGemmQueryPlan, which asks about a shape only.
sscResult_t prepare(const char* fn, sscGemmContext* g, Op op, const sscGemmArgs_t* a, Call* c,
                    bool checkPointers = true, bool capturing = false) {
  if (a == nullptr) return fail(sscInvalidArgument, "{}: args is NULL", fn);
  // Arguments whose size ends at xGathered (a struct without `bias`): accepted, without a bias.
  const bool hasBias = a->size == sizeof(sscGemmArgs_t);
  if ((!hasBias && a->size != offsetof(sscGemmArgs_t, bias)) || a->magic != SSC_GEMM_ARGS_MAGIC)
    return fail(sscInvalidArgument,
                "{}: args were not initialised with SSC_GEMM_ARGS_INITIALIZER "
                "(size {}, magic {:#x})",
                fn, a->size, a->magic);
  if (a->dtype != sscBfloat16 && a->dtype != sscFloat16)
    return fail(sscInvalidArgument, "{}: args.dtype = {} (supported: sscBfloat16, sscFloat16)", fn,
                static_cast<int>(a->dtype));
  const sscDataType_t out = a->outDtype == SSC_GEMM_OUT_AS_INPUT ? a->dtype : a->outDtype;
  if (out != a->dtype && out != sscFloat32)
    return fail(sscInvalidArgument,
                "{}: args.outDtype = {} (supported: SSC_GEMM_OUT_AS_INPUT, "
                "the input type, or sscFloat32)",
                fn, static_cast<int>(a->outDtype));
  if (a->m < 0 || a->n < 0 || a->k < 0)
    return fail(sscInvalidArgument, "{}: args m = {}, n = {}, k = {}: each must be >= 0", fn, a->m,
                a->n, a->k);
  if ((a->flags & ~(SSC_GEMM_WEIGHT_KN | SSC_GEMM_COPY_ENGINE)) != 0)
    return fail(sscInvalidArgument, "{}: unknown flags {:#x}", fn, a->flags);
  SSC_CHECK(checkMatrix(fn, "x", a->m, a->k));
  SSC_CHECK(checkMatrix(fn, "w", a->n, a->k));
  SSC_CHECK(checkMatrix(fn, "y", a->m, a->n));
  sscComm* comm = g->comm;
  c->rank = comm->rank;
  c->p.op = op;
  c->p.m = a->m;
  c->p.n = a->n;
  c->p.k = a->k;
  c->p.nranks = comm->nranks;
  c->p.inBytes = 2;
  c->p.outBytes = out == sscFloat32 ? 4 : 2;
  c->inType = a->dtype;
  c->outType = out;
  c->weightKN = (a->flags & SSC_GEMM_WEIGHT_KN) != 0;
  c->copyEngine = (a->flags & SSC_GEMM_COPY_ENGINE) != 0;
  c->x = a->x;
  c->w = a->w;
  c->y = a->y;
  c->xGathered = a->xGathered;
  c->bias = hasBias ? a->bias : nullptr;
  c->p.gatherOut = op == Op::kAllGather && a->xGathered != nullptr;
  std::string why;
  // Under stream capture no fused form: their ranks order themselves by flag values that count
  // the calls (use numbers), fixed in the kernels' arguments at capture, so on a replay every
  // wait would pass at once against the capture's values, and a rank would read a peer's slot
  // before the peer wrote it. AUTO plans without them there; a forced fused call is refused.
  if (capturing && a->variant == sscGemmFused && c->p.nranks > 1)
    return fail(sscInvalidUsage,
                "{}: sscGemmFused on a stream being captured into a graph: the "
                "fused forms order the ranks by per-call flag values fixed at capture, so a replay "
                "would not wait for the peers; capture sscGemmAuto (unfused under capture) or "
                "sscGemmUnfused instead",
                fn);
  const bool fusedAvailable = !capturing && (!g->fusedTried || !g->fusedPeers.empty());
  // AUTO's rule weighs the variants at this communicator's rates (gemm_rates.h): the same tuner
  // and barrier decision on every rank, so every rank plans alike.
  GemmRates rates;
  const bool ruled = a->variant == sscGemmAuto && a->chunks == 0 && fusedAvailable &&
                     comm->nranks > 1 && comm->nranks <= kFusedMaxRanks && comm->tuner != nullptr;
  if (ruled) rates = ratesFor(g, c->p);
  if (!makePlan(c->p, a->variant, a->chunks, g->workspaceBytes, &c->plan, &why, fusedAvailable,
                ruled ? &rates : nullptr))
    return fail(a->variant == sscGemmFused ? sscInvalidUsage : sscInvalidArgument, "{}: {}", fn,
                why);
  if (capturing && c->plan.variant != sscGemmFused && a->variant == sscGemmAuto)
    c->plan.reason += " (under stream capture: no fused form)";
  // Pointers, after the shape: what must be there depends on the rows this rank owns.
  if (!checkPointers) return sscSuccess;
  const int64_t own = rowShard(a->m, comm->nranks, comm->rank).count;
  const bool work = a->m > 0 && a->n > 0;
  const int64_t xRows = op == Op::kReduceScatter ? a->m : own;
  const int64_t yRows = op == Op::kReduceScatter ? own : a->m;
  if (work && a->k > 0 && xRows > 0 && a->x == nullptr)
    return fail(sscInvalidArgument, "{}: x is NULL", fn);
  if (work && a->k > 0 && a->w == nullptr) return fail(sscInvalidArgument, "{}: w is NULL", fn);
  if (work && yRows > 0 && a->y == nullptr) return fail(sscInvalidArgument, "{}: y is NULL", fn);
  if (a->xGathered != nullptr) {
    if (op != Op::kAllGather)
      return fail(sscInvalidArgument, "{}: xGathered is for sscAllGatherGemm only", fn);
    // x may sit at exactly its own rows of xGathered (in place), nowhere else inside it.
    const auto* g0 = static_cast<const char*>(a->xGathered);
    const auto* xp = static_cast<const char*>(a->x);
    const size_t bytes = static_cast<size_t>(a->m) * a->k * 2;
    const RowRange mine = rowShard(a->m, comm->nranks, comm->rank);
    if (xp != nullptr && xp >= g0 && xp < g0 + bytes && xp != g0 + mine.first * a->k * 2)
      return fail(sscInvalidArgument,
                  "{}: x lies inside xGathered but not at this rank's rows "
                  "(row {}): in place means x = xGathered + {} * k elements",
                  fn, mine.first, mine.first);
  }
  return sscSuccess;
}

const char* variantName(int v) {
  return v == sscGemmFused ? "fused" : v == sscGemmChunked ? "chunked" : "unfused";
}

// The first fused call (or, with the arrival barrier, the first call with a collective) maps the
// context's workspace into every peer: collective, and reached on every rank at the same call
// (the plan depends only on the arguments and on this state). An empty fusedPeers afterwards
// (the backend cannot share it) rules the fused variant and the barrier out.
sscResult_t mapWorkspace(const char* fn, sscGemmContext* g) {
  g->fusedTried = true;
  SSC_CHECK(g->backend->registerBuffer(g->comm, g->workspace, g->workspaceBytes + kFusedFlagBytes,
                                       &g->fusedPeers));
  if (!g->fusedPeers.empty() && static_cast<int>(g->fusedPeers.size()) != g->comm->nranks) {
    (void)g->backend->deregisterBuffer(g->comm, g->workspace, g->fusedPeers);
    g->fusedPeers.clear();
  }
  if (g->fusedPeers.empty())
    SSC_LOG(kInfo,
            "{}: the workspace cannot be mapped into the peers: no fused variant, no arrival "
            "barrier",
            fn);
  return sscSuccess;
}

sscResult_t run(const char* fn, sscGemmContext* g, Op op, const sscGemmArgs_t* args,
                sscStream_t stream) {
  SSC_CHECK(checkContext(fn, g));
  CommUse use(g->comm);
  SSC_CHECK(checkComm(fn, g->comm));
  Call c;
  const bool capturing = g->backend->streamCapturing(stream);
  SSC_CHECK(prepare(fn, g, op, args, &c, true, capturing));
  // The fused forms and the arrival barrier need the workspace's flags in the peers: mapped at
  // the first call that uses them (the same call on every rank: plan and barrier decided alike).
  if (!c.plan.direct && !g->fusedTried && (c.plan.variant == sscGemmFused || g->barrier)) {
    SSC_CHECK(mapWorkspace(fn, g));
    if (c.plan.variant == sscGemmFused && g->fusedPeers.empty())
      SSC_CHECK(prepare(fn, g, op, args, &c, true, capturing));  // refused, or AUTO re-plans
  }
  SSC_LOG(kInfo, "{} m={} n={} k={}: {} x {}{} ({})", fn, c.p.m, c.p.n, c.p.k,
          variantName(c.plan.variant), c.plan.chunks,
          c.copyEngine && c.plan.variant == sscGemmFused ? ", copy engine" : "", c.plan.reason);
  return g->onGpu ? gpuRun(g, c, stream) : hostRun(g, c, stream);
}

}  // namespace

namespace ssc::gemm {

namespace {
char* flagsOf(sscGemmContext* g, int q) {
  return static_cast<char*>(g->fusedPeers[q]) + g->workspaceBytes;
}
}  // namespace

uint32_t* fusedReady(sscGemmContext* g, int q, int slot) {
  return reinterpret_cast<uint32_t*>(flagsOf(g, q) + kFusedReadyOff) + slot;
}
uint32_t* fusedDone(sscGemmContext* g, int q, int slot, int owner) {
  return reinterpret_cast<uint32_t*>(flagsOf(g, q) + kFusedDoneOff) + slot * kFusedMaxRanks + owner;
}
uint32_t* fusedFrom(sscGemmContext* g, int q, int slot, int producer) {
  return reinterpret_cast<uint32_t*>(flagsOf(g, q) + kFusedFromOff) + slot * kFusedMaxRanks +
         producer;
}
uint32_t* fusedReadyFrom(sscGemmContext* g, int q, int fi, int producer) {
  return reinterpret_cast<uint32_t*>(flagsOf(g, q) + kFusedReadyFromOff) + fi * kFusedMaxRanks +
         producer;
}
uint32_t* fusedArrive(sscGemmContext* g, int q, int producer) {
  return reinterpret_cast<uint32_t*>(flagsOf(g, q) + kFusedArriveOff) + producer;
}
uint32_t* fusedBell(sscGemmContext* g, int q) {
  return reinterpret_cast<uint32_t*>(flagsOf(g, q) + kFusedBellOff);
}

}  // namespace ssc::gemm

SSC_API sscResult_t sscGemmRowShard(int64_t m, int nranks, int rank, int64_t* firstRow,
                                    int64_t* numRows) {
  const char* fn = "sscGemmRowShard";
  return guarded(fn, [&] {
    if (m < 0) return fail(sscInvalidArgument, "{}: m = {} is negative", fn, m);
    if (nranks < 1) return fail(sscInvalidArgument, "{}: nranks = {} must be >= 1", fn, nranks);
    SSC_CHECK(checkRank(fn, "rank", rank, nranks));
    if (firstRow == nullptr || numRows == nullptr)
      return fail(sscInvalidArgument, "{}: {} is NULL", fn,
                  firstRow == nullptr ? "firstRow" : "numRows");
    const RowRange r = rowShard(m, nranks, rank);
    *firstRow = r.first;
    *numRows = r.count;
    return sscSuccess;
  });
}

SSC_API sscResult_t sscGemmCreate(sscComm_t comm, const sscGemmConfig_t* config, sscGemm_t* gemm) {
  const char* fn = "sscGemmCreate";
  return guarded(fn, [&] {
    CommUse use(comm);
    SSC_CHECK(checkComm(fn, comm));
    if (gemm == nullptr) return fail(sscInvalidArgument, "{}: gemm is NULL", fn);
    *gemm = nullptr;
    // The context's own settings, read once, now; malformed values refuse it as they refuse init.
    const env::Snapshot settings = env::Snapshot::take();
    SSC_CHECK(env::validate(settings));
    sscGemmConfig_t cfg = SSC_GEMM_CONFIG_INITIALIZER;
    if (config != nullptr) {
      if (config->size != sizeof(sscGemmConfig_t) || config->magic != SSC_GEMM_CONFIG_MAGIC)
        return fail(sscInvalidArgument,
                    "{}: config was not initialised with "
                    "SSC_GEMM_CONFIG_INITIALIZER (size {}, magic {:#x})",
                    fn, config->size, config->magic);
      cfg = *config;
    }
    auto* g = new sscGemmContext;
    g->comm = comm;
    g->backend = comm->backend;
    g->device = comm->device;
    g->dev = comm->backend->services();
    g->onGpu = g->dev != nullptr;
    g->waits = WaitLimits::from(settings);
    g->probe = probeWanted(settings.getString("STARSCREAM_GEMM_PROBE"),
                           settings.external("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE").c_str());
    // Read at init and compared there; the topology is the same on every rank, so auto decides
    // alike everywhere.
    g->barrier = g->onGpu && comm->nranks > 1 && comm->nranks <= kFusedMaxRanks &&
                 barrierWanted(comm->config.gemmBarrier, ranksShareComputeUnits(comm->topo));
    g->workspaceBytes = cfg.workspaceBytes != 0 ? cfg.workspaceBytes : kDefaultWorkspaceBytes;
    // Rounded so the flags after it sit 16-byte aligned; every rank rounds alike.
    g->workspaceBytes = (g->workspaceBytes + 15) / 16 * 16;
    sscResult_t r = sscSuccess;
    if (g->onGpu) {
      r = gpuCreate(g);
    } else {
      r = g->backend->memAlloc(&g->workspace, g->workspaceBytes + kFusedFlagBytes);
      if (r == sscSuccess)
        std::memset(static_cast<char*>(g->workspace) + g->workspaceBytes, 0, kFusedFlagBytes);
    }
    if (r != sscSuccess) {
      freeContext(g);
      return r;
    }
    std::lock_guard<std::mutex> lock(g_ctxMu);
    g_contexts.insert(g);
    *gemm = g;
    return sscSuccess;
  });
}

SSC_API sscResult_t sscGemmDestroy(sscGemm_t gemm) {
  return guarded("sscGemmDestroy", [&] {
    if (gemm == nullptr) return sscSuccess;
    {
      std::lock_guard<std::mutex> lock(g_ctxMu);
      if (g_contexts.erase(gemm) == 0)
        return fail(sscInvalidUsage,
                    "sscGemmDestroy: gemm {} is not a live context (destroyed "
                    "twice?)",
                    static_cast<void*>(gemm));
    }
    freeContext(gemm);
    return sscSuccess;
  });
}

SSC_API sscResult_t sscGemmReduceScatter(sscGemm_t gemm, const sscGemmArgs_t* args,
                                         sscStream_t stream) {
  const char* fn = "sscGemmReduceScatter";
  return guarded(fn, [&] { return run(fn, gemm, Op::kReduceScatter, args, stream); });
}

SSC_API sscResult_t sscAllGatherGemm(sscGemm_t gemm, const sscGemmArgs_t* args,
                                     sscStream_t stream) {
  const char* fn = "sscAllGatherGemm";
  return guarded(fn, [&] { return run(fn, gemm, Op::kAllGather, args, stream); });
}

SSC_API sscResult_t sscGemmQueryPlan(sscGemm_t gemm, sscGemmOp_t op, const sscGemmArgs_t* args,
                                     sscGemmVariant_t* variant, int* chunks) {
  const char* fn = "sscGemmQueryPlan";
  return guarded(fn, [&] {
    SSC_CHECK(checkContext(fn, gemm));
    CommUse use(gemm->comm);
    SSC_CHECK(checkComm(fn, gemm->comm));
    if (op != sscGemmOpReduceScatter && op != sscGemmOpAllGather)
      return fail(sscInvalidArgument, "{}: op = {} is not an sscGemmOp_t", fn,
                  static_cast<int>(op));
    if (variant == nullptr || chunks == nullptr)
      return fail(sscInvalidArgument, "{}: {} is NULL", fn,
                  variant == nullptr ? "variant" : "chunks");
    Call c;
    SSC_CHECK(prepare(fn, gemm, op == sscGemmOpReduceScatter ? Op::kReduceScatter : Op::kAllGather,
                      args, &c, false));
    *variant = c.plan.variant;
    *chunks = c.plan.chunks;
    return sscSuccess;
  });
}

SSC_API sscResult_t sscGemmShard2d(const sscGemmShard2dQuery_t* query, sscGemmShard2dPlan_t* plan) {
  const char* fn = "sscGemmShard2d";
  return guarded(fn, [&] {
    if (query == nullptr || plan == nullptr)
      return fail(sscInvalidArgument, "{}: {} is NULL", fn, query == nullptr ? "query" : "plan");
    if (query->size != sizeof(sscGemmShard2dQuery_t) ||
        query->magic != SSC_GEMM_SHARD2D_QUERY_MAGIC)
      return fail(sscInvalidArgument,
                  "{}: query was not initialised with "
                  "SSC_GEMM_SHARD2D_QUERY_INITIALIZER (size {}, magic {:#x})",
                  fn, query->size, query->magic);
    if (plan->size != sizeof(sscGemmShard2dPlan_t) || plan->magic != SSC_GEMM_SHARD2D_PLAN_MAGIC)
      return fail(sscInvalidArgument,
                  "{}: plan was not initialised with "
                  "SSC_GEMM_SHARD2D_PLAN_INITIALIZER (size {}, magic {:#x})",
                  fn, plan->size, plan->magic);
    std::string why;
    if (!shard2d(*query, plan, &why)) return fail(sscInvalidArgument, "{}: {}", fn, why);
    return sscSuccess;
  });
}
