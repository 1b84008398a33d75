// SPDX-License-Identifier: MIT
#include "src/device/gpu/gpu_runtime_info.h"
#include "src/device/gpu/gpu_backend.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <vector>
#include <mutex>
#include <set>
#include <thread>

#include "src/device/backend.h"
#include "src/core/env.h"
#include "src/core/errors.h"
#include "src/core/log.h"
#include "src/device/gpu/gpu_census.h"
#include "src/device/gpu/gpu_connections.h"
#include "src/device/gpu/gpu_launch_order.h"
#include "src/device/gpu/gpu_memory_access.h"
#include "src/device/gpu/gpu_peer_memory.h"
#include "src/device/gpu/gpu_plan_cache.h"
#include "src/device/gpu/gpu_registry.h"
#include "src/device/gpu/gpu_services.h"
#include "src/platform/gpu_check.h"
#include "src/platform/gpu_runtime.h"
#include "src/device/gpu/gpu_symmetric.h"
#include "src/device/gpu/gpu_timing.h"
#include "src/kernels/gpu/copy_kernel.h"
#include "transports/net/net_comm.h"

namespace ssc {

namespace {

using gpu::DeviceGuard;
using gpu::GpuConnections;
using gpu::LaunchOrder;
using gpu::RelaxedCapture;

class GpuResources : public CommResources {
 public:
  ~GpuResources() override {
    stop_ = true;
    if (watcher_.joinable()) watcher_.join();
    DeviceGuard onDevice(device);
    // Kernels of this communicator may still be queued: let them finish before their memory
    // goes away (they end within STARSCREAM_TIMEOUT even when a peer is gone). Only this
    // communicator's: a device-wide synchronize would also wait for other communicators' kernels,
    // which may wait on peers that are themselves waiting here.
    (void)order.drain();
    plans.reset();
    if (scratch_ != nullptr) SSC_GPU_RELEASE(hipFree(scratch_));
    for (void* p : oldScratch_) SSC_GPU_RELEASE(hipFree(p));
    sym.reset();  // unmaps peers' registered buffers (no kernel can use them any more)
  }
  size_t chunkBytes() const override { return conns->shape().chunkBytes(); }
  int channels() const override { return conns->shape().channels; }
  int blocksPerChannel() const override { return conns->shape().blocksPerChannel; }

  // Reports a kernel's recorded failure on the communicator once; returns its result code.
  sscResult_t reportKernelError() {
    uint32_t peer = 0, channel = 0, detail = 0;
    const uint32_t code = conns->kernelError(&peer, &channel, &detail);
    if (code == gpu::kKernelOk) return sscSuccess;
    const sscResult_t r = code == gpu::kKernelTimeout   ? sscTimeout
                          : code == gpu::kKernelAborted ? sscRemoteError
                                                        : sscInvalidUsage;
    if (!reported_.exchange(true)) {
      std::string msg;
      if (code == gpu::kKernelTimeout) {
        msg = fmt::format(
            "GPU kernel: a wait on rank {} (channel/block {}) passed STARSCREAM_TIMEOUT: "
            "a peer is missing or hung",
            static_cast<int>(peer), channel);
        conns->dumpNetworkState();  // which network FIFO stopped, if the wait crossed nodes
      } else if (code == gpu::kKernelAborted && static_cast<int>(peer) < 0)  // a local barrier
        msg = fmt::format(
            "GPU kernel: communicator aborted while waiting for this rank's other "
            "blocks (channel {})",
            channel);
      else if (code == gpu::kKernelAborted)
        msg = fmt::format("GPU kernel: communicator aborted while waiting for rank {}",
                          static_cast<int>(peer));
      else if (code == gpu::kKernelP2pMismatch)
        msg = p2pMismatchText(static_cast<int>(peer), channel, detail);
      else if (code == gpu::kKernelCallMismatch)
        msg = fmt::format(
            "GPU kernel: rank {} reached the same symmetric barrier with a different "
            "call (hash {:#x}): the ranks called with different arguments "
            "(collective, count, type or buffers)",
            static_cast<int>(peer), detail);
      else
        msg = fmt::format(
            "GPU kernel: rank {} posted a slot of {} bytes that does not match this "
            "rank's step (size or point-to-point message length) on channel {}: "
            "the ranks called with different counts, types or peers (or a send "
            "and its receive of different sizes)",
            static_cast<int>(peer), detail, channel);
      // Only when nothing failed before: the first error wins anyway, and sscCommAbort records
      // its own before it frees the communicator; a stream synchronize may get here while that
      // is under way, when the communicator's error message and its lock are already destroyed
      // (the atomic read is all that is safe then).
      const int prior = comm->asyncError.load();
      if (prior == sscSuccess || prior == sscInProgress) {
        // A peer's death or departure (peer watch) is why an abort reached the kernels: say so.
        if (code == gpu::kKernelAborted) msg = comm->failureText(msg);
        comm->setAsyncError(r, msg);
      }
      SSC_LOG(kWarn, "{}", msg);
    }
    return r;
  }

