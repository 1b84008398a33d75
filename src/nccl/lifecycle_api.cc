// SPDX-License-Identifier: MIT
// Version, errors, and the life of a communicator after creation: finalize, destroy, abort,
// revoke, asynchronous errors and queries.
#include "src/nccl/comm.h"
#include "src/nccl/errors.h"
#include "src/nccl/fallback.h"

using namespace ssc::nccl;

namespace {

// Ends `comm`, already retired from the live set. An abort wakes every waiter first (Starscream
// makes them fail promptly), so the joins below cannot hang on it. The host stream is left to
// the last reference: a thread woken by the abort may still be returning from a synchronize on
// it.
ncclResult_t teardown(const char* fn, const std::shared_ptr<ncclComm>& comm, bool abort) {
  sscComm_t inner = nullptr;
  std::shared_ptr<CreateJob> job;
  {
    std::lock_guard<std::mutex> g(comm->mu);
    inner = comm->ssc;
    comm->ssc = nullptr;
    job = std::move(comm->job);
  }
  if (abort && inner != nullptr) sscCommAbort(inner);
  joinChildJobs(*comm);
  if (job) {  // a split or shrink still creating this communicator: let it finish, then end it
    job->wait();
    if (sscComm_t orphan = job->takeComm()) abort ? sscCommAbort(orphan) : sscCommDestroy(orphan);
  }
  if (abort || inner == nullptr) return ncclSuccess;
  ncclResult_t result = ncclSuccess;
  if (comm->hostStream != nullptr) {
    sscResult_t r = sscStreamSynchronize(comm->hostStream);
    if (r != sscSuccess) result = fromSsc(fn, r, inner);
  }
  sscResult_t r = sscCommDestroy(inner);
  if (r != sscSuccess && result == ncclSuccess) result = fromSsc(fn, r, nullptr);
  return result;
}

}  // namespace

// Reports the NCCL_VERSION_CODE of the nccl.h the shim was built against, not Starscream's own
// version: frameworks compare it with the version they were compiled with (PyTorch warns or
// refuses on a mismatch), and the shim implements exactly that header's ABI.
NCCL_SHIM_API(ncclResult_t, ncclGetVersion, int* version);
ncclResult_t ncclGetVersion(int* version) {
  return guarded("ncclGetVersion", [&]() -> ncclResult_t {
    SSC_NCCL_FORWARD(ncclGetVersion, version);
    if (version == nullptr) return fail(ncclInvalidArgument, "ncclGetVersion: version is NULL");
    *version = NCCL_VERSION_CODE;
    return ncclSuccess;
  });
}

NCCL_SHIM_API(const char*, ncclGetErrorString, ncclResult_t result);
const char* ncclGetErrorString(ncclResult_t result) { return resultString(result); }

#if SSC_NCCL_HAS_ncclGetLastError
NCCL_SHIM_API(const char*, ncclGetLastError, ncclComm_t comm);
const char* ncclGetLastError(ncclComm_t comm) {
  try {
    if (vendorMode()) {
      static const auto vendorFn =
          reinterpret_cast<decltype(&ncclGetLastError)>(vendorSymbol("ncclGetLastError"));
      if (vendorFn != nullptr) return vendorFn(comm);
      return lastError();
    }
    // This thread's last failure first (NCCL ignores comm); else, for a communicator that has
    // failed asynchronously, Starscream's record of why.
    if (*lastError() != '\0' || comm == nullptr) return lastError();
    std::shared_ptr<ncclComm> c;
    sscResult_t state = sscSuccess;
    if (acquire("ncclGetLastError", comm, Need::kReadyOrRevoked, &c) != ncclSuccess)
      return lastError();
    if (sscCommGetAsyncError(c->ssc, &state) != sscSuccess || state == sscSuccess) return "";
    return sscGetLastError(c->ssc);
  } catch (...) {
    return "ncclGetLastError: unexpected exception";
  }
}
#endif

#if SSC_NCCL_HAS_ncclResetDebugInit
// Deprecated in nccl.h; Starscream reads STARSCREAM_DEBUG once, so there is nothing to reload.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
NCCL_SHIM_API(void, ncclResetDebugInit);
void ncclResetDebugInit() {
  if (vendorMode()) {
    static const auto vendorFn =
        reinterpret_cast<decltype(&ncclResetDebugInit)>(vendorSymbol("ncclResetDebugInit"));
    if (vendorFn != nullptr) vendorFn();
  }
}
#pragma GCC diagnostic pop
#endif

#if SSC_NCCL_HAS_ncclCommFinalize
// Waits for the communicator's work and flushes it. NCCL lets a non-blocking communicator
// answer ncclInProgress here; Starscream's finalize is done when it returns, so ncclSuccess is
// the answer in both modes.
NCCL_SHIM_API(ncclResult_t, ncclCommFinalize, ncclComm_t comm);
ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  return guarded("ncclCommFinalize", [&]() -> ncclResult_t {
    SSC_NCCL_FORWARD(ncclCommFinalize, comm);
    const char* fn = "ncclCommFinalize";
    std::shared_ptr<ncclComm> c;
    NCCL_SHIM_CHECK(acquire(fn, comm, Need::kReady, &c));
    if (c->hostStream != nullptr) {
      sscResult_t r = sscStreamSynchronize(c->hostStream);
      if (r != sscSuccess) return fromSsc(fn, r, c->ssc);
    }
    sscResult_t r = sscCommFinalize(c->ssc);
    return r == sscSuccess ? ncclSuccess : fromSsc(fn, r, c->ssc);
  });
}
#endif

