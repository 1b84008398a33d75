// SPDX-License-Identifier: MIT
// libstarscream-tuner.so: Starscream's cost model as an NCCL tuner plugin (ABI v5, NCCL 2.28).
// For NCCL's ring it fills the Simple and LL entries of the cost table with what the model
// predicts for Starscream's ring plan on this machine's topology (the profile's FIFO figures, and
// for LL its latencies with at most half the FIFO bandwidth); every other entry (tree, LL128,
// CollNet, NVLS, PAT) is left as NCCL computed it, since the model has no plan for those
// algorithms. The topology is STARSCREAM_TOPO_FILE when set (its rank count must match), else
// nNodes x (nRanks / nNodes) GPUs; the profile is resolved as the library does
// (STARSCREAM_TUNER_PROFILE, shipped per GPU model, links).
#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <memory>
#include <mutex>
#include <new>
#include <set>
#include <string>
#include <utility>

#include "src/core/env.h"
#include "src/core/errors.h"
#include "tuner/model.h"
#include "tuner/plugin/nccl_tuner_v5.h"

namespace {

using namespace sscnccl;

struct Context {
  std::unique_ptr<ssc::Tuner> tuner;
  Logger log = nullptr;
  // What getCollInfo did, so a log shows the plugin was asked (NCCL skips it at one rank, and
  // for the functions and cells it costs itself): calls, cells written, and the (function, size
  // class) pairs already logged, one INFO line each.
  std::atomic<uint64_t> calls{0}, cellsSet{0};
  std::mutex mu;
  std::set<std::pair<int, int>> logged;
};

// Size classes of an octave: a log line per class, not per call.
int sizeClass(size_t bytes) {
  int c = 0;
  while (bytes > 1) {
    bytes >>= 1;
    ++c;
  }
  return c;
}

const char* funcName(Func f) {
  switch (f) {
    case kBroadcast: return "Broadcast";
    case kReduce: return "Reduce";
    case kAllGather: return "AllGather";
    case kReduceScatter: return "ReduceScatter";
    case kAllReduce: return "AllReduce";
    default: return "other";
  }
}

#define SSC_PLUGIN_LOG(ctxLog, level, ...)                                     \
  do {                                                                         \
    if ((ctxLog) != nullptr)                                                   \
      (ctxLog)(level, kLogInit | kLogTuning, __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)

Result pluginInit(void** context, uint64_t /*commId*/, size_t nRanks, size_t nNodes, Logger log,
                  NvlDomainInfo* /*nvl*/, TunerConstants* /*constants*/) {
  if (context == nullptr || nRanks == 0 || nNodes == 0 || nRanks > (1u << 20))
    return kInvalidArgument;
  *context = nullptr;
  ssc::Topology topo;
  const std::string file = ssc::env::getString("STARSCREAM_TOPO_FILE");
  if (!file.empty()) {
    if (ssc::loadTopologyFile(file, static_cast<int>(nRanks), &topo) != sscSuccess) {
      SSC_PLUGIN_LOG(log, kLogWarn, "Starscream tuner: %s", ssc::lastError().c_str());
      return kInvalidArgument;
    }
  } else if (nRanks % nNodes == 0) {
    topo = ssc::makeUniformTopology(static_cast<int>(nNodes), static_cast<int>(nRanks / nNodes), 1);
  } else {
    topo = ssc::makeFlatTopology(static_cast<int>(nRanks));
  }
  ssc::TunerProfile profile;
  if (ssc::resolveProfile(topo, &profile) != sscSuccess) {
    SSC_PLUGIN_LOG(log, kLogWarn, "Starscream tuner: %s", ssc::lastError().c_str());
    return kInvalidArgument;
  }
  // The profile's LL figures are those of Starscream's one-shot packets, which read every peer
  // at once in a kernel of their own; NCCL's LL ring moves packets hop by hop, half of each
  // 8-byte store being flags, in the same kernel as its Simple protocol. Its bandwidth is at most
  // half the FIFO figure (NCCL 2.28 src/graph/tuning.cc: busBw * .5), and a hop costs what NCCL's
  // own table says an LL hop costs against a Simple one (hwLat, NVLink ring: LL 0.47 us, Simple
  // 3.4 us): the one-shot kernel's latency is a whole kernel's fixed cost, not one hop's.
  constexpr double kNcclLLHopPerSimpleHop = 0.47 / 3.4;
  for (ssc::ProfileVariant& v : profile.variants)
    for (auto& tier : v.tiers) {
      const ssc::AlphaBeta& fifo = tier[static_cast<int>(ssc::Protocol::kFifo)];
      ssc::AlphaBeta& ll = tier[static_cast<int>(ssc::Protocol::kLL)];
      if (fifo.bandwidthGBps > 0 && ll.bandwidthGBps > 0) {
        ll.bandwidthGBps = std::min(ll.bandwidthGBps, fifo.bandwidthGBps / 2);
        ll.latencyUs = std::min(ll.latencyUs, fifo.latencyUs * kNcclLLHopPerSimpleHop);
      }
    }
  auto* ctx = new (std::nothrow) Context;
  if (ctx == nullptr) return kInternalError;
  try {
    ctx->tuner = std::make_unique<ssc::Tuner>(std::move(topo), std::move(profile));
  } catch (...) {
    delete ctx;
    return kInternalError;
  }
  ctx->log = log;
  SSC_PLUGIN_LOG(log, kLogInfo,
                 "Starscream tuner: %zu ranks, %zu node(s), topology '%s', profile '%s' (%s); "
                 "costing NCCL ring Simple/LL",
                 nRanks, nNodes, ctx->tuner->topology().name.c_str(),
                 ctx->tuner->profile().name.c_str(), ctx->tuner->profile().origin.c_str());
  *context = ctx;
  return kSuccess;
}

bool collOf(Func f, ssc::CollKind* out) {
  switch (f) {
    case kBroadcast: *out = ssc::CollKind::kBroadcast; return true;
    case kReduce: *out = ssc::CollKind::kReduce; return true;
    case kAllGather: *out = ssc::CollKind::kAllGather; return true;
    case kReduceScatter: *out = ssc::CollKind::kReduceScatter; return true;
    case kAllReduce: *out = ssc::CollKind::kAllReduce; return true;
    default: return false;
  }
}

Result pluginGetCollInfo(void* context, Func collType, size_t nBytes, int /*numPipeOps*/,
                         float** collCostTable, int numAlgo, int numProto, int /*regBuff*/,
                         int* /*nChannels*/) {
  auto* ctx = static_cast<Context*>(context);
  if (ctx == nullptr || collCostTable == nullptr) return kInternalError;
  ssc::CollKind coll;
  // What the model cannot speak for keeps NCCL's own cost: returning success with the table
  // untouched is "no opinion" in this ABI.
  if (!collOf(collType, &coll) || numAlgo <= kAlgoRing || numProto <= kProtoSimple) return kSuccess;
  float* table = reinterpret_cast<float*>(collCostTable);  // float[numAlgo][numProto]
  ctx->calls.fetch_add(1, std::memory_order_relaxed);
  float was[2] = {0, 0}, set[2] = {kIgnore, kIgnore};  // Simple, LL: before and after
  try {
    const ssc::Protocol fifo = ssc::Protocol::kFifo, ll = ssc::Protocol::kLL;
    int i = 0;
    for (auto [proto, as] : {std::pair{kProtoSimple, &fifo}, std::pair{kProtoLL, &ll}}) {
      float& cell = table[kAlgoRing * numProto + proto];
      was[i] = set[i] = cell;
      if (cell != kIgnore) {
        const ssc::Estimate e = ctx->tuner->estimate(coll, nBytes, ssc::Algo::kRing, false, as);
        if (e.valid && e.timeUs > 0) {
          cell = set[i] = static_cast<float>(e.timeUs);
          ctx->cellsSet.fetch_add(1, std::memory_order_relaxed);
        }
      }
      ++i;
    }
  } catch (...) {
    return kInternalError;  // NCCL then falls back to its own tuning for this call
  }
  bool first = false;
  {
    std::lock_guard<std::mutex> g(ctx->mu);
    first = ctx->logged.size() < 4096 && ctx->logged.insert({collType, sizeClass(nBytes)}).second;
  }
  if (first)
    SSC_PLUGIN_LOG(ctx->log, kLogInfo,
                   "Starscream tuner: getCollInfo %s %zu B: ring Simple %.1f -> %.1f us, "
                   "ring LL %.1f -> %.1f us (NCCL's -> the model's; -1: ignored)",
                   funcName(collType), nBytes, was[0], set[0], was[1], set[1]);
  return kSuccess;
}

Result pluginFinalize(void* context) {
  auto* ctx = static_cast<Context*>(context);
  if (ctx != nullptr)
    SSC_PLUGIN_LOG(ctx->log, kLogInfo,
                   "Starscream tuner: finalize: getCollInfo called %llu times, %llu ring cells "
                   "set from the model",
                   static_cast<unsigned long long>(ctx->calls.load()),
                   static_cast<unsigned long long>(ctx->cellsSet.load()));
  delete ctx;
  return kSuccess;
}

}  // namespace

extern "C" {
__attribute__((visibility("default")))
sscnccl::TunerV5 ncclTunerPlugin_v5 = {"starscream", pluginInit, pluginGetCollInfo, pluginFinalize};
}
