// SPDX-License-Identifier: MIT
// Command line of the perf tests: nccl-tests' flags and defaults, plus Starscream's -A (algorithm),
// -J (JSON records) and -T (emulation topology file). Parsing is pure (no MPI, no library calls),
// so every rank parses the same argv to the same Options and the unit tests can drive it.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "perf/common/datatype.h"

namespace ssc::perf {

struct Options {
  // nccl-tests' defaults.
  size_t minBytes = size_t{32} << 20;  // -b
  size_t maxBytes = size_t{32} << 20;  // -e
  size_t stepBytes = size_t{1} << 20;  // -i
  size_t stepFactor = 1;               // -f (> 1 wins over -i)
  int iters = 20;                      // -n
  int warmupIters = 1;                 // -w
  int aggIters = 1;                    // -m: calls grouped in one sscGroupStart/End per iteration
  int runCycles = 1;                   // -N: repeat the size sweep; 0 = until killed
  int check = 1;                       // -c: check iterations per row (0: no check, #wrong N/A)
  std::optional<PerfOp> op = PerfOp::kSum;         // -o; nullopt = all
  std::optional<sscDataType_t> type = sscFloat32;  // -d; nullopt = all
  int root = 0;                                    // -r; -1 = every rank in turn
  int blocking = 0;            // -z: 1 = sync + barrier after each call, 2 = sync only
  int average = 1;             // -a: time reported: 0 rank 0, 1 mean, 2 min, 3 max
  int graphLaunches = 0;       // -G: accepted for compatibility; Starscream has no graphs
  bool reportCpuTime = false;  // -C: time to enqueue, not to complete
  bool localRegister = false;  // -R: sscCommRegister the send and receive buffers
  int nThreads = 1;            // -t: only 1 (one rank per process)
  int nGpus = 1;               // -g: only 1 (one rank per process)
  // Starscream's own.
  std::string algo;      // -A: STARSCREAM_ALGO for this run; "" = leave as is
  std::string jsonFile;  // -J: JSON Lines file, one record per row (rank 0)
  std::string topoFile;  // -T: STARSCREAM_TOPO_FILE for this run
};

enum class ParseStatus { kOk, kHelp, kError };

struct ParseResult {
  ParseStatus status = ParseStatus::kOk;
  std::string message;  // why, for kError; also warnings (e.g. -G ignored) for kOk
};

// Parses argv into *options (which holds the defaults on entry). Never prints or exits.
ParseResult parseArgs(int argc, char* const argv[], Options* options);

// The usage text for `program` (argv[0]'s basename).
std::string usage(std::string_view program);

// A byte count with an optional K, M or G suffix (binary: 1K = 1024), as nccl-tests reads -b,
// -e and -i; fractions are allowed ("1.5M"). nullopt for anything else.
std::optional<size_t> parseSize(std::string_view text);

// -A and -T become the library's environment variables (STARSCREAM_ALGO, STARSCREAM_TOPO_FILE),
// before the communicator exists; -A auto unsets STARSCREAM_ALGO. Returns "" or why the
// environment cannot be set up (an inherited STARSCREAM_ALGO that -A would refuse, an unreadable
// -T file). Every rank parses the same argv, so every rank sets the same values.
std::string applyEnvironment(const Options& options);

// The environment variable's value, or `fallback` when it is unset or empty.
std::string envOr(const char* name, const std::string& fallback);
// argv[0] without its directories ("perf" for NULL): the program name the output shows.
std::string programName(const char* argv0);
// "major.minor.patch" of an SSC_VERSION_CODE-style number (10203 -> "1.2.3").
std::string versionString(int code);

// The algorithm names -A accepts: one name, or comma-separated collective=name pairs as
// STARSCREAM_ALGO takes them (allreduce=hierarchical,allgather=ring).
bool validAlgoSpec(std::string_view spec, std::string* why);

}  // namespace ssc::perf
