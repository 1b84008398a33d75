// SPDX-License-Identifier: MIT
#include "src/device/gpu/gpu_symmetric.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>

#include "src/core/errors.h"
#include "src/device/gpu/gpu_connections.h"
#include "src/device/gpu/gpu_plan_cache.h"
#include "src/platform/gpu_check.h"
#include "src/platform/gpu_runtime.h"
#include "src/kernels/gpu/sym_kernel.h"

namespace ssc::gpu {

namespace {

std::atomic<uint64_t> g_launches{0};
std::atomic<uint64_t> g_firstRound{1};

// Bytes of the call per block of the bulk kernel: small calls get few blocks (fewer barrier
// slots to meet), large ones the whole resident grid.
constexpr uint64_t kBytesPerBlock = 128 << 10;
// The LL kernel's grid never needs more than this many blocks (64 KiB = 8192 lines).
constexpr int kMaxLLBlocks = 16;

// What a launch returned (0 or the runtime's error, < 0 for a type without kernels), counted
// (and *launched set) when it went through.
sscResult_t counted(int e, const char* kernel, bool* launched) {
  if (e != 0)
    return fail(sscUnhandledDeviceError, "launching the {} failed: {}", kernel,
                e > 0 ? hipGetErrorString(static_cast<hipError_t>(e)) : "unknown data type");
  ++g_launches;
  *launched = true;
  return sscSuccess;
}

// The pre-scale of an integer type as the wrapped multiplier the host executor uses: integer
// scalars as they are, a float scalar (a caller mixing types) truncated and saturated to int64.
int64_t integerMultiplier(const Scalar& s) {
  if (s.isInteger) return s.i;
  if (std::isnan(s.f)) return 0;
  if (s.f >= 9223372036854775807.0) return std::numeric_limits<int64_t>::max();
  if (s.f <= -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(s.f);
}

}  // namespace

DevReduce devReduceOf(const ReduceSpec& rs) {
  DevReduce r{};
  r.dtype = static_cast<uint32_t>(rs.dtype);
  r.kind = static_cast<uint32_t>(rs.kind);
  r.hasPreScale = rs.hasPreScale ? 1 : 0;
  r.scaleIsInteger = rs.preScale.isInteger ? 1 : 0;
  r.scaleInt = integerMultiplier(rs.preScale);
  r.scaleFloat = rs.preScale.isInteger ? static_cast<double>(rs.preScale.i) : rs.preScale.f;
  r.scaleDevice = rs.preScaleDevice;
  r.postDivisor = rs.postDivisor;
  return r;
}

bool isSymmetricPlan(const RankPlan& plan) {
  for (const ChannelPlan& c : plan.channels)
    for (const Step& s : c.steps)
      if (s.op == StepOp::kBarrier || isPeerStep(s.op)) return true;
  return false;
}

uint64_t symmetricLaunches() { return g_launches.load(); }

void setFirstLLRound(uint64_t round) { g_firstRound = round; }
uint64_t SymmetricExecutor::firstLLRound() { return g_firstRound.load(); }

bool llClearsAfter(uint64_t round) { return llClearsAfterRound(round); }
uint64_t nextLLRound(uint64_t round) { return llNextRound(round); }

sscResult_t SymmetricExecutor::init() {
  // The LL round lives in this rank's control area (sym_kernel.h); the segment starts zeroed,
  // so only the first round needs writing (every rank of a communicator starts at the same one).
  SymArgs a{};
  conns_->fillSymArgs(&a);
  const uint64_t first = firstLLRound();
  if (a.ctrl[rank_] == nullptr) return SSC_INTERNAL("no symmetric control area for rank {}", rank_);
  SSC_GPU_CHECK(hipMemcpy(a.ctrl[rank_] + SymCtrlLayout::kLLRound, &first, sizeof(first),
                          hipMemcpyHostToDevice),
                "setting the first LL round");
  return sscSuccess;
}

sscResult_t SymmetricExecutor::enqueue(const Work& work, void* stream, const KernelTiming& timing,
                                       bool* launched) {
  const RankPlan& plan = *work.plan;
  if (plan.channels.size() != 1)
    return SSC_INTERNAL("a symmetric plan has {} channels; the GPU runs one", plan.channels.size());
  const std::vector<Step>& steps = plan.channels[0].steps;
  if (steps.size() > static_cast<size_t>(kMaxSymSteps))
    return SSC_INTERNAL("a symmetric plan of {} steps; the GPU runs at most {}", steps.size(),
                        kMaxSymSteps);
  if (nranks_ > kMaxSymPeers)
    return fail(sscInvalidUsage,
                "the symmetric algorithm runs on at most {} ranks on the GPU ({} here)",
                kMaxSymPeers, nranks_);
  uint64_t middles = 0;
  bool peers = false;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].op == StepOp::kBarrier) {
      middles += i > 0 && i + 1 < steps.size();
    } else if (isPeerStep(steps[i].op)) {
      peers = true;
    } else {
      return SSC_INTERNAL("a plan mixes FIFO step {} with peer steps; the GPU cannot run it",
                          stepOpName(steps[i].op));
    }
  }
  const uint32_t esize = static_cast<uint32_t>(work.elemBytes);
  SymArgs a{};
  conns_->fillSymArgs(&a);
  a.nranks = nranks_;
  a.rank = rank_;
  a.elemBytes = esize;
  a.callHash = work.callHash;
  a.deviceScope = limits_.sameDevice ? 1 : 0;
  a.wideGrid = plan.wideGrid ? 1 : 0;
  a.timeoutTicks = timeoutTicks_;
  a.reduce = devReduceOf(work.reduce);
  a.timing = timing;
  for (int b = kBufIn; b <= kBufOut; ++b)
    a.local[b] = static_cast<size_t>(b) < work.buffers.size() ? work.buffers[b] : nullptr;

  // Small one-shot all-reduce: the LL kernel (same result, no peer buffers, no barriers).
  const bool oneShot = plan.coll == CollKind::kAllReduce && steps.size() == 3 &&
                       steps[0].op == StepOp::kBarrier && steps[2].op == StepOp::kBarrier &&
                       steps[1].op == StepOp::kPeerReduce && steps[1].srcOff == 0 &&
                       steps[1].dstOff == 0 && !plan.bufElems.empty() &&
                       steps[1].count == plan.bufElems[kBufIn];
  // In place, the bulk one-shot would overwrite this rank's input while peers still read it;
  // LL reads only local memory, so in-place one-shots always take it (the generator keeps
  // one-shot within kLLMaxBytes).
  const bool inPlace = a.local[kBufIn] == a.local[kBufOut];
  const uint64_t llMax =
      inPlace ? kLLMaxBytes : std::min(config_->packetMaxBytes, kLLDefaultMaxBytes);
  if (oneShot && inPlace && steps[1].count * esize > kLLMaxBytes)
    return SSC_INTERNAL(
        "an in-place one-shot all-reduce of {} bytes is above the LL limit "
        "({} bytes): the symmetric generator must use two-shot there",
        steps[1].count * esize, kLLMaxBytes);
  if (oneShot && esize <= 8 && steps[1].count * esize <= llMax) {
    a.steps[0] = devStep(steps[1]);
    a.nsteps = 1;
    const uint64_t lines = (steps[1].count * esize + 7) / 8;
    const int blocks = static_cast<int>(std::clamp<uint64_t>(
        (lines + kLLThreads - 1) / kLLThreads, 1, std::min(kMaxLLBlocks, limits_.symBlocks)));
    return counted(launchLLAllReduce(a, blocks, stream), "LL all-reduce", launched);
  }

  if (peers) {
    if (work.peerBuffers.size() < 2 ||
        work.peerBuffers[kBufIn].size() != static_cast<size_t>(nranks_) ||
        work.peerBuffers[kBufOut].size() != static_cast<size_t>(nranks_))
      return fail(sscInvalidUsage,
                  "a symmetric plan needs the buffers its peers touch registered "
                  "on every rank (sscCommRegister of sscMemAlloc memory)");
    for (int b = kBufIn; b <= kBufOut; ++b)
      for (int q = 0; q < nranks_; ++q) a.peer[b][q] = work.peerBuffers[b][q];
  }
  for (size_t i = 0; i < steps.size(); ++i) a.steps[i] = devStep(steps[i]);
  a.nsteps = static_cast<int>(steps.size());
  // The grid is a function of the call's size only, so it is the same on every rank (barrier
  // slots pair blocks by index).
  uint64_t callElems = 0;
  for (size_t b = kBufIn; b <= kBufOut && b < plan.bufElems.size(); ++b)
    callElems = std::max(callElems, plan.bufElems[b]);
  // A middle barrier syncs the whole local grid, which needs every block resident at once. MPS
  // clients may share SMs, so the full share is not guaranteed to be: on the H200 at K = 4 a
  // 32-block grid (the full 25% share) timed out in that sync while per-block barriers (which
  // only pair block b with block b) ran the same grid fine. Such plans get half the share.
  uint64_t maxBlocks = middles > 0 ? std::max(1, limits_.symBlocks / 2) : limits_.symBlocks;
  uint64_t perBlock = kBytesPerBlock;
  const bool push = symIsPushPlan(a);
  if (push) {  // the wide grid: half-size blocks, several per SM, at most kSymPushMaxBytes per
               // launch (sym_kernel.h)
    maxBlocks = std::min(kMaxSymBlocks, std::max(1, limits_.shareSMs) * kSymPushBlocksPerSM);
    perBlock = kBytesPerBlock * kSymPushThreads / kSymThreads;
  }
  const auto launch = [&](uint64_t bytes) {
    const int blocks =
        static_cast<int>(std::clamp<uint64_t>((bytes + perBlock - 1) / perBlock, 1, maxBlocks));
    return counted(launchSymKernel(a, blocks, stream), "symmetric kernel", launched);
  };
  if (!push) return launch(callElems * esize);
  // The push step in launches of at most kSymPushMaxBytes of output each, in order: every rank
  // cuts the same call the same way, so launch i pairs with launch i everywhere. A traced call's
  // interval runs from the first launch's start to the last one's end.
  const DevStep whole = a.steps[1];
  const uint64_t chunk = symPushChunkElems(a);
  uint64_t done = 0;
  do {
    a.steps[1].srcOff = whole.srcOff + done;
    a.steps[1].dstOff = whole.dstOff + done;
    a.steps[1].count = std::min(chunk, whole.count - done);
    a.timing = launchTiming(timing, done == 0, done + a.steps[1].count == whole.count);
    SSC_CHECK(launch(a.steps[1].count * esize * static_cast<uint64_t>(nranks_)));
    done += a.steps[1].count;
  } while (done < whole.count);
  return sscSuccess;
}

}  // namespace ssc::gpu
