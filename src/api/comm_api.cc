// SPDX-License-Identifier: MIT
// Communicator entry points: version and errors, unique id, init (blocking and not), split,
// finalize, destroy, abort and queries.
#include <algorithm>
#include <cstring>
#include <mutex>
#include <new>
#include <system_error>
#include <thread>
#include <vector>

#include "src/api/calibration.h"
#include "src/api/group.h"
#include "src/comm/online_tuning.h"
#include "src/comm/trace.h"
#include "src/core/bootstrap.h"
#include "src/core/env.h"
#include "src/core/log.h"
#include "src/topology/subset.h"

using namespace ssc;

namespace {

sscResult_t newComm(sscComm** out) {
  *out = new sscComm();
  (*out)->backend = processBackend();
  return sscSuccess;
}

// Destroy is local, as in NCCL (a process holding several ranks destroys them one after the
// other; a peer may have aborted): it waits for this communicator's own queued work, then frees.
// Meeting the peers too, so that no peer kernel's last store can still land in memory freed here
// (the head counter a receiver writes into the sender's segment), is sscCommFinalize's job.
void drainOwnWork(sscComm* comm) {
  if (comm->resources != nullptr && !comm->abortFlag.load()) (void)comm->backend->drain(comm);
}

// Frees a communicator this thread has taken out of the live set (commUnregisterLive returned
// true), so no entry point can start on it any more. Threads already inside one hold a CommUse:
// they are waited for first (after an abort their waits end within kAbortPollMs), then the
// queued work, and only then is anything released.
void deleteComm(sscComm* comm, bool orderly = false) {
  if (comm->initThread.joinable()) comm->initThread.join();
  commWaitUnused(comm);
  commStopWatch(comm, orderly);
  commWaitIdle(comm);
  if (orderly) drainOwnWork(comm);
  traceClose(comm);  // STARSCREAM_TRACE: written here when finalize did not (abort included)
  commReleasePeerCache(comm);
  commReleaseStaging(comm);
  comm->magic = 0;
  delete comm;
}

// Takes comm out of the live set for the thread that destroys or aborts it. Exactly one of two
// racing destroy/abort calls wins; the other gets sscInvalidUsage, never a double free.
sscResult_t claimForDelete(const char* fn, sscComm* comm) {
  if (!commUnregisterLive(comm))
    return fail(sscInvalidUsage,
                "{}: comm {} is not a live communicator (already destroyed or "
                "aborted, or being destroyed by another thread)",
                fn, static_cast<void*>(comm));
  return sscSuccess;
}

sscResult_t checkConfig(const char* fn, const sscConfig_t* config, bool* blocking) {
  *blocking = true;
  if (config == nullptr) return sscSuccess;
  if (config->magic != SSC_CONFIG_MAGIC ||
      config->size < offsetof(sscConfig_t, blocking) + sizeof(int))
    return fail(sscInvalidArgument, "{}: config was not initialised with SSC_CONFIG_INITIALIZER",
                fn);
  if (config->blocking != SSC_CONFIG_UNDEF_INT && config->blocking != 0 && config->blocking != 1)
    return fail(sscInvalidArgument, "{}: config.blocking must be 0 or 1 (got {})", fn,
                config->blocking);
  *blocking = config->blocking != 0;
  return sscSuccess;
}

// sscCommInitAll's ranks, each initialising on its own thread: when one of them cannot start,
// the others are aborted (they would wait for it until STARSCREAM_TIMEOUT).
struct InitAllRanks {
  std::mutex mu;
  bool cancelled = false;
  std::vector<sscComm*> comms;  // by rank, while its init runs
  void track(int rank, sscComm* comm) {
    std::lock_guard<std::mutex> g(mu);
    comms[static_cast<size_t>(rank)] = comm;
    if (comm != nullptr && cancelled) comm->abortFlag.store(true);
  }
  void cancel() {
    std::lock_guard<std::mutex> g(mu);
    cancelled = true;
    for (sscComm* c : comms)
      if (c != nullptr) c->abortFlag.store(true);
  }
};

// commInit, with what the system may throw under a thread or memory limit (a thread that cannot
// start, an allocation) turned into an error: the caller then frees what was made, as after any
// other failure.
sscResult_t initGuarded(sscComm* comm, const sscUniqueId& id, int nranks, int rank) {
  try {
    sscResult_t r = commInit(comm, id, nranks, rank);
    if (r == sscSuccess) r = commCalibrate(comm);
    if (r == sscSuccess) traceSetUp(comm);  // STARSCREAM_TRACE: the caller's calls, not the sweep's
    if (r == sscSuccess) onlineTuningSetUp(comm);  // likewise: the sweep forces its algorithms
    return r;
  } catch (const std::system_error& e) {
    return fail(sscSystemError, "communicator init: {}", e.what());
  } catch (const std::bad_alloc&) {
    return fail(sscSystemError, "communicator init: out of host memory");
  }
}

// Why init failed: a ring failure may be a peer's death or abort the peer watch is about to
// report (commRingFailureText), but ranks whose settings differ each know the whole story.
std::string initFailureText(sscComm* comm, sscResult_t r) {
  return comm->settingsDiffer ? lastError() : commRingFailureText(comm, r, lastError());
}

// `settings`: the environment as the creating call found it; the communicator configures
// everything from it, during init and for its whole life.
// `parent`: a blocking split's parent, whose peer watch also ends the child's waits during init.
// `group`: sscCommInitAll's ranks, so that this one can be aborted with them.
sscResult_t initRank(const char* fn, sscComm_t* out, int nranks, const sscUniqueId& id, int rank,
                     const env::Snapshot& settings, const sscConfig_t* config,
                     const Topology* topoOverride, int device = -1, sscComm* parent = nullptr,
                     InitAllRanks* group = nullptr) {
  if (out == nullptr) return fail(sscInvalidArgument, "{}: comm is NULL", fn);
  *out = nullptr;
  if (nranks < 1) return fail(sscInvalidArgument, "{}: nranks {} must be at least 1", fn, nranks);
  SSC_CHECK(checkRank(fn, "rank", rank, nranks));
  bool blocking = true;
  SSC_CHECK(checkConfig(fn, config, &blocking));
  sscComm* comm = nullptr;
  SSC_CHECK(newComm(&comm));
  // Taken by the creating call, before a non-blocking init returns: whatever the caller sets
  // afterwards is for the next communicator.
  comm->settings = settings;
  // The communicator's device: the one asked for (sscCommInitAll), else the caller's current one.
  if (device >= 0) {
    const sscResult_t r = comm->backend->bindDevice(device);
    if (r != sscSuccess) {
      deleteComm(comm);
      return r;
    }
  }
  comm->device = comm->backend->deviceIndex();
  if (topoOverride != nullptr) {
    comm->topo = *topoOverride;
    comm->topoPreset = true;
  }
  commRegisterLive(comm);
  if (!blocking) {
    comm->failures.initStarted();
    try {
      comm->initThread = commStartThread([comm, id, nranks, rank] {
        // A new thread starts on device 0: bind the caller's device first.
        sscResult_t r = comm->backend->bindDevice(comm->device);
        if (r == sscSuccess) r = initGuarded(comm, id, nranks, rank);
        if (r == sscSuccess)
          comm->failures.initSucceeded();
        else
          commSetAsyncError(comm, r, initFailureText(comm, r));
      });
    } catch (const std::system_error& e) {
      commUnregisterLive(comm);
      deleteComm(comm);
      return fail(sscSystemError, "{}: cannot start the thread of a non-blocking init: {}", fn,
                  e.what());
    }
    *out = comm;
    return sscInProgress;
  }
  if (group != nullptr) group->track(rank, comm);
  if (parent != nullptr) commLinkChild(parent, comm);
  sscResult_t r = initGuarded(comm, id, nranks, rank);
  if (parent != nullptr) commUnlinkChild(parent, comm);
  if (group != nullptr) group->track(rank, nullptr);
  if (r != sscSuccess) {
    // A peer that failed its own init (a malformed STARSCREAM_* value, say) announces it on the
    // peer watch and then closes its ring connections; a send to it can see the closed socket
    // first. commRingFailureText gives the watch a moment, so the message names the rank and why.
    std::string why = initFailureText(comm, r);
    commUnregisterLive(comm);
    deleteComm(comm);
    return setError(r, why);
  }
  *out = comm;
  return sscSuccess;
}

}  // namespace

