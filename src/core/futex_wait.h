// SPDX-License-Identifier: MIT
// Waiting on a word in memory shared between processes: spin briefly, then sleep on it as a
// futex. The host transport's FIFOs and barriers (host executor) and the network proxy wait
// this way, so it sits in the base layer rather than in one transport.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "src/core/env.h"
#include "src/core/errors.h"
#include "starscream/starscream.h"

namespace ssc {

constexpr int64_t kShmMaxSpins = 1 << 20;  // STARSCREAM_SPIN is clamped to [0, this]

// How long a wait on a peer may take. Fixed when the object that waits is created (a
// communicator, from the settings it read then), never read again per wait: a communicator
// keeps the STARSCREAM_TIMEOUT it was created with.
struct WaitLimits {
  double timeoutSeconds;  // STARSCREAM_TIMEOUT; <= 0 (or NaN): no limit, only an abort ends it
  int spins;              // STARSCREAM_SPIN, clamped to [0, kShmMaxSpins]
  WaitLimits() : WaitLimits(from(env::Snapshot())) {}  // the registry's defaults
  WaitLimits(double timeout, int spinCount) : timeoutSeconds(timeout), spins(spinCount) {}
  static WaitLimits from(const env::Snapshot& settings);
};

// Blocks until pred() is true: polls limits.spins times, then sleeps on `word` (a futex in
// shared memory that the other side bumps after changing the state pred reads). Fails with
// sscRemoteError when *abort becomes true, sscTimeout after limits.timeoutSeconds (never when
// that is <= 0).
template <typename Pred>
sscResult_t shmWait(std::atomic<uint32_t>* word, Pred pred, const std::atomic<bool>* abort,
                    const char* what, int peer, const WaitLimits& limits);

// Bumps `word` and wakes every waiter on it.
void shmNotify(std::atomic<uint32_t>* word);

// Implementation detail of shmWait: one bounded futex sleep while *word == seen.
void shmSleep(std::atomic<uint32_t>* word, uint32_t seen, int timeoutMs);

template <typename Pred>
sscResult_t shmWait(std::atomic<uint32_t>* word, Pred pred, const std::atomic<bool>* abort,
                    const char* what, int peer, const WaitLimits& limits) {
  for (int i = 0; i < limits.spins; ++i) {
    if (pred()) return sscSuccess;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  const auto start = std::chrono::steady_clock::now();
  const double limit = limits.timeoutSeconds;
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
      return fail(sscTimeout,
                  "waited {:.0f} s to {} rank {} (STARSCREAM_TIMEOUT={}); is that rank "
                  "alive and running the same operation?",
                  waited, what, peer, limit);
    shmSleep(word, seen, 50);
  }
}

}  // namespace ssc
