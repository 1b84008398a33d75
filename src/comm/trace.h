// SPDX-License-Identifier: MIT
// STARSCREAM_TRACE=dir: a timeline of every call a communicator ran, one Chrome/Perfetto
// trace-event JSON file per rank (docs/trace.md). Off, a communicator has no TraceLog and each
// entry point pays one branch on a null pointer; on, each call appends one record (what the core
// decided: algorithm, protocol, path, plan size; when the API call started and returned) and
// the backend stamps when its work ran on the device (src/device/work_timing.h), read back at a
// later call or when the file is written, never by waiting on the caller's stream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "src/device/work_timing.h"
#include "starscream/starscream.h"

struct sscComm;

namespace ssc {

// Calls one communicator's trace holds at most; later ones are counted as dropped (a warning
// once, the count in the file). About 200 bytes each.
constexpr size_t kTraceMaxCalls = 200000;

// One call as the trace shows it. Text fields point at static names (null: not applicable).
struct TraceRecord {
  const char* name = "";  // "allreduce", "reducescatter", ..., "send", "recv", "sendrecv"
  const char* dtype = nullptr;
  const char* op = nullptr;
  const char* algo = nullptr;
  const char* protocol = nullptr;
  const char* path = nullptr;
  uint64_t count = 0;
  uint64_t bytes = 0;  // as nccl-tests counts a call's size (the larger of input and output)
  int root = -1, peer = -1;
  int channels = 0, steps = 0;
  const void* stream = nullptr;  // the stream it was queued on, which add() turns into its lane
  int lane = 1;                  // the stream's row: 1 + the order in which the trace first saw it
  bool inGroup = false;          // launched by sscGroupEnd
  std::string ops;               // a group's sends and receives, "send 4096 B to 1, recv ..."
  int64_t hostStartNs = 0, hostEndNs = 0;      // the API call, monotonicNs()
  int64_t deviceStartNs = 0, deviceEndNs = 0;  // when its work ran; 0: not known
  std::shared_ptr<WorkTiming> timing;          // until read back
};

// Who wrote a trace (the file's process name and metadata).
struct TraceIdentity {
  int rank = 0, nranks = 1;
  std::string host;
  int pid = 0;
  int device = -1;  // the runtime's device index, -1 on the host backend
  int gpu = 0, partition = 0;
  std::string backend, topology;
};

class TraceLog {
 public:
  TraceLog(TraceIdentity id, std::string dir, size_t maxCalls = kTraceMaxCalls);

  // Appends `record` with the lane of its stream (reading back what finished since the last call
  // first); its index, or -1 when the log is full (the call is counted as dropped). The lane is
  // looked up under the same lock as the append.
  long add(TraceRecord record);
  // The API call that launched record `index` returned at `ns`.
  void setHostEnd(long index, int64_t ns);
  // The row of a stream (1, 2, ... in order of first use).
  int laneOf(const void* stream);

  // The trace as JSON ({"traceEvents": [...], "otherData": {...}}), with every device interval
  // known by now; none is waited for.
  std::string json();
  // Writes json() to dir/starscream-trace.<host>.<pid>.rank<R>.json (a later communicator of
  // the same rank in this process adds .2, .3, ...); the path written, or "" and a warning.
  std::string write();

  size_t calls() const;
  size_t dropped() const;
  const TraceIdentity& identity() const { return id_; }

 private:
  void pollLocked(bool all);
  int laneLocked(const void* stream);

  TraceIdentity id_;
  std::string dir_;
  size_t maxCalls_;
  int64_t wallOffsetNs_;  // CLOCK_REALTIME - CLOCK_MONOTONIC when the log was made
  mutable std::mutex mu_;
  std::deque<TraceRecord> records_;
  size_t firstOpen_ = 0;  // records before it have their device interval read back (or never will)
  size_t dropped_ = 0;
  std::map<const void*, int> lanes_;
};

// TraceLogDeleter (the communicator's owner of its log) is declared in src/comm/comm.h.

// After communicator init and the tuner's calibration sweep (whose calls are not the caller's):
// reads STARSCREAM_TRACE once and, when set, gives comm its TraceLog (the directory is created if
// missing; one that cannot be is a warning, never a failed init).
void traceSetUp(sscComm* comm);
// Writes comm's trace file and drops its log (finalize; destroy and abort when finalize did not).
void traceClose(sscComm* comm);

}  // namespace ssc
