// SPDX-License-Identifier: MIT
#include "src/core/futex_wait.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <ctime>

#include "src/core/env.h"

namespace ssc {

void shmSleep(std::atomic<uint32_t>* word, uint32_t seen, int timeoutMs) {
  timespec ts{timeoutMs / 1000, (timeoutMs % 1000) * 1000000L};
  // Shared (not FUTEX_PRIVATE) futex: the word lives in memory mapped by several processes.
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, seen, &ts, nullptr, 0);
}

void shmNotify(std::atomic<uint32_t>* word) {
  word->fetch_add(1, std::memory_order_release);
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

// At most kShmMaxSpins: the spin checks neither the abort flag nor STARSCREAM_TIMEOUT, so a huge
// value (or one past INT_MAX, which a plain cast wraps) would stall every wait on a dead peer.
WaitLimits WaitLimits::from(const env::Snapshot& settings) {
  return WaitLimits(
      settings.getDouble("STARSCREAM_TIMEOUT"),
      static_cast<int>(std::clamp<int64_t>(settings.getInt("STARSCREAM_SPIN"), 0, kShmMaxSpins)));
}

}  // namespace ssc