NCCL_SHIM_API(ncclResult_t, ncclCommDestroy, ncclComm_t comm);
ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  return guarded("ncclCommDestroy", [&]() -> ncclResult_t {
    SSC_NCCL_FORWARD(ncclCommDestroy, comm);
    if (comm == nullptr) return ncclSuccess;  // as NCCL
    std::shared_ptr<ncclComm> c = retire(comm);
    if (c == nullptr)
      return fail(ncclInvalidUsage,
                  "ncclCommDestroy: comm {} is not a live communicator (already "
                  "destroyed?)",
                  static_cast<void*>(comm));
    return teardown("ncclCommDestroy", c, false);
  });
}

NCCL_SHIM_API(ncclResult_t, ncclCommAbort, ncclComm_t comm);
ncclResult_t ncclCommAbort(ncclComm_t comm) {
  return guarded("ncclCommAbort", [&]() -> ncclResult_t {
    SSC_NCCL_FORWARD(ncclCommAbort, comm);
    if (comm == nullptr) return ncclSuccess;  // as NCCL
    std::shared_ptr<ncclComm> c = retire(comm);
    if (c == nullptr)
      return fail(ncclInvalidUsage, "ncclCommAbort: comm {} is not a live communicator",
                  static_cast<void*>(comm));
    return teardown("ncclCommAbort", c, true);
  });
}

#if SSC_NCCL_HAS_ncclCommRevoke
// Refuses new work on the communicator; split, shrink, destroy and abort remain. NCCL stops the
// in-flight work; Starscream cannot cancel work without aborting the communicator (which would
// rule out the split or shrink that usually follows), so it waits for it instead: nothing is
// in flight on the host backend (calls complete before returning); on a GPU backend the call
// blocks until the work queued on the caller's streams has drained or failed (bounded by
// STARSCREAM_TIMEOUT). The state is therefore quiescent, ncclSuccess, when this returns.
NCCL_SHIM_API(ncclResult_t, ncclCommRevoke, ncclComm_t comm, int revokeFlags);
ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  return guarded("ncclCommRevoke", [&]() -> ncclResult_t {
    SSC_NCCL_FORWARD(ncclCommRevoke, comm, revokeFlags);
    const char* fn = "ncclCommRevoke";
    std::shared_ptr<ncclComm> c;
    NCCL_SHIM_CHECK(acquire(fn, comm, Need::kReady, &c));
    if (revokeFlags != NCCL_REVOKE_DEFAULT)
      return fail(ncclInvalidArgument, "{}: revokeFlags must be NCCL_REVOKE_DEFAULT (got {})", fn,
                  revokeFlags);
    c->revoked.store(true);
    if (c->hostBackend) return ncclSuccess;
    sscResult_t r = sscCommFinalize(c->ssc);
    return r == sscSuccess ? ncclSuccess : fromSsc(fn, r, c->ssc);
  });
}
#endif

NCCL_SHIM_API(ncclResult_t, ncclCommGetAsyncError, ncclComm_t comm, ncclResult_t* asyncError);
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  return guarded("ncclCommGetAsyncError", [&]() -> ncclResult_t {
    SSC_NCCL_FORWARD(ncclCommGetAsyncError, comm, asyncError);
    const char* fn = "ncclCommGetAsyncError";
    std::shared_ptr<ncclComm> c;
    NCCL_SHIM_CHECK(acquire(fn, comm, Need::kLive, &c));
    if (asyncError == nullptr) return fail(ncclInvalidArgument, "{}: asyncError is NULL", fn);
    ncclResult_t state = advance(fn, *c);  // ncclInProgress while initialising
    if (state == ncclSuccess) {
      sscResult_t s = sscSuccess;
      sscResult_t r = sscCommGetAsyncError(c->ssc, &s);
      if (r != sscSuccess) return fromSsc(fn, r, c->ssc);
      state = toNccl(s);
    }
    *asyncError = state;
    return ncclSuccess;
  });
}

NCCL_SHIM_API(ncclResult_t, ncclCommCount, const ncclComm_t comm, int* count);
ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  return guarded("ncclCommCount", [&]() -> ncclResult_t {
    SSC_NCCL_FORWARD(ncclCommCount, comm, count);
    std::shared_ptr<ncclComm> c;
    NCCL_SHIM_CHECK(acquire("ncclCommCount", comm, Need::kReadyOrRevoked, &c));
    if (count == nullptr) return fail(ncclInvalidArgument, "ncclCommCount: count is NULL");
    *count = c->nranks;
    return ncclSuccess;
  });
}

// The CUDA/HIP device of the communicator; -1 on the host backend, which has none.
NCCL_SHIM_API(ncclResult_t, ncclCommCuDevice, const ncclComm_t comm, int* device);
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  return guarded("ncclCommCuDevice", [&]() -> ncclResult_t {
    SSC_NCCL_FORWARD(ncclCommCuDevice, comm, device);
    std::shared_ptr<ncclComm> c;
    NCCL_SHIM_CHECK(acquire("ncclCommCuDevice", comm, Need::kReadyOrRevoked, &c));
    if (device == nullptr) return fail(ncclInvalidArgument, "ncclCommCuDevice: device is NULL");
    *device = c->device;
    return ncclSuccess;
  });
}

NCCL_SHIM_API(ncclResult_t, ncclCommUserRank, const ncclComm_t comm, int* rank);
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  return guarded("ncclCommUserRank", [&]() -> ncclResult_t {
    SSC_NCCL_FORWARD(ncclCommUserRank, comm, rank);
    std::shared_ptr<ncclComm> c;
    NCCL_SHIM_CHECK(acquire("ncclCommUserRank", comm, Need::kReadyOrRevoked, &c));
    if (rank == nullptr) return fail(ncclInvalidArgument, "ncclCommUserRank: rank is NULL");
    *rank = c->rank;
    return ncclSuccess;
  });
}
