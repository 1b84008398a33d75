// SPDX-License-Identifier: MIT
#include "src/core/env.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <mutex>
#include <string_view>
#include <system_error>
#include <vector>

#include "src/core/errors.h"
#include "src/core/log.h"

extern char** environ;

namespace ssc::env {
namespace {

// Keep sorted by topic; docs/environment.md is generated from this table (tools/starscream-env).
constexpr Variable kVariables[] = {
    {"STARSCREAM_DEBUG", "",
     "Log level on stderr: WARN, INFO or TRACE (empty: silent). Read once per process."},
    {"STARSCREAM_BACKEND", "auto",
     "Device backend: auto (GPU when one is visible and built in, else host), gpu or host. Read "
     "once per process."},
    {"STARSCREAM_TIMEOUT", "300",
     "Seconds any wait for a peer may take before the operation fails with sscTimeout "
     "(bootstrap, host and GPU transports alike); 0 or less: no limit (only an abort ends "
     "the wait). Read when a communicator is created, for all its waits (sscGetUniqueId's, for "
     "the joins it waits for; sscGemmCreate's and sscKvCacheCreate's, for the context's own)."},
    {"STARSCREAM_HEARTBEAT_TIMEOUT", "3",
     "Seconds a peer process may send no heartbeat (the peer watch's own thread sends one every "
     "250 ms, so long kernels and busy callers never delay it) before it is reported "
     "unresponsive (stopped, frozen or on a stalled host): every wait on it then ends, naming its "
     "rank and host, and the communicator cannot run calls any more. Values below 1 count as "
     "1; 0 or less: never (only STARSCREAM_TIMEOUT ends such waits). Read when a communicator "
     "is created."},
    {"STARSCREAM_SOCKET_IFNAME", "",
     "Network interface the bootstrap listens on (empty: loopback, for single-host runs). Read "
     "by sscGetUniqueId (the root) and when a communicator is created (its ring)."},
    {"STARSCREAM_TOPO_FILE", "",
     "Emulation topology file (JSON, tools/topologies/); replaces discovery when set."},
    {"STARSCREAM_ALGO", "",
     "Force an algorithm: ring, bidir_ring, direct, hierarchical, symmetric (zero-copy: "
     "registered buffers, or plain ones mapped on first use on one node, docs/zero-copy.md); "
     "or per collective, e.g. "
     "allreduce=hierarchical,allgather=ring. Read when a communicator is created."},
    {"STARSCREAM_ZERO_COPY_GRID", "auto",
     "Grid of a zero-copy all-gather: auto (the tuner's choice per size, from its profile), bulk "
     "(one large block per SM) or wide (several small blocks per SM; docs/tuner.md). Other "
     "collectives have one grid. Read when a communicator is created."},
    {"STARSCREAM_TUNER_PROFILE", "",
     "Tuner profile (JSON, docs/tuner.md) with the cost model's per-tier figures; empty: the "
     "shipped profile for the GPU model (tuner/profiles/), else the topology's link figures."},
    {"STARSCREAM_TUNE", "auto",
     "Self-calibration of the tuner's cost model (docs/tuner.md): auto (use this machine's "
     "cached calibration; on a GPU with none, time a short sweep of collectives at init, at "
     "most a few seconds, and cache it), cached (use the cache, never measure), off (never "
     "read or measure: STARSCREAM_TUNER_PROFILE, the shipped profile or the topology's "
     "figures), refresh (measure again and overwrite the cache). Every rank must agree; "
     "STARSCREAM_TUNER_PROFILE, when set, wins."},
    {"STARSCREAM_TUNE_ONLINE", "0",
     "Online refinement of the tuner's choices (docs/tuner.md): N > 0 makes the first calls of "
     "each collective's size class try the tuner's best two or three algorithms, N timed calls "
     "each, on the application's own calls; at the next call of that class the ranks pool their "
     "times and all keep the fastest. 0: off (the calibration's and the model's choice). Every "
     "rank must agree. Read when a communicator is created."},
    {"STARSCREAM_TUNE_CACHE", "",
     "Directory of the tuner's calibration cache; empty: $XDG_CACHE_HOME/starscream, else "
     "$HOME/.cache/starscream. One file per device model, driver, library and partitioning; "
     "a corrupt or foreign file is ignored with a warning."},
    {"STARSCREAM_NET_PLUGIN", "libstarscream-net-mpi.so",
     "Network plugin for communicators that span nodes: a path, or a name looked up by the "
     "dynamic loader and next to libstarscream.so. Loaded once per process, by the first such "
     "communicator, under the value it was created with."},
    {"STARSCREAM_STAGING_BYTES", "",
     "Bytes of each of the two registered staging buffers a communicator on one node keeps, "
     "so all-reduce, reduce-scatter and all-gather on unregistered buffers of up to this size "
     "run zero-copy (copy in, symmetric algorithm, copy out). Empty: 32M on the GPU backend, "
     "0 on the host backend; 0 turns staging off."},
    {"STARSCREAM_ZERO_COPY_MIN_BYTES", "0",
     "Smallest collective on plain (unregistered) buffers, in bytes, that maps the peers' "
     "buffers and runs zero-copy (one node, one rank per process; all-reduces small enough for "
     "packets never need to); smaller calls use staging or the FIFOs. Negative turns it off, and "
     "with it one-copy point-to-point (sends and receives then take the FIFOs)."},
    {"STARSCREAM_ATTN_PREFILL", "auto",
     "How sscAttentionPrefill splits a round of query tokens over the ranks: partials (every "
     "rank over its own KV pages, then the partials exchanged and merged), kv (each rank its "
     "share of the query heads over every rank's pages, read in place: one node, pools mapped "
     "at sscKvCacheCreate) or auto (kv once a rank's rows fill its SMs, docs/attention.md). "
     "Read when a communicator is created, and must be alike on every rank (init compares it); "
     "kv where it cannot run falls back to partials."},
    {"STARSCREAM_GEMM_PROBE", "auto",
     "Whether the GEMM ops (starscream_ops.h) run the vendor BLAS's algorithm for each new GEMM "
     "shape once on zero inputs and take the heuristic's next one when it leaves output "
     "unwritten: on, off, or auto (on when CUDA_MPS_ACTIVE_THREAD_PERCENTAGE caps the process "
     "below 100 %: under such a cap the H200's cuBLASLt returned algorithms that skip whole "
     "tiles and report success, docs/gemm.md). Costs one GEMM and a stream sync per new shape. "
     "Read at sscGemmCreate."},
    {"STARSCREAM_GEMM_BARRIER", "auto",
     "Whether the GEMM ops' unfused and chunked variants hold each collective on the stream "
     "until every rank's GEMM before it is done (a one-warp barrier kernel): on, off, or "
     "auto (on when ranks share a GPU's compute units, e.g. MPS partitions: a peer's waiting "
     "collective kernel can otherwise hold the SMs a late rank's GEMM needs until "
     "STARSCREAM_TIMEOUT, docs/gemm.md). Read when a communicator is created, and must be "
     "alike on every rank (init compares it)."},
    {"STARSCREAM_DUMP_PLAN", "0",
     "1: print every new plan on stderr (rank-prefixed). Read when a communicator is created."},
    {"STARSCREAM_TRACE", "",
     "Directory (created if missing) where each rank writes a timeline of its calls at "
     "sscCommFinalize or sscCommDestroy: starscream-trace.<host>.<pid>.rank<R>.json, Chrome/"
     "Perfetto trace-event JSON with one event per call (collective, bytes, type, algorithm, "
     "protocol, path, plan size, host enqueue and device time; docs/trace.md). Read when a "
     "communicator is created; empty: off, at no cost."},
    {"STARSCREAM_CHECK", "0",
     "1: checked mode. Before any data of a collective moves, its ranks compare the call "
     "(collective, count, datatype, op, root, call number) and every rank fails it with "
     "sscInvalidUsage naming the field and the ranks when they differ; costs one exchange of a "
     "few bytes per call (none extra where plain-buffer zero-copy exchanges anyway). 0: off. "
     "Read at communicator init, the same on every rank; any other value fails init."},
    {"STARSCREAM_HOST_SLOTS", "8",
     "Slots in each host-backend connection FIFO (2 - 32; "
     "another value fails init)."},
    {"STARSCREAM_HOST_SLOT_BYTES", "64K",
     "Bytes per host-backend FIFO slot (64 - 64M, rounded "
     "up to 64; another value fails init)."},
    {"STARSCREAM_HOST_CHANNELS", "2",
     "Channels (independent FIFOs per peer) on the host backend "
     "(1 - 16; another value fails init)."},
    {"STARSCREAM_NCCL_FALLBACK", "",
     "libstarscream-nccl: path of the vendor libnccl.so.2/librccl.so.1 that serves every nccl* "
     "call when Starscream runs on its host backend (docs/nccl-shim.md); empty: never forward."},
    {"STARSCREAM_SPIN", "200",
     "Polls of a flag before a host-backend wait blocks in the kernel (futex); clamped to "
     "0..1048576 (a spin checks neither aborts nor STARSCREAM_TIMEOUT). Read when a "
     "communicator is created (and by sscGemmCreate, for the GEMM context's own waits)."},
};

// Inputs the library reads that belong to another layer of the stack (env.h, ExternalInput).
constexpr ExternalInput kExternal[] = {
    {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
     "The MPS client's share of the GPU, in percent, as the CUDA runtime applies it. Below 100: "
     "the GPU backend takes the SM count the runtime reports as this rank's whole share when it "
     "sizes its kernels' grids, and STARSCREAM_GEMM_PROBE=auto probes. Read when a communicator "
     "is created (the launch limits) and by sscGemmCreate (the probe)."},
    {"XDG_CACHE_HOME",
     "With STARSCREAM_TUNE_CACHE unset, the tuner's calibration cache is "
     "$XDG_CACHE_HOME/starscream (an absolute path only)."},
    {"HOME",
     "With neither STARSCREAM_TUNE_CACHE nor XDG_CACHE_HOME set, the calibration cache is "
     "$HOME/.cache/starscream."},
};

// What a set value must look like, for the variables whose values have a shape (validate()).
// Variables not listed take any text (paths, interface names); STARSCREAM_ALGO is checked by the
// tuner, which owns the algorithm names (tuner/select.cc).
enum class Shape { kInteger, kNumber, kChoice };
struct Rule {
  const char* name;
  Shape shape;
  const char* choices;   // kChoice: comma-separated
  bool anyCase = false;  // kChoice: compared without case (as the variable's reader does)
};
constexpr Rule kRules[] = {
    {"STARSCREAM_DEBUG", Shape::kChoice, "WARN,INFO,TRACE", true},
    {"STARSCREAM_BACKEND", Shape::kChoice, "auto,gpu,host"},
    {"STARSCREAM_ZERO_COPY_GRID", Shape::kChoice, "auto,bulk,wide"},
    {"STARSCREAM_TUNE", Shape::kChoice, "auto,cached,off,refresh"},
    {"STARSCREAM_ATTN_PREFILL", Shape::kChoice, "auto,partials,kv"},
    {"STARSCREAM_GEMM_PROBE", Shape::kChoice, "auto,on,off"},
    {"STARSCREAM_GEMM_BARRIER", Shape::kChoice, "auto,on,off"},
    {"STARSCREAM_TIMEOUT", Shape::kNumber, nullptr},
    {"STARSCREAM_HEARTBEAT_TIMEOUT", Shape::kNumber, nullptr},
    {"STARSCREAM_STAGING_BYTES", Shape::kInteger, nullptr},
    {"STARSCREAM_ZERO_COPY_MIN_BYTES", Shape::kInteger, nullptr},
    {"STARSCREAM_DUMP_PLAN", Shape::kInteger, nullptr},
    {"STARSCREAM_TUNE_ONLINE", Shape::kInteger, nullptr},
    {"STARSCREAM_HOST_SLOTS", Shape::kInteger, nullptr},
    {"STARSCREAM_HOST_SLOT_BYTES", Shape::kInteger, nullptr},
    {"STARSCREAM_HOST_CHANNELS", Shape::kInteger, nullptr},
    {"STARSCREAM_SPIN", Shape::kInteger, nullptr},
};

// STARSCREAM_* names the repository's scripts and the Python package read (not the library):
// never reported as unknown.
constexpr const char* kScriptNames[] = {"STARSCREAM_GPU", "STARSCREAM_LIB_DIR"};

const Variable* find(const char* name) {
  for (const auto& v : kVariables)
    if (std::strcmp(v.name, name) == 0) return &v;
  return nullptr;
}

const ExternalInput* findExternal(const char* name) {
  for (const auto& v : kExternal)
    if (std::strcmp(v.name, name) == 0) return &v;
  return nullptr;
}

std::atomic<uint64_t> g_reads{0};

// The environment's text for `name` (nullptr when unset or empty): the one place that reads it.
const char* readEnvironment(const char* name) {
  g_reads.fetch_add(1, std::memory_order_relaxed);
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

std::string_view trimmed(std::string_view text) {
  const char* space = " \t\r\n";
  size_t first = text.find_first_not_of(space);
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(space) - first + 1);
}

// std::from_chars rather than strtoll/strtod: it ignores the C locale (an application that calls
// setlocale must not turn "2.5" into 2), never reads octal out of a leading zero, and reports
// overflow instead of clamping.
bool parseInt(std::string_view text, int64_t* out) {
  text = trimmed(text);
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end == text.data()) return false;
  std::string_view suffix(end, static_cast<size_t>(text.data() + text.size() - end));
  int shift = 0;
  if (suffix == "K" || suffix == "k")
    shift = 10;
  else if (suffix == "M" || suffix == "m")
    shift = 20;
  else if (suffix == "G" || suffix == "g")
    shift = 30;
  else if (!suffix.empty())
    return false;
  const int64_t limit = std::numeric_limits<int64_t>::max() >> shift;
  if (value > limit || value < -limit) return false;
  *out = value * (int64_t{1} << shift);
  return true;
}

bool parseDouble(std::string_view text, double* out) {
  text = trimmed(text);
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size() && !text.empty();
}

// Escapes what would end a Markdown table cell early.
std::string cell(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

bool sameIgnoringCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

// Levenshtein distance, for "did you mean" on misspelt names.
size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1] ? 1 : 0)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// "" or why `value` does not fit `rule`, naming what is accepted.
std::string checkValue(const Rule& rule, const std::string& value) {
  switch (rule.shape) {
    case Shape::kInteger: {
      int64_t ignored = 0;
      if (parseInt(value, &ignored)) return "";
      return "expected an integer, optionally with a K, M or G suffix (e.g. 64K)";
    }
    case Shape::kNumber: {
      double ignored = 0;
      if (parseDouble(value, &ignored)) return "";
      return "expected a number (e.g. 300 or 2.5)";
    }
    case Shape::kChoice: {
      std::string_view rest = rule.choices;
      while (!rest.empty()) {
        const size_t comma = rest.find(',');
        const std::string_view choice = rest.substr(0, comma);
        if (rule.anyCase ? sameIgnoringCase(trimmed(value), choice) : value == choice) return "";
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      }
      std::string accepted = rule.choices;
      for (auto& c : accepted)
        if (c == ',') c = '|';
      return "expected one of " + accepted;
    }
  }
  return "";
}

}  // namespace

