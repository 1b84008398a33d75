// SPDX-License-Identifier: MIT
// Communicator creation: unique ids, init (blocking, non-blocking, inside groups), init-all,
// split and shrink.
#include <algorithm>
#include <cstring>
#include <vector>

#include "src/nccl/comm.h"
#include "src/nccl/errors.h"
#include "src/nccl/fallback.h"
#include "src/nccl/group_api.h"

using namespace ssc::nccl;

namespace {

sscConfig_t sscConfig(bool blocking) {
  sscConfig_t config = SSC_CONFIG_INITIALIZER;
  config.blocking = blocking ? 1 : 0;
  return config;
}

sscUniqueId toSscId(const ncclUniqueId& id) {
  sscUniqueId out;
  std::memcpy(&out, &id, sizeof(out));
  return out;
}

// A vendor id reaching a rank that Starscream serves means the ranks decided differently
// (STARSCREAM_NCCL_FALLBACK or the backend differ between them): fail here, not in a hang.
ncclResult_t checkStarscreamId(const char* fn, const ncclUniqueId& id) {
  if (id.internal[kIdTagByte] == kVendorIdTag)
    return fail(ncclInvalidUsage,
                "{}: the unique id was made by the vendor NCCL library (the "
                "rank that called ncclGetUniqueId forwards to STARSCREAM_NCCL_FALLBACK) but "
                "Starscream serves this rank; every rank must run with the same "
                "STARSCREAM_NCCL_FALLBACK and Starscream backend",
                fn);
  return ncclSuccess;
}

ncclUniqueId untagged(ncclUniqueId id) {
  if (id.internal[kIdTagByte] == kVendorIdTag) id.internal[kIdTagByte] = 0;
  return id;
}

// How a creation runs: inside a group NCCL completes it at ncclGroupEnd (one thread may then
// create several ranks), and a non-blocking one returns ncclInProgress; both need the caller
// not to wait for the peers.
struct Mode {
  bool inGroup;
  bool async;
};
Mode creationMode(const ShimConfig& config) {
  bool inGroup = groupDepth() > 0;
  return Mode{inGroup, inGroup || !config.blocking};
}

// What a started creation returns: NCCL's codes for where it stands.
ncclResult_t started(const std::shared_ptr<ncclComm>& comm, Mode mode) {
  if (mode.inGroup) {
    groupAwaitCreation(comm);
    return ncclSuccess;
  }
  return mode.async ? ncclInProgress : ncclSuccess;
}

ncclResult_t initFromId(const char* fn, ncclComm_t* out, int nranks, const ncclUniqueId& id,
                        int rank, const ncclConfig_t* config) {
  if (out == nullptr) return fail(ncclInvalidArgument, "{}: comm is NULL", fn);
  *out = nullptr;
  ShimConfig cfg;
  NCCL_SHIM_CHECK(parseConfig(fn, config, nullptr, &cfg));
  NCCL_SHIM_CHECK(checkStarscreamId(fn, id));
  const Mode mode = creationMode(cfg);
  auto comm = newComm(cfg);
  sscConfig_t sc = sscConfig(!mode.async);
  sscResult_t r = sscCommInitRankConfig(&comm->ssc, nranks, toSscId(id), rank, &sc);
  if (r != sscSuccess && r != sscInProgress) {
    comm->ssc = nullptr;
    return fromSsc(fn, r, nullptr);
  }
  if (!mode.async) NCCL_SHIM_CHECK(advance(fn, *comm));
  publish(comm);
  *out = comm.get();
  return started(comm, mode);
}

// Wraps the outcome of a split or shrink: `made` now (blocking), or `job` later.
ncclResult_t adoptChild(const char* fn, ncclComm_t* out, const ShimConfig& cfg, Mode mode,
                        sscComm_t made, std::shared_ptr<CreateJob> job) {
  auto comm = newComm(cfg);
  comm->ssc = made;
  comm->job = std::move(job);
  if (!mode.async) NCCL_SHIM_CHECK(advance(fn, *comm));
  publish(comm);
  *out = comm.get();
  return started(comm, mode);
}

// Shrink's rendezvous. NCCL's excluded ranks do not call ncclCommShrink (they may be dead), so
// Starscream's split, collective over every rank of the parent, cannot serve it. The survivors
// meet over the parent's data path instead: the lowest surviving rank creates a new unique id
// and sends it to the others, then they all initialise. Host buffers only, hence host backend
// only.
sscResult_t shrinkRendezvous(sscComm_t parent, const std::vector<int>& survivors, int myParentRank,
                             sscComm_t* out) {
  const int leader = survivors.front();
  const int newRank = static_cast<int>(std::find(survivors.begin(), survivors.end(), myParentRank) -
                                       survivors.begin());
  sscUniqueId id{};
  sscStream_t stream = nullptr;
  sscResult_t r = sscStreamCreate(&stream);
  if (r != sscSuccess) return r;
  sscResult_t made = sscSuccess;
  if (myParentRank == leader) {
    // On failure the zeroed id still goes out: the others then fail at init ("malformed unique
    // id") instead of waiting for a message that never comes.
    made = sscGetUniqueId(&id);
    r = sscGroupStart();
    for (int peer : survivors)
      if (peer != leader && r == sscSuccess)
        r = sscSend(&id, sizeof(id), sscUint8, peer, parent, stream);
    sscResult_t end = sscGroupEnd();
    if (r == sscSuccess) r = end;
  } else {
    r = sscRecv(&id, sizeof(id), sscUint8, leader, parent, stream);
  }
  if (r == sscSuccess) r = sscStreamSynchronize(stream);
  sscStreamDestroy(stream);
  if (r != sscSuccess) return r;
  if (made != sscSuccess) return made;
  sscConfig_t sc = sscConfig(true);
  return sscCommInitRankConfig(out, static_cast<int>(survivors.size()), id, newRank, &sc);
}

}  // namespace