  // The host executor's words for sends and receives that do not pair up, from the kernel's.
  std::string p2pMismatchText(int peer, uint32_t kind, uint32_t index) const {
    uint64_t sent = 0, expected = 0;
    conns->kernelErrorCounts(&sent, &expected);
    const int me = conns->rank();
    const bool mine = (kind & gpu::kP2pThisRankSends) != 0;
    const int sender = mine ? me : peer, receiver = mine ? peer : me;
    if ((kind & 0xffffu) == gpu::kP2pCounts)
      return fmt::format(
          "rank {} posted {} send(s) to rank {} in this group, but rank {} posted {} "
          "receive(s) from rank {} in its matching group",
          sender, sent, receiver, receiver, expected, sender);
    return fmt::format(
        "rank {} sends {} bytes to rank {}, whose matching receive (message {} of the pair in "
        "this group) is {} bytes: counts or types differ",
        sender, sent, receiver, index + 1, expected);
  }

  void startWatcher() {
    // Kernels end on their own after a timeout; this turns their error word into the
    // communicator's async error without the user having to synchronize (sscCommGetAsyncError).
    // It also relays sscCommAbort to the kernels, which cannot see comm->abortFlag: waits on a
    // peer that will never come end within a few milliseconds, not after STARSCREAM_TIMEOUT.
    watcher_ = std::thread([this] {
      bool abortSent = false;
      for (;;) {
        // stop_ first: sscCommAbort raises the flag before it frees the communicator (which sets
        // stop_), so a watcher told to stop still sees an abort, and wakes the kernels before the
        // destructor waits for them.
        const bool stopping = stop_;
        if (!abortSent && comm->abortFlag.load()) {
          conns->requestAbort();
          abortSent = true;
        }
        if (stopping || reportKernelError() != sscSuccess) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    });
  }

  sscResult_t ensureScratch(size_t bytes) {
    if (bytes <= scratchBytes_) return sscSuccess;
    // Rare (grows to the largest call's need; 1 MiB from init covers the small calls): only
    // this communicator's kernels use it, so waiting for its last launch (not the device) makes
    // the old one free to go. Relaxed capture mode: legal while the caller captures a graph.
    SSC_CHECK(order.drain());
    RelaxedCapture relaxed;
    // The old one is kept until destroy: a captured graph may hold its address for replays
    // (growth is rare and at most doubles what is kept).
    if (scratch_ != nullptr) oldScratch_.push_back(scratch_);
    scratch_ = nullptr;
    scratchBytes_ = 0;
    const size_t want = std::max<size_t>(bytes, 1 << 20);
    SSC_GPU_CHECK(hipMalloc(&scratch_, want), "allocating {} bytes of GPU scratch", want);
    scratchBytes_ = want;
    return sscSuccess;
  }

  CommView* comm = nullptr;
  std::unique_ptr<GpuConnections> conns;
  std::unique_ptr<gpu::SymmetricExecutor> sym;
  std::unique_ptr<gpu::PlanCache> plans;
  std::unique_ptr<gpu::GpuPeerMemory> peerMemory;  // plain buffers' exports and imports
  int copyBlocks = 1;        // the copy kernel's largest grid: this rank's SM share
  bool deviceScope = false;  // every peer on this GPU: FIFO signals at device scope
  uint64_t timeoutTicks = 0;
  int device = -1;  // the communicator's device: made current around every runtime call
  std::mutex mu;    // enqueue on one communicator from several threads; guards `order`
  // Every launch of the communicator (FIFO, symmetric, LL, staged copies) in issue order.
  LaunchOrder order;

 private:
  void* scratch_ = nullptr;
  size_t scratchBytes_ = 0;
  std::vector<void*> oldScratch_;

 public:
  void* scratch() const { return scratch_; }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<bool> reported_{false};
  std::thread watcher_;
};

// Live communicators' resources, so a stream synchronize can report their kernels' failures.
std::mutex g_liveMu;
std::set<GpuResources*> g_live;

class GpuBackend : public Backend {
 public:
  const char* name() const override { return "gpu"; }
  bool runtimeInfo(GpuRuntimeInfo* out) override { return queryGpuRuntimeInfo(out); }
  std::string driverVersion() const override {
    int v = 0;
    return hipDriverGetVersion(&v) == hipSuccess ? std::to_string(v) : "";
  }
  int deviceIndex() const override {
    int d = -1;
    return hipGetDevice(&d) == hipSuccess ? d : -1;
  }
  int deviceCount() const override {
    int n = 0;
    return hipGetDeviceCount(&n) == hipSuccess ? n : 0;
  }