SSC_API sscResult_t sscGetVersion(int* version) {
  if (version == nullptr) return fail(sscInvalidArgument, "sscGetVersion: version is NULL");
  *version = SSC_VERSION_CODE;
  return sscSuccess;
}

SSC_API const char* sscGetErrorString(sscResult_t result) { return resultName(result); }

SSC_API const char* sscGetLastError(sscComm_t comm) {
  if (!lastError().empty() || comm == nullptr) return lastError().c_str();
  CommUse use(comm);
  if (!use.live()) return lastError().c_str();
  // A copy: the communicator (and its message) may be freed while the caller reads the text.
  thread_local std::string text;
  text = comm->failures.message();
  return text.c_str();
}

SSC_API sscResult_t sscGetUniqueId(sscUniqueId* uniqueId) {
  return guarded("sscGetUniqueId", [&]() -> sscResult_t {
    if (uniqueId == nullptr) return fail(sscInvalidArgument, "sscGetUniqueId: uniqueId is NULL");
    return bootstrapCreateUniqueId(BootstrapOptions::from(env::Snapshot::take()), uniqueId);
  });
}

SSC_API sscResult_t sscCommInitRank(sscComm_t* comm, int nranks, sscUniqueId commId, int rank) {
  return guarded("sscCommInitRank", [&] {
    return initRank("sscCommInitRank", comm, nranks, commId, rank, env::Snapshot::take(), nullptr,
                    nullptr);
  });
}

