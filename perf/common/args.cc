// SPDX-License-Identifier: MIT
#include "perf/common/args.h"

#include <getopt.h>

#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <type_traits>

namespace ssc::perf {
namespace {

// STARSCREAM_ALGO's names (tuner/select.h kAlgoNameList); flat_ring is another name for ring,
// symmetric is the zero-copy algorithm (with -R 1, or the plain-buffer path of docs/perf.md).
constexpr std::array<std::string_view, 7> kAlgoNames = {
    "ring", "flat_ring", "bidir_ring", "direct", "hierarchical", "symmetric", "auto"};

// Short flags are nccl-tests' except -T (there: timeout) and -A; -J is nccl-tests' JSON output
// too, though its records differ (see docs/perf.md). The leading '+' stops at the first
// non-option instead of permuting argv; ':' reports a missing argument as ':' (not '?').
constexpr const char* kShortOptions = "+:b:e:i:f:n:m:w:N:c:o:d:r:z:a:G:C:R:t:g:A:J:T:h";
const option kLongOptions[] = {
    {"minbytes", required_argument, nullptr, 'b'},
    {"maxbytes", required_argument, nullptr, 'e'},
    {"stepbytes", required_argument, nullptr, 'i'},
    {"stepfactor", required_argument, nullptr, 'f'},
    {"iters", required_argument, nullptr, 'n'},
    {"agg_iters", required_argument, nullptr, 'm'},
    {"warmup_iters", required_argument, nullptr, 'w'},
    {"run_cycles", required_argument, nullptr, 'N'},
    {"check", required_argument, nullptr, 'c'},
    {"op", required_argument, nullptr, 'o'},
    {"datatype", required_argument, nullptr, 'd'},
    {"root", required_argument, nullptr, 'r'},
    {"blocking", required_argument, nullptr, 'z'},
    {"average", required_argument, nullptr, 'a'},
    {"cudagraph", required_argument, nullptr, 'G'},
    {"report_cputime", required_argument, nullptr, 'C'},
    {"local_register", required_argument, nullptr, 'R'},
    {"nthreads", required_argument, nullptr, 't'},
    {"ngpus", required_argument, nullptr, 'g'},
    {"algo", required_argument, nullptr, 'A'},
    {"json", required_argument, nullptr, 'J'},
    {"output_file", required_argument, nullptr, 'J'},
    {"topo", required_argument, nullptr, 'T'},
    {"topo_file", required_argument, nullptr, 'T'},
    {"help", no_argument, nullptr, 'h'},
    {nullptr, 0, nullptr, 0},
};

// A whole-string integer in [lo, hi] (base 0: 0x.. and 0.. prefixes work as with strtol).
bool parseInt(const char* text, long lo, long hi, long* out) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text, &end, 0);
  if (end == text || *end != '\0' || errno != 0 || v < lo || v > hi) return false;
  *out = v;
  return true;
}

std::string flagName(int c) {
  for (const option* o = kLongOptions; o->name != nullptr; ++o) {
    if (o->val == c) return std::string("-") + static_cast<char>(c) + "/--" + o->name;
  }
  return std::string("-") + static_cast<char>(c);
}