  sscResult_t memAlloc(void** ptr, size_t bytes) override {
    SSC_GPU_CHECK(hipMalloc(ptr, bytes), "allocating {} bytes", bytes);
    gpu::AllocationTable::process().add(*ptr, bytes);  // registerBuffer exports whole allocations
    return sscSuccess;
  }

  sscResult_t memFree(void* ptr) override {
    gpu::AllocationTable::process().remove(ptr);
    gpu::forgetDeviceRange(ptr);
    SSC_GPU_CHECK(hipFree(ptr), "freeing {}", ptr);
    return sscSuccess;
  }

  sscResult_t streamCreate(sscStream_t* stream) override {
    hipStream_t s = nullptr;
    SSC_GPU_CHECK(hipStreamCreateWithFlags(&s, hipStreamNonBlocking), "creating a stream");
    *stream = static_cast<sscStream_t>(s);
    return sscSuccess;
  }

  sscResult_t streamSynchronize(sscStream_t stream) override {
    SSC_GPU_CHECK(hipStreamSynchronize(static_cast<hipStream_t>(stream)), "synchronizing a stream");
    std::lock_guard<std::mutex> g(g_liveMu);
    for (GpuResources* r : g_live) SSC_CHECK(r->reportKernelError());
    return sscSuccess;
  }

  sscResult_t streamDestroy(sscStream_t stream) override {
    SSC_GPU_CHECK(hipStreamDestroy(static_cast<hipStream_t>(stream)), "destroying a stream");
    return sscSuccess;
  }

  sscResult_t connect(CommView* comm, std::unique_ptr<CommResources>* out) override {
    auto res = std::make_unique<GpuResources>();
    res->comm = comm;
    res->device = comm->device;
    DeviceGuard onDevice(res->device);
    gpu::FifoShape shape;
    gpu::LaunchLimits limits;
    SSC_CHECK(gpu::agreeLaunchLimits(comm, shape.channels, &limits));
    shape.blocksPerChannel = limits.blocksPerChannel;
    // Several blocks per channel meet at channel barriers between steps; that is deadlock-free
    // when a sender can run at most one FIFO ahead of its receiver, as over IPC. Across nodes the
    // outbox, the network and the inbox buffer more than that, and on the H200 the hierarchical
    // all-gather over 2 emulated nodes hung at 32 MiB with 4 blocks (every block of a ring
    // waiting at a barrier or on a sibling's peer). One block per channel has no barriers; the
    // host-staged path is bound by the host link, not by the block count.
    if (!netPeersOf(comm).empty()) shape.blocksPerChannel = 1;
    SSC_CHECK(GpuConnections::create(comm, shape, &res->conns));
    res->plans = std::make_unique<gpu::PlanCache>(shape.slotBytes, shape.pieceBytes(),
                                                  shape.blocksPerChannel, &res->order);
    SSC_CHECK(res->ensureScratch(1));  // at init, so small calls never allocate
    res->peerMemory = std::make_unique<gpu::GpuPeerMemory>(res->device);
    res->copyBlocks = limits.symBlocks;
    res->deviceScope = limits.sameDevice && netPeersOf(comm).empty();
    const double seconds = comm->waits.timeoutSeconds;  // fixed when the communicator was created
    // 0 ticks is "no limit" to the kernels, as <= 0 is to every other wait. A huge or infinite
    // value is no limit too: converting it to an integer would be undefined.
    const double ticks = seconds * sscGpuTimerTicksPerSecond(deviceIndex());
    if (seconds > 0 && std::isfinite(ticks) && ticks < 9.0e18)
      res->timeoutTicks = static_cast<uint64_t>(ticks);
    res->sym = std::make_unique<gpu::SymmetricExecutor>(
        res->conns.get(), limits, comm->rank, comm->nranks, res->timeoutTicks, &comm->config);
    SSC_CHECK(res->sym->init());
    res->startWatcher();
    {
      std::lock_guard<std::mutex> g(g_liveMu);
      g_live.insert(res.get());
    }
    SSC_LOG(kInfo, "GPU transport: {} channel(s) x {} block(s), {} slots x {} KiB per connection",
            shape.channels, shape.blocksPerChannel, shape.slots, shape.slotBytes >> 10);
    *out = std::unique_ptr<CommResources>(new LiveHandle(std::move(res)));
    return sscSuccess;
  }