NCCL_SHIM_API(ncclResult_t, ncclGetUniqueId, ncclUniqueId* uniqueId);
ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId) {
  return guarded("ncclGetUniqueId", [&]() -> ncclResult_t {
    if (vendorMode()) {
      static const auto vendorFn =
          reinterpret_cast<decltype(&ncclGetUniqueId)>(vendorSymbol("ncclGetUniqueId"));
      ncclResult_t r = forwardToVendor("ncclGetUniqueId", vendorFn, uniqueId);
      // NCCL's id uses far fewer than 128 bytes and zeroes the rest; only tag what is ours.
      if (r == ncclSuccess && uniqueId->internal[kIdTagByte] == 0)
        uniqueId->internal[kIdTagByte] = kVendorIdTag;
      return r;
    }
    if (uniqueId == nullptr) return fail(ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
    sscUniqueId id;
    sscResult_t r = sscGetUniqueId(&id);
    if (r != sscSuccess) return fromSsc("ncclGetUniqueId", r, nullptr);
    std::memcpy(uniqueId, &id, sizeof(id));
    return ncclSuccess;
  });
}

NCCL_SHIM_API(ncclResult_t, ncclCommInitRank, ncclComm_t* comm, int nranks, ncclUniqueId commId,
              int rank);
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return guarded("ncclCommInitRank", [&]() -> ncclResult_t {
    SSC_NCCL_FORWARD(ncclCommInitRank, comm, nranks, untagged(commId), rank);
    return initFromId("ncclCommInitRank", comm, nranks, commId, rank, nullptr);
  });
}

NCCL_SHIM_API(ncclResult_t, ncclCommInitRankConfig, ncclComm_t* comm, int nranks,
              ncclUniqueId commId, int rank, ncclConfig_t* config);
ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                    ncclConfig_t* config) {
  return guarded("ncclCommInitRankConfig", [&]() -> ncclResult_t {
    SSC_NCCL_FORWARD(ncclCommInitRankConfig, comm, nranks, untagged(commId), rank, config);
    return initFromId("ncclCommInitRankConfig", comm, nranks, commId, rank, config);
  });
}

