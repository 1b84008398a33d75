// SPDX-License-Identifier: MIT
// Where the entry points tell the communicator's trace (STARSCREAM_TRACE, src/comm/trace.h)
// what they launched. Every hook is one branch on the communicator's trace pointer when tracing
// is off: no clock read, no allocation, no lock.
#pragma once

#include <vector>

#include "src/api/group.h"
#include "src/comm/comm.h"

namespace ssc {

// The host side of one API call (a collective, a send or receive, sscGroupEnd): what it launches
// gets its start and its return as the enqueue interval. Scopes nest (a call inside a group
// launches nothing; sscGroupEnd launches the group).
class TraceScope {
 public:
  explicit TraceScope(const sscComm* comm) {
    if (comm != nullptr && comm->trace != nullptr) [[unlikely]]
      open(false);
  }
  // sscGroupEnd: open when any communicator of the group is traced.
  explicit TraceScope(const std::vector<PendingCall>& calls) {
    for (const PendingCall& c : calls)
      if (c.comm->trace != nullptr) [[unlikely]] {
        open(true);
        break;
      }
  }
  ~TraceScope() {
    if (opened_) [[unlikely]]
      close();
  }
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

 private:
  void open(bool group);
  void close();
  bool opened_ = false;
};

// A collective about to be enqueued: `work` its plan (null for a one-rank copy), `path` how it
// runs when the caller decided it ("staged", "copy"; null: from the plan). Gives `work` the
// timing its backend fills in.
void traceCollSlow(const PendingCall& c, Work* work, const char* path);
inline void traceColl(const PendingCall& c, Work* work, const char* path = nullptr) {
  if (c.comm->trace != nullptr) [[unlikely]]
    traceCollSlow(c, work, path);
}

// A communicator's fused sends and receives of one launch.
void traceP2pSlow(sscComm* comm, const std::vector<const PendingCall*>& calls, Work* work);
inline void traceP2p(sscComm* comm, const std::vector<const PendingCall*>& calls, Work* work) {
  if (comm->trace != nullptr) [[unlikely]]
    traceP2pSlow(comm, calls, work);
}

}  // namespace ssc
