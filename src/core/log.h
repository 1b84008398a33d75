// SPDX-License-Identifier: MIT
// Logging to stderr with a rank prefix, filtered by STARSCREAM_DEBUG (WARN, INFO, TRACE).
#pragma once

#include <fmt/format.h>

#include <string_view>

namespace ssc {

enum LogLevel { kNone = 0, kWarn = 1, kInfo = 2, kTrace = 3 };

// The level in force (read once from STARSCREAM_DEBUG).
LogLevel logLevel();
// Sets this thread's rank prefix ("[host:pid rank N]"); -1 clears it.
void setLogRank(int rank);
void logWrite(LogLevel level, std::string_view message);

}  // namespace ssc

#define SSC_LOG(level, ...)                                      \
  do {                                                           \
    if (::ssc::logLevel() >= ::ssc::level)                       \
      ::ssc::logWrite(::ssc::level, ::fmt::format(__VA_ARGS__)); \
  } while (0)
