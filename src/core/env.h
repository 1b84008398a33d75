// SPDX-License-Identifier: MIT
// The one registry of STARSCREAM_* environment variables. Every variable the library reads is
// declared in env.cc with its default and meaning; reading an undeclared name is a bug that
// getString reports (and tests catch). docs/environment.md is generated from the same table.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "starscream/starscream.h"

namespace ssc::env {

struct Variable {
  const char* name;
  const char* defaultValue;  // as text; "" means unset
  const char* meaning;
};

// Every declared variable, in documentation order.
std::span<const Variable> registry();

// The variable's value, or its declared default when unset or empty.
std::string getString(const char* name);
// Parsed as a signed integer with optional K/M/G suffix (powers of 1024); falls back to the
// default, with a warning, when the text does not parse.
int64_t getInt(const char* name);
double getDouble(const char* name);

// Checks the values of the set STARSCREAM_* variables whose values have a shape (integers,
// numbers, fixed choices): "" or a message naming the first bad variable, its value and what it
// accepts. STARSCREAM_ALGO is the tuner's to check (checkAlgoSpec in tuner/select.h).
std::string checkSetValues();
// STARSCREAM_* names in the environment that are neither in the registry nor read by the
// repository's scripts (STARSCREAM_GPU, STARSCREAM_REPO): typos such as STARSCREAM_TIMEUOT.
std::vector<std::string> unknownNames();
// The registry name closest to `name` (a likely intended spelling), or "" if none is close.
std::string closestName(const std::string& name);
// Communicator init: warns on stderr (whatever STARSCREAM_DEBUG says), once per process, about
// unknown names, then fails with sscInvalidArgument and checkSetValues's message when a value is
// malformed.
sscResult_t validate();

// The registry as a Markdown table (what docs/environment.md holds).
std::string markdownTable();

// ---- Settings every rank of a communicator must share (communicator init compares them).

// One of them on this rank: `value` is what is compared (defaults filled in, numbers parsed,
// files by their content, so that equivalent spellings agree), `shown` what a message prints.
struct WireSetting {
  const char* name;
  std::string value, shown;
};
// What only the communicator knows of them.
struct WireContext {
  std::string backend;                       // the backend in use
  uint64_t defaultStagingBytes = 0;          // its STARSCREAM_STAGING_BYTES when unset
  std::string algos;                         // STARSCREAM_ALGO as parsed, per collective
  bool topologyPreset = false;               // a split's child: the parent's topology, no file read
  std::string topologyName, topologyDigest;  // the topology STARSCREAM_TOPO_FILE gave
};
// Every setting that changes what a rank sends or expects, in a fixed order: the backend,
// STARSCREAM_ALGO, STARSCREAM_ZERO_COPY_GRID, the host FIFO shape, STARSCREAM_STAGING_BYTES,
// STARSCREAM_ZERO_COPY_MIN_BYTES, STARSCREAM_TOPO_FILE, STARSCREAM_CHECK, STARSCREAM_TUNE,
// STARSCREAM_TUNER_PROFILE, and for the ops layer STARSCREAM_GEMM_BARRIER and
// STARSCREAM_ATTN_PREFILL.
std::vector<WireSetting> wireSettings(const WireContext& context);
// Each rank's settings as gathered: [rank][setting] = (digest of value, shown), in the order of
// wireSettings. "" when they agree, else "NAME is A on ranks 0, 2 but B on rank 1; ..." for each
// setting that differs.
std::string describeDifferences(
    const std::vector<const char*>& names,
    const std::vector<std::vector<std::pair<uint64_t, std::string>>>& byRank);

}  // namespace ssc::env
