// SPDX-License-Identifier: MIT
// A communicator's work in flight and the threads inside its blocking calls, under a lock of
// their own: destroy waits for both to reach zero before it frees anything, and the peer watch
// asks, at this rank's exit, whether work was still pending (an exit with work in flight leaves
// peers waiting on it, so it is announced as an abort, not a departure).
#pragma once

#include <condition_variable>
#include <mutex>

namespace ssc {

class WorkTracker {
 public:
  WorkTracker() = default;
  WorkTracker(const WorkTracker&) = delete;
  WorkTracker& operator=(const WorkTracker&) = delete;

  // The backends count each queued piece of work in and out (CommView::workQueued/workDone);
  // waitIdle blocks until none is pending.
  void queued();
  void done();
  void waitIdle();
  bool idle() const;

  // A thread inside a blocking entry point (finalize, deregister) counts itself in and out;
  // waitUnused blocks until none is left (destroy and abort from another thread).
  void enter();
  void leave();
  void waitUnused();

 private:
  // A leaf: nothing else is locked or called while it is held, so any lock of the communicator
  // or of the layers below may be held when taking it.
  mutable std::mutex mu_;
  std::condition_variable changed_;
  int pending_ = 0;
  int users_ = 0;
};

}  // namespace ssc
