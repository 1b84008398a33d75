// SPDX-License-Identifier: MIT
// The backend seam: everything that differs between running on a GPU (HIP on AMD, CUDA on
// NVIDIA) and on the host backend (CPU threads over shared memory, for tests and emulation).
// The layers above see only this interface.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "src/device/comm_config.h"
#include "src/device/work.h"
#include "src/topology/discovery.h"
#include "starscream/starscream.h"
#include "transports/peer_view.h"

namespace ssc {

class PeerMemoryRuntime;  // transports/usr/peer_memory.h
class DeviceServices;     // src/device/services.h

// Per-communicator state a backend keeps (mapped peer memory, connections, ...).
class CommResources {
 public:
  virtual ~CommResources() = default;
  // The largest step a plan may use on this communicator, in bytes (half a connection FIFO).
  virtual size_t chunkBytes() const = 0;
  virtual int channels() const = 0;
  // Blocks that share each channel's slots (the GPU FIFO kernel's); the tuner costs a step
  // shorter than a slot by its busiest block (tuner/model.h). 1: one worker per channel.
  virtual int blocksPerChannel() const { return 1; }
};

// What a backend sees of a communicator: the transports' view (rank, topology, bootstrap, abort
// flag) plus the device it lives on, the resources the backend made for it at connect, its error
// state and the accounting of queued work that destroy waits on. sscComm (src/comm/comm.h) is
// one; backends never include it.
class CommView : public PeerView {
 public:
  // The device the communicator was created on (the caller's current one, or sscCommInitAll's
  // devlist entry); the GPU backend makes it current around every runtime call, as NCCL does.
  int device = -1;
  CommConfig config;  // fixed at init (commInit); tests may change it between calls
  std::unique_ptr<CommResources> resources;
  std::atomic<int> asyncError{sscSuccess};  // sscInProgress while non-blocking init runs

  // The message of the failure recorded by setAsyncError ("" when none).
  virtual std::string asyncErrorText() = 0;
  // `local` (a failure seen by this rank, such as "aborted while waiting for rank 3"), prefixed
  // with the reason the communicator was aborted when a peer's death or departure caused it, so
  // that every error names the rank that went away.
  virtual std::string failureText(const std::string& local) = 0;
  // Work accounting: every enqueued Work is queued once and done once; destroy waits for idle.
  virtual void workQueued() = 0;
  virtual void workDone() = 0;
  virtual void waitIdle() = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;
  virtual int deviceIndex() const = 0;           // -1 for the host backend
  virtual int deviceCount() const { return 0; }  // visible devices (0 for the host backend)
  // What the runtime knows about this process's device (UUID, PCI id, compute units), for
  // topology discovery. False when there is no device (host backend).
  virtual bool runtimeInfo(GpuRuntimeInfo* out) {
    (void)out;
    return false;
  }
  // The GPU driver's version as the runtime reports it ("" without a device): calibrations are
  // kept per driver, whose scheduling and copy paths change the rates the tuner measures.
  virtual std::string driverVersion() const { return ""; }

  virtual sscResult_t memAlloc(void** ptr, size_t bytes) = 0;
  virtual sscResult_t memFree(void* ptr) = 0;
  virtual sscResult_t streamCreate(sscStream_t* stream) = 0;
  virtual sscResult_t streamSynchronize(sscStream_t stream) = 0;
  virtual sscResult_t streamDestroy(sscStream_t stream) = 0;

  // Sets up comm's connections to its peers (collective over the communicator: uses its
  // bootstrap). Called once at init after the topology is known.
  virtual sscResult_t connect(CommView* comm, std::unique_ptr<CommResources>* out) = 0;
  // Symmetric registration (collective over comm, same order on every rank): maps every rank's
  // [buff, buff + bytes) into this process. On success peerBases[q] is rank q's buff as seen
  // here; it stays empty when this backend or this buffer cannot be shared (not from
  // sscMemAlloc, say): the registration then only records the buffer, and zero-copy algorithms
  // are not used with it. Every rank reaches the same outcome.
  virtual sscResult_t registerBuffer(CommView* comm, void* buff, size_t bytes,
                                     std::vector<void*>* peerBases) {
    (void)comm, (void)buff, (void)bytes;
    peerBases->clear();
    return sscSuccess;
  }
  // Unmaps what registerBuffer mapped (local).
  virtual sscResult_t deregisterBuffer(CommView* comm, void* buff,
                                       const std::vector<void*>& peerBases) {
    (void)comm, (void)buff, (void)peerBases;
    return sscSuccess;
  }

  // Whether this backend's work on comm may touch [p, p + bytes) as given: success, or
  // sscInvalidArgument with a message "<fn>: <what> <p> is ..." saying why not (GPU: pageable
  // host memory its kernels cannot access). Called for every buffer of every call before it is
  // queued, so it must be cheap for the buffers calls normally get (no runtime call for a device
  // allocation seen before). The host backend touches any host memory.
  virtual sscResult_t checkAccessible(CommView* comm, const char* fn, const char* what,
                                      const void* p, size_t bytes) {
    (void)comm, (void)fn, (void)what, (void)p, (void)bytes;
    return sscSuccess;
  }

