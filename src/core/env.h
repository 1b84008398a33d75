// SPDX-License-Identifier: MIT
// The one registry of STARSCREAM_* environment variables, and the one reader of the process
// environment: every variable the library reads is declared in env.cc with its default and
// meaning (the inputs that are not Starscream's own, such as CUDA_MPS_ACTIVE_THREAD_PERCENTAGE,
// in a second table); reading an undeclared name is a bug that the getters report (and tests
// catch). docs/environment.md is generated from the same tables. scripts/check_env_reads.sh
// fails the tree when any other file reads the environment itself.
//
// A communicator reads its settings once, when it is created: it takes a Snapshot and configures
// everything from it (CommConfig, the waits' limits, the bootstrap, the transports), so a
// variable set afterwards changes nothing about it while the next communicator sees it. The
// free getters below read the environment as it is now; they are for settings of the whole
// process (STARSCREAM_DEBUG, STARSCREAM_BACKEND, the NCCL shim's fallback) and the tools.
#pragma once

#include <cstdint>
#include <map>
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

// A variable the library reads that is not its own: set by another layer of the stack (the CUDA
// runtime's MPS client, the XDG base directories), read here so that one file reads the
// environment. No default: unset reads as "".
struct ExternalInput {
  const char* name;
  const char* meaning;  // what Starscream uses it for
};
std::span<const ExternalInput> externalInputs();

// The registry's variables and the external inputs as the environment held them when take()
// ran. The getters follow the rules of the free ones below (defaults, K/M/G suffixes, a warning
// and the default for a malformed value).
class Snapshot {
 public:
  Snapshot() = default;    // nothing set: every variable at its default, every input unset
  static Snapshot take();  // reads the environment

  std::string getString(const char* name) const;
  int64_t getInt(const char* name) const;
  double getDouble(const char* name) const;
  // The text as set (nullptr when unset or empty): what messages show besides the default.
  const char* raw(const char* name) const;
  // An external input's text, "" when unset.
  std::string external(const char* name) const;
  // Sets (or, with nullptr, unsets) one variable of this snapshot only: tests, and tools that
  // describe a configuration other than their own environment's.
  void set(const char* name, const char* value);

 private:
  std::map<std::string, std::string, std::less<>> set_;  // set, non-empty values by name
};

// The variable's value as the environment holds it now, or its declared default when unset or
// empty.
std::string getString(const char* name);
// Parsed as a signed integer with optional K/M/G suffix (powers of 1024); falls back to the
// default, with a warning, when the text does not parse.
int64_t getInt(const char* name);
double getDouble(const char* name);
// An external input as the environment holds it now ("" when unset).
std::string getExternal(const char* name);
// How many times the environment was read (Snapshot::take and the free getters): a test hook
// that shows calls on a communicator read nothing.
uint64_t environmentReads();

// Checks the values of the set STARSCREAM_* variables whose values have a shape (integers,
// numbers, fixed choices): "" or a message naming the first bad variable, its value and what it
// accepts. STARSCREAM_ALGO is the tuner's to check (checkAlgoSpec in tuner/select.h).
std::string checkSetValues(const Snapshot& settings);
std::string checkSetValues();  // of the environment as it is now
// STARSCREAM_* names in the environment that are neither in the registry nor read by the
// repository's scripts and Python package (STARSCREAM_GPU, STARSCREAM_LIB_DIR): typos such
// as STARSCREAM_TIMEUOT.
std::vector<std::string> unknownNames();
// The registry name closest to `name` (a likely intended spelling), or "" if none is close.
std::string closestName(const std::string& name);
// Communicator init: warns on stderr (whatever STARSCREAM_DEBUG says), once per process, about
// unknown names, then fails with sscInvalidArgument and checkSetValues's message when a value of
// `settings` is malformed.
sscResult_t validate(const Snapshot& settings);

// The registry as a Markdown table, and the external inputs as another (what
// docs/environment.md holds).
std::string markdownTable();
std::string externalMarkdownTable();

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
std::vector<WireSetting> wireSettings(const Snapshot& settings, const WireContext& context);
// Each rank's settings as gathered: [rank][setting] = (digest of value, shown), in the order of
// wireSettings. "" when they agree, else "NAME is A on ranks 0, 2 but B on rank 1; ..." for each
// setting that differs.
std::string describeDifferences(
    const std::vector<const char*>& names,
    const std::vector<std::vector<std::pair<uint64_t, std::string>>>& byRank);

}  // namespace ssc::env
