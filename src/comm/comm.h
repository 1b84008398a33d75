// SPDX-License-Identifier: MIT
// The communicator: what every layer needs to run a call for one rank.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "src/collectives/algorithms.h"
#include "src/comm/failures.h"
#include "src/comm/plan_cache.h"
#include "src/comm/red_ops.h"
#include "src/comm/registrations.h"
#include "src/comm/work_tracker.h"
#include "src/core/bootstrap.h"
#include "src/device/backend.h"
#include "src/device/work_timing.h"
#include "src/topology/topology.h"
#include "starscream/starscream.h"

namespace ssc {

class Tuner;            // tuner/model.h
class PeerMemoryCache;  // transports/usr/peer_cache.h
struct PeerCacheDeleter {
  void operator()(PeerMemoryCache* cache) const;
};

class P2pDirectory;  // transports/usr/p2p_directory.h
struct P2pDirectoryDeleter {
  void operator()(P2pDirectory* directory) const;
};

class TraceLog;  // src/comm/trace.h (STARSCREAM_TRACE)
struct TraceLogDeleter {
  void operator()(TraceLog* log) const;
};

class OnlineTuning;  // src/comm/online_tuning.h (STARSCREAM_TUNE_ONLINE)
struct OnlineTuningDeleter {
  void operator()(OnlineTuning* tuning) const;
};

class CallChecker;  // src/comm/call_check.h (STARSCREAM_CHECK)
struct CallCheckerDeleter {
  void operator()(CallChecker* checker) const;
};

// Two registered buffers through which calls on unregistered buffers take the zero-copy
// algorithm (STARSCREAM_STAGING_BYTES): the input is copied in, the symmetric plan runs over the
// staging buffers of all ranks, the result is copied out. Set up at init on one-node
// communicators; `bytes` is 0 when there is none.
struct StagingBuffers {
  void* in = nullptr;
  void* out = nullptr;
  size_t bytes = 0;
  std::vector<std::vector<void*>> peers;  // [kBufIn / kBufOut][rank], as Work::peerBuffers
  std::atomic<uint64_t> calls{0};         // calls that went through them (tests, diagnostics)
};

}  // namespace ssc

// The communicator. Transports see it as a PeerView and backends as a CommView (the fields and
// hooks they may use: rank, nranks, bootstrap, topo, abortFlag, device, resources, asyncError);
// everything below is the communicator's own.
struct sscComm final : ssc::CommView {
  static constexpr uint64_t kMagic = 0x5353434f4d4d3031ull;  // "SSCOMM01"
  uint64_t magic = kMagic;
  ssc::Backend* backend = nullptr;
  // No two ranks of the communicator live in one process: finalize may then meet its peers at a
  // barrier (a process with several ranks finalizes them one after the other, NCCL's pattern).
  bool onePerProcess = false;
  bool topoPreset = false;  // set by sscCommSplit: the child's graph is a subset of the parent's
  // The cost model that picks each call's algorithm (tuner/model.h), built once at init.
  std::shared_ptr<const ssc::Tuner> tuner;
  // The first asynchronous error's message (its code is asyncError) and the peer watch's
  // verdicts, under a lock of their own (commSetAsyncError, commPeerGone, commPeerLeft,
  // commFailureText).
  ssc::FailureRecord failures{asyncError};
  // Children of a blocking sscCommSplit still in their init: a peer that goes away aborts them
  // too (their own watch starts only once their ring exists). Guarded by childrenMu, not by the
  // failure record: what a verdict does to a child (its abort flag, its own record) happens while
  // the list is held, and the record's lock stays a leaf.
  std::vector<sscComm*> initChildren;
  std::thread initThread;  // non-blocking init
  // The thread timing the tuner's calibration sweep at the end of init (src/api/calibration.cc):
  // its calls pass checkComm while the communicator is still "in progress" for everyone else.
  std::atomic<std::thread::id> calibrationThread{};
  // Set by sscCommFinalize: from then on only queries, deregistration and destroy are accepted.
  std::atomic<bool> finalized{false};
  // Init failed because the ranks' settings differ (commInit): every rank found it from the same
  // gathered table, so its message is complete without a peer's abort notice.
  bool settingsDiffer = false;

