// SPDX-License-Identifier: MIT
// The emulation file reader. docs/topology-format.md is the specification. Files are written by
// hand, so every rejection names the file and the field and says what was expected: the person
// who reads the message is the one who typed the mistake.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <set>
#include <span>
#include <string_view>

#include <nlohmann/json.hpp>

#include "src/core/errors.h"
#include "src/topology/link_defaults.h"
#include "src/topology/topology.h"

namespace ssc {
namespace {

using Json = nlohmann::json;

constexpr std::string_view kFormat = "starscream-topology/1";
// Sanity bounds: far above any machine, low enough that a typo ("nodes": 1e9) fails with a
// message instead of an allocation of gigabytes.
constexpr int kMaxNodes = 16384;
constexpr int kMaxGpusPerNode = 64;
constexpr int kMaxPartitionsPerGpu = 64;
constexpr int64_t kMaxRanks = 1 << 20;
// A file past this is refused before it is read (docs/topology-format.md): the parser reads about
// 3 MB/s, so a 33 MB file held every rank's init for 10 s before failing. An explicit placement
// of 200,000 ranks fits.
constexpr size_t kMaxFileBytes = 4u << 20;
// A valid file nests three levels (placement entries). Far deeper input is refused while it is
// parsed: printing a value for a message, or copying one, recurses once per level, and 100000
// levels overflowed the stack.
constexpr int kMaxNesting = 64;

// clang-format off
constexpr const char* kTopKeys[] = {
    "format", "name", "description", "nodes", "gpus_per_node", "partitions_per_gpu", "gpu_model",
    "compute_partition", "memory_partition", "numa_per_gpu", "placement", "links", "gpus",
    "node_names"};
// clang-format on
constexpr const char* kLinkTierKeys[] = {"usr", "xgmi", "net"};
constexpr const char* kLinkKeys[] = {"bandwidth_gbps", "latency_us", "source"};
constexpr const char* kGpuKeys[] = {
    "model",     "uuid",         "pci_bus_id", "compute_partition", "memory_partition",
    "host_numa", "compute_units"};
// TPX is MI300A's 3-way mode; MPS labels K processes sharing an NVIDIA GPU.
constexpr const char* kComputeModes[] = {"SPX", "DPX", "TPX", "QPX", "CPX", "MPS"};
constexpr const char* kMemoryModes[] = {"NPS1", "NPS2", "NPS4", "NPS8"};

std::string joined(std::span<const char* const> names) {
  std::string out;
  for (const char* n : names) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

// "string \"2\"", "number 2.5", "array [1,2]": what the file had, for the message.
std::string describe(const Json& j) {
  std::string text = j.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return fmt::format("{} {}", j.type_name(), text);
}

// Per-field readers. Each returns sscSuccess or the error for the first violation.
class Reader {
 public:
  explicit Reader(const std::string& origin) : origin_(origin) {}

  sscResult_t error(std::string_view field, std::string_view what) const {
    return fail(sscInvalidArgument, "topology file {}: field '{}': {}", origin_, field, what);
  }

  sscResult_t knownKeys(const Json& obj, std::string_view field,
                        std::span<const char* const> known) const {
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      if (std::none_of(known.begin(), known.end(), [&](const char* k) { return it.key() == k; }))
        return error(field.empty() ? it.key() : fmt::format("{}.{}", field, it.key()),
                     fmt::format("unknown key (known keys: {})", joined(known)));
    }
    return sscSuccess;
  }

  sscResult_t object(const Json& j, std::string_view field) const {
    return j.is_object() ? sscSuccess
                         : error(field, fmt::format("expected an object, got {}", describe(j)));
  }

  sscResult_t integer(const Json& j, std::string_view field, int lo, int hi, int* out) const {
    if (!j.is_number_integer())
      return error(field,
                   fmt::format("expected an integer in [{}, {}], got {}", lo, hi, describe(j)));
    // Read as signed 64-bit first: a huge unsigned value must not wrap into range.
    const bool tooBig = j.is_number_unsigned() && j.get<uint64_t>() > static_cast<uint64_t>(hi);
    const int64_t v = tooBig ? int64_t{hi} + 1 : j.get<int64_t>();
    if (v < lo || v > hi)
      return error(field,
                   fmt::format("expected an integer in [{}, {}], got {}", lo, hi, describe(j)));
    *out = static_cast<int>(v);
    return sscSuccess;
  }

  sscResult_t number(const Json& j, std::string_view field, bool positive, double* out) const {
    const char* want = positive ? "a number > 0" : "a number >= 0";
    if (!j.is_number()) return error(field, fmt::format("expected {}, got {}", want, describe(j)));
    const double v = j.get<double>();
    if (!std::isfinite(v) || (positive ? !(v > 0) : !(v >= 0)))
      return error(field, fmt::format("expected {}, got {}", want, describe(j)));
    *out = v;
    return sscSuccess;
  }

  sscResult_t string(const Json& j, std::string_view field, std::string* out) const {
    if (!j.is_string()) return error(field, fmt::format("expected a string, got {}", describe(j)));
    *out = j.get<std::string>();
    return sscSuccess;
  }

  // A string from a closed set; "" (unknown) is always allowed.
  sscResult_t choice(const Json& j, std::string_view field, std::span<const char* const> allowed,
                     std::string* out) const {
    SSC_CHECK(string(j, field, out));
    if (out->empty() ||
        std::any_of(allowed.begin(), allowed.end(), [&](const char* a) { return *out == a; }))
      return sscSuccess;
    return error(field,
                 fmt::format("'{}' is not one of {} (or \"\" for unknown)", *out, joined(allowed)));
  }

  // A count for all (one integer) or one per item (a list of `items` integers).
  sscResult_t countOrList(const Json& j, std::string_view field, size_t items, int hi,
                          std::vector<int>* out) const {
    out->clear();
    if (j.is_array()) {
      if (j.size() != items)
        return error(field, fmt::format("has {} entries, expected {} (one per {})", j.size(), items,
                                        field == "gpus_per_node" ? "node" : "GPU"));
      for (size_t i = 0; i < j.size(); ++i) {
        int v = 0;
        SSC_CHECK(integer(j[i], fmt::format("{}[{}]", field, i), 1, hi, &v));
        out->push_back(v);
      }
      return sscSuccess;
    }
    if (!j.is_number_integer())
      return error(field, fmt::format("expected a positive integer or a list of {} of them, got {}",
                                      items, describe(j)));
    int v = 0;
    SSC_CHECK(integer(j, field, 1, hi, &v));
    out->assign(items, v);
    return sscSuccess;
  }

 private:
  const std::string& origin_;
};

// Parses the text; reports syntax errors as file:line:column, and duplicate keys (which
// nlohmann would silently resolve to the last one) as errors of their own.
sscResult_t parseJson(const std::string& text, const std::string& origin, Json* out) {
  std::vector<std::set<std::string>> keysOpen;
  std::string duplicate;
  struct TooDeep {};  // thrown from the callback: the only way to stop nlohmann's parser early
  auto callback = [&](int depth, Json::parse_event_t event, Json& parsed) {
    // depth counts the containers around the one that starts.
    const bool opens =
        event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start;
    if (opens && depth >= kMaxNesting) throw TooDeep{};
    if (event == Json::parse_event_t::object_start) keysOpen.emplace_back();
    if (event == Json::parse_event_t::object_end && !keysOpen.empty()) keysOpen.pop_back();
    if (event == Json::parse_event_t::key && !keysOpen.empty() && parsed.is_string() &&
        !keysOpen.back().insert(parsed.get<std::string>()).second && duplicate.empty())
      duplicate = parsed.get<std::string>();
    return true;
  };
  try {
    *out = Json::parse(text, callback);
  } catch (const Json::parse_error& e) {
    // byte is 1-based and points at the offending character (or one past the end).
    const size_t at = std::min<size_t>(e.byte == 0 ? 0 : e.byte - 1, text.size());
    const size_t line = 1 + std::count(text.begin(), text.begin() + at, '\n');
    const size_t lineStart = text.rfind('\n', at == 0 ? 0 : at - 1);
    const size_t column = lineStart == std::string::npos || at == 0 ? at + 1 : at - lineStart;
    std::string what = e.what();
    // Drop nlohmann's "[json.exception.parse_error.101] parse error at line 3, column 5: "
    // prefix: the position is in our own prefix, in the form editors jump to.
    if (auto pos = what.find("column "); pos != std::string::npos)
      if (auto colon = what.find(": ", pos); colon != std::string::npos)
        what = what.substr(colon + 2);
    return fail(sscInvalidArgument, "topology file {}:{}:{}: invalid JSON: {}", origin, line,
                column, what);
  } catch (const Json::out_of_range& e) {
    // A number too large for a double (1e400) is the file's fault, not a bug of the reader.
    std::string what = e.what();
    if (auto pos = what.find("] "); pos != std::string::npos) what = what.substr(pos + 2);
    return fail(sscInvalidArgument, "topology file {}: invalid JSON: {}", origin, what);
  } catch (const TooDeep&) {
    return fail(sscInvalidArgument,
                "topology file {}: arrays or objects nested deeper than {} "
                "levels (a topology file needs 3)",
                origin, kMaxNesting);
  }
  if (!duplicate.empty())
    return fail(sscInvalidArgument, "topology file {}: field '{}': duplicate key", origin,
                duplicate);
  return sscSuccess;
}

sscResult_t readLink(const Reader& rd, const Json& j, const std::string& field,
                     const std::string& origin, LinkSpec* out) {
  SSC_CHECK(rd.object(j, field));
  SSC_CHECK(rd.knownKeys(j, field, kLinkKeys));
  if (!j.contains("bandwidth_gbps")) return rd.error(field + ".bandwidth_gbps", "missing");
  if (!j.contains("latency_us")) return rd.error(field + ".latency_us", "missing");
  SSC_CHECK(rd.number(j["bandwidth_gbps"], field + ".bandwidth_gbps", true, &out->bandwidthGBps));
  SSC_CHECK(rd.number(j["latency_us"], field + ".latency_us", false, &out->latencyUs));
  out->source = "emulation file " + origin;
  if (j.contains("source")) SSC_CHECK(rd.string(j["source"], field + ".source", &out->source));
  return sscSuccess;
}

// Where each rank sits, from "packed" or an explicit [[node, gpu, partition(, numa)], ...].
// gpuBase[n] is the global index of node n's first GPU; numaDomains[g] is 0 when unknown.
sscResult_t readPlacement(const Reader& rd, const Json* j, const std::vector<int>& gpusPerNode,
                          const std::vector<int>& gpuBase, const std::vector<int>& partitions,
                          const std::vector<int>& numaDomains, int64_t totalRanks,
                          std::vector<RankPlacement>* out) {
  out->clear();
  const int nodes = static_cast<int>(gpusPerNode.size());
  if (j == nullptr || (j->is_string() && j->get<std::string>() == "packed")) {
    for (int n = 0; n < nodes; ++n)
      for (int local = 0; local < gpusPerNode[n]; ++local) {
        const int g = gpuBase[n] + local;
        for (int p = 0; p < partitions[g]; ++p)
          out->push_back({n, g, p, partitionMemoryDomain(p, partitions[g], numaDomains[g])});
      }
    return sscSuccess;
  }
  if (!j->is_array())
    return rd.error("placement", fmt::format("expected \"packed\" or a list of [node, gpu, "
                                             "partition] per rank, got {}",
                                             describe(*j)));
  if (static_cast<int64_t>(j->size()) != totalRanks)
    return rd.error("placement", fmt::format("has {} entries, but partitions_per_gpu describes {} "
                                             "partitions: each must hold exactly one rank",
                                             j->size(), totalRanks));
  std::vector<std::vector<int>> holder(partitions.size());  // rank on (gpu, partition), -1 free
  for (size_t g = 0; g < partitions.size(); ++g) holder[g].assign(partitions[g], -1);
  for (size_t r = 0; r < j->size(); ++r) {
    const Json& e = (*j)[r];
    const std::string field = fmt::format("placement[{}]", r);
    if (!e.is_array() || e.size() < 3 || e.size() > 4)
      return rd.error(field, fmt::format("expected [node, gpu, partition] or [node, gpu, "
                                         "partition, numa], got {}",
                                         describe(e)));
    RankPlacement place;
    int local = 0;
    SSC_CHECK(rd.integer(e[0], field + "[0] (node)", 0, nodes - 1, &place.node));
    SSC_CHECK(
        rd.integer(e[1], field + "[1] (gpu on the node)", 0, gpusPerNode[place.node] - 1, &local));
    place.gpu = gpuBase[place.node] + local;
    SSC_CHECK(rd.integer(e[2], field + "[2] (partition)", 0, partitions[place.gpu] - 1,
                         &place.partition));
    const int domains = numaDomains[place.gpu];
    if (e.size() == 4) {
      SSC_CHECK(rd.integer(e[3], field + "[3] (numa)", -1,
                           domains > 0 ? domains - 1 : kMaxPartitionsPerGpu - 1, &place.numa));
    } else {
      place.numa = partitionMemoryDomain(place.partition, partitions[place.gpu], domains);
    }
    int& taken = holder[place.gpu][place.partition];
    if (taken >= 0)
      return rd.error(field, fmt::format("(node {}, gpu {}, partition {}) already holds rank {}",
                                         place.node, local, place.partition, taken));
    taken = static_cast<int>(r);
    out->push_back(place);
  }
  return sscSuccess;  // as many entries as partitions, none twice: every partition is covered
}

sscResult_t readGpuDetails(const Reader& rd, const Json& j, size_t ngpus,
                           std::vector<GpuInfo>* gpus) {
  if (!j.is_array() || j.size() != ngpus)
    return rd.error("gpus", fmt::format("expected a list of {} objects (one per GPU), got {}",
                                        ngpus, describe(j)));
  for (size_t g = 0; g < ngpus; ++g) {
    const Json& e = j[g];
    const std::string field = fmt::format("gpus[{}]", g);
    GpuInfo& gpu = (*gpus)[g];
    SSC_CHECK(rd.object(e, field));
    SSC_CHECK(rd.knownKeys(e, field, kGpuKeys));
    if (e.contains("model")) SSC_CHECK(rd.string(e["model"], field + ".model", &gpu.model));
    if (e.contains("uuid")) SSC_CHECK(rd.string(e["uuid"], field + ".uuid", &gpu.uuid));
    if (e.contains("pci_bus_id"))
      SSC_CHECK(rd.string(e["pci_bus_id"], field + ".pci_bus_id", &gpu.pciBusId));
    if (e.contains("compute_partition"))
      SSC_CHECK(rd.choice(e["compute_partition"], field + ".compute_partition", kComputeModes,
                          &gpu.computePartition));
    if (e.contains("memory_partition"))
      SSC_CHECK(rd.choice(e["memory_partition"], field + ".memory_partition", kMemoryModes,
                          &gpu.memoryPartition));
    if (e.contains("host_numa"))
      SSC_CHECK(rd.integer(e["host_numa"], field + ".host_numa", -1, 4095, &gpu.hostNuma));
    if (e.contains("compute_units"))
      SSC_CHECK(
          rd.integer(e["compute_units"], field + ".compute_units", 0, 1 << 20, &gpu.computeUnits));
  }
  return sscSuccess;
}

sscResult_t parseDocument(const Json& doc, const std::string& origin, int nranks, Topology* out) {
  Reader rd(origin);
  if (!doc.is_object())
    return fail(sscInvalidArgument, "topology file {}: expected a JSON object at the top, got {}",
                origin, describe(doc));
  SSC_CHECK(rd.knownKeys(doc, "", kTopKeys));
  for (const char* required : {"format", "nodes", "gpus_per_node", "partitions_per_gpu"})
    if (!doc.contains(required)) return rd.error(required, "missing (required)");

  std::string format;
  SSC_CHECK(rd.string(doc["format"], "format", &format));
  if (format != kFormat)
    return rd.error("format", fmt::format("'{}' is not a format this build reads (expected '{}')",
                                          format, kFormat));
  Topology topo;
  topo.name = std::filesystem::path(origin).stem().string();
  if (doc.contains("name")) SSC_CHECK(rd.string(doc["name"], "name", &topo.name));
  if (doc.contains("description")) {
    std::string ignored;
    SSC_CHECK(rd.string(doc["description"], "description", &ignored));
  }

  // Shape: nodes, GPUs per node, partitions per GPU (global GPU index is node-major).
  SSC_CHECK(rd.integer(doc["nodes"], "nodes", 1, kMaxNodes, &topo.nnodes));
  std::vector<int> gpusPerNode, partitions, gpuBase;
  SSC_CHECK(rd.countOrList(doc["gpus_per_node"], "gpus_per_node", topo.nnodes, kMaxGpusPerNode,
                           &gpusPerNode));
  int ngpus = 0;
  for (int n : gpusPerNode) gpuBase.push_back(ngpus), ngpus += n;
  SSC_CHECK(rd.countOrList(doc["partitions_per_gpu"], "partitions_per_gpu", ngpus,
                           kMaxPartitionsPerGpu, &partitions));
  int64_t totalRanks = 0;
  for (int p : partitions) totalRanks += p;
  if (totalRanks > kMaxRanks)
    return rd.error("partitions_per_gpu", fmt::format("describes {} ranks, more than the {} this "
                                                      "build accepts",
                                                      totalRanks, kMaxRanks));

  // GPU properties: file-wide defaults, then per-GPU overrides.
  GpuInfo common;
  if (doc.contains("gpu_model")) SSC_CHECK(rd.string(doc["gpu_model"], "gpu_model", &common.model));
  if (doc.contains("compute_partition"))
    SSC_CHECK(rd.choice(doc["compute_partition"], "compute_partition", kComputeModes,
                        &common.computePartition));
  if (doc.contains("memory_partition"))
    SSC_CHECK(rd.choice(doc["memory_partition"], "memory_partition", kMemoryModes,
                        &common.memoryPartition));
  topo.gpus.assign(ngpus, common);
  if (doc.contains("gpus")) SSC_CHECK(readGpuDetails(rd, doc["gpus"], ngpus, &topo.gpus));
  for (int n = 0; n < topo.nnodes; ++n)
    for (int local = 0; local < gpusPerNode[n]; ++local) {
      topo.gpus[gpuBase[n] + local].node = n;
      topo.gpus[gpuBase[n] + local].localIndex = local;
    }

  // Memory domains per GPU: numa_per_gpu, else what the memory partition mode implies.
  int numaPerGpu = 0;
  if (doc.contains("numa_per_gpu"))
    SSC_CHECK(
        rd.integer(doc["numa_per_gpu"], "numa_per_gpu", 1, kMaxPartitionsPerGpu, &numaPerGpu));
  std::vector<int> numaDomains(ngpus, 0);
  for (int g = 0; g < ngpus; ++g) {
    const int implied = memoryDomainsOf(topo.gpus[g].memoryPartition);
    if (numaPerGpu > 0 && implied > 0 && implied != numaPerGpu)
      return rd.error("numa_per_gpu", fmt::format("{} contradicts memory_partition {} of GPU {}",
                                                  numaPerGpu, topo.gpus[g].memoryPartition, g));
    numaDomains[g] = numaPerGpu > 0 ? numaPerGpu : implied;
  }

  SSC_CHECK(readPlacement(rd, doc.contains("placement") ? &doc["placement"] : nullptr, gpusPerNode,
                          gpuBase, partitions, numaDomains, totalRanks, &topo.ranks));
  for (int g = 0; g < ngpus; ++g) topo.gpus[g].ranks.assign(partitions[g], -1);
  for (int r = 0; r < topo.nranks(); ++r)
    topo.gpus[topo.ranks[r].gpu].ranks[topo.ranks[r].partition] = r;

  // Links: from the file where given, else the defaults for the (first) GPU model.
  const int maxParts = *std::max_element(partitions.begin(), partitions.end());
  topo.intraGpu = defaultLinkSpec(topo.gpus[0].model, LinkTier::kIntraGpu, maxParts);
  topo.interGpu = defaultLinkSpec(topo.gpus[0].model, LinkTier::kInterGpu, maxParts);
  topo.network = defaultLinkSpec(topo.gpus[0].model, LinkTier::kNetwork, maxParts);
  if (doc.contains("links")) {
    const Json& links = doc["links"];
    SSC_CHECK(rd.object(links, "links"));
    SSC_CHECK(rd.knownKeys(links, "links", kLinkTierKeys));
    if (links.contains("usr"))
      SSC_CHECK(readLink(rd, links["usr"], "links.usr", origin, &topo.intraGpu));
    if (links.contains("xgmi"))
      SSC_CHECK(readLink(rd, links["xgmi"], "links.xgmi", origin, &topo.interGpu));
    if (links.contains("net"))
      SSC_CHECK(readLink(rd, links["net"], "links.net", origin, &topo.network));
  }

  if (doc.contains("node_names")) {
    const Json& names = doc["node_names"];
    if (!names.is_array() || static_cast<int>(names.size()) != topo.nnodes)
      return rd.error("node_names",
                      fmt::format("expected a list of {} strings (one per node), got {}",
                                  topo.nnodes, describe(names)));
    topo.nodeNames.resize(topo.nnodes);
    for (int n = 0; n < topo.nnodes; ++n)
      SSC_CHECK(rd.string(names[n], fmt::format("node_names[{}]", n), &topo.nodeNames[n]));
  }

  // The rank count is checked last, so that a broken file reports what is broken in it.
  if (nranks != kAnyRankCount && totalRanks != nranks)
    return fail(sscInvalidUsage, "topology file {} describes {} ranks, but the communicator has {}",
                origin, totalRanks, nranks);
  SSC_CHECK(checkTopology(topo));  // a reader bug, not a file error, if this ever fails
  *out = std::move(topo);
  return sscSuccess;
}

// What st_mode is, for the message that refuses it.
const char* fileKind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  return "not a plain file";
}

// Reads a regular file of at most kMaxFileBytes. Anything else is refused before a byte is read:
// a FIFO would block forever, a device such as /dev/zero never ends. The cap holds whatever fstat
// says (a /proc file reports 0 bytes; a file may grow while it is read): at most one byte past
// it is ever read.
sscResult_t readTopologyText(const std::string& path, std::string* text) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer. Reads from a
  // regular file never block, so the flag changes nothing for the files accepted.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return fail(sscInvalidArgument, "topology file {}: cannot open: {}", path,
                std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    return fail(sscSystemError, "topology file {}: cannot stat: {}", path, std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    return fail(sscInvalidArgument,
                "topology file {}: not a regular file ({}); give the path "
                "of a JSON file",
                path, fileKind(st.st_mode));
  auto tooLarge = [&](std::string size) {
    return fail(sscInvalidArgument,
                "topology file {}: {} is too large for a topology file (at "
                "most {} bytes, 4 MiB)",
                path, size, kMaxFileBytes);
  };
  if (static_cast<uintmax_t>(st.st_size) > kMaxFileBytes)
    return tooLarge(fmt::format("{} bytes", st.st_size));
  text->clear();
  char buffer[64 << 10];
  while (text->size() <= kMaxFileBytes) {
    const size_t want = std::min(sizeof(buffer), kMaxFileBytes + 1 - text->size());
    const ssize_t got = ::read(fd, buffer, want);
    if (got == 0) return sscSuccess;
    if (got < 0 && errno == EINTR) continue;
    if (got < 0)
      return fail(sscSystemError, "topology file {}: read error: {}", path, std::strerror(errno));
    text->append(buffer, static_cast<size_t>(got));
  }
  return tooLarge(fmt::format("more than {} bytes", kMaxFileBytes));
}

}  // namespace