// Applies one parsed flag. Returns "" or why the value is bad.
std::string applyFlag(int c, const char* arg, Options* o, std::string* warnings) {
  long v = 0;
  auto intFlag = [&](long lo, long hi, auto* field) -> std::string {
    if (!parseInt(arg, lo, hi, &v)) {
      return flagName(c) + ": '" + arg + "' is not an integer in [" + std::to_string(lo) + ", " +
             std::to_string(hi) + "]";
    }
    *field = static_cast<std::remove_pointer_t<decltype(field)>>(v);
    return "";
  };
  auto sizeFlag = [&](size_t* field) -> std::string {
    const std::optional<size_t> size = parseSize(arg);
    if (!size) return flagName(c) + ": invalid size '" + arg + "' (bytes, or with K, M or G)";
    *field = *size;
    return "";
  };
  constexpr long kIntMax = 0x7fffffff;
  switch (c) {
    case 'b': return sizeFlag(&o->minBytes);
    case 'e': return sizeFlag(&o->maxBytes);
    case 'i': return sizeFlag(&o->stepBytes);
    case 'f': return intFlag(0, kIntMax, &o->stepFactor);
    case 'n': return intFlag(1, kIntMax, &o->iters);
    case 'm': return intFlag(1, kIntMax, &o->aggIters);
    case 'w': return intFlag(0, kIntMax, &o->warmupIters);
    case 'N': return intFlag(0, kIntMax, &o->runCycles);
    case 'c': return intFlag(0, kIntMax, &o->check);
    case 'r': return intFlag(-1, kIntMax, &o->root);
    case 'z': return intFlag(0, 2, &o->blocking);
    case 'a': return intFlag(0, 3, &o->average);
    case 'o':
      if (std::string_view(arg) == "all") {
        o->op.reset();
      } else if (auto op = parseOp(arg)) {
        o->op = *op;
      } else {
        return flagName(c) + ": unknown op '" + arg + "' (sum, prod, min, max, avg, mulsum, all)";
      }
      return "";
    case 'd':
      if (std::string_view(arg) == "all") {
        o->type.reset();
      } else if (auto type = parseType(arg)) {
        o->type = *type;
      } else {
        return flagName(c) + ": unknown datatype '" + arg +
               "' (int8, uint8, int32, uint32, int64, uint64, half, float, double, bfloat16, "
               "f8e4m3, f8e5m2, all)";
      }
      return "";
    case 'G': {
      int launches = 0;
      std::string why = intFlag(0, kIntMax, &launches);
      if (why.empty() && launches > 0) {
        *warnings += "# -G (CUDA graph launches) is not supported by Starscream; ignored\n";
      }
      return why;
    }
    case 'C': {
      int on = 0;
      std::string why = intFlag(0, 1, &on);
      o->reportCpuTime = on != 0;
      return why;
    }
    case 'R': {
      int on = 0;
      std::string why = intFlag(0, 1, &on);
      o->localRegister = on != 0;
      return why;
    }
    case 't':
    case 'g': {
      int n = 0;
      std::string why = intFlag(1, 1, &n);
      if (!why.empty()) {
        why = flagName(c) +
              ": Starscream's perf tests run one rank per process; launch more "
              "ranks with mpirun -np instead";
      }
      return why;
    }
    case 'A': {
      std::string why;
      if (!validAlgoSpec(arg, &why)) return flagName(c) + ": " + why;
      o->algo = arg;
      return "";
    }
    case 'J': o->jsonFile = arg; return "";
    case 'T': o->topoFile = arg; return "";
  }
  return "unknown flag";
}

}  // namespace

std::optional<size_t> parseSize(std::string_view text) {
  const std::string s(text);
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || errno != 0 || !std::isfinite(value) || value < 0) return std::nullopt;
  double unit = 1;
  switch (*end) {
    case '\0': break;
    case 'K':
    case 'k':
      unit = 1024.0;
      ++end;
      break;
    case 'M':
    case 'm':
      unit = 1024.0 * 1024;
      ++end;
      break;
    case 'G':
    case 'g':
      unit = 1024.0 * 1024 * 1024;
      ++end;
      break;
    default: return std::nullopt;
  }
  if (*end != '\0') return std::nullopt;
  const double bytes = value * unit;
  if (bytes >= 18446744073709551616.0) return std::nullopt;  // 2^64
  return static_cast<size_t>(bytes);
}

bool validAlgoSpec(std::string_view spec, std::string* why) {
  auto known = [](std::string_view name) {
    for (std::string_view n : kAlgoNames) {
      if (n == name) return true;
    }
    return false;
  };
  std::string names;
  for (std::string_view n : kAlgoNames) names += (names.empty() ? "" : ", ") + std::string(n);
  if (spec.empty()) {
    *why = "empty algorithm (one of " + names + ")";
    return false;
  }
  while (!spec.empty()) {
    const size_t comma = spec.find(',');
    std::string_view item = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? std::string_view() : spec.substr(comma + 1);
    const size_t eq = item.find('=');
    if (eq != std::string_view::npos) {
      if (eq == 0) {
        *why = "'" + std::string(item) + "' names no collective";
        return false;
      }
      item = item.substr(eq + 1);  // collective names are the library's to check
    }
    if (!known(item)) {
      *why = "unknown algorithm '" + std::string(item) + "' (one of " + names + ")";
      return false;
    }
  }
  return true;
}

ParseResult parseArgs(int argc, char* const argv[], Options* options) {
  ParseResult result;
  Options o = *options;
  // getopt keeps its state in globals: optind = 0 asks glibc for a full restart, so the parser
  // can run more than once per process (the unit tests do), and opterr = 0 keeps it quiet.
  optind = 0;
  opterr = 0;
  for (;;) {
    const int c = getopt_long(argc, argv, kShortOptions, kLongOptions, nullptr);
    if (c == -1) break;
    if (c == 'h') {
      result.status = ParseStatus::kHelp;
      return result;
    }
    if (c == '?' || c == ':') {
      std::string flag =
          optopt ? std::string("-") + static_cast<char>(optopt) : std::string(argv[optind - 1]);
      result.status = ParseStatus::kError;
      result.message = c == '?' ? "unknown option " + flag : "option " + flag + " needs a value";
      return result;
    }
    std::string why = applyFlag(c, optarg, &o, &result.message);
    if (!why.empty()) {
      result.status = ParseStatus::kError;
      result.message = why;
      return result;
    }
  }
  if (optind < argc) {
    result.status = ParseStatus::kError;
    result.message = std::string("unexpected argument '") + argv[optind] + "'";
    return result;
  }
  if (o.minBytes > o.maxBytes) {
    result.status = ParseStatus::kError;
    result.message = "invalid sizes for 'minbytes' and 'maxbytes': " + std::to_string(o.minBytes) +
                     " > " + std::to_string(o.maxBytes);
    return result;
  }
  *options = o;
  return result;
}