  // The communicator's locks, in the order that keeps them free of deadlock (a lock may be held
  // when taking one listed after it, never the other way):
  //  1. the locks of the layers below (backends, transports, the peer watch): they may call into
  //     the communicator (the hooks, the callbacks it gave them, commOnPeerEvent) holding them;
  //  2. the live set's lock (commIsLive, CommUse);
  //  3. childrenMu: initChildren, and the abort flag's store that walks it (notePeerGone) or
  //     reads it (commLinkChild). Never held across a call into the backend, the bootstrap or
  //     the peer watch, and only one communicator's at a time (a verdict reaches a split child
  //     through its failure record and abort flag, not its childrenMu);
  //  4. the leaves, each a service's own: failures, plans, registrations, work, redOps. While
  //     one is held nothing else of the communicator's is locked (plans runs its build function
  //     under its lock, and registrations its withMapped callback: neither takes a lock but the
  //     core's leaves, such as the logger's), so any of the above may be held when taking one
  //     (childrenMu is, for a child's failures).
  // `config` and `tuner` take no lock: they are written only while no other thread may call on
  // the communicator (init, the calibration sweep at its end on the init's thread, which
  // checkComm lets through alone, and the test hook commForceAlgo between calls).
  std::mutex childrenMu;
  // Work queued and not yet finished, and the threads inside a blocking entry point (finalize,
  // deregister): destroy and abort wait for both before freeing the communicator.
  ssc::WorkTracker work;

  // The collective and point-to-point plans built so far, by call shape, under a lock of their
  // own (commGetPlan, commGetP2pPlan).
  ssc::PlanCache plans;
  ssc::RedOpTable redOps;                // sscRedOpCreatePreMulSum's ops, under a lock of their own
  ssc::RegistrationTable registrations;  // sscCommRegister's buffers, under a lock of their own
  ssc::StagingBuffers staging;
  // Peers' plain (unregistered) buffers mapped per call, for zero-copy without registration;
  // null when the communicator cannot (several nodes, no shareable memory, several ranks in one
  // process: their calls could not wait for each other outside a group).
  std::unique_ptr<ssc::PeerMemoryCache, ssc::PeerCacheDeleter> peerCache;
  // One-copy point-to-point: the node's directory of receive buffers (p2p_directory.h); set up
  // under the same conditions as peerCache, where the backend runs the handshake's plan steps
  // (Backend::oneCopyP2p). Null: sends and receives take the FIFOs, on every rank alike.
  std::unique_ptr<ssc::P2pDirectory, ssc::P2pDirectoryDeleter> p2pDirectory;
  // STARSCREAM_CHECK=1 (read once at init): every collective's fingerprint is compared across
  // the ranks before its data moves (src/comm/call_check.h). Null when off.
  std::unique_ptr<ssc::CallChecker, ssc::CallCheckerDeleter> callCheck;
  // STARSCREAM_TRACE set (read once at init): every call is recorded here (src/comm/trace.h).
  // Null when off: the one thing an entry point looks at then.
  std::unique_ptr<ssc::TraceLog, ssc::TraceLogDeleter> trace;
  // STARSCREAM_TUNE_ONLINE > 0 (read once at init): the first calls of each size class try the
  // tuner's best candidates and keep the fastest (src/comm/online_tuning.h). Null when off.
  std::unique_ptr<ssc::OnlineTuning, ssc::OnlineTuningDeleter> online;

  // The views' hooks (CommView, PeerView), implemented by the functions of the same job below.
  void setAsyncError(sscResult_t code, const std::string& message) override;
  std::string asyncErrorText() override;
  std::string failureText(const std::string& local) override;
  void workQueued() override;
  void workDone() override;
  void waitIdle() override;
};