std::span<const Variable> registry() { return kVariables; }
std::span<const ExternalInput> externalInputs() { return kExternal; }

std::string checkSetValues(const Snapshot& settings) {
  for (const Rule& rule : kRules) {
    const char* value = settings.raw(rule.name);
    if (value == nullptr) continue;  // unset or empty: the default
    const std::string why = checkValue(rule, value);
    if (!why.empty()) return fmt::format("{}='{}': {}", rule.name, value, why);
  }
  return "";
}

std::string checkSetValues() { return checkSetValues(Snapshot::take()); }

std::vector<std::string> unknownNames() {
  std::vector<std::string> out;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    if (text.rfind("STARSCREAM_", 0) != 0) continue;
    const std::string name(text.substr(0, text.find('=')));
    bool known = find(name.c_str()) != nullptr;
    for (const char* script : kScriptNames) known |= name == script;
    if (!known) out.push_back(name);
  }
  return out;
}

std::string closestName(const std::string& name) {
  const Variable* best = nullptr;
  size_t bestDistance = 4;  // further than 3 edits is no longer a typo
  for (const auto& v : kVariables) {
    const size_t d = editDistance(name, v.name);
    if (d < bestDistance) {
      bestDistance = d;
      best = &v;
    }
  }
  return best != nullptr ? best->name : "";
}

void warnUnknownNamesOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (const std::string& name : unknownNames()) {
      const std::string near = closestName(name);
      // Printed whatever STARSCREAM_DEBUG says: a misspelt variable silently does nothing.
      logWrite(kWarn, fmt::format("{} is set but Starscream has no such variable{}; "
                                  "`starscream-env` lists them (docs/environment.md)",
                                  name, near.empty() ? "" : " (did you mean " + near + "?)"));
    }
  });
}

sscResult_t validate(const Snapshot& settings) {
  warnUnknownNamesOnce();
  const std::string why = checkSetValues(settings);
  if (!why.empty()) return fail(sscInvalidArgument, "{}", why);
  return sscSuccess;
}

namespace {

// The registry's rules, applied to a variable's text as set (nullptr: unset or empty).
std::string valueOf(const char* name, const char* text) {
  const Variable* var = find(name);
  if (var == nullptr) {
    SSC_LOG(kWarn, "internal: environment variable {} is not in the registry", name);
    return "";
  }
  return text != nullptr ? std::string(text) : std::string(var->defaultValue);
}

// Unset variables with an empty default read as 0 without a warning: "unset" is not malformed.
int64_t intOf(const char* name, const std::string& text) {
  const Variable* var = find(name);
  int64_t value = 0;
  if (text.empty() || parseInt(text, &value)) return value;
  int64_t fallback = 0;
  if (var != nullptr) parseInt(var->defaultValue, &fallback);
  SSC_LOG(kWarn, "{}='{}' is not an integer (optional suffix K, M or G); using the default {}",
          name, text, fallback);
  return fallback;
}

double doubleOf(const char* name, const std::string& text) {
  const Variable* var = find(name);
  double value = 0;
  if (text.empty() || parseDouble(text, &value)) return value;
  double fallback = 0;
  if (var != nullptr) parseDouble(var->defaultValue, &fallback);
  SSC_LOG(kWarn, "{}='{}' is not a number; using the default {}", name, text, fallback);
  return fallback;
}

void checkExternal(const char* name) {
  if (findExternal(name) == nullptr)
    SSC_LOG(kWarn, "internal: environment variable {} is not among the registry's external inputs",
            name);
}

}  // namespace

