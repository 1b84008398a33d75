// SPDX-License-Identifier: MIT
#include "perf/common/gemm_args.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "starscream/starscream_ops.h"

namespace ssc::perf {
namespace {

// Splits {"gemm_rs_perf", args...}; *restOut gets what parseArgs would see, as strings.
std::string split(std::initializer_list<const char*> args, GemmFlags* flags,
                  std::vector<std::string>* restOut) {
  std::vector<std::string> storage = {"gemm_rs_perf"};
  for (const char* a : args) storage.emplace_back(a);
  std::vector<char*> argv;
  for (std::string& s : storage) argv.push_back(s.data());
  std::vector<char*> rest;
  *flags = GemmFlags();
  const std::string why = splitGemmFlags(static_cast<int>(argv.size()), argv.data(), flags, &rest);
  restOut->assign(rest.begin(), rest.end());
  return why;
}

TEST(GemmArgs, SplitsItsOwnFlagsInEveryForm) {
  GemmFlags f;
  std::vector<std::string> rest;
  ASSERT_EQ(split({"-b", "16", "-L", "llama70b", "-e", "64", "-V", "fused"}, &f, &rest), "");
  EXPECT_EQ(f.layers, "llama70b");
  EXPECT_EQ(f.variant.variant, sscGemmFused);
  EXPECT_FALSE(f.variant.perRank);
  EXPECT_EQ(rest, (std::vector<std::string>{"gemm_rs_perf", "-b", "16", "-e", "64"}));
  ASSERT_EQ(split({"-Lgptoss", "--variant=fused_per_rank", "-n", "3"}, &f, &rest), "");
  EXPECT_EQ(f.layers, "gptoss");
  EXPECT_TRUE(f.variant.perRank);
  EXPECT_EQ(f.variant.name, "fused_per_rank");
  EXPECT_EQ(rest, (std::vector<std::string>{"gemm_rs_perf", "-n", "3"}));
  ASSERT_EQ(split({"--layers", "o,down", "--variant", "chunked"}, &f, &rest), "");
  EXPECT_EQ(f.layers, "o,down");
  EXPECT_EQ(f.variant.variant, sscGemmChunked);
  EXPECT_EQ(rest.size(), 1u);
}

TEST(GemmArgs, RefusesBadVariantsAndMissingValues) {
  GemmFlags f;
  std::vector<std::string> rest;
  EXPECT_NE(split({"-V", "fastest"}, &f, &rest).find("unknown variant 'fastest'"),
            std::string::npos);
  EXPECT_NE(split({"-L"}, &f, &rest).find("missing value"), std::string::npos);
  EXPECT_NE(split({"-n", "2", "--variant"}, &f, &rest).find("missing value"), std::string::npos);
}

TEST(GemmArgs, LayerFilterIsAnyOfTheSubstrings) {
  EXPECT_TRUE(layerWanted("", "llama70b.o"));
  EXPECT_TRUE(layerWanted("llama70b", "llama70b.gate_up"));
  EXPECT_FALSE(layerWanted("llama70b", "llama405b.o"));
  EXPECT_TRUE(layerWanted("qkv,gptoss", "gptoss120b.o"));
  EXPECT_TRUE(layerWanted("nothing,.down", "llama405b.down"));
  EXPECT_FALSE(layerWanted(",", "llama70b.o"));
  int matched = 0;
  for (const GemmLayer& l : gemmLayers()) matched += layerWanted("llama405b", l.name) ? 1 : 0;
  EXPECT_EQ(matched, 4);
  EXPECT_EQ(gemmLayers().size(), 10u);
}

TEST(GemmArgs, DefaultsSweepTheIssuesRows) {
  const Options o = gemmDefaultOptions();
  EXPECT_EQ(sizeSeries(o.minBytes, o.maxBytes, o.stepFactor, o.stepBytes),
            (std::vector<size_t>{16, 64, 256, 1024, 4096, 16384}));
  EXPECT_EQ(gemmTypes(o), (std::vector<sscDataType_t>{sscBfloat16}));
  Options all = o;
  all.type.reset();
  EXPECT_EQ(gemmTypes(all), (std::vector<sscDataType_t>{sscBfloat16, sscFloat16}));
}

TEST(GemmArgs, OptionsTheOpsCannotUse) {
  std::string warnings;
  Options o = gemmDefaultOptions();
  EXPECT_EQ(checkGemmOptions(o, &warnings), "");
  EXPECT_EQ(warnings, "");
  o.type = sscFloat32;
  EXPECT_NE(checkGemmOptions(o, &warnings).find("bfloat16 or half"), std::string::npos);
  o = gemmDefaultOptions();
  o.op = PerfOp::kMax;
  o.localRegister = true;
  EXPECT_EQ(checkGemmOptions(o, &warnings), "");
  EXPECT_NE(warnings.find("-o (op"), std::string::npos);
  EXPECT_NE(warnings.find("-R (register"), std::string::npos);
}

TEST(GemmArgs, BandwidthOfTheCollectivesBuffer) {
  // Reduce-scatter of [M][N] bf16 partials, all-gather of [M][K] bf16 inputs, 8 ranks.
  const Bandwidth rs = gemmBandwidth(true, 1024, 8192, 128, 2, 1e-3, 8);
  EXPECT_DOUBLE_EQ(rs.algBw, 1024.0 * 8192 * 2 / 1e-3 / 1e9);
  EXPECT_DOUBLE_EQ(rs.busBw, rs.algBw * 7 / 8);
  const Bandwidth ag = gemmBandwidth(false, 1024, 8192, 128, 2, 1e-3, 8);
  EXPECT_DOUBLE_EQ(ag.algBw, 1024.0 * 128 * 2 / 1e-3 / 1e9);
  EXPECT_EQ(gemmBandwidth(true, 16, 16, 16, 2, 1e-3, 1).busBw, 0.0);
  EXPECT_EQ(gemmBandwidth(true, 16, 16, 16, 2, 0.0, 2).algBw, 0.0);
}

TEST(GemmArgs, RowLinesUpUnderTheHeader) {
  GemmRow r;
  r.layer = "llama405b.gate_up";
  r.m = 16384, r.n = 13312, r.k = 16384, r.rankN = 1664, r.rankK = 16384;
  r.type = "bfloat16";
  r.variant = "fused x8";
  r.timeUs = 12181.4;
  r.tflops = 587.2;
  r.bw = {44.1, 38.6};
  r.checked = true;
  const std::string row = gemmRowText(r);
  const std::string header = gemmTableHeader();
  const std::string names = header.substr(0, header.find('\n'));
  EXPECT_EQ(row.size(), names.size() + 1);  // the row ends in '\n' too
  EXPECT_NE(row.find("fused x8"), std::string::npos);
  EXPECT_EQ(row.substr(row.size() - 8), "      0\n");  // #wrong, right-aligned
  r.checked = false;
  EXPECT_NE(gemmRowText(r).find("N/A"), std::string::npos);
}

TEST(GemmArgs, JsonRecordSaysWhatRanAndWhatWasAsked) {
  RunInfo run;
  run.program = "ag_gemm_perf";
  run.nranks = 8;
  GemmFlags f;
  f.variant.name = "fused_per_rank";
  GemmRow r;
  r.layer = "llama70b.qkv";
  r.m = 4096, r.n = 1280, r.k = 8192, r.rankN = 160, r.rankK = 8192;
  r.type = "bfloat16";
  r.variant = "fused x8";
  r.timeUs = 817;
  const auto j =
      nlohmann::json::parse(gemmRowJson(run, gemmDefaultOptions(), f, r, "2026-12-04T00:00:00Z"));
  EXPECT_EQ(j["program"], "ag_gemm_perf");
  EXPECT_EQ(j["variant_asked"], "fused_per_rank");
  EXPECT_EQ(j["variant"], "fused x8");
  EXPECT_EQ(j["M"], 4096);
  EXPECT_EQ(j["rank_N"], 160);
  EXPECT_TRUE(j["nwrong"].is_null());  // not checked
  EXPECT_EQ(j["iters"], 10);
}

}  // namespace
}  // namespace ssc::perf
