// SPDX-License-Identifier: MIT
#include "src/api/trace_hooks.h"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>
#include <utility>

#include "src/comm/trace.h"
#include "src/core/dtype.h"

namespace ssc {
namespace {

// This thread's open scopes: when the outermost began and what it launched.
struct ScopeState {
  int depth = 0;
  bool group = false;
  int64_t startNs = 0;
  std::vector<std::pair<TraceLog*, long>> launched;
};
thread_local ScopeState t_scope;

const char* opName(const PendingCall& c) {
  const CollKind k = c.args.coll;
  if (k != CollKind::kAllReduce && k != CollKind::kReduceScatter && k != CollKind::kReduce)
    return nullptr;
  if (c.args.rankScaled) return "premulsum";
  if (c.reduce.hasPreScale || c.reduce.postDivisor != 0) return "avg";
  switch (c.reduce.kind) {
    case ReduceKind::kSum: return "sum";
    case ReduceKind::kProd: return "prod";
    case ReduceKind::kMax: return "max";
    case ReduceKind::kMin: return "min";
  }
  return nullptr;
}

void planSize(const RankPlan& plan, TraceRecord* r) {
  r->algo = algoName(plan.algo);
  r->channels = static_cast<int>(plan.channels.size());
  for (const auto& ch : plan.channels) r->steps += static_cast<int>(ch.steps.size());
}

// Records r (its host start from the open scope, else now) and hands `work` its timing.
void record(sscComm* comm, TraceRecord r, Work* work) {
  TraceLog& log = *comm->trace;
  const int64_t now = monotonicNs();
  r.hostStartNs = t_scope.depth > 0 ? t_scope.startNs : now;
  r.hostEndNs = now;  // until the scope closes
  r.inGroup = t_scope.depth > 0 && t_scope.group;
  // A call online tuning times (commGetPlan) has its timing already; the trace reads the same.
  const bool ours = work != nullptr && work->timing == nullptr;
  if (work != nullptr) {
    if (ours) work->timing = std::make_shared<WorkTiming>();
    r.timing = work->timing;
  }
  const long index = log.add(std::move(r));
  if (index < 0 && ours) work->timing.reset();  // dropped: nothing to time
  if (index >= 0 && t_scope.depth > 0) t_scope.launched.emplace_back(&log, index);
}

}  // namespace

void TraceScope::open(bool group) {
  opened_ = true;
  if (t_scope.depth++ > 0) return;
  t_scope.group = group;
  t_scope.startNs = monotonicNs();
  t_scope.launched.clear();
}

void TraceScope::close() {
  if (--t_scope.depth > 0) return;
  const int64_t now = monotonicNs();
  for (const auto& [log, index] : t_scope.launched) log->setHostEnd(index, now);
  t_scope.launched.clear();
}

void traceCollSlow(const PendingCall& c, Work* work, const char* path) {
  sscComm* comm = c.comm;
  TraceRecord r;
  r.name = collName(c.args.coll);
  r.dtype = dtypeName(c.reduce.dtype);
  r.op = opName(c);
  r.count = c.args.count;
  r.bytes = std::max(collInputElems(c.args, comm->nranks), collOutputElems(c.args, comm->nranks)) *
            c.elemBytes;
  if (c.args.coll == CollKind::kBroadcast || c.args.coll == CollKind::kReduce) r.root = c.args.root;
  r.stream = c.stream;
  r.path = path;
  if (work != nullptr && work->plan != nullptr) {
    const RankPlan& plan = *work->plan;
    planSize(plan, &r);
    if (plan.algo == Algo::kSymmetric) {
      r.protocol = plan.wideGrid ? "zero-copy wide" : "zero-copy bulk";
      if (r.path == nullptr) r.path = "zero-copy";
    } else {
      r.protocol = commPacketCall(comm, c.args, c.elemBytes) ? "packets" : "fifo";
      if (r.path == nullptr) r.path = "fifo";
    }
  } else {
    r.algo = "copy";
    r.protocol = "copy";
  }
  record(comm, std::move(r), work);
}

void traceP2pSlow(sscComm* comm, const std::vector<const PendingCall*>& calls, Work* work) {
  TraceRecord r;
  bool sends = false, recvs = false;
  for (const PendingCall* c : calls) {
    (c->p2p.isSend ? sends : recvs) = true;
    r.bytes += c->p2p.bytes;
    if (!r.ops.empty()) r.ops += ", ";
    r.ops += fmt::format("{} {} B {} {}", c->p2p.isSend ? "send" : "recv", c->p2p.bytes,
                         c->p2p.isSend ? "to" : "from", c->p2p.peer);
  }
  r.name = sends && recvs ? "sendrecv" : sends ? "send" : "recv";
  r.count = r.bytes;
  r.dtype = dtypeName(sscUint8);
  if (calls.size() == 1) r.peer = calls.front()->p2p.peer;
  r.stream = calls.front()->stream;
  r.protocol = "fifo";
  r.path = "fused point-to-point";
  if (work != nullptr && work->plan != nullptr) {
    planSize(*work->plan, &r);
    // The one-copy handshake's steps (plan.h) store straight into the receiver's buffer.
    for (const auto& ch : work->plan->channels)
      for (const Step& s : ch.steps)
        if (std::string_view(stepOpName(s.op)).rfind("p2p", 0) == 0) r.protocol = "one-copy";
  }
  record(comm, std::move(r), work);
}

}  // namespace ssc
