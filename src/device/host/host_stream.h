// The host backend's stream: an ordered asynchronous queue served by one progress thread, so a
// collective returns before its work is done, exactly as on a GPU stream.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "starscream/starscream.h"

namespace ssc {

class HostStream {
 public:
  using Task = std::function<sscResult_t()>;
  HostStream();
  ~HostStream();  // drains the queue, then joins the thread

  void enqueue(Task task);
  // Waits until everything queued so far has run; returns (and clears) the first error.
  sscResult_t synchronize();

  // Validates a user-supplied handle.
  static HostStream* fromHandle(sscStream_t stream);
  static void syncAll();

 private:
  void loop();

  static constexpr uint64_t kMagic = 0x5353435354524d31ull;
  uint64_t magic_ = kMagic;
  std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable doneCv_;
  std::deque<Task> queue_;
  bool busy_ = false;
  bool stop_ = false;
  sscResult_t firstError_ = sscSuccess;
  std::thread thread_;
};

}  // namespace ssc
