// SPDX-License-Identifier: MIT
// The internal interface (ssc_internal.h): thin wrappers over the core's logger, environment
// registry and last error, and over this layer's group state, behind one versioned table.
#include "src/api/ssc_internal.h"

#include <string>

#include "src/api/api.h"
#include "src/api/group.h"
#include "src/core/env.h"
#include "src/core/errors.h"
#include "src/core/log.h"

namespace ssc {
namespace {

static_assert(int{sscInternalLogNone} == kNone && int{sscInternalLogWarn} == kWarn &&
              int{sscInternalLogInfo} == kInfo && int{sscInternalLogTrace} == kTrace);

int internalLogLevel() { return logLevel(); }

void internalLogWrite(int level, const char* message) {
  if (level < kWarn || level > kTrace || message == nullptr) return;
  try {
    logWrite(static_cast<LogLevel>(level), message);
  } catch (...) {  // out of memory formatting the line: the line is lost, nothing else
  }
}

const char* internalEnvGet(const char* name) {
  thread_local std::string value;
  try {
    value = name != nullptr ? env::getString(name) : std::string();
  } catch (...) {
    value.clear();
  }
  return value.c_str();
}

void internalSetLastError(const char* message) {
  try {
    std::string now = message != nullptr ? message : "";
    groupRestateError(lastError(), now);
    replaceLastError(std::move(now));
  } catch (...) {  // out of memory: the previous message stays
  }
}

int internalGroupDepth() { return groupDepth(); }

void internalGroupFail(sscResult_t code) {
  if (code == sscSuccess || code == sscInProgress) return;
  try {
    groupRecordError(code);
  } catch (...) {  // out of memory copying the message: the code is recorded before it
  }
}

sscResult_t internalGroupDiscard() {
  return guarded("sscGroupEnd", [] { return groupDiscard(); });
}

constexpr sscInternal_v1 kInterfaceV1 = {
    internalLogLevel,   internalLogWrite,  internalEnvGet,       internalSetLastError,
    internalGroupDepth, internalGroupFail, internalGroupDiscard,
};

}  // namespace
}  // namespace ssc

// One version served: the one this build's shim asks for.
static_assert(SSC_INTERNAL_VERSION == 1, "serve the new table (and only it) under its version");
SSC_API const sscInternal_v1* sscInternalInterface(int version) {
  return version == SSC_INTERNAL_VERSION ? &ssc::kInterfaceV1 : nullptr;
}
