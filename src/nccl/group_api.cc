// SPDX-License-Identifier: MIT
#include "src/nccl/group_api.h"

#include <algorithm>
#include <string>
#include <vector>

#include "src/nccl/errors.h"
#include "src/nccl/fallback.h"

namespace ssc::nccl {
namespace {

struct GroupState {
  int depth = 0;
  int sscCalls = 0;
  ncclResult_t firstError = ncclSuccess;
  std::string firstMessage;
  std::vector<std::shared_ptr<ncclComm>> touched;    // host-backend comms with queued work
  std::vector<std::shared_ptr<ncclComm>> creations;  // communicators created in the group
  std::vector<std::shared_ptr<CreateJob>> jobs;      // creation jobs with no comm on this rank
};
thread_local GroupState t_group;

// Drops the open Starscream group without launching it. Starscream has no call for that, but a
// group in which a call failed launches nothing at its sscGroupEnd (src/api/group.h, tested in
// tests/api/test_api_errors.cc); so, when calls were recorded, first record a call that fails
// (a send on a NULL communicator).
// TODO(ssc api): use an sscGroupDiscard() once starscream.h has one.
void discardSscGroup(bool hasCalls) {
  if (hasCalls) (void)sscSend(nullptr, 1, sscUint8, 0, nullptr, nullptr);
  (void)sscGroupEnd();
}

// What the outermost end does after launching (or discarding): complete the host-backend work
// and the creations. Returns the first error, else ncclInProgress if a non-blocking creation
// still runs, else ncclSuccess.
ncclResult_t settle(const char* fn, GroupState& g, bool launched) {
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

}  // namespace

int groupDepth() { return t_group.depth; }

void groupNoteSscCall() {
  if (t_group.depth > 0) ++t_group.sscCalls;
}

void groupRecordError(ncclResult_t code) {
  if (t_group.depth > 0 && t_group.firstError == ncclSuccess && code != ncclSuccess) {
    t_group.firstError = code;
    t_group.firstMessage = lastError();
  }
}

void groupAwaitCreation(const std::shared_ptr<ncclComm>& comm) {
  if (t_group.depth > 0) t_group.creations.push_back(comm);
}

void groupAwaitJob(const std::shared_ptr<CreateJob>& job) {
  if (t_group.depth > 0) t_group.jobs.push_back(job);
}

ncclResult_t completeCall(const char* fn, const std::shared_ptr<ncclComm>& comm) {
  if (!comm->hostBackend) return ncclSuccess;
  if (t_group.depth > 0) {
    t_group.touched.push_back(comm);
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
    sscResult_t r = sscGroupStart();
    if (r != sscSuccess) return fromSsc("ncclGroupStart", r, nullptr);
    ++t_group.depth;
    return ncclSuccess;
  });
}

NCCL_SHIM_API(ncclResult_t, ncclGroupEnd);
ncclResult_t ncclGroupEnd() {
  return guarded("ncclGroupEnd", []() -> ncclResult_t {
    SSC_NCCL_FORWARD(ncclGroupEnd);
    const char* fn = "ncclGroupEnd";
    if (t_group.depth == 0) return fail(ncclInvalidUsage, "{}: no matching ncclGroupStart", fn);
    if (--t_group.depth > 0) {
      sscResult_t r = sscGroupEnd();  // nested: only closes a level
      return r == sscSuccess ? ncclSuccess : fromSsc(fn, r, nullptr);
    }
    GroupState g = std::move(t_group);
    t_group = GroupState{};
    if (g.firstError != ncclSuccess) {
      discardSscGroup(g.sscCalls > 0);
      settle(fn, g, false);
      return fail(g.firstError,
                  "{}: a call in the group failed ({}); nothing in the group was "
                  "launched",
                  fn, g.firstMessage);
    }
    sscResult_t launched = sscGroupEnd();
    ncclResult_t r = launched == sscSuccess ? ncclSuccess : fromSsc(fn, launched, nullptr);
    ncclResult_t settled = settle(fn, g, launched == sscSuccess);
    return r != ncclSuccess ? r : settled;
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
    if (t_group.depth == 0) return fail(ncclInvalidUsage, "{}: no matching ncclGroupStart", fn);
    if (--t_group.depth > 0) {
      sscResult_t r = sscGroupEnd();
      return r == sscSuccess ? ncclSuccess : fromSsc(fn, r, nullptr);
    }
    GroupState g = std::move(t_group);
    t_group = GroupState{};
    discardSscGroup(g.sscCalls > 0);
    ncclResult_t settled = settle(fn, g, false);
    if (g.firstError != ncclSuccess)
      return fail(g.firstError, "{}: a call in the group failed ({})", fn, g.firstMessage);
    return settled;
  });
}
#endif
