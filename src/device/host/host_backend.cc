// SPDX-License-Identifier: MIT
// The host backend: "device" memory is host memory, streams are HostStream queues, and plans run
// on the CPU over shared memory. It exists so every algorithm is tested on machines without a
// GPU; it is never the product's fast path.

#include <sys/sysinfo.h>

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <mutex>
#include <system_error>

#include "src/core/errors.h"
#include "src/device/backend.h"
#include "src/device/host/host_executor.h"
#include "src/device/host/host_stream.h"
#include "transports/host/shm_registry.h"

namespace ssc {

namespace {

class HostResources : public CommResources {
 public:
  size_t chunkBytes() const override { return shm->chunkBytes(); }
  int channels() const override { return shm->channels(); }
  std::unique_ptr<ShmTransport> shm;
  // Work enqueued on a NULL stream runs here: one queue per communicator, so several
  // communicators of one process (sscCommInitAll) never serialise behind each other.
  std::unique_ptr<HostStream> defaultStream = std::make_unique<HostStream>(/*nullStream=*/true);

  // Issue order across streams: every task takes a ticket when it is queued and runs only after
  // the task with the previous ticket finished, whichever stream that one was on. Streams are
  // threads here, so without this two streams' calls on one communicator would run at once on
  // the same FIFOs. Deadlock-free: tickets follow the one global order in which tasks were
  // queued (g_submitMu), and each stream runs its tasks in that order too.
  std::mutex orderMu;
  std::condition_variable orderCv;
  uint64_t nextTicket = 0;  // guarded by g_submitMu
  uint64_t doneTicket = 0;  // guarded by orderMu
};

std::mutex g_submitMu;

// Physical memory plus swap, or the control group's memory limit when lower (v2, then v1).
uint64_t hostMemoryBytes() {
  struct sysinfo si {};
  uint64_t most = sysinfo(&si) == 0
                      ? (static_cast<uint64_t>(si.totalram) + si.totalswap) * si.mem_unit
                      : UINT64_MAX;
  for (const char* path :
       {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::ifstream file(path);
    uint64_t limit = 0;
    if (file >> limit && limit > 0) most = std::min(most, limit);  // "max" does not parse
  }
  return most;
}

class HostBackend : public Backend {
 public:
  const char* name() const override { return "host"; }
  int deviceIndex() const override { return -1; }

  // Shareable (memfd) memory, so symmetric registrations can map it into peers. Its pages are
  // backed when first touched, so sizing and mapping alone succeed far beyond what the machine
  // holds (64 TiB does), and a touch past that is a SIGBUS or the OOM killer: what no memory
  // here could ever back is refused, as a GPU runtime refuses more than the device has.
  sscResult_t memAlloc(void** ptr, size_t bytes) override {
    const uint64_t most = hostMemoryBytes();
    if (bytes > most)
      return fail(sscSystemError,
                  "out of host memory: cannot allocate {} bytes (more than the "
                  "{} bytes of memory and swap this machine, or its memory limit, has)",
                  bytes, most);
    return shmAlloc(bytes, ptr);
  }
  sscResult_t memFree(void* ptr) override { return shmFree(ptr); }

  sscResult_t registerBuffer(CommView* comm, void* buff, size_t bytes,
                             std::vector<void*>* peerBases) override {
    return shmRegister(comm, buff, bytes, peerBases);
  }
  sscResult_t deregisterBuffer(CommView* comm, void* buff,
                               const std::vector<void*>& peerBases) override {
    return shmDeregister(comm, buff, peerBases);
  }

  PeerMemoryRuntime* peerMemory(CommView* comm) override {
    (void)comm;
    return shmPeerMemory();
  }
  bool oneCopyP2p() const override { return true; }

  // Host streams have no graphs; a test may pretend one is captured (host_stream.h).
  bool streamCapturing(sscStream_t stream) override {
    HostStream* s = stream == nullptr ? nullptr : HostStream::fromHandle(stream);
    return s != nullptr && s->pretendCapturing();
  }
  bool retainUntilGraphDestroyed(sscStream_t stream, std::function<void()> release) override {
    if (!streamCapturing(stream)) return false;
    HostStream::fromHandle(stream)->retainUntilPretendGraphDestroyed(std::move(release));
    return true;
  }

  // A ticket is the communicator's next task number; tasks run in that order.
  uint64_t workIssued(CommView* comm) override {
    auto* res = static_cast<HostResources*>(comm->resources.get());
    if (res == nullptr) return 0;
    std::lock_guard<std::mutex> g(g_submitMu);
    return res->nextTicket;
  }
  bool workFinished(CommView* comm, uint64_t ticket) override {
    auto* res = static_cast<HostResources*>(comm->resources.get());
    if (res == nullptr) return true;
    std::lock_guard<std::mutex> g(res->orderMu);
    return res->doneTicket >= ticket;
  }

  // Host streams are threads: the communicator's work is done when none of it is pending.
  sscResult_t drain(CommView* comm) override {
    comm->waitIdle();
    return sscSuccess;
  }

  sscResult_t streamCreate(sscStream_t* stream) override {
    try {
      *stream = new HostStream();
    } catch (const std::system_error& e) {
      return fail(sscSystemError, "cannot start a host stream's progress thread: {}", e.what());
    }
    return sscSuccess;
  }

  sscResult_t streamSynchronize(sscStream_t stream) override {
    if (stream == nullptr) return HostStream::syncAll();
    HostStream* s = HostStream::fromHandle(stream);
    if (s == nullptr)
      return fail(sscInvalidArgument, "stream {} is not a host-backend stream from sscStreamCreate",
                  stream);
    return s->synchronize();
  }

  sscResult_t streamDestroy(sscStream_t stream) override {
    HostStream* s = HostStream::fromHandle(stream);
    if (s == nullptr)
      return fail(sscInvalidArgument, "stream {} is not a host-backend stream from sscStreamCreate",
                  stream);
    delete s;
    return sscSuccess;
  }

  sscResult_t connect(CommView* comm, std::unique_ptr<CommResources>* out) override {
    std::unique_ptr<HostResources> res;
    try {
      res = std::make_unique<HostResources>();
    } catch (const std::system_error& e) {
      return fail(sscSystemError, "cannot start the communicator's progress thread: {}", e.what());
    }
    SSC_CHECK(ShmTransport::create(comm, &res->shm));
    *out = std::move(res);
    return sscSuccess;
  }

  sscResult_t enqueue(CommView* comm, std::shared_ptr<Work> work, sscStream_t stream) override {
    return submit(comm, std::move(work), nullptr, stream);
  }

  sscResult_t enqueueCopy(CommView* comm, void* dst, const void* src, size_t bytes,
                          sscStream_t stream) override {
    const StagedCopies copy{dst, src, bytes, nullptr, nullptr, 0};
    return submit(comm, nullptr, &copy, stream);
  }

  // The copies run in the same task as the plan, so they stay in stream order with it.
  sscResult_t enqueueStaged(CommView* comm, std::shared_ptr<Work> work, const StagedCopies& copies,
                            sscStream_t stream) override {
    return submit(comm, std::move(work), &copies, stream);
  }

 private:
  sscResult_t submit(CommView* comm, std::shared_ptr<Work> work, const StagedCopies* staged,
                     sscStream_t stream) {
    auto* res = static_cast<HostResources*>(comm->resources.get());
    HostStream* s = stream == nullptr ? res->defaultStream.get() : HostStream::fromHandle(stream);
    if (s == nullptr)
      return fail(sscInvalidArgument, "stream {} is not a host-backend stream from sscStreamCreate",
                  stream);
    const bool isStaged = staged != nullptr;
    const StagedCopies copies = isStaged ? *staged : StagedCopies{};
    comm->workQueued();
    std::lock_guard<std::mutex> submitting(g_submitMu);
    const uint64_t ticket = res->nextTicket++;
    s->enqueue([comm, res, work, isStaged, copies, ticket]() -> sscResult_t {
      {
        std::unique_lock<std::mutex> lk(res->orderMu);
        res->orderCv.wait(lk, [&] { return res->doneTicket == ticket; });
      }
      sscResult_t r = static_cast<sscResult_t>(comm->asyncError.load());
      // In progress: a non-blocking init's own calls (the tuner's calibration); the API lets no
      // other call through before init ends.
      if (r == sscInProgress) r = sscSuccess;
      WorkTiming* timing = work != nullptr ? work->timing.get() : nullptr;
      if (timing != nullptr) timing->startNs.store(monotonicNs(), std::memory_order_relaxed);
      if (r == sscSuccess) {
        // A plain copy (enqueueCopy) is a staged call without a plan.
        if (isStaged) std::memmove(copies.stageIn, copies.in, copies.inBytes);
        if (work != nullptr) r = runPlanOnHost(*res->shm, *work, &comm->abortFlag);
        if (r != sscSuccess) {
          // Names the peer that went away when that is why a wait ended.
          const std::string why = comm->failureText(lastError());
          comm->setAsyncError(r, why);
          setError(r, why);
        } else if (isStaged && copies.outBytes != 0)
          std::memmove(copies.out, copies.stageOut, copies.outBytes);
      } else {
        const std::string why = comm->asyncErrorText();
        setError(r, fmt::format("operation skipped: the communicator failed earlier: {}", why));
      }
      if (timing != nullptr) timing->endNs.store(monotonicNs(), std::memory_order_release);
      {
        // The next ticket may run now. Before commWorkDone: once that says idle, destroy may
        // free res.
        std::lock_guard<std::mutex> g(res->orderMu);
        ++res->doneTicket;
        res->orderCv.notify_all();
      }
      comm->workDone();
      return r;
    });
    return sscSuccess;
  }
};

}  // namespace

Backend* hostBackend() {
  static HostBackend backend;
  return &backend;
}

}  // namespace ssc
