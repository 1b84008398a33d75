// SPDX-License-Identifier: MIT
#include "src/comm/trace.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>
#include <vector>

#include "src/comm/comm.h"
#include "src/core/log.h"

namespace ssc {
namespace {

int64_t realtimeNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

std::string jsonString(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<int>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// Microseconds with nanosecond digits, as the trace-event format's ts and dur take them.
std::string micros(int64_t ns) {
  const char* sign = ns < 0 ? "-" : "";
  const int64_t a = ns < 0 ? -ns : ns;
  return fmt::format("{}{}.{:03d}", sign, a / 1000, static_cast<int>(a % 1000));
}

// The call's details, shared by its host and device events.
std::string argsOf(const TraceRecord& r, size_t call) {
  std::string out = fmt::format("{{\"call\":{},\"bytes\":{},\"count\":{}", call, r.bytes, r.count);
  const auto text = [&](const char* key, const char* value) {
    if (value != nullptr) out += fmt::format(",\"{}\":{}", key, jsonString(value));
  };
  text("dtype", r.dtype);
  text("op", r.op);
  if (r.root >= 0) out += fmt::format(",\"root\":{}", r.root);
  if (r.peer >= 0) out += fmt::format(",\"peer\":{}", r.peer);
  text("algorithm", r.algo);
  text("protocol", r.protocol);
  text("path", r.path);
  out += fmt::format(",\"channels\":{},\"steps\":{},\"stream\":{}", r.channels, r.steps, r.lane);
  if (r.inGroup) out += ",\"group\":true";
  if (!r.ops.empty()) out += fmt::format(",\"ops\":{}", jsonString(r.ops));
  out += fmt::format(",\"enqueue_us\":{}", micros(r.hostEndNs - r.hostStartNs));
  if (r.deviceEndNs != 0)
    out += fmt::format(",\"device_us\":{}", micros(r.deviceEndNs - r.deviceStartNs));
  else
    out += ",\"device_us\":null";
  return out + "}";
}

std::mutex g_namesMu;
std::set<std::string> g_names;  // files this process wrote

}  // namespace

TraceLog::TraceLog(TraceIdentity id, std::string dir, size_t maxCalls)
    : id_(std::move(id)),
      dir_(std::move(dir)),
      maxCalls_(maxCalls),
      wallOffsetNs_(realtimeNs() - monotonicNs()) {}

void TraceLog::pollLocked(bool all) {
  for (; firstOpen_ < records_.size(); ++firstOpen_) {
    TraceRecord& r = records_[firstOpen_];
    if (r.timing != nullptr) {
      int64_t start = 0, end = 0;
      const int state = r.timing->read(&start, &end, all);
      if (state == 0 && !all) return;  // in stream order: later ones have not finished either
      if (state == 1) {
        r.deviceStartNs = start;
        r.deviceEndNs = end;
      }
      if (state != 0) r.timing.reset();  // returns a GPU timer's events to its pool
    }
  }
  if (all) firstOpen_ = 0;  // unfinished ones (an aborted run) may be read at a later write
  while (firstOpen_ < records_.size() && records_[firstOpen_].timing == nullptr) ++firstOpen_;
}

long TraceLog::add(TraceRecord record) {
  std::lock_guard<std::mutex> g(mu_);
  pollLocked(false);
  if (records_.size() >= maxCalls_) {
    if (dropped_++ == 0)
      logWrite(kWarn, fmt::format("STARSCREAM_TRACE: rank {} traced {} calls, the most one "
                                  "communicator keeps; later calls are counted, not recorded",
                                  id_.rank, maxCalls_));
    return -1;
  }
  record.lane = laneLocked(record.stream);
  records_.push_back(std::move(record));
  return static_cast<long>(records_.size() - 1);
}

void TraceLog::setHostEnd(long index, int64_t ns) {
  std::lock_guard<std::mutex> g(mu_);
  if (index >= 0 && static_cast<size_t>(index) < records_.size()) records_[index].hostEndNs = ns;
}

int TraceLog::laneOf(const void* stream) {
  std::lock_guard<std::mutex> g(mu_);
  return laneLocked(stream);
}

int TraceLog::laneLocked(const void* stream) {
  auto it = lanes_.find(stream);
  if (it != lanes_.end()) return it->second;
  const int lane = static_cast<int>(lanes_.size()) + 1;
  lanes_.emplace(stream, lane);
  return lane;
}

size_t TraceLog::calls() const {
  std::lock_guard<std::mutex> g(mu_);
  return records_.size();
}

size_t TraceLog::dropped() const {
  std::lock_guard<std::mutex> g(mu_);
  return dropped_;
}

std::string TraceLog::json() {
  std::lock_guard<std::mutex> g(mu_);
  pollLocked(true);
  const int pid = id_.rank;
  const auto ts = [&](int64_t monoNs) { return micros(monoNs + wallOffsetNs_); };
  std::string out = "{\"traceEvents\":[\n";
  std::string where =
      id_.device >= 0 ? fmt::format("GPU {}", id_.device) : std::string("host backend");
  const std::string label = fmt::format("rank {} on host {}, {}, partition {} of GPU {}", id_.rank,
                                        id_.host, where, id_.partition, id_.gpu);
  out +=
      fmt::format("{{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":{},\"args\":{{\"name\":{}}}}}",
                  pid, jsonString(label));
  out += fmt::format(
      ",\n{{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":{},"
      "\"args\":{{\"sort_index\":{}}}}}",
      pid, id_.rank);
  out += fmt::format(
      ",\n{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{},\"tid\":0,"
      "\"args\":{{\"name\":\"API calls (host)\"}}}}",
      pid);
  std::vector<std::pair<int, const void*>> lanes;
  for (const auto& [stream, lane] : lanes_) lanes.emplace_back(lane, stream);
  std::sort(lanes.begin(), lanes.end());
  for (const auto& [lane, stream] : lanes)
    out += fmt::format(
        ",\n{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{},\"tid\":{},"
        "\"args\":{{\"name\":\"stream {} ({})\"}}}}",
        pid, lane, lane, stream == nullptr ? std::string("default") : fmt::format("{}", stream));
  for (size_t i = 0; i < records_.size(); ++i) {
    const TraceRecord& r = records_[i];
    const std::string args = argsOf(r, i);
    const int64_t hostEnd = std::max(r.hostEndNs, r.hostStartNs);
    out += fmt::format(
        ",\n{{\"name\":{},\"cat\":\"api\",\"ph\":\"X\",\"pid\":{},\"tid\":0,"
        "\"ts\":{},\"dur\":{},\"args\":{}}}",
        jsonString(r.name), pid, ts(r.hostStartNs), micros(hostEnd - r.hostStartNs), args);
    if (r.deviceEndNs != 0)
      out += fmt::format(
          ",\n{{\"name\":{},\"cat\":\"device\",\"ph\":\"X\",\"pid\":{},\"tid\":{},"
          "\"ts\":{},\"dur\":{},\"args\":{}}}",
          jsonString(r.name), pid, r.lane, ts(r.deviceStartNs),
          micros(r.deviceEndNs - r.deviceStartNs), args);
  }
  out += "\n],\n\"displayTimeUnit\":\"ns\",\n";
  out += fmt::format(
      "\"otherData\":{{\"producer\":\"starscream\",\"rank\":{},\"nranks\":{},\"host\":{},"
      "\"pid\":{},\"device\":{},\"gpu\":{},\"partition\":{},\"backend\":{},\"topology\":{},"
      "\"calls\":{},\"dropped\":{},\"max_calls\":{},\"clock\":\"CLOCK_MONOTONIC + "
      "(CLOCK_REALTIME - CLOCK_MONOTONIC at init), microseconds\"}}\n}}\n",
      id_.rank, id_.nranks, jsonString(id_.host), id_.pid, id_.device, id_.gpu, id_.partition,
      jsonString(id_.backend), jsonString(id_.topology), records_.size() + dropped_, dropped_,
      maxCalls_);
  return out;
}

std::string TraceLog::write() {
  const std::string text = json();
  std::string path;
  {
    std::lock_guard<std::mutex> g(g_namesMu);
    const std::string base =
        fmt::format("{}/starscream-trace.{}.{}.rank{}", dir_, id_.host, id_.pid, id_.rank);
    path = base + ".json";
    for (int n = 2; g_names.count(path) != 0; ++n) path = fmt::format("{}.{}.json", base, n);
    g_names.insert(path);
  }
  const std::string temp = path + ".partial";
  FILE* f = std::fopen(temp.c_str(), "w");
  bool ok = f != nullptr && std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (f != nullptr) ok = std::fclose(f) == 0 && ok;
  if (ok) ok = std::rename(temp.c_str(), path.c_str()) == 0;
  if (!ok) {
    logWrite(kWarn,
             fmt::format("STARSCREAM_TRACE: cannot write {}: {}", path, std::strerror(errno)));
    (void)std::remove(temp.c_str());
    return "";
  }
  return path;
}

void TraceLogDeleter::operator()(TraceLog* log) const { delete log; }

void traceSetUp(sscComm* comm) {
  const std::string dir = comm->settings.getString("STARSCREAM_TRACE");
  if (dir.empty()) return;
  if (::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST) {
    logWrite(kWarn, fmt::format("STARSCREAM_TRACE: cannot create {}: {}; rank {} writes no trace",
                                dir, std::strerror(errno), comm->rank));
    return;
  }
  TraceIdentity id;
  id.rank = comm->rank;
  id.nranks = comm->nranks;
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0) std::snprintf(host, sizeof(host), "unknown");
  id.host = host;
  id.pid = static_cast<int>(::getpid());
  id.device = comm->backend->deviceIndex() >= 0 ? comm->device : -1;
  if (comm->rank < static_cast<int>(comm->topo.ranks.size())) {
    id.gpu = comm->topo.ranks[comm->rank].gpu;
    id.partition = comm->topo.ranks[comm->rank].partition;
  }
  id.backend = comm->backend->name();
  id.topology = comm->topo.name;
  comm->trace.reset(new TraceLog(std::move(id), dir));
}

void traceClose(sscComm* comm) {
  if (comm->trace == nullptr) return;
  const std::string path = comm->trace->write();
  if (!path.empty())
    SSC_LOG(kInfo, "STARSCREAM_TRACE: {} calls written to {}", comm->trace->calls(), path);
  comm->trace.reset();
}

}  // namespace ssc