  // How calls on plain (unregistered) buffers map their peers' buffers themselves
  // (transports/usr/peer_cache.h); null when this backend cannot (staging or FIFOs then).
  virtual PeerMemoryRuntime* peerMemory(CommView* comm) {
    (void)comm;
    return nullptr;
  }

  // Whether this backend's executor runs the one-copy point-to-point handshake (the kP2pOffer,
  // kP2pPush and kP2pWait steps of src/collectives/plan.h). With peerMemory, sends and receives
  // between ranks of one node then store straight into the receiver's buffer.
  virtual bool oneCopyP2p() const { return false; }

  // Bytes of each staging buffer when STARSCREAM_STAGING_BYTES is empty (0: no staging).
  virtual size_t defaultStagingBytes() const { return 0; }

  // Queues, in stream order: copy `in` into the communicator's staging input, run `work` (a
  // symmetric plan over the staging buffers), copy the staging output to `out`. The backend
  // keeps staged calls of one communicator in order even across streams (they share the
  // staging buffers).
  struct StagedCopies {
    void* stageIn;
    const void* in;
    size_t inBytes;
    void* out;
    const void* stageOut;
    size_t outBytes;
  };
  virtual sscResult_t enqueueStaged(CommView* comm, std::shared_ptr<Work> work,
                                    const StagedCopies& copies, sscStream_t stream) = 0;

  // Queues a copy of `bytes` from src to dst (device memory, not overlapping) in the
  // communicator's order, as enqueue() would a plan: a one-rank communicator's collectives.
  virtual sscResult_t enqueueCopy(CommView* comm, void* dst, const void* src, size_t bytes,
                                  sscStream_t stream) = 0;

  // The largest all-reduce (bytes) this backend runs as a one-shot of packets through its own
  // connections (GPU: the LL path), reading only local memory: such calls may take the
  // symmetric algorithm without registered buffers, and in place. 0: none.
  virtual uint64_t packetAllReduceMaxBytes(const CommView* comm) const {
    (void)comm;
    return 0;
  }

  // Queues `work` on `stream`. Operations of one communicator execute in the order they were
  // enqueued, whatever their streams (as in NCCL): they share its connections and buffers.
  virtual sscResult_t enqueue(CommView* comm, std::shared_ptr<Work> work, sscStream_t stream) = 0;

  // Blocks until every operation of comm queued so far has finished (this communicator's only:
  // never a device-wide wait). Finalize and destroy call it before the peers' barrier and the
  // frees.
  virtual sscResult_t drain(CommView* comm) {
    (void)comm;
    return sscSuccess;
  }

  // Work tickets, for the one-copy directory (it changes a mapping once the operations that may
  // use it have finished, without ever waiting for them). workIssued: a count of comm's
  // operations queued so far (outside graphs); workFinished(comm, t): whether the first t of
  // them have all finished. A backend without its own count answers 0 and true: its work is done
  // when the call returns.
  virtual uint64_t workIssued(CommView* comm) {
    (void)comm;
    return 0;
  }
  virtual bool workFinished(CommView* comm, uint64_t ticket) {
    (void)comm, (void)ticket;
    return true;
  }

  // Whether comm's kernels signal each other at device scope (every rank on this GPU, on a
  // platform where that scope orders memory between its processes); kernels of the layers above
  // that wait on the peers' flags follow the same rule. False on the host.
  virtual bool deviceScopeSignals(CommView* comm) {
    (void)comm;
    return false;
  }

  // True when `stream` is being captured into a graph (CUDA/HIP graphs; never on the host).
  virtual bool streamCapturing(sscStream_t stream) {
    (void)stream;
    return false;
  }
  // Runs `release` (from any thread; it must not call the runtime) once the graph `stream` is
  // being captured into is destroyed and its launches are done. False where it cannot: then
  // `release` never runs.
  virtual bool retainUntilGraphDestroyed(sscStream_t stream, std::function<void()> release) {
    (void)stream, (void)release;
    return false;
  }

  // The runtime services the layers above use for their own device state (the ops' scratch,
  // streams, events: src/device/services.h); null on a backend without a device (the host's),
  // whose ops run on host memory. The ops choose their device half by asking this.
  virtual DeviceServices* services() { return nullptr; }

  // Makes `device` the calling thread's current device (init threads, sscCommInitAll's devlist).
  virtual sscResult_t bindDevice(int device) {
    (void)device;
    return sscSuccess;
  }

  // The device view of the word the communicator's kernels poll for sscCommAbort (set by the
  // backend when the communicator is aborted, never cleared), for kernels of higher layers that
  // wait on peers outside the collectives (the attention ops' fused exchange); null where the
  // backend has none.
  virtual const uint32_t* deviceAbortWord(CommView* comm) {
    (void)comm;
    return nullptr;
  }
};

// The backend the process uses (STARSCREAM_BACKEND): a GPU backend when built in, a device is
// visible and not overridden; else the host backend. Never null.
Backend* processBackend();
Backend* hostBackend();

}  // namespace ssc
