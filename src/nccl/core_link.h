// SPDX-License-Identifier: MIT
// The shim's link to libstarscream.so beyond its public C API: the library's internal interface
// (src/api/ssc_internal.h), through which the shim logs with the library's logger, reads the
// library's environment registry, records its failures in the library's last-error slot and
// fails the library's groups. The shim holds no copy of any of them.
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>

#include "src/api/ssc_internal.h"

namespace ssc::nccl {

// The table this shim was built for, or NULL when the libstarscream.so loaded beside it serves
// another version (a shim and a library from different builds). Everything below is then a
// no-op, and every guarded entry point fails with coreMismatch.
const sscInternal_v1* core();
bool coreLinked();
// What ncclGetLastError says when core() is NULL.
const char* coreMismatchMessage();

enum LogLevel {
  kWarn = sscInternalLogWarn,
  kInfo = sscInternalLogInfo,
  kTrace = sscInternalLogTrace
};
bool logs(LogLevel level);
void logLine(LogLevel level, std::string_view message);

// The STARSCREAM_* variable's value or its declared default, from the library's registry.
std::string envString(const char* name);

// The library's group state of this thread.
int coreGroupDepth();

}  // namespace ssc::nccl

// The shim's log lines, filtered by STARSCREAM_DEBUG as the library's (they are the library's).
#define NCCL_SHIM_LOG(level, ...)                                         \
  do {                                                                    \
    if (::ssc::nccl::logs(::ssc::nccl::level))                            \
      ::ssc::nccl::logLine(::ssc::nccl::level, fmt::format(__VA_ARGS__)); \
  } while (0)
