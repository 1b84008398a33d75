// SPDX-License-Identifier: MIT
// Barrier placement. Block b of a channel handles, in every step, the elements whose position
// within their slot-sized range is in piece b: element e of a step with buffer offset `off` goes
// to block ((e - off) mod slotElems) / pieceElems. Two steps touching the same element of a local
// buffer therefore hand it to the same block when their offsets agree modulo slotElems, or when
// both steps fit in one piece (everything on block 0). Any other overlap where one side writes
// is a cross-block dependency: the later step gets `barrier`, and the kernel waits for all
// blocks of the channel before running it. Ring and direct plans mostly hit the cheap cases.
#include "src/device/gpu/gpu_plan_cache.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "src/core/errors.h"
#include "src/device/gpu/gpu_launch_order.h"
#include "src/platform/gpu_check.h"
#include "src/platform/gpu_runtime.h"

namespace ssc::gpu {

static_assert(kOpRecvCopySend == static_cast<uint8_t>(StepOp::kRecvCopySend) &&
                  kOpBarrier == static_cast<uint8_t>(StepOp::kBarrier) &&
                  kOpPeerReduce == static_cast<uint8_t>(StepOp::kPeerReduce) &&
                  kOpPeerReduceBcast == static_cast<uint8_t>(StepOp::kPeerReduceBcast) &&
                  kOpPeerPush == static_cast<uint8_t>(StepOp::kPeerPush) &&
                  kOpPeerGather == static_cast<uint8_t>(StepOp::kPeerGather) &&
                  kOpPeerSwap == static_cast<uint8_t>(StepOp::kPeerSwap) &&
                  kOpP2pOffer == static_cast<uint8_t>(StepOp::kP2pOffer) &&
                  kOpP2pPush == static_cast<uint8_t>(StepOp::kP2pPush) &&
                  kOpP2pWait == static_cast<uint8_t>(StepOp::kP2pWait),
              "DevOp (plan_kernel.h) must mirror ssc::StepOp");
static_assert(int{kPreOpFlag} == int{kFlagPreOp} && int{kPostOpFlag} == int{kFlagPostOp},
              "step flags");

namespace {

struct Access {
  uint16_t buf;
  uint64_t lo, hi;  // elements
  uint64_t phase;   // offset mod slotElems
  bool single;      // the whole step fits in block 0's piece
  bool write;
};

bool conflicts(const Access& a, const Access& b) {
  if (a.buf != b.buf || !(a.write || b.write)) return false;
  if (a.hi <= b.lo || b.hi <= a.lo) return false;
  return !((a.single && b.single) || a.phase == b.phase);
}

// Marks the steps of one channel that must wait for every block of the channel. In place, the
// input and output are one memory: input accesses are moved into the output's element space
// (RankPlan::inAliasShift) so that a write to either is seen by a later access to the other.
void placeBarriers(std::vector<DevStep>& steps, uint64_t slotElems, uint64_t pieceElems,
                   const RankPlan& plan) {
  auto access = [&](uint16_t buf, uint64_t off, uint64_t count, bool single, bool write) {
    if (plan.inPlace && buf == kBufIn) {
      buf = kBufOut;
      off = static_cast<uint64_t>(static_cast<int64_t>(off) + plan.inAliasShift);
    }
    // Block mapping depends on the step's offset in the (canonical) element space.
    return Access{buf, off, off + count, off % slotElems, single, write};
  };
  constexpr size_t kMaxTracked = 64;  // past this, a barrier is cheaper than the bookkeeping
  std::vector<Access> since;
  for (DevStep& s : steps) {
    const auto op = static_cast<StepOp>(s.op);
    const bool single = s.count <= pieceElems;
    std::vector<Access> mine;
    if (op != StepOp::kRecv && op != StepOp::kRecvCopySend)
      mine.push_back(access(s.srcBuf, s.srcOff, s.count, single, false));
    if (op != StepOp::kSend && op != StepOp::kRecvReduceSend)
      mine.push_back(access(s.dstBuf, s.dstOff, s.count, single, true));
    bool need = since.size() >= kMaxTracked;
    for (const Access& m : mine)
      for (const Access& a : since) need = need || conflicts(a, m);
    if (need) {
      s.barrier = 1;
      since.clear();
    }
    since.insert(since.end(), mine.begin(), mine.end());
  }
}

}  // namespace

std::vector<DevP2pOp> devP2pOps(const std::vector<P2pOp>& ops) {
  std::vector<DevP2pOp> out(ops.size());
  std::map<std::pair<int, bool>, std::vector<size_t>> pairs;  // (peer, isSend) -> ops in order
  uint16_t receives = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    DevP2pOp& d = out[i];
    d.bytes = ops[i].bytes;
    d.peer = ops[i].peer;
    d.isSend = ops[i].isSend ? 1 : 0;
    d.recvOrdinal = ops[i].isSend ? uint16_t{0xffff} : receives++;
    d.mirror = -1;
    std::vector<size_t>& mine = pairs[{ops[i].peer, ops[i].isSend}];
    d.pairIndex = static_cast<uint16_t>(mine.size());
    mine.push_back(i);
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    out[i].pairCount = static_cast<uint16_t>(pairs[{ops[i].peer, ops[i].isSend}].size());
    const std::vector<size_t>& other = pairs[{ops[i].peer, !ops[i].isSend}];
    if (out[i].pairIndex < other.size())
      out[i].mirror = static_cast<int16_t>(other[out[i].pairIndex]);
  }
  return out;
}