#if SSC_NCCL_HAS_ncclCommInitRankScalable
// NCCL spreads the bootstrap over nId roots to speed up very large inits. Starscream's
// bootstrap has one root, so the first id is used and the others' roots are never contacted
// (they stop by themselves at STARSCREAM_TIMEOUT). Every rank passes the same ids in the same
// order (NCCL requires it), so every rank picks the same root.
NCCL_SHIM_API(ncclResult_t, ncclCommInitRankScalable, ncclComm_t* newcomm, int nranks, int myrank,
              int nId, ncclUniqueId* commIds, ncclConfig_t* config);
ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId,
                                      ncclUniqueId* commIds, ncclConfig_t* config) {
  return guarded("ncclCommInitRankScalable", [&]() -> ncclResult_t {
    const char* fn = "ncclCommInitRankScalable";
    if (nId < 1 || commIds == nullptr)
      return fail(ncclInvalidArgument, "{}: needs at least one unique id (nId {}, commIds {})", fn,
                  nId, static_cast<void*>(commIds));
    if (vendorMode()) {
      std::vector<ncclUniqueId> ids(commIds, commIds + nId);
      for (auto& id : ids) id = untagged(id);
      SSC_NCCL_FORWARD(ncclCommInitRankScalable, newcomm, nranks, myrank, nId, ids.data(), config);
    }
    if (nId > 1)
      NCCL_SHIM_LOG(kInfo, "NCCL shim: {}: using the first of {} unique ids (one bootstrap root)",
                    fn, nId);
    return initFromId(fn, newcomm, nranks, commIds[0], myrank, config);
  });
}
#endif

NCCL_SHIM_API(ncclResult_t, ncclCommInitAll, ncclComm_t* comm, int ndev, const int* devlist);
ncclResult_t ncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist) {
  return guarded("ncclCommInitAll", [&]() -> ncclResult_t {
    SSC_NCCL_FORWARD(ncclCommInitAll, comm, ndev, devlist);
    const char* fn = "ncclCommInitAll";
    if (comm == nullptr) return fail(ncclInvalidArgument, "{}: comm is NULL", fn);
    if (ndev < 1) return fail(ncclInvalidArgument, "{}: ndev {} must be at least 1", fn, ndev);
    std::vector<sscComm_t> made(static_cast<size_t>(ndev), nullptr);
    sscResult_t r = sscCommInitAll(made.data(), ndev, devlist);
    if (r != sscSuccess) return fromSsc(fn, r, nullptr);
    std::vector<std::shared_ptr<ncclComm>> comms;
    for (sscComm_t c : made) {
      comms.push_back(newComm(ShimConfig{}));
      comms.back()->ssc = c;  // owned from here: a failure below frees it with the wrapper
    }
    for (auto& c : comms) NCCL_SHIM_CHECK(advance(fn, *c));
    for (int i = 0; i < ndev; ++i) {
      publish(comms[i]);
      comm[i] = comms[i].get();
    }
    return ncclSuccess;
  });
}

NCCL_SHIM_API(ncclResult_t, ncclCommSplit, ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
              ncclConfig_t* config);
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                           ncclConfig_t* config) {
  return guarded("ncclCommSplit", [&]() -> ncclResult_t {
    SSC_NCCL_FORWARD(ncclCommSplit, comm, color, key, newcomm, config);
    const char* fn = "ncclCommSplit";
    std::shared_ptr<ncclComm> parent;
    NCCL_SHIM_CHECK(acquire(fn, comm, Need::kReadyOrRevoked, &parent));
    if (newcomm == nullptr) return fail(ncclInvalidArgument, "{}: newcomm is NULL", fn);
    *newcomm = nullptr;
    if (color < 0 && color != NCCL_SPLIT_NOCOLOR)
      return fail(ncclInvalidArgument, "{}: color {} must be >= 0 or NCCL_SPLIT_NOCOLOR", fn,
                  color);
    ShimConfig cfg;
    NCCL_SHIM_CHECK(parseConfig(fn, config, &parent->config, &cfg));
    const Mode mode = creationMode(cfg);
    sscComm_t parentSsc = parent->ssc;
    auto split = [parentSsc, color, key](sscComm_t* out) {
      sscConfig_t sc = sscConfig(true);
      return sscCommSplit(parentSsc, color, key, out, &sc);
    };
    if (!mode.async) {
      joinChildJobs(*parent);  // earlier non-blocking splits use the same bootstrap
      sscComm_t made = nullptr;
      sscResult_t r = split(&made);
      if (r != sscSuccess) return fromSsc(fn, r, parentSsc);
      if (made == nullptr) return ncclSuccess;  // NCCL_SPLIT_NOCOLOR
      return adoptChild(fn, newcomm, cfg, mode, made, nullptr);
    }
    auto job = startChildJob(*parent, split);
    if (color == NCCL_SPLIT_NOCOLOR) {
      // No communicator here, but this rank's part of the split still runs.
      groupAwaitJob(job);
      return ncclSuccess;
    }
    return adoptChild(fn, newcomm, cfg, mode, nullptr, std::move(job));
  });
}