SSC_API sscResult_t sscCommInitRankConfig(sscComm_t* comm, int nranks, sscUniqueId commId, int rank,
                                          sscConfig_t* config) {
  return guarded("sscCommInitRankConfig", [&] {
    return initRank("sscCommInitRankConfig", comm, nranks, commId, rank, env::Snapshot::take(),
                    config, nullptr);
  });
}

SSC_API sscResult_t sscCommInitAll(sscComm_t* comms, int ndev, const int* devlist) {
  return guarded("sscCommInitAll", [&]() -> sscResult_t {
    if (comms == nullptr) return fail(sscInvalidArgument, "sscCommInitAll: comms is NULL");
    if (ndev < 1)
      return fail(sscInvalidArgument, "sscCommInitAll: ndev {} must be at least 1", ndev);
    if (devlist != nullptr)
      for (int i = 0; i < ndev; ++i)
        if (devlist[i] < 0)
          return fail(sscInvalidArgument, "sscCommInitAll: devlist[{}] = {} is negative", i,
                      devlist[i]);
    const int devices = processBackend()->deviceCount();
    for (int i = 0; devices > 0 && i < ndev; ++i) {
      const int dev = devlist != nullptr ? devlist[i] : i;
      if (dev >= devices)
        return fail(sscInvalidArgument,
                    "sscCommInitAll: rank {} would use device {}, but {} "
                    "device(s) are visible{}",
                    i, dev, devices,
                    devlist == nullptr ? " (without a devlist rank i uses device i)" : "");
    }
    // One reading of the environment for the root and every rank: the ranks cannot differ.
    const env::Snapshot settings = env::Snapshot::take();
    sscUniqueId id;
    SSC_CHECK(bootstrapCreateUniqueId(BootstrapOptions::from(settings), &id));
    // Every rank's init blocks until all have joined, so each runs on its own thread.
    std::vector<sscResult_t> results(ndev, sscSuccess);
    std::vector<std::string> messages(ndev);
    std::vector<std::thread> threads;
    threads.reserve(static_cast<size_t>(ndev));
    InitAllRanks group;
    group.comms.assign(static_cast<size_t>(ndev), nullptr);
    for (int i = 0; i < ndev; ++i) comms[i] = nullptr;  // a rank that never starts leaves none
    std::string notStarted;
    for (int i = 0; i < ndev && notStarted.empty(); ++i) {
      try {
        threads.push_back(commStartThread([&, i] {
          // Rank i lives on devlist[i] (device i without a list), as in ncclCommInitAll.
          results[i] = guarded("sscCommInitAll", [&] {
            return initRank("sscCommInitAll", &comms[i], ndev, id, i, settings, nullptr, nullptr,
                            devices == 0         ? -1
                            : devlist != nullptr ? devlist[i]
                                                 : i,
                            nullptr, &group);
          });
          messages[i] = lastError();
        }));
      } catch (const std::system_error& e) {
        // A thread or memory limit: the ranks already started wait for this one, which will
        // never come. Abort them, and wait for them to leave before their results go away.
        notStarted =
            fmt::format("sscCommInitAll: cannot start thread {} of {}: {}{}", i + 1, ndev, e.what(),
                        i == 0 ? "" : fmt::format(" (the {} started were aborted)", i));
        group.cancel();
      }
    }
    for (auto& t : threads) t.join();
    if (!notStarted.empty()) {
      for (int j = 0; j < ndev; ++j)
        if (comms[j] != nullptr && commUnregisterLive(comms[j])) deleteComm(comms[j]);
      for (int j = 0; j < ndev; ++j) comms[j] = nullptr;
      return fail(sscSystemError, "{}", notStarted);
    }
    for (int i = 0; i < ndev; ++i) {
      if (results[i] == sscSuccess) continue;
      for (int j = 0; j < ndev; ++j)
        if (comms[j] != nullptr && commUnregisterLive(comms[j])) deleteComm(comms[j]);
      for (int j = 0; j < ndev; ++j) comms[j] = nullptr;
      return setError(results[i], fmt::format("sscCommInitAll: rank {}: {}", i, messages[i]));
    }
    return sscSuccess;
  });
}

