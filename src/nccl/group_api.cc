// SPDX-License-Identifier: MIT
#include "src/nccl/group_api.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "src/nccl/errors.h"
#include "src/nccl/fallback.h"

namespace ssc::nccl {
namespace {

// What the outermost ncclGroupEnd does beyond Starscream's group end, collected while the group
// is open. Not a group state of its own: the group (depth, calls, failure) is Starscream's.
struct EndWork {
  std::vector<std::shared_ptr<ncclComm>> touched;    // host-backend comms with queued work
  std::vector<std::shared_ptr<ncclComm>> creations;  // communicators created in the group
  std::vector<std::shared_ptr<CreateJob>> jobs;      // creation jobs with no comm on this rank
};
thread_local EndWork t_endWork;

// What the outermost end does after launching (or not): complete the host-backend work and the
// creations. Returns the first error, else ncclInProgress if a non-blocking creation still
// runs, else ncclSuccess.
ncclResult_t settle(const char* fn, EndWork& g, bool launched) {
  ncclResult_t result = ncclSuccess;
  auto keep = [&](ncclResult_t r) {
    if (result == ncclSuccess && r != ncclSuccess) result = r;
  };
  if (launched) {
    std::vector<ncclComm*> done;
    for (const auto& comm : g.touched) {
      if (std::find(done.begin(), done.end(), comm.get()) != done.end()) continue;
      done.push_back(comm.get());
      sscResult_t r = sscStreamSynchronize(comm->hostStream);
      if (r != sscSuccess) keep(fromSsc(fn, r, comm->ssc));
    }
  }
  for (const auto& job : g.jobs) job->wait();
  bool pending = false;
  for (const auto& comm : g.creations) {
    ncclResult_t r = comm->config.blocking ? awaitReady(fn, *comm) : advance(fn, *comm);
    if (r == ncclInProgress)
      pending = true;
    else
      keep(r);
  }
  if (result == ncclSuccess && pending) return ncclInProgress;
  return result;
}

// ncclGroupEnd (launch) and ncclGroupSimulateEnd (not): Starscream ends the level, launching
// the outermost group's calls or dropping them, and reports a call of the group that failed;
// the outermost end then settles the shim's own work.
ncclResult_t endGroup(const char* fn, bool launch) {
  const int depth = groupDepth();
  if (depth == 0) return fail(ncclInvalidUsage, "{}: no matching ncclGroupStart", fn);
  EndWork g = depth == 1 ? std::exchange(t_endWork, EndWork{}) : EndWork{};
  const sscResult_t ended = launch ? sscGroupEnd() : core()->groupDiscard();
  const ncclResult_t result = ended == sscSuccess ? ncclSuccess : fromSsc(fn, ended, nullptr);
  if (depth > 1) return result;
  const std::string why = result != ncclSuccess ? lastError() : "";
  const ncclResult_t settled = settle(fn, g, launch && ended == sscSuccess);
  if (result == ncclSuccess) return settled;
  // The group's failure is the answer: a creation's failure met while settling does not
  // replace its message.
  if (why != lastError()) recordError(why);
  return result;
}

}  // namespace

int groupDepth() { return coreGroupDepth(); }

void groupFail(ncclResult_t code) {
  if (code != ncclSuccess && code != ncclInProgress && groupDepth() > 0)
    core()->groupFail(static_cast<sscResult_t>(code));
}

void groupAwaitCreation(const std::shared_ptr<ncclComm>& comm) {
  if (groupDepth() > 0) t_endWork.creations.push_back(comm);
}

void groupAwaitJob(const std::shared_ptr<CreateJob>& job) {
  if (groupDepth() > 0) t_endWork.jobs.push_back(job);
}

ncclResult_t completeCall(const char* fn, const std::shared_ptr<ncclComm>& comm) {
  if (!comm->hostBackend) return ncclSuccess;
  if (groupDepth() > 0) {
    t_endWork.touched.push_back(comm);
    return ncclSuccess;
  }
  sscResult_t r = sscStreamSynchronize(comm->hostStream);
  return r == sscSuccess ? ncclSuccess : fromSsc(fn, r, comm->ssc);
}

}  // namespace ssc::nccl

using namespace ssc::nccl;

NCCL_SHIM_API(ncclResult_t, ncclGroupStart);
ncclResult_t ncclGroupStart() {
  return guarded("ncclGroupStart", []() -> ncclResult_t {
    SSC_NCCL_FORWARD(ncclGroupStart);
    // A new outermost group owes nothing to an earlier one that sscGroupEnd closed (a program
    // mixing the two APIs): drop what that one collected.
    if (groupDepth() == 0) t_endWork = EndWork{};
    sscResult_t r = sscGroupStart();
    return r == sscSuccess ? ncclSuccess : fromSsc("ncclGroupStart", r, nullptr);
  });
}

NCCL_SHIM_API(ncclResult_t, ncclGroupEnd);
ncclResult_t ncclGroupEnd() {
  return guarded("ncclGroupEnd", []() -> ncclResult_t {
    SSC_NCCL_FORWARD(ncclGroupEnd);
    return endGroup("ncclGroupEnd", /*launch=*/true);
  });
}

#if SSC_NCCL_HAS_ncclGroupSimulateEnd
// Simulates the end of the group: nothing is launched and the recorded calls are dropped, as
// NCCL does. simInfo->estimatedTime is left as the caller initialised it (NCCL_UNDEF_FLOAT):
// Starscream's cost model is not exposed through its C API, and an invented figure would be a
// wrong answer. Creations started in the group cannot be undone and complete as at ncclGroupEnd.
NCCL_SHIM_API(ncclResult_t, ncclGroupSimulateEnd, ncclSimInfo_t* simInfo);
ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* simInfo) {
  return guarded("ncclGroupSimulateEnd", [&]() -> ncclResult_t {
    SSC_NCCL_FORWARD(ncclGroupSimulateEnd, simInfo);
    const char* fn = "ncclGroupSimulateEnd";
    // NCCL_SIM_INFO_INITIALIZER's magic; the struct's size tells its version.
    constexpr unsigned int kSimInfoMagic = 0x74685283;
    if (simInfo != nullptr &&
        (simInfo->magic != kSimInfoMagic || simInfo->size < sizeof(size_t) + 2 * sizeof(unsigned)))
      return fail(ncclInvalidArgument,
                  "{}: simInfo was not initialised with "
                  "NCCL_SIM_INFO_INITIALIZER",
                  fn);
    return endGroup(fn, /*launch=*/false);
  });
}
#endif
