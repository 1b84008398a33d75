// SPDX-License-Identifier: MIT
// The host backend's stream: an ordered asynchronous queue served by one progress thread, so a
// collective returns before its work is done, exactly as on a GPU stream.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "starscream/starscream.h"

namespace ssc {

class HostStream {
 public:
  using Task = std::function<sscResult_t()>;
  // nullStream: this queue serves work enqueued with a NULL stream (a communicator's own).
  explicit HostStream(bool nullStream = false);
  ~HostStream();  // drains the queue, then joins the thread

  void enqueue(Task task);
  // Waits until everything queued so far has run; returns (and clears) the first error, with
  // its message as this thread's last error (the task recorded it on the stream's thread).
  sscResult_t synchronize();

  // Validates a user-supplied handle.
  static HostStream* fromHandle(sscStream_t stream);
  // sscStreamSynchronize(NULL): waits for every stream and returns the earliest error any of
  // them stored. Only the NULL-stream queues' errors are cleared: a created stream keeps its
  // own until its owner synchronizes it, so no error is lost to a NULL synchronize.
  static sscResult_t syncAll();

  // Test hook: the host backend reports this stream as being captured into a graph while on
  // (it has no graphs: the work still runs as queued), and keeps what the backend ties to "the
  // graph" until destroyPretendGraph() runs it. Host tests cover the capture-time decisions
  // (zero-copy chosen, mappings pinned and released) with it.
  void pretendCapture(bool on);
  bool pretendCapturing();
  void retainUntilPretendGraphDestroyed(std::function<void()> release);
  void destroyPretendGraph();

 private:
  bool pretendCapturing_ = false;
  std::vector<std::function<void()>> pretendGraph_;
  void loop();
  struct StoredError {
    sscResult_t code = sscSuccess;
    std::string message;
    uint64_t order = 0;  // from a process-wide counter: which stream's error came first
  };
  // Waits for the queue to drain; returns the first error stored since it was last cleared.
  StoredError drain(bool clear);

  static constexpr uint64_t kMagic = 0x5353435354524d31ull;
  uint64_t magic_ = kMagic;
  std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable doneCv_;
  std::deque<Task> queue_;
  bool busy_ = false;
  bool stop_ = false;
  const bool nullStream_;
  StoredError firstError_;
  std::thread thread_;
};

}  // namespace ssc
