// Inline body of ssc::shmWait (a template: the predicate is inlined into the hot loop).
#pragma once

#include <chrono>

#include "src/core/errors.h"

namespace ssc {

template <typename Pred>
sscResult_t shmWait(std::atomic<uint32_t>* word, Pred pred, const std::atomic<bool>* abort,
                    const char* what, int peer) {
  static const int spins = shmSpinCount();
  for (int i = 0; i < spins; ++i) {
    if (pred()) return sscSuccess;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  const auto start = std::chrono::steady_clock::now();
  const double limit = shmTimeoutSeconds();
  for (;;) {
    // Read the word before the state: a post that lands in between changes the word, so the
    // futex sleep below returns at once instead of missing the wake-up.
    uint32_t seen = word->load(std::memory_order_acquire);
    if (pred()) return sscSuccess;
    if (abort != nullptr && abort->load(std::memory_order_relaxed))
      return fail(sscRemoteError, "communicator aborted while waiting to {} rank {}", what, peer);
    double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // <= 0 (or NaN) is "no limit", as in the bootstrap's Deadline and the GPU kernels' waits:
    // one meaning for STARSCREAM_TIMEOUT everywhere. An abort still ends the wait.
    if (limit > 0 && waited > limit)
      return fail(sscTimeout, "waited {:.0f} s to {} rank {} (STARSCREAM_TIMEOUT={}); is that rank "
                  "alive and running the same operation?", waited, what, peer, limit);
    shmSleep(word, seen, 50);
  }
}

}  // namespace ssc
