// SPDX-License-Identifier: MIT
// The timing loop, as nccl-tests' TimeTest/BenchTime: warm up every size, then for each size time
// the out-of-place and the in-place call, check each, and hand the row to the output.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "perf/common/args.h"
#include "perf/common/check.h"
#include "perf/common/collective.h"
#include "perf/common/data_pattern.h"
#include "perf/common/device_buffer.h"
#include "perf/common/launch.h"
#include "perf/common/report.h"

namespace ssc::perf {

// Accumulated over every row of a program run, for the footer.
struct BenchTotals {
  int64_t failedChecks = 0;  // this rank's row halves whose check found a wrong element
  double busBwSum = 0;       // over every half that ran (rank 0 only)
  int busBwCount = 0;
};

class Bench {
 public:
  // Buffers are both sized for options.maxBytes. `json` may be null (no -J, or not rank 0).
  Bench(const Options& options, const Collective& collective, const World& world,
        const Session& session, DeviceBuffer* send, DeviceBuffer* recv, const RunInfo& run,
        JsonLinesWriter* json);

  // One (type, op, root) over every size, -N times; op is kNone for collectives that copy.
  void timeTest(sscDataType_t type, PerfOp op, int root);
  const BenchTotals& totals() const { return totals_; }

 private:
  // What one rank measured for one half of a row, before ranks are combined.
  struct LocalHalf {
    double seconds = 0;     // per call, to completion
    double cpuSeconds = 0;  // per call, to the last enqueue (-C)
    double wrong = 0;       // the most wrong elements any of the -c checks found here
  };
  static constexpr size_t kRowValues = 6;  // LocalHalf's three values, out of place then in place

  void setSize(size_t bytes);
  CallShape shape(bool inPlace) const;
  // Issues call number `iter`; successive calls shift both buffers by a row's size (wrapping
  // within the allocation) as nccl-tests does, so back-to-back calls do not hit the same bytes.
  void startColl(bool inPlace, int iter);
  void completeColl();
  LocalHalf benchTime(bool inPlace);
  bool checks(bool inPlace) const;
  // Both halves of one row: measure, gather to rank 0, which prints and records the row.
  void row(const RowKey& key, int cycle);
  // Rank 0: one half's columns from every rank's values (gathered, kRowValues per rank, this
  // half's starting at `at`), combined as -a says; also adds to the busbw totals.
  PlacementResult summarize(const std::vector<double>& all, size_t at, bool inPlace);
  void initData(bool inPlace, uint64_t seed);
  int64_t checkData(bool inPlace);

  const Options& options_;
  const Collective& collective_;
  const World& world_;
  const Session& session_;
  DeviceBuffer* send_;
  DeviceBuffer* recv_;
  const RunInfo& run_;
  JsonLinesWriter* json_;

  sscDataType_t type_ = sscFloat32;
  PerfOp op_ = PerfOp::kSum;
  sscRedOp_t sscOp_ = sscSum;
  int root_ = 0;
  size_t elt_ = 4;
  CollCounts counts_;
  std::optional<Pattern> pattern_;  // the one initData wrote, for checkData
  uint64_t checkSeed_ = 0;          // nccl-tests' "rep": a new seed per check
  BenchTotals totals_;
};

}  // namespace ssc::perf
