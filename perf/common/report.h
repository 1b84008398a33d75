// SPDX-License-Identifier: MIT
// What the perf tests print and record: nccl-tests' header, table rows and footer as strings (the
// driver prints them on rank 0), and one JSON record per row for -J. Pure formatting, no MPI.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "perf/common/args.h"
#include "perf/common/coll_math.h"

namespace ssc::perf {

// One of a row's two halves: out of place, then in place.
struct PlacementResult {
  bool ran = false;   // false: the collective has no such run (alltoall in place): N/A
  double timeUs = 0;  // per call, aggregated over ranks as -a says
  Bandwidth bw;
  bool checked = false;  // false: #wrong is N/A (-c 0, or in-place sendrecv)
  int64_t wrong = 0;     // wrong elements summed over ranks
};

// The columns before the two halves.
struct RowKey {
  size_t bytes = 0;
  size_t count = 0;
  const char* type = "";
  const char* op = "";
  int root = -1;
};

// Who ran what, for the JSON records.
struct RunInfo {
  std::string program;     // all_reduce_perf
  std::string collective;  // all_reduce
  std::string algorithm;   // -A, else STARSCREAM_ALGO, else "auto"
  std::string topology;    // -T, else STARSCREAM_TOPO_FILE, else ""
  std::string hostname;    // rank 0's
  std::string version;     // the loaded library's, "0.1.0"
  int nranks = 1;
};

// printf into a std::string (at most 511 characters: one line of a table or header).
std::string printfString(const char* format, ...) __attribute__((format(printf, 1, 2)));

// nccl-tests' getFloatStr: `value` in `width` characters with as many decimals as fit.
std::string formatFloat(double value, int width);

// "# nThread 1 nGpus 1 minBytes .. maxBytes .. step: ..(factor) warmup iters: .. iters: .. agg
// iters: .. validation: .. graph: 0", and the blocking line when -z is on.
std::string runHeader(const Options& options);
// "#  Rank  0 Group  0 Pid  1234 on   hostname device -1 [host] description"
std::string rankLine(int rank, int pid, const std::string& host, int device,
                     const std::string& description);
// The three column-header lines (titles, names, units); `cpuTime` names the time column.
std::string tableHeader(bool cpuTime);
std::string rowPreamble(const RowKey& key);
std::string rowHalf(const PlacementResult& result);
// "# Out of bounds values : N OK|FAILED" and "# Avg bus bandwidth    : X", then "#".
std::string footer(int64_t errors, double avgBusBw);

// "2025-01-31T12:34:56Z" (UTC) for now.
std::string isoDateUtcNow();
// The run's identity as a JSON object's text (program, collective, algorithm, topology, nranks,
// hostname, date, starscream_version): the first keys of every record, of every perf tool.
std::string runIdentityJson(const RunInfo& run, const std::string& date);
// One JSON object (no newline) with every column of the row, the run's identity and settings.
std::string rowRecordJson(const RunInfo& run, const Options& options, const RowKey& key,
                          const PlacementResult& outOfPlace, const PlacementResult& inPlace,
                          int cycle, const std::string& date);

// Appends one line per record to a file (created or truncated on open), flushed per record so
// that a run that dies midway leaves every finished row readable.
class JsonLinesWriter {
 public:
  JsonLinesWriter() = default;
  JsonLinesWriter(const JsonLinesWriter&) = delete;
  JsonLinesWriter& operator=(const JsonLinesWriter&) = delete;
  ~JsonLinesWriter();
  bool open(const std::string& path, std::string* why);
  bool isOpen() const { return file_ != nullptr; }
  void write(const std::string& record);

 private:
  std::FILE* file_ = nullptr;
};

}  // namespace ssc::perf
