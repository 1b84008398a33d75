// SPDX-License-Identifier: MIT
#include "src/device/gpu/gpu_timing.h"

#include <atomic>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "src/core/log.h"
#include "src/device/gpu/gpu_launch_order.h"
#include "src/platform/gpu_runtime.h"

namespace ssc::gpu {
namespace {

// Slots per device, made in one batch at the first traced call on it. A call finds none free only
// when more than kSlots traced calls are queued or unread; it then goes without a device time (its
// API event stays) rather than wait.
constexpr uint32_t kSlots = 512;

// An anchor serves the calls of the next 10 s: the two clocks drift apart by their rates'
// difference (parts per million), so a newer one is made for later calls. An attempt that fails
// (the anchor kernel found no room on the device within kAnchorWaitNs) is retried after
// kAnchorRetryNs, the calls in between using the previous anchor, or none before the first.
constexpr int64_t kAnchorLifeNs = 10'000'000'000;
constexpr int64_t kAnchorRetryNs = 1'000'000'000;
constexpr int64_t kAnchorWaitNs = 100'000'000;
// How long the anchor kernel waits for the host's word: the host writes it as soon as it sees the
// kernel running, so this only bounds a kernel whose attempt the host abandoned.
constexpr double kAnchorSpinSeconds = 1e-3;

template <class T>
T loadAcquire(T& word) {
  return std::atomic_ref<T>(word).load(std::memory_order_acquire);
}
template <class T>
T loadRelaxed(T& word) {
  return std::atomic_ref<T>(word).load(std::memory_order_relaxed);
}
template <class T>
void storeRelaxed(T& word, T v) {
  std::atomic_ref<T>(word).store(v, std::memory_order_relaxed);
}

// Where the device's clock (sscGpuTimer) meets monotonicNs().
struct Anchor {
  int64_t hostNs = 0;
  uint64_t ticks = 0;
  double nsPerTick = 1;
  int64_t toHostNs(uint64_t t) const {
    const double since = static_cast<double>(static_cast<int64_t>(t - ticks)) * nsPerTick;
    return hostNs + static_cast<int64_t>(std::llround(since));
  }
};

// One device's slots and anchor, made at its first traced call and kept for the process's life
// (never freed: timers of communicators destroyed at exit may still return slots).
struct DevicePool {
  bool usable = false;
  TimingSlot* host = nullptr;    // [kSlots], pinned and mapped
  TimingSlot* device = nullptr;  // the same slots as kernels address them
  ClockAnchorCell* cellHost = nullptr;
  ClockAnchorCell* cellDevice = nullptr;
  // The slots' counts of finished blocks. In device memory, not next to the slots: every block
  // of a traced launch adds to it, and atomics on mapped host memory cross the host link (where
  // the platform supports them at all).
  uint32_t* blocksDone = nullptr;
  hipStream_t stream = nullptr;  // the anchor kernel's, never the caller's
  std::vector<uint32_t> free;
  // Slots of timers gone before their kernels were seen to finish: a kernel may still write
  // them, so they are handed out again only once they read finished.
  std::vector<uint32_t> parked;
  Anchor anchor;
  bool anchored = false;
  int64_t anchoredAtNs = 0;
  int64_t nextTryNs = 0;
  uint32_t attempt = 0;
};

std::mutex g_mu;  // guards every pool (the timers read their own slot without it)

std::map<int, DevicePool*>& pools() {
  static auto* m = new std::map<int, DevicePool*>();
  return *m;
}

// A slot's kernels are done with it: the end is written (`done`) and block 0's start has
// reached the host too (kernel_timing.h), so no write of theirs is still on its way.
bool slotFinished(TimingSlot& s) { return loadAcquire(s.done) != 0 && loadRelaxed(s.start) != 0; }

DevicePool* makePool(int device) {
  // Allocations and a synchronize are not allowed while another stream of the process is being
  // captured in the global mode; in the relaxed mode they are.
  RelaxedCapture relaxed;
  auto* p = new DevicePool();
  void* host = nullptr;
  void* dev = nullptr;
  const size_t bytes = kSlots * sizeof(TimingSlot) + sizeof(ClockAnchorCell);
  hipError_t e = hipStreamCreateWithFlags(&p->stream, hipStreamNonBlocking);
  if (e == hipSuccess) e = hipHostMalloc(&host, bytes, hipHostMallocMapped);
  if (e == hipSuccess) {
    std::memset(host, 0, bytes);
    e = hipHostGetDevicePointer(&dev, host, 0);
  }
  if (e == hipSuccess) e = hipMalloc(reinterpret_cast<void**>(&p->blocksDone), kSlots * 4);
  // On the pool's own stream: a memset on the legacy default stream would wait for the caller's.
  if (e == hipSuccess) e = hipMemsetAsync(p->blocksDone, 0, kSlots * 4, p->stream);
  if (e == hipSuccess) e = hipStreamSynchronize(p->stream);
  if (e != hipSuccess) {
    SSC_LOG(kWarn, "STARSCREAM_TRACE: no device times on GPU {}: {}", device, hipGetErrorString(e));
    // Reported here; the traced calls go on without device times on this device.
    (void)hipGetLastError();
    return p;
  }
  p->host = static_cast<TimingSlot*>(host);
  p->device = static_cast<TimingSlot*>(dev);
  p->cellHost = reinterpret_cast<ClockAnchorCell*>(p->host + kSlots);
  p->cellDevice = reinterpret_cast<ClockAnchorCell*>(p->device + kSlots);
  for (uint32_t i = kSlots; i > 0; --i) p->free.push_back(i - 1);
  p->usable = true;
  return p;
}

DevicePool* poolFor(int device) {
  DevicePool*& p = pools()[device];
  if (p == nullptr) p = makePool(device);
  return p->usable ? p : nullptr;
}

// Waits up to kAnchorWaitNs for the device to write `value` into `word`.
bool waitWord(uint32_t& word, uint32_t value) {
  const int64_t until = monotonicNs() + kAnchorWaitNs;
  while (loadAcquire(word) != value)
    if (monotonicNs() > until) return false;
  return true;
}

// Makes a new anchor when the current one is older than kAnchorLifeNs. The anchor kernel says it
// runs (`ready`) and spins; the host reads its clock (before), writes `go`, and reads its clock
// again (after) once the kernel's stamp is back (`done`). The kernel read its clock after it saw
// `go` and before it wrote `done`, so the stamp lies between before and after on the host's
// clock, and the midpoint is within (after - before) / 2 of it: the host link's round trip, a
// microsecond or two. Only the anchor's private stream is waited on, and only for that kernel.
void refreshAnchor(DevicePool* p, int device, int64_t now) {
  if (p->anchored && now - p->anchoredAtNs < kAnchorLifeNs) return;
  if (now < p->nextTryNs) return;
  p->nextTryNs = now + kAnchorRetryNs;
  ClockAnchorCell& c = *p->cellHost;
  const uint32_t attempt = ++p->attempt;
  const double ticksPerSecond = sscGpuTimerTicksPerSecond(device);
  const auto spin = static_cast<uint64_t>(kAnchorSpinSeconds * ticksPerSecond);
  if (launchClockAnchor(p->cellDevice, attempt, spin, p->stream) != 0) return;  // error cleared
  if (!waitWord(c.ready, attempt)) return;  // the kernel ends on its own, after `spin`
  const int64_t before = monotonicNs();
  std::atomic_ref<uint32_t>(c.go).store(attempt, std::memory_order_release);
  if (!waitWord(c.done, attempt)) return;
  const int64_t after = monotonicNs();
  if (loadRelaxed(c.sawGo) == 0) return;  // it stopped waiting before `go`: no bound
  p->anchor = Anchor{before + (after - before) / 2, loadRelaxed(c.ticks), 1e9 / ticksPerSecond};
  p->anchored = true;
  p->anchoredAtNs = after;
  p->nextTryNs = 0;
}

}  // namespace

class SlotTimer final : public DeviceTimer {
 public:
  SlotTimer(DevicePool* pool, uint32_t index, const Anchor& anchor)
      : pool_(pool), index_(index), anchor_(anchor) {}
  ~SlotTimer() override {
    const int state = state_.load(std::memory_order_acquire);
    std::lock_guard<std::mutex> g(g_mu);
    if (state == kNothingRan || slotFinished(pool_->host[index_]))
      pool_->free.push_back(index_);
    else
      pool_->parked.push_back(index_);
  }
  int read(int64_t* startNs, int64_t* endNs) override {
    const int state = state_.load(std::memory_order_acquire);
    if (state == kPending) return 0;
    if (state != kQueued) return -1;
    TimingSlot& s = pool_->host[index_];
    if (!slotFinished(s)) return 0;
    *startNs = anchor_.toHostNs(loadRelaxed(s.start));
    *endNs = anchor_.toHostNs(loadRelaxed(s.end));
    return 1;
  }
  void finish(TimingEnd how) {
    state_.store(how == TimingEnd::kQueued       ? kQueued
                 : how == TimingEnd::kNothingRan ? kNothingRan
                                                 : kFailed,
                 std::memory_order_release);
  }

