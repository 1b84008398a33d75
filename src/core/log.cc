// SPDX-License-Identifier: MIT
#include "src/core/log.h"

#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <mutex>
#include <string>

#include "src/core/env.h"

namespace ssc {
namespace {
thread_local int t_rank = -1;

LogLevel parseLevel() {
  std::string v = env::getString("STARSCREAM_DEBUG");
  for (auto& c : v) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (v == "TRACE") return kTrace;
  if (v == "INFO") return kInfo;
  if (v == "WARN") return kWarn;
  return kNone;
}
}  // namespace

LogLevel logLevel() {
  static const LogLevel level = parseLevel();
  return level;
}

void setLogRank(int rank) { t_rank = rank; }

void logWrite(LogLevel level, std::string_view message) {
  static const char* names[] = {"", "WARN", "INFO", "TRACE"};
  static char host[64] = {0};
  static std::once_flag once;
  std::call_once(once, [] { gethostname(host, sizeof(host) - 1); });
  std::string line =
      t_rank >= 0 ? fmt::format("{}:{}:rank {} STARSCREAM {} {}\n", host, getpid(), t_rank,
                                names[level], message)
                  : fmt::format("{}:{} STARSCREAM {} {}\n", host, getpid(), names[level], message);
  // One write per line keeps lines of different ranks from interleaving; the loop only matters
  // when a signal or a full pipe splits it.
  for (size_t done = 0; done < line.size();) {
    ssize_t n = ::write(STDERR_FILENO, line.data() + done, line.size() - done);
    if (n > 0)
      done += static_cast<size_t>(n);
    else if (n < 0 && errno == EINTR)
      continue;
    else
      break;
  }
}

}  // namespace ssc
