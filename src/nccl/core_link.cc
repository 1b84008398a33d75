// SPDX-License-Identifier: MIT
#include "src/nccl/core_link.h"

// Weak: a libstarscream.so older than the interface (same SONAME) lacks the symbol, and the
// shim then says so on every call instead of dying in the dynamic loader at the first one.
extern "C" __attribute__((weak)) const sscInternal_v1* sscInternalInterface(int version);

namespace ssc::nccl {

const sscInternal_v1* core() {
  static const sscInternal_v1* const table =
      &sscInternalInterface != nullptr ? sscInternalInterface(SSC_INTERNAL_VERSION) : nullptr;
  return table;
}

bool coreLinked() { return core() != nullptr; }

const char* coreMismatchMessage() {
  static const std::string text = [] {
    int version = 0;
    (void)sscGetVersion(&version);
    return fmt::format(
        "libstarscream-nccl: the libstarscream.so loaded with it (version code {}) does not serve "
        "the internal interface version {} the shim was built for: the two come from different "
        "builds; install them together",
        version, SSC_INTERNAL_VERSION);
  }();
  return text.c_str();
}

bool logs(LogLevel level) { return core() != nullptr && core()->logLevel() >= level; }

void logLine(LogLevel level, std::string_view message) {
  if (core() != nullptr) core()->logWrite(level, std::string(message).c_str());
}

std::string envString(const char* name) {
  return core() != nullptr ? std::string(core()->envGet(name)) : std::string();
}

int coreGroupDepth() { return core() != nullptr ? core()->groupDepth() : 0; }

}  // namespace ssc::nccl
