// SPDX-License-Identifier: MIT
// Peer watch: learns within milliseconds that a peer process of a communicator died, aborted or
// left, so that survivors fail at once and name it instead of waiting out STARSCREAM_TIMEOUT.
//
// Each rank keeps two control connections besides the bootstrap ring's data connections: one to
// its ring successor and one from its predecessor. Nothing but fixed-size notices ever travels on
// them, and only one process-wide watcher thread reads them, so they never interfere with the
// bootstrap's byte streams. The signals:
//   - a notice "rank r left" (orderly destroy, or process exit) or "rank r aborted", sent by r
//     itself before it closes its connections;
//   - a connection that closes without such a notice: the kernel closed it for a process that
//     was killed or crashed, which is immediate and certain (Gloo's TCP pairs react to it too).
//   - a heartbeat that stops: the watcher thread (never the thread that calls the library, so
//     long kernels and busy callers do not delay it) sends one on both connections every 250 ms;
//     a neighbour that sends nothing for the heartbeat timeout is reported unresponsive (its
//     process is stopped or frozen, or its host stalled). Time during which the
//     watcher itself did not run (this process was stopped too, or starved) does not count, so a
//     job suspended and resumed as a whole is not mistaken for a failure.
// Every notice (and every death or silence noticed) is forwarded around the ring in both
// directions, so every rank hears of it in a few hops; each rank reports a subject once per kind
// (unresponsive, then possibly died, aborted or left).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "src/core/socket.h"

namespace ssc {

enum class PeerEventKind : uint32_t {
  kDied = 1,     // its connection closed without a notice: killed or crashed
  kAborted = 2,  // it called sscCommAbort (or failed its init)
  kLeft = 3,     // it destroyed its communicator, or its process exited
  // No heartbeat from it for the heartbeat timeout. When `rank` is the watching rank itself, the
  // others declared it unresponsive while it was stopped, and gave up on it.
  kUnresponsive = 4,
};

struct PeerEvent {
  PeerEventKind kind;
  int rank;    // the rank the event is about
  int origin;  // the rank that noticed it first (== rank for kAborted and kLeft)
  // kUnresponsive: the sentence that says so, naming the rank, where it runs and how long it was
  // silent (for error messages). Empty for the other kinds.
  std::string detail = {};
};

struct WatchOptions {
  // Seconds without a heartbeat after which a neighbour is reported unresponsive; <= 0: never
  // (heartbeats are sent all the same, so ranks may differ in this).
  double heartbeatTimeout = 0;
  // Where each rank runs, by rank ("host h, pid p"), for messages; may be empty.
  std::vector<std::string> where;
};

// Called on the watcher thread for each new event; must be quick and must not stop a watch.
using PeerEventHandler = std::function<void(const PeerEvent&)>;
// What this rank announces if its process exits while the watch still runs.
using ExitKind = std::function<PeerEventKind()>;

class PeerWatch {
 public:
  // Watches the two control connections (either may be invalid: no neighbour). The handler
  // never runs after the destructor or announce() returns.
  static std::unique_ptr<PeerWatch> start(int rank, Socket toNext, int nextRank, Socket fromPrev,
                                          int prevRank, PeerEventHandler handler, ExitKind onExit,
                                          WatchOptions options = {});
  // Tells both neighbours (and through them every rank) that this rank goes away, then stops.
  // Idempotent; the destructor announces kAborted if this was never called.
  void announce(PeerEventKind kind);
  ~PeerWatch();

  PeerWatch(const PeerWatch&) = delete;
  PeerWatch& operator=(const PeerWatch&) = delete;

 private:
  explicit PeerWatch(uint64_t id) : id_(id) {}
  uint64_t id_;
};

// The heartbeat period of a watch whose timeout is `timeoutSeconds` (<= 0: none): 250 ms, or a
// quarter of a timeout below 1 s (tests only: STARSCREAM_HEARTBEAT_TIMEOUT is at least 1 s).
std::chrono::milliseconds heartbeatPeriod(double timeoutSeconds);

// A readable name for messages: "died", "aborted", "left", "unresponsive".
const char* peerEventName(PeerEventKind kind);

}  // namespace ssc