bool hasP2pHandshake(const RankPlan& plan) {
  if (plan.channels.empty() || plan.channels[0].steps.empty()) return false;
  const StepOp op = plan.channels[0].steps.front().op;
  return op == StepOp::kP2pOffer || op == StepOp::kP2pPush || op == StepOp::kP2pWait;
}

DevStep devStep(const Step& s) {
  DevStep d{};
  d.op = static_cast<uint8_t>(s.op);
  d.flags = s.flags;
  d.srcBuf = s.srcBuf;
  d.dstBuf = s.dstBuf;
  d.recvPeer = s.recvPeer;
  d.sendPeer = s.sendPeer;
  d.srcOff = s.srcOff;
  d.dstOff = s.dstOff;
  d.count = s.count;
  d.tag = s.tag;
  return d;
}

PlanCache::~PlanCache() {
  clear();
  if (uploadStream_ != nullptr) SSC_GPU_RELEASE(hipStreamDestroy(uploadStream_));
}

// Only after the communicator's work has drained (the destructor runs after it; get() drains
// first): hipFree waits for the whole device.
void PlanCache::clear() {
  for (auto& [key, e] : entries_) {
    if (e.dev.steps != nullptr) SSC_GPU_RELEASE(hipFree(e.dev.steps));
    if (e.dev.p2pOps != nullptr) SSC_GPU_RELEASE(hipFree(e.dev.p2pOps));
  }
  entries_.clear();
  uploaded_ = 0;
}

sscResult_t PlanCache::upload(const void* data, size_t bytes, void** out) {
  // hipMalloc and a copy waited for on the cache's own stream: neither touches the caller's
  // streams nor waits for other work on the device, and relaxed capture mode makes both legal
  // while the caller captures a graph (the graph then keeps using this copy, which lives until
  // the communicator is destroyed or the cache starts over after draining).
  RelaxedCapture relaxed;
  hipError_t r = hipSuccess;
  if (uploadStream_ == nullptr) r = hipStreamCreateWithFlags(&uploadStream_, hipStreamNonBlocking);
  void* dev = nullptr;
  if (r == hipSuccess) r = hipMalloc(&dev, bytes);
  if (r == hipSuccess) r = hipMemcpyAsync(dev, data, bytes, hipMemcpyHostToDevice, uploadStream_);
  if (r == hipSuccess) r = hipStreamSynchronize(uploadStream_);
  if (r != hipSuccess) {
    if (dev != nullptr) SSC_GPU_RELEASE(hipFree(dev));
    return SSC_GPU_FAIL(r, "uploading a plan of {} bytes", bytes);
  }
  *out = dev;
  return sscSuccess;
}

