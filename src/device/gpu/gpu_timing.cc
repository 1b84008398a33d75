// SPDX-License-Identifier: MIT
#include "src/device/gpu/gpu_timing.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <unistd.h>

#include "src/core/log.h"
#include "src/device/gpu/gpu_launch_order.h"
#include "src/platform/gpu_runtime.h"

namespace ssc::gpu {
namespace {

// Slots per device, made in one batch at the first traced call on it. A call finds none free only
// when more than kSlots traced calls are queued or unread; it then goes without a device time (its
// API event stays) rather than wait. A call is read up to two copies (2 ms) after it finished, so
// a pool holds the calls of about 2 ms beside those queued: 1024 slots serve calls of 4 us, and
// are 32 KiB to copy.
constexpr uint32_t kSlots = 1024;
// How often the slots are copied back while calls are traced. A copy is queued on the pool's copy
// stream with an event behind it and not waited for: the traced call that queues it pays for
// the queueing only (a few microseconds, once a millisecond), and later calls look at the event,
// no sooner than kLandNs after the copy was queued (a copy of the slots lands in about 10 us), to
// take the copy in once it has landed. The trace's final write copies once more and waits.
constexpr int64_t kReadEveryNs = 1'000'000;
constexpr int64_t kLandNs = 20'000;

// An anchor serves the calls of the next 10 s: the two clocks drift apart by their rates'
// difference (parts per million), so a newer one is made for later calls, by a thread of the
// device's own (the renewer) and never on a traced call's path. An attempt that fails (the anchor
// kernel found no room on the device within kAnchorWaitNs: every SM busy with kernels that wait
// for peers) is retried after kAnchorRetryNs, once a traced call has come since. A device no call
// has traced on for an anchor's life gets no new one until a call comes; the calls queued then
// are placed with the first anchor made after them (SlotTimer::read), which is no later than one
// attempt away.
constexpr int64_t kAnchorLifeNs = 10'000'000'000;
constexpr int64_t kAnchorRetryNs = 1'000'000'000;
constexpr int64_t kAnchorWaitNs = 100'000'000;
// Anchors kept per device, newest last, for the timers read after later ones were made (a timer
// is read when the trace next polls, usually at the next traced call; 64 anchors are 10 minutes).
constexpr size_t kAnchorHistory = 64;
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

// Where the device's clock (sscGpuTimer) meets monotonicNs().
struct Anchor {
  uint64_t seq = 0;  // 1 for a device's first, then counting up
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
  int device = 0;  // the runtime's index of the pool's device
  bool usable = false;
  TimingSlot* slots = nullptr;    // [kSlots], device memory: what kernels stamp
  TimingSlot* copy = nullptr;     // [kSlots], pinned: the slots as last copied back
  TimingSlot* landing = nullptr;  // [kSlots], pinned: where the copy in flight lands
  uint64_t copies = 0;            // copies taken into `copy` so far: the number of the current one
  int64_t copiedAtNs = 0;         // when `copy` was queued (0: never)
  bool inFlight = false;          // a copy into `landing` is queued
  int64_t inFlightSinceNs = 0;
  hipEvent_t landed = nullptr;          // recorded behind the copy in flight
  bool copyFailed = false;              // a copy failed: said once, the trace goes on without
  uint16_t gen[kSlots] = {};            // each slot's generation of its latest call (1 - 0xffff)
  uint64_t mark[kSlots] = {};           // each slot's `done` once its latest call has finished
  ClockAnchorCell* cellHost = nullptr;  // pinned and mapped: the anchor kernel meets the host here
  ClockAnchorCell* cellDevice = nullptr;
  hipStream_t stream = nullptr;      // the anchor kernel's, never the caller's
  hipStream_t copyStream = nullptr;  // the copies back, never the caller's nor the anchor's
  // Free slots, handed out oldest first: a slot comes back to a call only after every other free
  // slot has, hundreds of calls after its own call's count was seen complete, long after the end
  // that call's last block folded in has landed (the two words' arrival is not ordered).
  std::deque<uint32_t> free;
  // Slots of timers gone before their kernels were seen to finish, with that call's generation
  // and mark: a kernel may still write them, so they are handed out again only once they read
  // finished.
  struct Parked {
    uint32_t index;
    uint16_t gen;
    uint64_t mark;
  };
  std::vector<Parked> parked;
  std::deque<Anchor> anchors;  // the newest kAnchorHistory, oldest first; empty: none made yet
  uint32_t attempt = 0;        // the anchor kernel's attempts (only the one making anchors counts)
  // The renewer: wakes when the newest anchor has lived its life (or an attempt is due again)
  // and a traced call has come since; sleeps otherwise.
  std::thread renewer;
  std::condition_variable wake;
  bool callSinceAnchor = false;
  bool stopping = false;
};

std::mutex g_mu;       // guards every pool (the timers read their own slot without it)
pid_t g_poolsPid = 0;  // the process that made the pools (and runs their renewers)

std::map<int, DevicePool*>& pools() {
  static auto* m = new std::map<int, DevicePool*>();
  return *m;
}

// Under g_mu. In the current copy, every block of the slot's call with this mark has ended
// (the count has reached the mark: kernel_timing.h) and block 0's start is there (nothing orders
// the start's store before the count), so no write of that call is still to come but the ends
// folded in by the blocks that counted themselves out last, already on their way.
bool doneIn(const TimingSlot* copy, uint32_t i, uint16_t gen, uint64_t mark) {
  return copy[i].done == mark && stampGen(copy[i].start) == gen;
}
bool slotDone(const DevicePool* p, uint32_t i, uint16_t gen, uint64_t mark) {
  return doneIn(p->copy, i, gen, mark);
}

// Under g_mu: the copy back failed; said once, the calls stay traced without device times.
void copyFailed(DevicePool* p, hipError_t e) {
  SSC_LOG(kWarn, "STARSCREAM_TRACE: no more device times on GPU {}: reading them back: {}",
          p->device, hipGetErrorString(e));
  (void)hipGetLastError();  // reported here
  p->copyFailed = true;
}

// A copy, an event query and a synchronize are not allowed while another stream of the process is
// being captured in the global mode; in the relaxed mode they are. The mode is switched around
// those calls only, not around every read: switching is two runtime calls of its own, and most
// reads of a traced call make no runtime call at all.

// Under g_mu: queues a copy of the slots into `landing`, and the event behind it.
void queueCopy(DevicePool* p) {
  RelaxedCapture relaxed;
  hipError_t e = hipMemcpyAsync(p->landing, p->slots, kSlots * sizeof(TimingSlot),
                                hipMemcpyDeviceToHost, p->copyStream);
  if (e == hipSuccess) e = hipEventRecord(p->landed, p->copyStream);
  if (e != hipSuccess) return copyFailed(p, e);
  p->inFlight = true;
  p->inFlightSinceNs = monotonicNs();
}

// Under g_mu: takes the copy in flight in once it has landed (`wait`: waits for it).
void takeCopy(DevicePool* p, bool wait) {
  if (!p->inFlight) return;
  if (!wait && monotonicNs() - p->inFlightSinceNs < kLandNs) return;
  RelaxedCapture relaxed;
  hipError_t e = hipSuccess;
  if (wait) {
    e = hipEventSynchronize(p->landed);
  } else {
    e = hipEventQuery(p->landed);
    if (e == hipErrorNotReady) {
      (void)hipGetLastError();  // not sticky, but keep the slot clean for the caller's checks
      return;
    }
  }
  if (e != hipSuccess) return copyFailed(p, e);
  std::swap(p->copy, p->landing);
  ++p->copies;
  p->copiedAtNs = p->inFlightSinceNs;
  p->inFlight = false;
}

// Under g_mu: brings `copy` up to date, never waiting unless `now` (the trace's final write, a
// pool out of free slots): then the copy is one made after this call and waited for.
void refreshCopy(DevicePool* p, bool now) {
  if (p->copyFailed) return;
  if (now) {
    takeCopy(p, true);
    if (!p->copyFailed) queueCopy(p);
    if (!p->copyFailed) takeCopy(p, true);
    return;
  }
  takeCopy(p, false);
  if (!p->copyFailed && !p->inFlight && monotonicNs() - p->copiedAtNs >= kReadEveryNs) queueCopy(p);
}

// Under g_mu: a slot whose generation wraps to 1 is cleared first, since its end, a maximum,
// still holds generation 0xffff's. Once per 65,535 calls of a slot; it waits for the clear. After a
// failed copy or clear nothing is read back any more, so it tries no runtime call (the slot would
// otherwise be tried again at every traced call).
bool clearSlot(DevicePool* p, uint32_t i) {
  if (p->copyFailed) return false;
  RelaxedCapture relaxed;
  hipError_t e = hipMemsetAsync(&p->slots[i].end, 0, sizeof(uint64_t), p->copyStream);
  if (e == hipSuccess) e = hipStreamSynchronize(p->copyStream);
  if (e != hipSuccess) copyFailed(p, e);
  return e == hipSuccess;
}

DevicePool* makePool(int device) {
  // Allocations and a synchronize are not allowed while another stream of the process is being
  // captured in the global mode; in the relaxed mode they are.
  RelaxedCapture relaxed;
  auto* p = new DevicePool();
  p->device = device;
  void* cell = nullptr;
  void* cellDev = nullptr;
  void* copy = nullptr;
  void* landing = nullptr;
  hipError_t e = hipStreamCreateWithFlags(&p->stream, hipStreamNonBlocking);
  if (e == hipSuccess) e = hipStreamCreateWithFlags(&p->copyStream, hipStreamNonBlocking);
  if (e == hipSuccess) e = hipEventCreateWithFlags(&p->landed, hipEventDisableTiming);
  if (e == hipSuccess) e = hipHostMalloc(&cell, sizeof(ClockAnchorCell), hipHostMallocMapped);
  if (e == hipSuccess) {
    std::memset(cell, 0, sizeof(ClockAnchorCell));
    e = hipHostGetDevicePointer(&cellDev, cell, 0);
  }
  if (e == hipSuccess) e = hipHostMalloc(&copy, kSlots * sizeof(TimingSlot), hipHostMallocDefault);
  if (e == hipSuccess) std::memset(copy, 0, kSlots * sizeof(TimingSlot));
  if (e == hipSuccess)
    e = hipHostMalloc(&landing, kSlots * sizeof(TimingSlot), hipHostMallocDefault);
  if (e == hipSuccess)
    e = hipMalloc(reinterpret_cast<void**>(&p->slots), kSlots * sizeof(TimingSlot));
  // On the pool's own stream: a memset on the legacy default stream would wait for the caller's.
  // Generation 0 is never handed out, so zeroed slots read as no call's, and every count starts
  // at 0 (each slot's first mark is kDonePerCall).
  if (e == hipSuccess) e = hipMemsetAsync(p->slots, 0, kSlots * sizeof(TimingSlot), p->stream);
  if (e == hipSuccess) e = hipStreamSynchronize(p->stream);
  if (e != hipSuccess) {
    SSC_LOG(kWarn, "STARSCREAM_TRACE: no device times on GPU {}: {}", device, hipGetErrorString(e));
    // Reported here; the traced calls go on without device times on this device.
    (void)hipGetLastError();
    return p;
  }
  p->cellHost = static_cast<ClockAnchorCell*>(cell);
  p->cellDevice = static_cast<ClockAnchorCell*>(cellDev);
  p->copy = static_cast<TimingSlot*>(copy);
  p->landing = static_cast<TimingSlot*>(landing);
  for (uint32_t i = 0; i < kSlots; ++i) p->free.push_back(i);
  p->usable = true;
  return p;
}

// Waits up to kAnchorWaitNs for the device to write `value` into `word`.
bool waitWord(uint32_t& word, uint32_t value) {
  const int64_t until = monotonicNs() + kAnchorWaitNs;
  while (loadAcquire(word) != value)
    if (monotonicNs() > until) return false;
  return true;
}

// One attempt at an anchor; false when the kernel did not meet the host in time. The anchor kernel
// says it runs (`ready`) and spins; the host reads its clock (before), writes `go`, and reads its
// clock again (after) once the kernel's stamp is back (`done`). The kernel read its clock after it
// saw `go` and before it wrote `done`, so the stamp lies between before and after on the host's
// clock, and the midpoint is within (after - before) / 2 of it: the host link's round trip, a
// microsecond or two. Only the anchor's private stream is waited on, and only for that kernel.
// Called by one thread at a time per pool (the first traced call under g_mu, then the renewer),
// without g_mu held by the renewer: the wait must not hold up traced calls.
bool makeAnchor(DevicePool* p, uint32_t attempt, Anchor* out) {
  ClockAnchorCell& c = *p->cellHost;
  const double ticksPerSecond = sscGpuTimerTicksPerSecond(p->device);
  const auto spin = static_cast<uint64_t>(kAnchorSpinSeconds * ticksPerSecond);
  if (launchClockAnchor(p->cellDevice, attempt, spin, p->stream) != 0) return false;  // cleared
  if (!waitWord(c.ready, attempt)) return false;  // the kernel ends on its own, after `spin`
  const int64_t before = monotonicNs();
  std::atomic_ref<uint32_t>(c.go).store(attempt, std::memory_order_release);
  if (!waitWord(c.done, attempt)) return false;
  const int64_t after = monotonicNs();
  if (loadRelaxed(c.sawGo) == 0) return false;  // it stopped waiting before `go`: no bound
  *out = Anchor{0, before + (after - before) / 2, loadRelaxed(c.ticks), 1e9 / ticksPerSecond};
  return true;
}

// Under g_mu.
void publishAnchor(DevicePool* p, Anchor a) {
  a.seq = p->anchors.empty() ? 1 : p->anchors.back().seq + 1;
  p->anchors.push_back(a);
  if (p->anchors.size() > kAnchorHistory) p->anchors.pop_front();
}

// The renewer's loop (see kAnchorLifeNs).
void renew(DevicePool* p) {
  if (hipSetDevice(p->device) != hipSuccess) {
    (void)hipGetLastError();  // no renewals: calls keep the anchor they have, drifting slowly
    return;
  }
  std::unique_lock<std::mutex> lk(g_mu);
  int64_t nextTryNs = 0;
  while (!p->stopping) {
    if (!p->callSinceAnchor) {
      p->wake.wait(lk, [p] { return p->stopping || p->callSinceAnchor; });
      continue;
    }
    const int64_t due =
        std::max(p->anchors.empty() ? 0 : p->anchors.back().hostNs + kAnchorLifeNs, nextTryNs);
    const int64_t now = monotonicNs();
    if (now < due) {
      p->wake.wait_for(lk, std::chrono::nanoseconds(due - now));
      continue;
    }
    const uint32_t attempt = ++p->attempt;
    lk.unlock();
    Anchor a;
    const bool made = makeAnchor(p, attempt, &a);
    lk.lock();
    // Either way the renewer waits for the next traced call: a device that keeps refusing the
    // anchor kernel is tried again only while calls come, at most once per kAnchorRetryNs.
    p->callSinceAnchor = false;
    if (made) {
      publishAnchor(p, a);
      nextTryNs = 0;
    } else {
      nextTryNs = monotonicNs() + kAnchorRetryNs;
    }
  }
}

// At exit, before the runtime's own teardown (registered after the runtime started, so it runs
// first): a renewer must not be inside a runtime call while the runtime goes away.
void stopRenewers() {
  // A forked child has none of its parent's threads to join (it never made a pool of its own:
  // the map it inherited is its parent's).
  if (getpid() != g_poolsPid) return;
  std::vector<DevicePool*> all;
  {
    std::lock_guard<std::mutex> g(g_mu);
    for (auto& [device, p] : pools()) {
      p->stopping = true;
      p->wake.notify_all();
      all.push_back(p);
    }
  }
  for (DevicePool* p : all)
    if (p->renewer.joinable()) p->renewer.join();
}

// Under g_mu. The first traced call on a device makes its pool and its first anchor (waiting up
// to kAnchorWaitNs once), then starts the renewer.
DevicePool* poolFor(int device) {
  DevicePool*& p = pools()[device];
  if (p == nullptr) {
    p = makePool(device);
    if (!p->usable) return nullptr;
    static const bool registered = (g_poolsPid = getpid(), std::atexit(stopRenewers) == 0);
    if (!registered) {
      // Without the exit hook a renewer could be in the runtime at its teardown: first anchor only.
      SSC_LOG(kWarn, "STARSCREAM_TRACE: anchors on GPU {} are not renewed", device);
    }
    Anchor a;
    if (makeAnchor(p, ++p->attempt, &a)) publishAnchor(p, a);
    p->callSinceAnchor = true;
    if (registered) p->renewer = std::thread(renew, p);
  }
  return p->usable ? p : nullptr;
}

// Under g_mu: the anchor of a call queued at `queuedNs`, the one made nearest to it.
const Anchor* nearestAnchor(const DevicePool* p, int64_t queuedNs) {
  const Anchor* best = nullptr;
  for (const Anchor& a : p->anchors)
    if (best == nullptr || std::llabs(a.hostNs - queuedNs) < std::llabs(best->hostNs - queuedNs))
      best = &a;
  return best;
}

}  // namespace

class SlotTimer final : public DeviceTimer {
 public:
  SlotTimer(DevicePool* pool, uint32_t index, uint16_t gen, uint64_t mark, const Anchor& anchor,
            int64_t queuedNs)
      : pool_(pool),
        index_(index),
        gen_(gen),
        mark_(mark),
        anchor_(anchor),
        base_(anchor.ticks),
        queuedNs_(queuedNs),
        stale_(queuedNs - anchor.hostNs >= kAnchorLifeNs) {}
  ~SlotTimer() override {
    const int state = state_.load(std::memory_order_acquire);
    std::lock_guard<std::mutex> g(g_mu);
    if (state == kNothingRan) {
      // Nothing counts on the slot for this call: its next call's mark is this one's.
      pool_->mark[index_] -= kDonePerCall;
      pool_->free.push_back(index_);
    } else if (slotDone(pool_, index_, gen_, mark_)) {
      pool_->free.push_back(index_);
    } else {
      pool_->parked.push_back({index_, gen_, mark_});
    }
  }
  int read(int64_t* startNs, int64_t* endNs, bool fresh) override {
    const int state = state_.load(std::memory_order_acquire);
    if (state == kPending) return 0;
    if (state != kQueued) return -1;
    std::lock_guard<std::mutex> g(g_mu);
    // The end is read from a copy made after the one that showed the count complete, so the ends
    // of the blocks that counted themselves out last have landed in it (kernel_timing.h). A fresh
    // read makes up to two copies, and waits for them, to get there.
    // The copy before the current one is still in `landing` while no copy is in flight: a call
    // it shows finished is settled in the current one, with no copy more (at the final write,
    // every call that finished before the last copy but one settles without a copy of its own).
    for (int pass = 0;; ++pass) {
      if (doneIn_ == 0 && !pool_->inFlight && pool_->copies >= 2 &&
          doneIn(pool_->landing, index_, gen_, mark_))
        doneIn_ = pool_->copies - 1;
      if (doneIn_ == 0 && slotDone(pool_, index_, gen_, mark_)) doneIn_ = pool_->copies;
      if (doneIn_ != 0 && pool_->copies > doneIn_) break;
      if (pass == (fresh ? 2 : 1)) return 0;
      refreshCopy(pool_, fresh);
      if (pool_->copyFailed) return -1;
    }
    const TimingSlot& s = pool_->copy[index_];
    // Every block folded its end in before it counted itself out, so this is not expected; if it
    // happens the call goes without a device time rather than hold up the calls after it.
    if (stampGen(s.end) != gen_) return -1;
    if (stale_ && !placeStale()) return 0;
    *startNs = anchor_.toHostNs(stampTicks(s.start, base_));
    *endNs = anchor_.toHostNs(stampTicks(s.end, base_));
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

  // A call queued when the device's newest anchor had outlived kAnchorLifeNs (the first after an
  // idle spell) is placed with the anchor the renewer made after it, once there is one; after
  // kStaleWaitNs without one (the renewer's attempts failed) with the old one.
  static constexpr int64_t kStaleWaitNs = 3 * kAnchorRetryNs;
  // Under g_mu.
  bool placeStale() {
    const Anchor* nearest = nearestAnchor(pool_, queuedNs_);
    if (nearest != nullptr && nearest->seq != anchor_.seq) {
      anchor_ = *nearest;
    } else if (monotonicNs() - queuedNs_ < kStaleWaitNs) {
      return false;
    }
    stale_ = false;
    return true;
  }

  DevicePool* pool_;
  uint32_t index_;
  uint16_t gen_;         // the slot's generation for this call
  uint64_t mark_;        // the slot's count once this call has finished
  uint64_t doneIn_ = 0;  // the pool's copy that first showed the call finished (0: none yet)
  Anchor anchor_;        // the device's newest when the call was queued, or the one placing it
  uint64_t base_;        // the ticks the stamps count from: the queueing anchor's
  int64_t queuedNs_;
  bool stale_;  // read by the trace's poll only, under its lock
  std::atomic<int> state_{kPending};
};

CallTiming timingStart(WorkTiming* timing, int device, bool capturing) {
  if (capturing) {
    timing->markUnknown();
    return {};
  }
  std::unique_ptr<SlotTimer> timer;
  CallTiming call;
  {
    std::lock_guard<std::mutex> g(g_mu);
    DevicePool* p = poolFor(device);
    const bool anchored = p != nullptr && !p->anchors.empty();
    if (p != nullptr && !p->callSinceAnchor) {
      p->callSinceAnchor = true;  // the renewer sleeps until a call comes
      p->wake.notify_one();
    }
    if (anchored && p->free.empty()) {
      // Parked slots whose kernels have finished since.
      if (!p->parked.empty()) refreshCopy(p, true);
      for (size_t i = 0; i < p->parked.size();) {
        const DevicePool::Parked& k = p->parked[i];
        if (slotDone(p, k.index, k.gen, k.mark)) {
          p->free.push_back(k.index);
          p->parked[i] = p->parked.back();
          p->parked.pop_back();
        } else {
          ++i;
        }
      }
    }
    const uint32_t i = anchored && !p->free.empty() ? p->free.front() : kSlots;
    if (i != kSlots && (p->gen[i] != 0xffff || clearSlot(p, i))) {
      p->free.pop_front();
      p->gen[i] = static_cast<uint16_t>(p->gen[i] == 0xffff ? 1 : p->gen[i] + 1);
      p->mark[i] += kDonePerCall;
      const Anchor& anchor = p->anchors.back();
      timer = std::make_unique<SlotTimer>(p, i, p->gen[i], p->mark[i], anchor, monotonicNs());
      call.kernels.slot = p->slots + i;
      call.kernels.base = anchor.ticks;
      call.kernels.marks = kStampStart | kStampEnd;
      call.kernels.gen = p->gen[i];
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