  sscResult_t registerBuffer(CommView* comm, void* buff, size_t bytes,
                             std::vector<void*>* peerBases) override {
    peerBases->clear();
    auto* handle = static_cast<LiveHandle*>(comm->resources.get());
    if (handle == nullptr) return sscSuccess;
    DeviceGuard onDevice(handle->res->device);
    return handle->res->sym->registrations().add(comm, buff, bytes, peerBases);
  }

  sscResult_t deregisterBuffer(CommView* comm, void* buff,
                               const std::vector<void*>& peerBases) override {
    auto* handle = static_cast<LiveHandle*>(comm->resources.get());
    if (handle == nullptr || peerBases.empty()) return sscSuccess;
    GpuResources* res = handle->res.get();
    DeviceGuard onDevice(res->device);
    // Kernels already queued may still read the mapping: let this communicator's finish first.
    {
      std::lock_guard<std::mutex> g(res->mu);
      SSC_CHECK(res->order.drain());
    }
    res->sym->registrations().remove(buff);
    return sscSuccess;
  }

  sscResult_t checkAccessible(CommView* comm, const char* fn, const char* what, const void* p,
                              size_t bytes) override {
    return gpu::checkAccessible(comm->device, fn, what, p, bytes);
  }

  // The plan kernel runs the one-copy handshake (p2p_handshake.cuh).
  bool oneCopyP2p() const override { return true; }

  PeerMemoryRuntime* peerMemory(CommView* comm) override {
    auto* handle = static_cast<LiveHandle*>(comm->resources.get());
    return handle == nullptr ? nullptr : handle->res->peerMemory.get();
  }

  // The LL one-shot pushes the inputs as packets into peers' inboxes in the connection segment.
  uint64_t packetAllReduceMaxBytes(const CommView* comm) const override {
    return std::min(comm->config.packetMaxBytes, gpu::kLLDefaultMaxBytes);
  }

  // 32 MiB each: unregistered calls up to that size run zero-copy at K partitions for 2 x 32 MiB
  // of HBM per rank.
  size_t defaultStagingBytes() const override { return 32u << 20; }

  sscResult_t enqueueStaged(CommView* comm, std::shared_ptr<Work> work, const StagedCopies& c,
                            sscStream_t stream) override {
    return submit(comm, std::move(work), &c, stream);
  }

  sscResult_t enqueue(CommView* comm, std::shared_ptr<Work> work, sscStream_t stream) override {
    return submit(comm, std::move(work), nullptr, stream);
  }

  // A copy-engine transfer: on one rank the real NCCL's collectives are such a copy too.
  sscResult_t enqueueCopy(CommView* comm, void* dst, const void* src, size_t bytes,
                          sscStream_t stream) override {
    const StagedCopies copy{dst, src, bytes, nullptr, nullptr, 0};
    return submit(comm, nullptr, &copy, stream);
  }

  bool deviceScopeSignals(CommView* comm) override {
    auto* handle = static_cast<LiveHandle*>(comm->resources.get());
    return handle != nullptr && handle->res->deviceScope;
  }

  uint64_t workIssued(CommView* comm) override {
    auto* handle = static_cast<LiveHandle*>(comm->resources.get());
    if (handle == nullptr) return 0;
    std::lock_guard<std::mutex> g(handle->res->mu);
    return handle->res->order.issued();
  }

  bool workFinished(CommView* comm, uint64_t ticket) override {
    auto* handle = static_cast<LiveHandle*>(comm->resources.get());
    if (handle == nullptr) return true;
    GpuResources* res = handle->res.get();
    std::lock_guard<std::mutex> g(res->mu);
    DeviceGuard onDevice(res->device);
    return res->order.finishedThrough(ticket);
  }

  // Waits for every launch of comm queued so far (finalize and destroy).
  sscResult_t drain(CommView* comm) override {
    auto* handle = static_cast<LiveHandle*>(comm->resources.get());
    if (handle == nullptr) return sscSuccess;
    GpuResources* res = handle->res.get();
    std::lock_guard<std::mutex> g(res->mu);
    DeviceGuard onDevice(res->device);
    return res->order.drain();
  }