sscResult_t parseTopology(const std::string& text, const std::string& origin, int nranks,
                          Topology* out) {
  if (out == nullptr) return fail(sscInvalidArgument, "parseTopology: out is null");
  if (nranks != kAnyRankCount && nranks < 1)
    return fail(sscInvalidArgument, "topology file {}: rank count {} is not positive", origin,
                nranks);
  // Nothing nlohmann throws (or a bad_alloc) may cross this sscResult_t boundary.
  try {
    Json doc;
    SSC_CHECK(parseJson(text, origin, &doc));
    return parseDocument(doc, origin, nranks, out);
  } catch (const std::exception& e) {
    return SSC_INTERNAL("topology file {}: unexpected error while reading: {}", origin, e.what());
  } catch (...) {
    return SSC_INTERNAL("topology file {}: unexpected error while reading", origin);
  }
}

sscResult_t loadTopologyFile(const std::string& path, int nranks, Topology* out) {
  if (out == nullptr) return fail(sscInvalidArgument, "loadTopologyFile: out is null");
  std::string text;
  try {
    SSC_CHECK(readTopologyText(path, &text));
  } catch (const std::exception& e) {  // bad_alloc: no exception may cross sscResult_t
    return fail(sscSystemError, "topology file {}: cannot read: {}", path, e.what());
  }
  return parseTopology(text, path, nranks, out);
}

}  // namespace ssc