namespace ssc {

// True if comm is a live communicator (not null, not destroyed). Thread-safe.
bool commIsLive(const sscComm* comm);
void commRegisterLive(sscComm* comm);
// Takes comm out of the live set; false when it was not in it (another thread got there first).
bool commUnregisterLive(sscComm* comm);

// Full init of a communicator object (bootstrap, topology, backend connections). Before anything
// that depends on them, the ranks compare every setting that changes what a rank sends or
// expects (STARSCREAM_ALGO, the host FIFO shape, staging, zero-copy floor, topology file,
// STARSCREAM_CHECK, the tuner's mode and profile, the backend): any difference fails init on
// every rank with sscInvalidUsage naming the variables, their values and the ranks.
sscResult_t commInit(sscComm* comm, const sscUniqueId& id, int nranks, int rank);

// Starts a thread of communicator initialisation (sscCommInitAll's per-rank threads, a
// non-blocking init's thread). Throws std::system_error when the system refuses one (a thread or
// memory limit), as std::thread does.
std::thread commStartThread(std::function<void()> body);
// Test hook: after `starts` more successful commStartThread calls, the next one fails as under a
// thread limit (std::system_error, EAGAIN), once; a negative value turns it off.
void commFailThreadStartsAfter(int starts);

// Records an asynchronous failure on comm (first one wins) so sscCommGetAsyncError reports it.
void commSetAsyncError(sscComm* comm, sscResult_t code, const std::string& message);

// Why comm cannot go on when a peer died or aborted (peer watch); empty otherwise.
std::string commPeerGone(sscComm* comm);
// The first peer departure the peer watch reported ("rank 2 destroyed its communicator ..."), or
// empty.
std::string commPeerLeft(sscComm* comm);
// `local` (a failure seen by this rank, such as "aborted while waiting for rank 3"), prefixed
// with the reason the communicator was aborted when a peer's death or departure caused it, so
// that every error names the rank that went away.
std::string commFailureText(sscComm* comm, const std::string& local);
// The same for a failure of a wait on the bootstrap ring: a connection that closed under it may
// be a peer's death the peer watch is about to report, so wait up to 250 ms for its verdict.
std::string commRingFailureText(sscComm* comm, sscResult_t code, const std::string& local);
// Announces this rank's departure to the peers (orderly: left; else aborted) and stops the peer
// watch; after it returns the watch never touches comm again. Idempotent.
void commStopWatch(sscComm* comm, bool orderly);
// Links a child being initialised by a blocking split to its parent (see initChildren).
void commLinkChild(sscComm* parent, sscComm* child);
void commUnlinkChild(sscComm* parent, sscComm* child);

// Work accounting used by the backends.
void commWorkQueued(sscComm* comm);
void commWorkDone(sscComm* comm);
// Blocks until no work of comm is pending.
void commWaitIdle(sscComm* comm);

// Marks a thread as using comm inside a blocking call (see sscComm::work). The liveness check
// and the mark happen under one lock, so a concurrent destroy cannot free comm in between.
class CommUse {
 public:
  explicit CommUse(sscComm* comm);
  ~CommUse();
  bool live() const { return comm_ != nullptr; }
  sscComm* comm() const { return comm_; }
  CommUse(const CommUse&) = delete;
  CommUse& operator=(const CommUse&) = delete;

 private:
  sscComm* comm_;
};
// Waits until no thread uses comm (called by destroy/abort before freeing it).
void commWaitUnused(sscComm* comm);

// Collective: allocates and registers comm's staging buffers when the backend and the size
// (STARSCREAM_STAGING_BYTES) call for them and the communicator lives on one node. A rank that
// cannot allocate them turns staging off on every rank (it is an optimisation, not a need).
sscResult_t commSetUpStaging(sscComm* comm);
// Deregisters and frees them (destroy, after the last work finished).
void commReleaseStaging(sscComm* comm);

// Collective: sets up comm->peerCache where the backend can map plain buffers and every rank of
// the communicator is on this node, each in its own process. Its absence is not an error.
sscResult_t commSetUpPeerCache(sscComm* comm);
// Drains comm's queued work and closes every mapping the cache (and the point-to-point
// directory) made (destroy, abort).
void commReleasePeerCache(sscComm* comm);

// True when the backend runs this all-reduce as packets (no registration needed, see
// Backend::packetAllReduceMaxBytes).
bool commPacketCall(const sscComm* comm, const CollArgs& args, size_t elemBytes);

// The plan for a call on comm (cached). `trial`: given, and the communicator tunes online
// (STARSCREAM_TUNE_ONLINE), this call may run one of the candidates its size class tries; then
// *trial is the timing its work must carry (else null). Not given: the tuner's choice alone (the
// staged path, whose copies around the plan a trial's timing would not see).
sscResult_t commGetPlan(sscComm* comm, const CollArgs& args, size_t elemBytes,
                        std::shared_ptr<const RankPlan>* out,
                        std::shared_ptr<WorkTiming>* trial = nullptr);
// Test and benchmark hook: replaces the communicator's STARSCREAM_ALGO choice (read at init)
// with `spec` (same syntax; "" = the tuner's own choice). Between calls only.
sscResult_t commForceAlgo(sscComm* comm, const std::string& spec);
// The fused plan of a group's sends and receives on comm (cached by the ops).
sscResult_t commGetP2pPlan(sscComm* comm, const std::vector<P2pOp>& ops,
                           std::shared_ptr<const RankPlan>* out);

}  // namespace ssc
