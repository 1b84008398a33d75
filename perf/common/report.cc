// SPDX-License-Identifier: MIT
#include "perf/common/report.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdarg>
#include <cstring>
#include <ctime>

#include <nlohmann/json.hpp>

namespace ssc::perf {
namespace {

nlohmann::ordered_json halfRecord(const PlacementResult& r) {
  if (!r.ran) return nullptr;
  nlohmann::ordered_json half = {
      {"time", r.timeUs}, {"alg_bw", r.bw.algBw}, {"bus_bw", r.bw.busBw}};
  half["nwrong"] = r.checked ? nlohmann::ordered_json(r.wrong) : nlohmann::ordered_json(nullptr);
  return half;
}

}  // namespace

std::string printfString(const char* format, ...) {
  char buffer[512];
  va_list args;
  va_start(args, format);
  const int n = std::vsnprintf(buffer, sizeof(buffer), format, args);
  va_end(args);
  return n < 0 ? std::string() : std::string(buffer, std::min<size_t>(n, sizeof(buffer) - 1));
}

std::string formatFloat(double value, int width) {
  if (!std::isfinite(value)) return printfString("%*s", width, std::isnan(value) ? "nan" : "inf");
  // Digits before the point decide the decimals: 2, 1, 0, then scientific notation.
  int power = 0;
  for (double v = 1; value >= v && power <= width + 1; v *= 10) power++;
  if (power < width - 2) return printfString("%*.2f", width, value);
  if (power < width - 1) return printfString("%*.1f", width, value);
  if (power < width + 1) return printfString("%*.0f", width, value);
  if (width >= 7) return printfString("%*.1e", width, value);
  return printfString("%*.0e", width, value);
}

std::string runHeader(const Options& o) {
  const bool factor = o.stepFactor > 1;
  std::string text = printfString(
      "# nThread %d nGpus %d minBytes %zu maxBytes %zu step: %zu(%s) warmup iters: %d iters: %d "
      "agg iters: %d validation: %d graph: %d\n",
      o.nThreads, o.nGpus, o.minBytes, o.maxBytes, factor ? o.stepFactor : o.stepBytes,
      factor ? "factor" : "bytes", o.warmupIters, o.iters, o.aggIters, o.check, 0);
  if (o.blocking == 1) {
    text += "# Blocking Enabled: wait for completion and barrier after each collective \n";
  }
  if (o.blocking > 1) {
    text += "# Blocking Enabled: wait for completion after each collective (no barrier) \n";
  }
  return text;
}

std::string rankLine(int rank, int pid, const std::string& host, int device,
                     const std::string& description) {
  // Group is nccl-tests' NCCL_TESTS_SPLIT color; Starscream's tests run one communicator.
  return printfString("#  Rank %2d Group %2d Pid %6d on %10s device %2d %s\n", rank, 0, pid,
                      host.c_str(), device, description.c_str());
}

std::string tableHeader(bool cpuTime) {
  const char* time = cpuTime ? "cputime" : "time";
  std::string text = printfString(
      "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          "
      "\n",
      "", "", "", "", "");
  text += printfString("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s\n",
                       "size", "count", "type", "redop", "root", time, "algbw", "busbw", "#wrong",
                       time, "algbw", "busbw", "#wrong");
  text += printfString("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n",
                       "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)",
                       "(GB/s)", "(GB/s)", "");
  return text;
}

std::string rowPreamble(const RowKey& key) {
  return printfString("%12zu  %12zu  %8s  %6s  %6i", key.bytes, key.count, key.type, key.op,
                      key.root);
}

std::string rowHalf(const PlacementResult& r) {
  if (!r.ran) return printfString("  %7s  %6s  %6s  %5s", "N/A", "N/A", "N/A", "N/A");
  const std::string wrong =
      r.checked ? printfString("%5lld", static_cast<long long>(r.wrong)) : std::string("  N/A");
  return printfString("  %7s  %6s  %6s  %5s", formatFloat(r.timeUs, 7).c_str(),
                      formatFloat(r.bw.algBw, 6).c_str(), formatFloat(r.bw.busBw, 6).c_str(),
                      wrong.c_str());
}

std::string footer(int64_t errors, double avgBusBw) {
  std::string text = printfString("# %-20s : %lld %s\n", "Out of bounds values",
                                  static_cast<long long>(errors), errors ? "FAILED" : "OK");
  // nccl-tests leaves a space for its optional NCCL_TESTS_MIN_BW verdict; kept for parsers.
  text += printfString("# %-20s : %g %s\n", "Avg bus bandwidth", avgBusBw, "");
  text += "#\n";
  return text;
}

std::string isoDateUtcNow() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buffer;
}

std::string rowRecordJson(const RunInfo& run, const Options& o, const RowKey& key,
                          const PlacementResult& outOfPlace, const PlacementResult& inPlace,
                          int cycle, const std::string& date) {
  // Key names of the row follow nccl-tests' -J output (size, count, type, redop, root,
  // out_of_place/in_place with time, alg_bw, bus_bw, nwrong); the rest says what ran where.
  nlohmann::ordered_json record = nlohmann::ordered_json::parse(runIdentityJson(run, date));
  record.update(nlohmann::ordered_json{
      {"size", key.bytes},
      {"count", key.count},
      {"type", key.type},
      {"redop", key.op},
      {"root", key.root},
      {"out_of_place", halfRecord(outOfPlace)},
      {"in_place", halfRecord(inPlace)},
      {"time_kind", o.reportCpuTime ? "cputime" : "time"},
      {"units", {{"time", "us"}, {"alg_bw", "GB/s"}, {"bus_bw", "GB/s"}}},
      {"iters", o.iters},
      {"warmup_iters", o.warmupIters},
      {"agg_iters", o.aggIters},
      {"blocking", o.blocking},
      {"average", o.average},
      {"check", o.check},
      {"local_register", o.localRegister},
      {"cycle", cycle},
  });
  return record.dump();
}

std::string runIdentityJson(const RunInfo& run, const std::string& date) {
  const nlohmann::ordered_json identity = {
      {"program", run.program},
      {"collective", run.collective},
      {"algorithm", run.algorithm},
      {"topology", run.topology},
      {"nranks", run.nranks},
      {"hostname", run.hostname},
      {"date", date},
      {"starscream_version", run.version},
  };
  return identity.dump();
}

JsonLinesWriter::~JsonLinesWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

bool JsonLinesWriter::open(const std::string& path, std::string* why) {
  file_ = std::fopen(path.c_str(), "w");
  if (file_ == nullptr) {
    *why = "cannot write " + path + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

void JsonLinesWriter::write(const std::string& record) {
  if (file_ == nullptr) return;
  std::fputs(record.c_str(), file_);
  std::fputc('\n', file_);
  std::fflush(file_);
}

}  // namespace ssc::perf