 private:
  enum : int { kPending, kQueued, kNothingRan, kFailed };
  DevicePool* pool_;
  uint32_t index_;
  Anchor anchor_;  // the device's newest when the call was queued
  std::atomic<int> state_{kPending};
};

CallTiming timingStart(WorkTiming* timing, bool capturing) {
  int device = 0;
  if (capturing) {
    timing->markUnknown();
    return {};
  }
  if (hipGetDevice(&device) != hipSuccess) {
    (void)hipGetLastError();  // the call goes on untimed; its own runtime calls will say more
    timing->markUnknown();
    return {};
  }
  std::unique_ptr<SlotTimer> timer;
  CallTiming call;
  {
    std::lock_guard<std::mutex> g(g_mu);
    DevicePool* p = poolFor(device);
    if (p != nullptr) refreshAnchor(p, device, monotonicNs());
    if (p != nullptr && p->anchored && p->free.empty()) {
      // Parked slots whose kernels have finished since.
      for (size_t i = 0; i < p->parked.size();) {
        if (slotFinished(p->host[p->parked[i]])) {
          p->free.push_back(p->parked[i]);
          p->parked[i] = p->parked.back();
          p->parked.pop_back();
        } else {
          ++i;
        }
      }
    }
    if (p != nullptr && p->anchored && !p->free.empty()) {
      const uint32_t i = p->free.back();
      p->free.pop_back();
      TimingSlot& s = p->host[i];
      storeRelaxed(s.start, uint64_t{0});
      storeRelaxed(s.end, uint64_t{0});
      storeRelaxed(s.done, uint64_t{0});
      std::atomic_thread_fence(std::memory_order_release);  // before the launch that stamps it
      timer = std::make_unique<SlotTimer>(p, i, p->anchor);
      call.kernels.slot = p->device + i;
      call.kernels.blocksDone = p->blocksDone + i;
      call.kernels.marks = kStampStart | kStampEnd;
    }
  }
  if (timer == nullptr) {
    timing->markUnknown();
    return {};
  }
  call.timer = timer.get();
  timing->attach(std::move(timer));
  return call;
}

void timingEnd(const CallTiming& call, TimingEnd how) {
  if (call.timer != nullptr) call.timer->finish(how);
}

}  // namespace ssc::gpu