sscResult_t PlanCache::get(const std::shared_ptr<const RankPlan>& plan, size_t elemBytes,
                           bool capturing, const std::vector<P2pOp>* p2pOps,
                           const DevicePlan** out) {
  const auto key = std::make_pair(plan.get(), elemBytes);
  auto it = entries_.find(key);
  captured_ = captured_ || capturing;
  if (it != entries_.end()) {
    *out = &it->second.dev;
    return sscSuccess;
  }
  if (plan->channels.size() > static_cast<size_t>(kMaxChannels))
    return SSC_INTERNAL("plan uses {} channels; the GPU executor runs at most {}",
                        plan->channels.size(), kMaxChannels);
  Entry e;
  e.plan = plan;
  e.dev.channels = static_cast<int>(plan->channels.size());
  const uint64_t slotElems = slotBytes_ / elemBytes, pieceElems = pieceBytes_ / elemBytes;
  std::vector<DevStep> all;
  for (size_t c = 0; c < plan->channels.size(); ++c) {
    e.dev.stepBegin[c] = static_cast<uint32_t>(all.size());
    std::vector<DevStep> steps;
    for (const Step& s : plan->channels[c].steps) steps.push_back(devStep(s));
    if (blocks_ > 1) placeBarriers(steps, slotElems, pieceElems, *plan);
    all.insert(all.end(), steps.begin(), steps.end());
  }
  for (size_t c = plan->channels.size(); c <= static_cast<size_t>(kMaxChannels); ++c)
    e.dev.stepBegin[c] = static_cast<uint32_t>(all.size());
  const bool handshake = hasP2pHandshake(*plan);
  if (handshake && (p2pOps == nullptr || p2pOps->size() > static_cast<size_t>(kMaxP2pOps)))
    return SSC_INTERNAL("a one-copy point-to-point plan without its {} operations",
                        p2pOps == nullptr ? 0 : p2pOps->size());
  const bool inlined = all.size() <= static_cast<size_t>(kInlineSteps);
  if (inlined) std::copy(all.begin(), all.end(), e.dev.inlineSteps);
  if (!inlined || handshake) {
    if (uploaded_ >= kMaxUploaded && !captured_) {
      // Rare: only a workload with more than kMaxUploaded distinct large call shapes gets here.
      // Every launch that could read an uploaded plan is this communicator's, so waiting for its
      // last one (not the device) makes freeing them safe.
      SSC_CHECK(order_->drain());
      clear();
    }
    if (!inlined) {
      void* dev = nullptr;
      SSC_CHECK(upload(all.data(), all.size() * sizeof(DevStep), &dev));
      e.dev.steps = static_cast<DevStep*>(dev);
    }
    if (handshake) {
      const std::vector<DevP2pOp> ops = devP2pOps(*p2pOps);
      void* dev = nullptr;
      if (!ops.empty()) {
        const sscResult_t r = upload(ops.data(), ops.size() * sizeof(DevP2pOp), &dev);
        if (r != sscSuccess) {
          if (e.dev.steps != nullptr) SSC_GPU_RELEASE(hipFree(e.dev.steps));
          return r;
        }
      }
      e.dev.p2pOps = static_cast<DevP2pOp*>(dev);
      e.dev.p2pCount = static_cast<uint32_t>(ops.size());
    }
    ++uploaded_;
  }
  *out = &entries_.emplace(key, std::move(e)).first->second.dev;
  return sscSuccess;
}

}  // namespace ssc::gpu