  bool streamCapturing(sscStream_t stream) override {
    return gpu::streamCapturing(static_cast<hipStream_t>(stream));
  }
  bool retainUntilGraphDestroyed(sscStream_t stream, std::function<void()> release) override {
    return gpu::retainUntilGraphDestroyed(static_cast<hipStream_t>(stream), std::move(release));
  }

  sscResult_t bindDevice(int device) override {
    if (device >= 0) SSC_GPU_CHECK(hipSetDevice(device), "making device {} current", device);
    return sscSuccess;
  }

  DeviceServices* services() override { return gpuServices(); }

  const uint32_t* deviceAbortWord(CommView* comm) override {
    auto* handle = static_cast<LiveHandle*>(comm->resources.get());
    return handle == nullptr ? nullptr : handle->res->conns->abortWordDevice();
  }

 private:
  // One operation of the communicator: a plan, and for a staged call the copies into and out of
  // the (shared) staging buffers around it; a plain copy is a staged call without plan or copy
  // out. The launch order covers all of it.
  sscResult_t submit(CommView* comm, std::shared_ptr<Work> work, const StagedCopies* staged,
                     sscStream_t streamHandle) {
    auto* res = static_cast<LiveHandle*>(comm->resources.get())->res.get();
    std::lock_guard<std::mutex> g(res->mu);
    DeviceGuard onDevice(res->device);
    SSC_CHECK(res->reportKernelError());
    const sscResult_t prior = static_cast<sscResult_t>(comm->asyncError.load());
    // In progress: a non-blocking init's own calls (the tuner's calibration); the API lets no
    // other call through before init ends.
    if (prior != sscSuccess && prior != sscInProgress)
      return fail(prior,
                  "communicator is in error state from an earlier failure; operation skipped");
    const auto stream = static_cast<hipStream_t>(streamHandle);
    const bool capturing = gpu::streamCapturing(stream);
    SSC_CHECK(res->order.before(stream, capturing));
    // A traced call (STARSCREAM_TRACE): its plan's kernels stamp a timing slot (the staging
    // copies around them are not in the interval); a call captured into a graph goes untimed.
    const std::shared_ptr<WorkTiming> timing = work != nullptr ? work->timing : nullptr;
    gpu::CallTiming clock;
    if (timing != nullptr) clock = gpu::timingStart(timing.get(), res->device, capturing);
    bool launched = false;  // a kernel carrying the slot was queued
    sscResult_t r = sscSuccess;
    if (staged != nullptr)
      r = copyLocked(res, staged->stageIn, staged->in, staged->inBytes, stream);
    if (r == sscSuccess && work != nullptr)
      r = launchLocked(res, std::move(work), stream, capturing, clock.kernels, &launched);
    if (r == sscSuccess && staged != nullptr && staged->outBytes != 0)
      r = copyLocked(res, staged->out, staged->stageOut, staged->outBytes, stream);
    if (timing != nullptr)
      gpu::timingEnd(clock, !launched         ? gpu::TimingEnd::kNothingRan
                            : r == sscSuccess ? gpu::TimingEnd::kQueued
                                              : gpu::TimingEnd::kFailed);
    SSC_CHECK(r);
    return res->order.after(stream, capturing);
  }

  // Copies up to this size run on the SMs (copy_kernel.h: the copy engine starts later), larger
  // ones on the copy engine, which moves them as fast with no SM taken from other work.
  static constexpr size_t kKernelCopyMaxBytes = 8u << 20;

  sscResult_t copyLocked(GpuResources* res, void* dst, const void* src, size_t bytes,
                         hipStream_t stream) {
    const bool sameAlignment =
        ((reinterpret_cast<uintptr_t>(dst) ^ reinterpret_cast<uintptr_t>(src)) & 15u) == 0;
    if (sameAlignment && bytes <= kKernelCopyMaxBytes) {
      const int e = gpu::launchCopyKernel(dst, src, bytes, res->copyBlocks, stream);
      if (e != 0)
        return fail(sscUnhandledDeviceError, "launching a copy kernel failed: {}",
                    hipGetErrorString(static_cast<hipError_t>(e)));
      return sscSuccess;
    }
    SSC_GPU_CHECK(hipMemcpyAsync(dst, src, bytes, hipMemcpyDefault, stream), "a copy of {} bytes",
                  bytes);
    return sscSuccess;
  }