std::string envOr(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::string(value) : fallback;
}

std::string programName(const char* argv0) {
  const std::string p = argv0 != nullptr ? argv0 : "perf";
  const size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

std::string versionString(int code) {
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." +
         std::to_string(code % 100);
}

// -A and -T become the library's environment variables. Every rank parses the same argv, so
// every rank sets the same values, and before sscGetUniqueId/sscCommInitRank read them.
// Returns "" or why the environment cannot be set up.
std::string applyEnvironment(const Options& options) {
  // A STARSCREAM_ALGO from the environment (no -A) is checked as -A would be: a typo must not run
  // the library's own choice under the typo's name.
  std::string why;
  const std::string inherited = envOr("STARSCREAM_ALGO", "");
  if (options.algo.empty() && !inherited.empty() && !validAlgoSpec(inherited, &why))
    return "STARSCREAM_ALGO: " + why;
  if (options.algo == "auto") {
    unsetenv("STARSCREAM_ALGO");  // the library's own selection
  } else if (!options.algo.empty()) {
    setenv("STARSCREAM_ALGO", options.algo.c_str(), 1);
  }
  if (!options.topoFile.empty()) {
    // A missing file would otherwise surface as an init failure on every rank.
    std::FILE* f = std::fopen(options.topoFile.c_str(), "r");
    if (f == nullptr) return "-T: cannot read topology file '" + options.topoFile + "'";
    std::fclose(f);
    setenv("STARSCREAM_TOPO_FILE", options.topoFile.c_str(), 1);
  }
  return "";
}

std::string usage(std::string_view program) {
  std::string text = "USAGE: " + std::string(program) + " \n";
  const char* lines[] = {
      "[-b,--minbytes <min size in bytes, K/M/G suffix>] (default 32M)",
      "[-e,--maxbytes <max size in bytes, K/M/G suffix>] (default 32M)",
      "[-i,--stepbytes <increment size>] (default 1M)",
      "[-f,--stepfactor <increment factor>] (default 1: use -i)",
      "[-n,--iters <iteration count>] (default 20)",
      "[-m,--agg_iters <calls grouped per iteration>] (default 1)",
      "[-w,--warmup_iters <warmup iteration count>] (default 1)",
      "[-N,--run_cycles <cycle count> run & print each cycle (default: 1; 0=infinite)]",
      "[-c,--check <check iteration count> (0: no check)] (default 1)",
      "[-o,--op <sum/prod/min/max/avg/mulsum/all>] (default sum)",
      "[-d,--datatype <int8/uint8/int32/uint32/int64/uint64/half/float/double/bfloat16/"
      "f8e4m3/f8e5m2/all>] (default float)",
      "[-r,--root <root, -1 for every rank>] (default 0)",
      "[-z,--blocking <0/1/2> 1: sync and barrier after each call, 2: sync only] (default 0)",
      "[-a,--average <0/1/2/3> report average iteration time <0=RANK0/1=AVG/2=MIN/3=MAX>] "
      "(default 1)",
      "[-G,--cudagraph <num graph launches>] (accepted, not supported: ignored)",
      "[-C,--report_cputime <0/1>] (default 0)",
      "[-R,--local_register <0/1> sscCommRegister the buffers] (default 0)",
      "[-A,--algo <ring/flat_ring/bidir_ring/direct/hierarchical/symmetric/auto, or "
      "coll=algo,...>] sets STARSCREAM_ALGO (flat_ring = ring)",
      "[-J,--json <file> write one JSON record per row (JSON Lines)]",
      "[-T,--topo <file> emulation topology, sets STARSCREAM_TOPO_FILE]",
      "[-h,--help]",
  };
  for (const char* line : lines) text += "\t" + std::string(line) + " \n";
  text +=
      "Example (8 host-backend ranks emulating 2 GPUs x 4 partitions, as root add "
      "--allow-run-as-root):\n\tmpirun --oversubscribe -np 8 build/bin/" +
      std::string(program) +
      " -b 8 -e 1M -f 4 -A hierarchical -T tools/topologies/2x4.json\n"
      "docs/perf.md explains the columns; perf/sweep.py runs every algorithm and plots them.\n";
  return text;
}

}  // namespace ssc::perf
