#include "src/api/group.h"

#include <algorithm>

namespace ssc {

namespace {

struct GroupState {
  int depth = 0;
  std::vector<PendingCall> calls;
  sscResult_t firstError = sscSuccess;
  std::string firstMessage;
};
thread_local GroupState t_group;

sscResult_t launchColl(const PendingCall& c) {
  auto work = std::make_shared<Work>();
  SSC_CHECK(commGetPlan(c.comm, c.args, c.elemBytes, &work->plan));
  work->reduce = c.reduce;
  work->elemBytes = c.elemBytes;
  work->buffers = {const_cast<void*>(c.sendbuff), c.recvbuff, nullptr};
  if (work->plan->algo == Algo::kSymmetric) {
    work->peerBuffers = c.peerBuffers;
    work->callHash = c.callHash;
  }
  return c.comm->backend->enqueue(c.comm, std::move(work), c.stream);
}

// All point-to-point calls of one communicator in this group, as one fused plan.
sscResult_t launchP2p(sscComm* comm, const std::vector<const PendingCall*>& calls) {
  sscStream_t stream = calls.front()->stream;
  std::vector<P2pOp> ops;
  auto work = std::make_shared<Work>();
  work->buffers = {nullptr, nullptr, nullptr};
  for (const PendingCall* c : calls) {
    if (c->stream != stream)
      return fail(sscInvalidUsage, "sscGroupEnd: sends/receives on one communicator in one group "
                  "must use one stream");
    ops.push_back(c->p2p);
    work->buffers.push_back(c->p2pBuff);
  }
  PlanParams params;
  params.elemBytes = 1;
  params.chunkElems = comm->resources->chunkBytes();
  params.maxChannels = comm->resources->channels();
  auto plan = std::make_shared<RankPlan>();
  SSC_CHECK(buildP2pPlan(comm->rank, comm->nranks, ops, params, plan.get()));
  work->plan = plan;
  work->elemBytes = 1;
  work->reduce.dtype = sscUint8;
  return comm->backend->enqueue(comm, std::move(work), stream);
}

sscResult_t launchAll(std::vector<PendingCall>& calls) {
  // Collectives in call order, then each communicator's fused point-to-point plan.
  for (const auto& c : calls)
    if (!c.isP2p) SSC_CHECK(launchColl(c));
  std::vector<sscComm*> comms;
  for (const auto& c : calls)
    if (c.isP2p && std::find(comms.begin(), comms.end(), c.comm) == comms.end())
      comms.push_back(c.comm);
  for (sscComm* comm : comms) {
    std::vector<const PendingCall*> mine;
    for (const auto& c : calls)
      if (c.isP2p && c.comm == comm) mine.push_back(&c);
    SSC_CHECK(launchP2p(comm, mine));
  }
  return sscSuccess;
}

}  // namespace

int groupDepth() { return t_group.depth; }

sscResult_t submitCall(const PendingCall& call) {
  if (t_group.depth > 0) {
    t_group.calls.push_back(call);
    return sscSuccess;
  }
  std::vector<PendingCall> one{call};
  return launchAll(one);
}

}  // namespace ssc

using namespace ssc;

SSC_API sscResult_t sscGroupStart(void) {
  ++t_group.depth;
  return sscSuccess;
}

SSC_API sscResult_t sscGroupEnd(void) {
  return guarded("sscGroupEnd", [&]() -> sscResult_t {
    if (t_group.depth == 0)
      return fail(sscInvalidUsage, "sscGroupEnd without a matching sscGroupStart");
    if (--t_group.depth > 0) return sscSuccess;
    std::vector<PendingCall> calls = std::move(t_group.calls);
    t_group.calls.clear();
    sscResult_t err = t_group.firstError;
    t_group.firstError = sscSuccess;
    if (err != sscSuccess)
      return fail(err, "sscGroupEnd: a call in the group failed ({}); nothing in the group was "
                  "launched", t_group.firstMessage);
    for (const auto& c : calls) SSC_CHECK(checkComm("sscGroupEnd", c.comm));
    return launchAll(calls);
  });
}

namespace ssc {
// Called by entry points that fail inside a group: the group end reports it and drops the group.
void groupRecordError(sscResult_t code) {
  if (t_group.depth > 0 && t_group.firstError == sscSuccess) {
    t_group.firstError = code;
    t_group.firstMessage = lastError();
  }
}
}  // namespace ssc