  // Queues one plan (FIFO kernel or symmetric executor); submit() orders it. `timing`: what a
  // traced call's kernels stamp (slot null: untimed); *launched: set once a kernel is queued (a
  // plan may have nothing to run on this rank).
  sscResult_t launchLocked(GpuResources* res, std::shared_ptr<Work> work, hipStream_t stream,
                           bool capturing, const gpu::KernelTiming& timing, bool* launched) {
    const RankPlan& plan = *work->plan;
    if (gpu::isSymmetricPlan(plan)) return res->sym->enqueue(*work, stream, timing, launched);
    if (plan.channels.size() > static_cast<size_t>(res->channels()))
      return SSC_INTERNAL("plan uses {} channels, the GPU transport has {}", plan.channels.size(),
                          res->channels());
    if (work->buffers.size() > static_cast<size_t>(gpu::kMaxBuffers))
      return fail(sscInvalidUsage,
                  "{} buffers in one fused call; the GPU executor takes at most {} "
                  "(split the group)",
                  work->buffers.size(), gpu::kMaxBuffers);
    const gpu::DevicePlan* dplan = nullptr;
    SSC_CHECK(res->plans->get(work->plan, work->elemBytes, capturing,
                              work->p2p != nullptr ? &work->p2p->ops : nullptr, &dplan));
    if (dplan->channels == 0) return sscSuccess;
    SSC_CHECK(res->ensureScratch(plan.scratchElems * work->elemBytes));

    gpu::KernelArgs a{};
    res->conns->fillArgs(&a);
    a.steps = dplan->steps;
    if (a.steps == nullptr)
      std::copy(std::begin(dplan->inlineSteps), std::end(dplan->inlineSteps), a.inlineSteps);
    std::copy(std::begin(dplan->stepBegin), std::end(dplan->stepBegin), a.stepBegin);
    a.elemBytes = static_cast<uint32_t>(work->elemBytes);
    a.deviceScope = res->deviceScope ? 1 : 0;
    a.timeoutTicks = res->timeoutTicks;
    a.reduce = gpu::devReduceOf(work->reduce);
    a.timing = timing;
    for (size_t i = 0; i < work->buffers.size(); ++i) a.buffers[i] = work->buffers[i];
    a.buffers[kBufScratch] = res->scratch();
    if (dplan->p2pOps != nullptr) {
      // The receiver's offers of this launch, by receive (later ones are not offered).
      a.p2p.ops = dplan->p2pOps;
      a.p2p.nops = dplan->p2pCount;
      const Work::P2pDirect& p2p = *work->p2p;
      size_t ordinal = 0;
      for (size_t i = 0; i < p2p.ops.size(); ++i) {
        if (p2p.ops[i].isSend) continue;
        if (ordinal < static_cast<size_t>(gpu::kMaxP2pOffers)) {
          a.p2p.offer[ordinal] = p2p.offer[i];
          if (p2p.swap[i] != 0) a.p2p.swapMask |= uint64_t{1} << ordinal;
        }
        ++ordinal;
      }
    }

    const int e = gpu::launchPlanKernel(a, dplan->channels, stream);
    if (e != 0)
      return fail(sscUnhandledDeviceError, "launching the plan kernel failed: {}",
                  e > 0 ? hipGetErrorString(static_cast<hipError_t>(e)) : "unknown data type");
    *launched = true;
    return sscSuccess;
  }

  // What comm->resources holds: unregisters from g_live before the resources go away.
  struct LiveHandle : CommResources {
    explicit LiveHandle(std::unique_ptr<GpuResources> r) : res(std::move(r)) {}
    ~LiveHandle() override {
      std::lock_guard<std::mutex> g(g_liveMu);
      g_live.erase(res.get());
    }
    size_t chunkBytes() const override { return res->chunkBytes(); }
    int channels() const override { return res->channels(); }
    int blocksPerChannel() const override { return res->blocksPerChannel(); }
    std::unique_ptr<GpuResources> res;
  };
};

}  // namespace

Backend* gpuBackendIfAvailable() {
  static Backend* backend = []() -> Backend* {
    int n = 0;
    if (hipGetDeviceCount(&n) != hipSuccess || n <= 0) {
      (void)hipGetLastError();  // clear the sticky "no device" so later probes start clean
      return nullptr;
    }
    static GpuBackend b;
    return &b;
  }();
  return backend;
}

}  // namespace ssc