#if SSC_NCCL_HAS_ncclCommShrink
NCCL_SHIM_API(ncclResult_t, ncclCommShrink, ncclComm_t comm, int* excludeRanksList,
              int excludeRanksCount, ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags);
ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                            ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  return guarded("ncclCommShrink", [&]() -> ncclResult_t {
    SSC_NCCL_FORWARD(ncclCommShrink, comm, excludeRanksList, excludeRanksCount, newcomm, config,
                     shrinkFlags);
    const char* fn = "ncclCommShrink";
    std::shared_ptr<ncclComm> parent;
    NCCL_SHIM_CHECK(acquire(fn, comm, Need::kReadyOrRevoked, &parent));
    if (newcomm == nullptr) return fail(ncclInvalidArgument, "{}: newcomm is NULL", fn);
    *newcomm = nullptr;
    if (excludeRanksList == nullptr || excludeRanksCount < 1)
      return fail(ncclInvalidArgument, "{}: excludeRanksList must name at least one rank", fn);
    if ((shrinkFlags & ~(NCCL_SHRINK_DEFAULT | NCCL_SHRINK_ABORT)) != 0)
      return fail(ncclInvalidArgument, "{}: unknown shrinkFlags 0x{:x}", fn, shrinkFlags);
    std::vector<bool> excluded(static_cast<size_t>(parent->nranks), false);
    for (int i = 0; i < excludeRanksCount; ++i) {
      int r = excludeRanksList[i];
      if (r < 0 || r >= parent->nranks)
        return fail(ncclInvalidArgument, "{}: excluded rank {} is out of range [0, {})", fn, r,
                    parent->nranks);
      excluded[static_cast<size_t>(r)] = true;
    }
    if (excluded[static_cast<size_t>(parent->rank)])
      return fail(ncclInvalidArgument,
                  "{}: rank {} is in excludeRanksList; excluded ranks must "
                  "not call ncclCommShrink",
                  fn, parent->rank);
    if (!parent->hostBackend)
      return fail(ncclInvalidUsage,
                  "{}: not supported on Starscream's GPU backends yet (the "
                  "surviving ranks meet without the excluded ones over host buffers, which only "
                  "the host backend moves); excluded ranks that are alive can instead join an "
                  "ncclCommSplit with NCCL_SPLIT_NOCOLOR",
                  fn);
    // NCCL_SHRINK_ABORT first stops the parent's in-flight work. On the host backend every call
    // has completed before it returned, so this rank has none.
    ShimConfig cfg;
    NCCL_SHIM_CHECK(parseConfig(fn, config, &parent->config, &cfg));
    std::vector<int> survivors;
    for (int r = 0; r < parent->nranks; ++r)
      if (!excluded[static_cast<size_t>(r)]) survivors.push_back(r);
    const Mode mode = creationMode(cfg);
    auto shrink = [parentSsc = parent->ssc, survivors, me = parent->rank](sscComm_t* out) {
      return shrinkRendezvous(parentSsc, survivors, me, out);
    };
    if (!mode.async) {
      joinChildJobs(*parent);
      sscComm_t made = nullptr;
      sscResult_t r = shrink(&made);
      if (r != sscSuccess) return fromSsc(fn, r, parent->ssc);
      return adoptChild(fn, newcomm, cfg, mode, made, nullptr);
    }
    return adoptChild(fn, newcomm, cfg, mode, nullptr, startChildJob(*parent, shrink));
  });
}
#endif
