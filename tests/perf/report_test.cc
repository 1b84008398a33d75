// SPDX-License-Identifier: MIT
#include "perf/common/report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>

namespace ssc::perf {
namespace {

TEST(PerfReport, FloatColumnsAsNcclTests) {
  EXPECT_EQ(formatFloat(0.5, 7), "   0.50");
  EXPECT_EQ(formatFloat(1234.5, 7), "1234.50");
  EXPECT_EQ(formatFloat(12345.6, 7), "12345.6");
  EXPECT_EQ(formatFloat(123456.7, 7), " 123457");
  EXPECT_EQ(formatFloat(1e9, 7), "1.0e+09");
  EXPECT_EQ(formatFloat(0.0, 6), "  0.00");
  EXPECT_EQ(formatFloat(1234.5, 6), "1234.5");
  EXPECT_EQ(formatFloat(12345.0, 6), " 12345");
}

TEST(PerfReport, HeaderLinesMatchNcclTests) {
  const std::string header = tableHeader(false);
  EXPECT_NE(header.find("#       size         count      type   redop    root     time   algbw"
                        "   busbw #wrong     time   algbw   busbw #wrong\n"),
            std::string::npos)
      << header;
  EXPECT_NE(header.find("#        (B)    (elements)                               (us)  (GB/s)"
                        "  (GB/s)            (us)  (GB/s)  (GB/s)       \n"),
            std::string::npos)
      << header;
  EXPECT_NE(tableHeader(true).find("cputime"), std::string::npos);

  Options o;
  o.minBytes = 8;
  o.maxBytes = 1 << 20;
  o.stepFactor = 2;
  EXPECT_EQ(runHeader(o),
            "# nThread 1 nGpus 1 minBytes 8 maxBytes 1048576 step: 2(factor) warmup iters: 1 "
            "iters: 20 agg iters: 1 validation: 1 graph: 0\n");
  EXPECT_EQ(rankLine(3, 1234, "node", -1, "[host] x"),
            "#  Rank  3 Group  0 Pid   1234 on       node device -1 [host] x\n");
}

TEST(PerfReport, RowsLineUpUnderTheHeader) {
  PlacementResult r;
  r.ran = true;
  r.timeUs = 10.234;
  r.bw = {0.5, 0.875};
  r.checked = true;
  const std::string row = rowPreamble({8, 2, "float", "sum", -1}) + rowHalf(r) + rowHalf(r);
  EXPECT_EQ(row,
            "           8             2     float     sum      -1    10.23    0.50    0.88      0"
            "    10.23    0.50    0.88      0");
  // Every column ends where its title ends.
  const std::string header = tableHeader(false);
  const size_t names = header.find('\n') + 1;
  EXPECT_EQ(row.size(), header.find('\n', names) - names);
  PlacementResult unchecked = r;
  unchecked.checked = false;
  EXPECT_EQ(rowHalf(unchecked).substr(rowHalf(unchecked).size() - 7), "    N/A");
  EXPECT_EQ(rowHalf(PlacementResult{}), "      N/A     N/A     N/A    N/A");
}

TEST(PerfReport, Footer) {
  EXPECT_EQ(footer(0, 1.5), "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 1.5 \n#\n");
  EXPECT_EQ(footer(2, 0).substr(0, 35), "# Out of bounds values : 2 FAILED\n#");
}

TEST(PerfReport, JsonRecordHasEveryColumn) {
  RunInfo run{"all_reduce_perf", "all_reduce", "ring", "t.json", "host", "0.1.0", 8};
  Options o;
  PlacementResult oop;
  oop.ran = true;
  oop.timeUs = 12.5;
  oop.bw = {1.0, 1.75};
  oop.checked = true;
  PlacementResult ip = oop;
  ip.checked = false;
  const auto j = nlohmann::json::parse(
      rowRecordJson(run, o, {1024, 256, "float", "sum", -1}, oop, ip, 0, "2025-01-01T00:00:00Z"));
  EXPECT_EQ(j["collective"], "all_reduce");
  EXPECT_EQ(j["algorithm"], "ring");
  EXPECT_EQ(j["nranks"], 8);
  EXPECT_EQ(j["hostname"], "host");
  EXPECT_EQ(j["date"], "2025-01-01T00:00:00Z");
  EXPECT_EQ(j["size"], 1024);
  EXPECT_EQ(j["count"], 256);
  EXPECT_EQ(j["type"], "float");
  EXPECT_EQ(j["redop"], "sum");
  EXPECT_EQ(j["root"], -1);
  EXPECT_EQ(j["out_of_place"]["time"], 12.5);
  EXPECT_EQ(j["out_of_place"]["alg_bw"], 1.0);
  EXPECT_EQ(j["out_of_place"]["bus_bw"], 1.75);
  EXPECT_EQ(j["out_of_place"]["nwrong"], 0);
  EXPECT_TRUE(j["in_place"]["nwrong"].is_null());
  EXPECT_TRUE(
      nlohmann::json::parse(rowRecordJson(run, o, {}, oop, PlacementResult{}, 0, ""))["in_place"]
          .is_null());
}

}  // namespace
}  // namespace ssc::perf