SSC_API sscResult_t sscCommSplit(sscComm_t comm, int color, int key, sscComm_t* newcomm,
                                 sscConfig_t* config) {
  return guarded("sscCommSplit", [&]() -> sscResult_t {
    const char* fn = "sscCommSplit";
    CommUse use(comm);  // blocking on the peers: an abort from another thread waits for it
    SSC_CHECK(checkComm(fn, comm));
    if (newcomm == nullptr) return fail(sscInvalidArgument, "{}: newcomm is NULL", fn);
    *newcomm = nullptr;
    if (color < 0 && color != SSC_SPLIT_NOCOLOR)
      return fail(sscInvalidArgument, "{}: color {} must be >= 0 or SSC_SPLIT_NOCOLOR", fn, color);
    bool blocking = true;
    SSC_CHECK(checkConfig(fn, config, &blocking));
    // Round 1: everyone's (color, key). Round 2: the first rank of each color publishes the new
    // communicator's unique id.
    struct Entry {
      int32_t color, key;
    };
    std::vector<Entry> entries(comm->nranks);
    entries[comm->rank] = Entry{color, key};
    if (sscResult_t r = comm->bootstrap->allGather(entries.data(), sizeof(Entry)); r != sscSuccess)
      return setError(r, commRingFailureText(comm, r, lastError()));
    std::vector<int> members;  // parent ranks of my color, ordered by (key, parent rank)
    for (int r = 0; r < comm->nranks; ++r)
      if (color != SSC_SPLIT_NOCOLOR && entries[r].color == color) members.push_back(r);
    std::stable_sort(members.begin(), members.end(),
                     [&](int a, int b) { return entries[a].key < entries[b].key; });
    // The child is a new communicator: it reads the environment as it is now, not as the parent
    // found it (for its root too).
    const env::Snapshot settings = env::Snapshot::take();
    std::vector<sscUniqueId> ids(comm->nranks);
    std::memset(ids.data(), 0, ids.size() * sizeof(sscUniqueId));
    if (!members.empty() && members.front() == comm->rank)
      SSC_CHECK(bootstrapCreateUniqueId(BootstrapOptions::from(settings), &ids[comm->rank]));
    if (sscResult_t r = comm->bootstrap->allGather(ids.data(), sizeof(sscUniqueId));
        r != sscSuccess)
      return setError(r, commRingFailureText(comm, r, lastError()));
    if (color == SSC_SPLIT_NOCOLOR) return sscSuccess;
    int newRank =
        static_cast<int>(std::find(members.begin(), members.end(), comm->rank) - members.begin());
    Topology sub = subsetTopology(comm->topo, members);
    // The child's init waits on the same peers: if one of them goes away meanwhile (the parent's
    // peer watch hears of it), the child's waits end too.
    sscResult_t r = initRank(fn, newcomm, static_cast<int>(members.size()), ids[members.front()],
                             newRank, settings, config, &sub, -1, comm);
    // Name the rank that went away when that is why the waits ended.
    if (r != sscSuccess) return setError(r, commFailureText(comm, lastError()));
    return r;
  });
}