Snapshot Snapshot::take() {
  Snapshot s;
  for (const auto& v : kVariables)
    if (const char* text = readEnvironment(v.name)) s.set_.emplace(v.name, text);
  for (const auto& v : kExternal)
    if (const char* text = readEnvironment(v.name)) s.set_.emplace(v.name, text);
  return s;
}

const char* Snapshot::raw(const char* name) const {
  const auto it = set_.find(std::string_view(name));
  return it == set_.end() ? nullptr : it->second.c_str();
}

std::string Snapshot::getString(const char* name) const { return valueOf(name, raw(name)); }
int64_t Snapshot::getInt(const char* name) const { return intOf(name, getString(name)); }
double Snapshot::getDouble(const char* name) const { return doubleOf(name, getString(name)); }

std::string Snapshot::external(const char* name) const {
  checkExternal(name);
  const char* text = raw(name);
  return text != nullptr ? text : "";
}

void Snapshot::set(const char* name, const char* value) {
  if (value == nullptr || *value == '\0')
    set_.erase(std::string(name));
  else
    set_[name] = value;
}

std::string getString(const char* name) {
  if (find(name) == nullptr) return valueOf(name, nullptr);  // warns; reads nothing
  return valueOf(name, readEnvironment(name));
}
int64_t getInt(const char* name) { return intOf(name, getString(name)); }
double getDouble(const char* name) { return doubleOf(name, getString(name)); }

std::string getExternal(const char* name) {
  checkExternal(name);
  const char* text = readEnvironment(name);
  return text != nullptr ? text : "";
}

uint64_t environmentReads() { return g_reads.load(std::memory_order_relaxed); }

std::string markdownTable() {
  std::string out = "| variable | default | meaning |\n| --- | --- | --- |\n";
  for (const auto& v : kVariables) {
    out += fmt::format("| `{}` | {} | {} |\n", v.name,
                       *v.defaultValue ? fmt::format("`{}`", cell(v.defaultValue)) : "(unset)",
                       cell(v.meaning));
  }
  return out;
}

std::string externalMarkdownTable() {
  std::string out = "| external input | what Starscream uses it for |\n| --- | --- |\n";
  for (const auto& v : kExternal) out += fmt::format("| `{}` | {} |\n", v.name, cell(v.meaning));
  return out;
}

}  // namespace ssc::env
