// SPDX-License-Identifier: MIT
#include "src/api/group.h"
#include "src/api/plain_buffers.h"
#include "src/api/trace_hooks.h"
#include "transports/usr/p2p_directory.h"
#include "tuner/model.h"
#include "tuner/select.h"

#include <algorithm>
#include <functional>
#include <string>
#include <utility>

namespace ssc {

namespace {

struct GroupState {
  int depth = 0;
  std::vector<PendingCall> calls;
  sscResult_t firstError = sscSuccess;
  std::string firstMessage;
};
thread_local GroupState t_group;

// Staging pays off when the zero-copy call plus the two local copies it adds (the input into
// the staging buffer, the result out of it) is faster than the FIFO algorithm the tuner would run
// on the plain buffers: with few ranks and small calls a FIFO hop is cheaper than two copies, with
// many ranks or large calls the zero-copy steps win (tuner/select.h: the calibration's measured
// times where it has both, else the model, on every device alike).
bool stagingWanted(const PendingCall& c, uint64_t bytes) {
  const Algo forced = c.comm->config.forcedAlgos[static_cast<size_t>(c.args.coll)];
  // A forced FIFO algorithm is the user's word: it runs as asked, unstaged.
  if (forced != Algo::kAuto && forced != Algo::kSymmetric) return false;
  if (forced == Algo::kSymmetric) return ssc::stagingServes(*c.comm->tuner, c.args.coll, bytes);
  return ssc::stagingPaysOff(*c.comm->tuner, c.args.coll, bytes);
}

// An unregistered all-reduce, reduce-scatter or all-gather that fits the communicator's staging
// buffers (and is not sent as packets, which need none) runs zero-copy over them where the
// model says the two extra copies pay off.
bool stageable(const PendingCall& c) {
  const CollKind k = c.args.coll;
  const StagingBuffers& s = c.comm->staging;
  const size_t bytes =
      std::max(collInputElems(c.args, c.comm->nranks), collOutputElems(c.args, c.comm->nranks)) *
      c.elemBytes;
  return s.bytes != 0 && c.zeroCopyOk && c.peerBuffers.empty() &&
         (k == CollKind::kAllReduce || k == CollKind::kReduceScatter ||
          k == CollKind::kAllGather) &&
         !commPacketCall(c.comm, c.args, c.elemBytes) && bytes <= s.bytes &&
         stagingWanted(c, bytes);
}

// Identifies a staged call for the symmetric barrier's check, as findSymmetric does for
// registered ones (every rank stages into the same buffers, so only the call itself varies).
uint32_t stagedCallHash(const PendingCall& c) {
  const uint64_t h = std::hash<std::string>{}(fmt::format(
      "staged:{}:{}:{}:{}:{}", static_cast<int>(c.args.coll), c.args.count,
      static_cast<int>(c.reduce.dtype), static_cast<int>(c.reduce.kind), c.reduce.hasPreScale));
  return static_cast<uint32_t>(h ^ (h >> 32));
}

// On one rank every collective but a pre-multiplied sum is a copy of the input to the output
// (nothing in place): one copy-engine transfer instead of a kernel through the FIFOs.
bool singleRankCopy(const PendingCall& c, const void** src, void** dst, size_t* bytes) {
  const ReduceSpec& r = c.reduce;
  // A scale known to be 1 (a float average over one rank) leaves the values as they are.
  const bool scales =
      r.hasPreScale && (r.preScaleDevice != nullptr ||
                        (r.preScale.isInteger ? r.preScale.i != 1 : r.preScale.f != 1.0));
  if (c.comm->nranks != 1 || scales) return false;
  *src = c.sendbuff;
  *dst = c.recvbuff;
  *bytes = collOutputElems(c.args, 1) * c.elemBytes;
  return true;
}

sscResult_t launchColl(const PendingCall& c) {
  const void* src = nullptr;
  void* dst = nullptr;
  size_t bytes = 0;
  if (singleRankCopy(c, &src, &dst, &bytes)) {
    traceColl(c, nullptr, "copy");
    return src == dst ? sscSuccess
                      : c.comm->backend->enqueueCopy(c.comm, dst, src, bytes, c.stream);
  }
  auto work = std::make_shared<Work>();
  work->reduce = c.reduce;
  work->elemBytes = c.elemBytes;
  if (stageable(c)) {
    // The staging buffers are distinct, so the plan is the out-of-place one whatever the caller's
    // buffers are; a forced non-symmetric algorithm still wins (then no staging).
    CollArgs staged = c.args;
    staged.symmetric = true;
    staged.inPlace = false;
    SSC_CHECK(commGetPlan(c.comm, staged, c.elemBytes, &work->plan));
    if (work->plan->algo == Algo::kSymmetric) {
      const StagingBuffers& s = c.comm->staging;
      work->buffers = {s.in, s.out, nullptr};
      work->peerBuffers = s.peers;
      work->callHash = stagedCallHash(c);
      ++c.comm->staging.calls;
      const Backend::StagedCopies copies{
          s.in,       c.sendbuff, collInputElems(c.args, c.comm->nranks) * c.elemBytes,
          c.recvbuff, s.out,      collOutputElems(c.args, c.comm->nranks) * c.elemBytes};
      traceColl(c, work.get(), "staged");
      return c.comm->backend->enqueueStaged(c.comm, std::move(work), copies, c.stream);
    }
  }
  SSC_CHECK(commGetPlan(c.comm, c.args, c.elemBytes, &work->plan, &work->timing));
  work->buffers = {const_cast<void*>(c.sendbuff), c.recvbuff, nullptr};
  if (work->plan->algo == Algo::kSymmetric) {
    work->peerBuffers = c.peerBuffers;
    work->callHash = c.callHash;
  }
  traceColl(c, work.get());
  return c.comm->backend->enqueue(c.comm, std::move(work), c.stream);
}

// All point-to-point calls of one communicator in this group, as one fused plan.
// Sends to this rank itself pair with receives from itself in order (as NCCL pairs any two
// ranks' messages); when every pair has one size they are plain copies, with no plan step (on
// one rank: no kernel through the FIFOs at all). Removes them from `calls` once queued.
sscResult_t copySelfMessages(sscComm* comm, std::vector<const PendingCall*>* calls,
                             sscStream_t stream) {
  std::vector<const PendingCall*> sends, recvs, rest;
  for (const PendingCall* c : *calls) {
    if (c->p2p.peer != comm->rank)
      rest.push_back(c);
    else
      (c->p2p.isSend ? sends : recvs).push_back(c);
  }
  if (sends.empty() || sends.size() != recvs.size()) return sscSuccess;
  for (size_t i = 0; i < sends.size(); ++i)
    if (sends[i]->p2p.bytes != recvs[i]->p2p.bytes) return sscSuccess;  // the plan reports it
  for (size_t i = 0; i < sends.size(); ++i)
    if (sends[i]->p2pBuff != recvs[i]->p2pBuff)
      SSC_CHECK(comm->backend->enqueueCopy(comm, recvs[i]->p2pBuff, sends[i]->p2pBuff,
                                           sends[i]->p2p.bytes, stream));
  *calls = std::move(rest);
  return sscSuccess;
}

bool overlap(const void* a, uint64_t aBytes, const void* b, uint64_t bBytes) {
  const auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return aBytes > 0 && bBytes > 0 && x < y + bBytes && y < x + aBytes;
}

// One-copy point-to-point (transports/usr/p2p_directory.h): maps what the peers this group
// sends to have exported, and decides for each receive whether its sender may store straight
// into it (the plan's handshake carries the decision to the sender). A receive buffer that
// overlaps another buffer of the group is not offered: a peer storing into it could overwrite
// data this rank has yet to send. The exception is the exchange: the k-th receive from a peer
// into the very buffer of the k-th send to it (an in-place all-to-all), offered for a swap that
// runs only when the peer offers its side alike.
sscResult_t offerReceives(sscComm* comm, const std::vector<P2pOp>& ops, Work* work,
                          sscStream_t stream) {
  P2pDirectory& dir = *comm->p2pDirectory;
  const bool capturing = comm->backend->streamCapturing(stream);
  std::vector<int> owners;
  for (const P2pOp& op : ops)
    if (op.isSend && op.peer != comm->rank &&
        std::find(owners.begin(), owners.end(), op.peer) == owners.end())
      owners.push_back(op.peer);
  SSC_CHECK(dir.refresh(owners, capturing));
  auto p2p = std::make_shared<Work::P2pDirect>();
  p2p->ops = ops;
  p2p->offer.assign(ops.size(), 0);
  p2p->swap.assign(ops.size(), 0);
  const auto buf = [&](size_t i) { return work->buffers[kBufUserBase + i]; };
  std::vector<size_t> received(static_cast<size_t>(comm->nranks), 0);
  std::vector<std::vector<size_t>> sendsTo(static_cast<size_t>(comm->nranks));
  for (size_t i = 0; i < ops.size(); ++i)
    if (ops[i].isSend) sendsTo[ops[i].peer].push_back(i);
  for (size_t i = 0; i < ops.size(); ++i) {
    const P2pOp& op = ops[i];
    if (op.isSend || op.peer == comm->rank) continue;
    const size_t k = received[op.peer]++;
    const std::vector<size_t>& mirrors = sendsTo[op.peer];
    const bool exchange =
        k < mirrors.size() && buf(mirrors[k]) == buf(i) && ops[mirrors[k]].bytes == op.bytes;
    bool alone = true;
    for (size_t j = 0; j < ops.size() && alone; ++j)
      if (j != i && !(exchange && j == mirrors[k]) &&
          overlap(buf(i), op.bytes, buf(j), ops[j].bytes))
        alone = false;
    if (!alone) continue;
    int slot = -1;
    SSC_CHECK(dir.offer(op.peer, buf(i), op.bytes, &p2p->offer[i], capturing ? &slot : nullptr));
    p2p->swap[i] = exchange && p2p->offer[i] != 0;
    // A graph replays the offer: the sender's mapping must outlive it (p2p_directory.h).
    if (capturing && slot >= 0) {
      std::shared_ptr<P2pDirectory::Pin> pin = dir.pin(slot);
      if (!comm->backend->retainUntilGraphDestroyed(stream, [pin] { pin->release(); }))
        pin->release(), p2p->offer[i] = 0, p2p->swap[i] = 0;  // no way to hold it: the FIFOs
    }
  }
  work->p2p = std::move(p2p);
  return sscSuccess;
}

sscResult_t launchP2p(sscComm* comm, std::vector<const PendingCall*> calls) {
  sscStream_t stream = calls.front()->stream;
  for (const PendingCall* c : calls)
    if (c->stream != stream)
      return fail(sscInvalidUsage,
                  "sscGroupEnd: sends/receives on one communicator in one group "
                  "must use one stream");
  SSC_CHECK(copySelfMessages(comm, &calls, stream));
  if (calls.empty()) return sscSuccess;
  std::vector<P2pOp> ops;
  auto work = std::make_shared<Work>();
  work->buffers = {nullptr, nullptr, nullptr};
  for (const PendingCall* c : calls) {
    ops.push_back(c->p2p);
    work->buffers.push_back(c->p2pBuff);
  }
  SSC_CHECK(commGetP2pPlan(comm, ops, &work->plan));
  if (comm->p2pDirectory != nullptr) SSC_CHECK(offerReceives(comm, ops, work.get(), stream));
  work->elemBytes = 1;
  work->reduce.dtype = sscUint8;
  traceP2p(comm, calls, work.get());
  return comm->backend->enqueue(comm, std::move(work), stream);
}

sscResult_t launchRest(std::vector<PendingCall>& calls);

sscResult_t launchAll(std::vector<PendingCall>& calls) {
  // A refusal of checked mode (STARSCREAM_CHECK) drops only the calls of the communicators whose
  // ranks disagreed (every rank of those drops them alike); the others launch as their peers do.
  const sscResult_t resolved = resolvePlainBuffers(calls);
  if (resolved == sscSuccess) return launchRest(calls);
  if (std::none_of(calls.begin(), calls.end(), [](const PendingCall& c) { return c.refused; })) {
    // The ranks meet there first: when a peer went away, say which one.
    std::string why = lastError();
    for (const auto& c : calls)
      if (c.comm->abortFlag.load()) {
        why = commFailureText(c.comm, why);
        break;
      }
    return setError(resolved, why);
  }
  const std::string why = lastError();
  SSC_CHECK(launchRest(calls));
  if (lastError() != why) setError(resolved, why);  // logged once
  return resolved;
}

// Collectives in call order, then each communicator's fused point-to-point plan.
sscResult_t launchRest(std::vector<PendingCall>& calls) {
  for (const auto& c : calls)
    if (!c.isP2p && !c.refused && !c.checkOnly) SSC_CHECK(launchColl(c));
  std::vector<sscComm*> comms;
  for (const auto& c : calls)
    if (c.isP2p && !c.refused && std::find(comms.begin(), comms.end(), c.comm) == comms.end())
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
    // Every communicator of the group is held until its calls are launched, so a destroy or
    // abort from another thread cannot free one under the launch.
    std::vector<std::unique_ptr<CommUse>> uses;
    for (const auto& c : calls)
      if (std::none_of(uses.begin(), uses.end(),
                       [&](const auto& u) { return u->comm() == c.comm; }))
        uses.push_back(std::make_unique<CommUse>(c.comm));
    if (err != sscSuccess) {
      // Checked mode: the peers compare this rank's calls of the group too. Posting each of them
      // as refused (launching nothing) makes every rank fail the group at this very call
      // instead of waiting for this rank's data.
      std::vector<PendingCall> refusedCalls;
      for (const auto& c : calls)
        if (c.checked && std::any_of(uses.begin(), uses.end(),
                                     [&](const auto& u) { return u->comm() == c.comm; })) {
          refusedCalls.push_back(c);
          refusedCalls.back().checkOnly = true;
          refusedCalls.back().check.status = err;
        }
      if (!refusedCalls.empty()) (void)launchAll(refusedCalls);
      return fail(err,
                  "sscGroupEnd: a call in the group failed ({}); nothing in the group was "
                  "launched",
                  t_group.firstMessage);
    }
    for (const auto& c : calls) SSC_CHECK(checkComm("sscGroupEnd", c.comm));
    TraceScope trace(calls);
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

void groupRestateError(const std::string& was, const std::string& now) {
  if (t_group.depth > 0 && t_group.firstError != sscSuccess && t_group.firstMessage == was)
    t_group.firstMessage = now;
}

sscResult_t groupDiscard() {
  if (t_group.depth == 0)
    return fail(sscInvalidUsage, "sscGroupEnd without a matching sscGroupStart");
  if (--t_group.depth > 0) return sscSuccess;
  t_group.calls.clear();
  const sscResult_t err = std::exchange(t_group.firstError, sscSuccess);
  if (err == sscSuccess) return sscSuccess;
  return fail(err,
              "sscGroupEnd: a call in the group failed ({}); nothing in the group was launched",
              t_group.firstMessage);
}
}  // namespace ssc