SSC_API sscResult_t sscCommFinalize(sscComm_t comm) {
  return guarded("sscCommFinalize", [&]() -> sscResult_t {
    CommUse use(comm);
    SSC_CHECK(checkComm("sscCommFinalize", comm, true));
    commWaitIdle(comm);
    SSC_CHECK(comm->backend->drain(comm));
    // Collective: every rank's kernels of this communicator have finished once all pass, so
    // destroy frees nothing a peer still writes to. Only where each process holds one rank: a
    // process with several destroys (and finalizes) them one after the other, and a barrier
    // there would wait for a rank its own thread has not reached yet.
    // A peer that already left (destroyed) or aborted will not come to the barrier; whatever it
    // did is finished, which is all the barrier is for.
    if (comm->onePerProcess && comm->asyncError.load() == sscSuccess && !comm->finalized &&
        commPeerGone(comm).empty() && commPeerLeft(comm).empty()) {
      if (sscResult_t r = comm->bootstrap->barrier(); r != sscSuccess) {
        const std::string why = commRingFailureText(comm, r, lastError());
        if ((commPeerGone(comm).empty() && commPeerLeft(comm).empty()) ||
            comm->asyncError.load() != sscSuccess)
          return setError(r, fmt::format("sscCommFinalize: {}", why));
      }
    }
    comm->finalized = true;
    traceClose(comm);  // every call's work has finished: the trace file is complete
    int state = comm->asyncError.load();
    if (state != sscSuccess)
      return fail(static_cast<sscResult_t>(state), "sscCommFinalize: {}", comm->failures.message());
    return sscSuccess;
  });
}

SSC_API sscResult_t sscCommDestroy(sscComm_t comm) {
  return guarded("sscCommDestroy", [&]() -> sscResult_t {
    if (comm == nullptr) return sscSuccess;  // as NCCL: destroying NULL is a no-op
    SSC_CHECK(claimForDelete("sscCommDestroy", comm));
    deleteComm(comm, /*orderly=*/true);
    return sscSuccess;
  });
}

SSC_API sscResult_t sscCommAbort(sscComm_t comm) {
  return guarded("sscCommAbort", [&]() -> sscResult_t {
    if (comm == nullptr) return sscSuccess;
    {
      // Raised while holding a use, so the communicator cannot be freed under us; waiters (host
      // transports, bootstrap, GPU kernels through the watcher) see it within kAbortPollMs, so
      // threads inside entry points leave and queued work drains with errors.
      CommUse use(comm);
      if (!use.live())
        return fail(sscInvalidUsage, "sscCommAbort: comm {} is not a live communicator",
                    static_cast<void*>(comm));
      comm->abortFlag.store(true);
      commSetAsyncError(comm, sscRemoteError, "communicator aborted");
    }
    SSC_CHECK(claimForDelete("sscCommAbort", comm));
    deleteComm(comm);
    return sscSuccess;
  });
}

SSC_API sscResult_t sscCommGetAsyncError(sscComm_t comm, sscResult_t* asyncError) {
  return guarded("sscCommGetAsyncError", [&]() -> sscResult_t {
    if (asyncError == nullptr)
      return fail(sscInvalidArgument, "sscCommGetAsyncError: asyncError is NULL");
    if (comm == nullptr) return fail(sscInvalidArgument, "sscCommGetAsyncError: comm is NULL");
    CommUse use(comm);
    if (!use.live()) return fail(sscInvalidUsage, "sscCommGetAsyncError: comm is not live");
    *asyncError = static_cast<sscResult_t>(comm->asyncError.load());
    return sscSuccess;
  });
}

SSC_API sscResult_t sscCommCount(sscComm_t comm, int* count) {
  return guarded("sscCommCount", [&]() -> sscResult_t {
    CommUse use(comm);
    SSC_CHECK(checkComm("sscCommCount", comm, true));
    if (count == nullptr) return fail(sscInvalidArgument, "sscCommCount: count is NULL");
    *count = comm->nranks;
    return sscSuccess;
  });
}

SSC_API sscResult_t sscCommUserRank(sscComm_t comm, int* rank) {
  return guarded("sscCommUserRank", [&]() -> sscResult_t {
    CommUse use(comm);
    SSC_CHECK(checkComm("sscCommUserRank", comm, true));
    if (rank == nullptr) return fail(sscInvalidArgument, "sscCommUserRank: rank is NULL");
    *rank = comm->rank;
    return sscSuccess;
  });
}

SSC_API sscResult_t sscCommDevice(sscComm_t comm, int* device) {
  return guarded("sscCommDevice", [&]() -> sscResult_t {
    CommUse use(comm);
    SSC_CHECK(checkComm("sscCommDevice", comm, true));
    if (device == nullptr) return fail(sscInvalidArgument, "sscCommDevice: device is NULL");
    *device = comm->device;  // recorded at init (the thread's current device may differ now)
    return sscSuccess;
  });
}
