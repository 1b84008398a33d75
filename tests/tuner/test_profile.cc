// SPDX-License-Identifier: MIT
// Tuner profiles: the shipped ones parse, a written profile reads back, and hostile files fail
// with sscInvalidArgument naming the file, the field and the line.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "src/core/errors.h"
#include "tuner/profile.h"
#include "tuner/shipped_profiles.h"

namespace ssc {
namespace {

const char* kGood = R"({
  "format": "starscream-tuner-profile/1",
  "name": "test",
  "gpu_model": "MI300X",
  "source": "unit test",
  "variants": [
    {"partitions_per_gpu": 8, "launch_us": 4, "copy_gbps": 500, "cache_mb": 50, "wide_grid_max_bytes": 134217728,
     "launch_extra_us": {"fifo": 12, "zero_copy_wide": 0.25},
     "tiers": {"usr": {"fifo": {"latency_us": 1.5, "bandwidth_gbps": 300},
                       "zero_copy": {"latency_us": 1, "bandwidth_gbps": 900, "store_bandwidth_gbps": 700},
                       "zero_copy_wide": {"latency_us": 0.5, "bandwidth_gbps": 800}},
               "xgmi": {"ll": {"latency_us": 0.5, "bandwidth_gbps": 20}, "note": "why"}}},
    {"partitions_per_gpu": 0, "launch_us": 9, "tiers": {}}
  ]
})";

// Parses `text`; on failure returns the error message, on success "".
std::string parseError(const std::string& text) {
  TunerProfile p;
  if (parseProfile(text, "bad.json", &p) == sscSuccess) return "";
  return lastError();
}

std::string replaced(std::string s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

TEST(TunerProfile, ParsesGoodFile) {
  TunerProfile p;
  ASSERT_EQ(parseProfile(kGood, "good.json", &p), sscSuccess) << lastError();
  EXPECT_EQ(p.name, "test");
  EXPECT_EQ(p.gpuModel, "MI300X");
  ASSERT_EQ(p.variants.size(), 2u);
  const ProfileVariant& v = p.variants[0];
  EXPECT_EQ(v.partitionsPerGpu, 8);
  EXPECT_DOUBLE_EQ(v.launchUs, 4);
  EXPECT_DOUBLE_EQ(v.copyGBps, 500);
  EXPECT_DOUBLE_EQ(v.tiers[0][static_cast<int>(Protocol::kFifo)].bandwidthGBps, 300);
  EXPECT_DOUBLE_EQ(v.tiers[1][static_cast<int>(Protocol::kLL)].latencyUs, 0.5);
  EXPECT_DOUBLE_EQ(v.tiers[2][static_cast<int>(Protocol::kFifo)].bandwidthGBps, 0);  // not given
  EXPECT_DOUBLE_EQ(v.tiers[0][static_cast<int>(Protocol::kZeroCopy)].storeBandwidthGBps, 700);
  EXPECT_DOUBLE_EQ(v.tiers[0][static_cast<int>(Protocol::kZeroCopyWide)].bandwidthGBps, 800);
  EXPECT_DOUBLE_EQ(v.tiers[0][static_cast<int>(Protocol::kZeroCopyWide)].storeBandwidthGBps,
                   0);  // = loads
  EXPECT_DOUBLE_EQ(v.launchExtraUs[static_cast<int>(Protocol::kFifo)], 12);
  EXPECT_DOUBLE_EQ(v.launchExtraUs[static_cast<int>(Protocol::kZeroCopyWide)], 0.25);
  EXPECT_DOUBLE_EQ(v.launchExtraUs[static_cast<int>(Protocol::kLL)], 0);  // not given
  EXPECT_DOUBLE_EQ(p.variants[1].launchExtraUs[0], 0);
  EXPECT_DOUBLE_EQ(v.wideGridMaxBytes, 134217728);
  EXPECT_DOUBLE_EQ(p.variants[1].wideGridMaxBytes, 0);  // any size
}

TEST(TunerProfile, VariantForPrefersExactThenAnyThenNearest) {
  TunerProfile p;
  ASSERT_EQ(parseProfile(kGood, "good.json", &p), sscSuccess);
  EXPECT_EQ(p.variantFor(8).partitionsPerGpu, 8);
  EXPECT_EQ(p.variantFor(2).partitionsPerGpu, 0);  // the catch-all
  p.variants.pop_back();
  EXPECT_EQ(p.variantFor(2).partitionsPerGpu, 8);  // nearest
}

TEST(TunerProfile, WrittenProfileReadsBack) {
  TunerProfile p, q;
  ASSERT_EQ(parseProfile(kGood, "good.json", &p), sscSuccess);
  ASSERT_EQ(parseProfile(profileToJson(p), "written", &q), sscSuccess) << lastError();
  q.origin = p.origin;
  EXPECT_EQ(p, q);
}

TEST(TunerProfile, ShippedProfilesParse) {
  ASSERT_GE(shippedProfiles().size(), 3u);
  for (const ShippedProfile& s : shippedProfiles()) {
    TunerProfile p;
    EXPECT_EQ(parseProfile(s.text, s.file, &p), sscSuccess) << s.file << ": " << lastError();
    EXPECT_EQ(p.gpuModel, s.gpuModel) << s.file;
    EXPECT_FALSE(p.source.empty()) << s.file << " must say where its numbers come from";
  }
}

TEST(TunerProfile, HostileFilesFailNamingFieldAndLine) {
  struct Case {
    std::string text, mustContain;
  };
  const Case cases[] = {
      {"{\n  \"format\": \"starscream-tuner-profile/1\",\n  oops\n}", "bad.json:3"},
      {"[]", "top level must be an object"},
      {replaced(kGood, "starscream-tuner-profile/1", "starscream-tuner-profile/9"), "'format'"},
      {replaced(kGood, "\"name\": \"test\"", "\"name\": 7"), "'name': must be a string"},
      {replaced(kGood, "\"name\": \"test\",", "\"nmae\": \"test\","), "'nmae': unknown field"},
      {replaced(kGood, "\"cache_mb\": 50", "\"cache_mb\": -1"),
       "'variants[0].cache_mb': -1 is outside"},
      {replaced(kGood, "\"bandwidth_gbps\": 300", "\"bandwidth_gbps\": -3"),
       "'variants[0].tiers.usr.fifo.bandwidth_gbps': -3 is outside"},
      {replaced(kGood, "\"bandwidth_gbps\": 300", "\"bandwidth_gbps\": 0"), "bandwidth_gbps"},
      {replaced(kGood, "\"bandwidth_gbps\": 300", "\"bandwidth_gbps\": \"fast\""),
       "must be a number"},
      {replaced(kGood, "\"latency_us\": 1.5, ", ""),
       "'variants[0].tiers.usr.fifo.latency_us': missing"},
      {replaced(kGood, "\"usr\": {\"fifo\"", "\"usr\": {\"lll\""), "'variants[0].tiers.usr.lll'"},
      {replaced(kGood, "\"xgmi\":", "\"nvlink\":"), "'variants[0].tiers.nvlink': unknown field"},
      {replaced(kGood, "\"partitions_per_gpu\": 0", "\"partitions_per_gpu\": 8"),
       "a second variant for 8"},
      {replaced(kGood, "\"partitions_per_gpu\": 8", "\"partitions_per_gpu\": 2.5"),
       "must be an integer"},
      {replaced(kGood, "\"launch_us\": 4", "\"launch_us\": 1e400"), "bad.json"},
      {replaced(kGood, "\"launch_us\": 9, ", ""), "'variants[1].launch_us': missing"},
      {"{\"format\": \"starscream-tuner-profile/1\", \"name\": \"x\", \"variants\": []}",
       "non-empty array"},
      {replaced(kGood, "\"store_bandwidth_gbps\": 700", "\"store_bandwidth_gbps\": 0"),
       "'variants[0].tiers.usr.zero_copy.store_bandwidth_gbps': 0 is outside"},
      {replaced(kGood, "\"store_bandwidth_gbps\": 700", "\"store_bw\": 700"),
       "zero_copy.store_bw': unknown field"},
      {replaced(kGood, "\"wide_grid_max_bytes\": 134217728", "\"wide_grid_max_bytes\": -1"),
       "'variants[0].wide_grid_max_bytes': -1 is outside"},
      {replaced(kGood, "\"fifo\": 12", "\"fifo\": -2"),
       "'variants[0].launch_extra_us.fifo': -2 is outside"},
      {replaced(kGood, "\"fifo\": 12", "\"simple\": 2"),
       "'variants[0].launch_extra_us.simple': unknown field"},
      {replaced(kGood, "\"launch_extra_us\": {\"fifo\": 12, \"zero_copy_wide\": 0.25}",
                "\"launch_extra_us\": 3"),
       "'variants[0].launch_extra_us': must be an object"},
  };
  for (const Case& c : cases) {
    const std::string why = parseError(c.text);
    EXPECT_NE(why.find(c.mustContain), std::string::npos)
        << "got: '" << why << "'\nfor: " << c.text;
    EXPECT_NE(why.find("bad.json"), std::string::npos) << why;
  }
  // The line of a bad field is the line its name is on.
  const std::string why = parseError(replaced(kGood, "\"copy_gbps\": 500", "\"copy_gbps\": -1"));
  EXPECT_NE(why.find("bad.json:7"), std::string::npos) << why;
}

TEST(TunerProfile, FilesAndTheEnvironment) {
  TunerProfile p;
  EXPECT_EQ(loadProfileFile("/nonexistent/profile.json", &p), sscInvalidArgument);
  EXPECT_NE(lastError().find("/nonexistent/profile.json"), std::string::npos);
  EXPECT_EQ(loadProfileFile("/tmp", &p), sscInvalidArgument);  // a directory
  const std::string path = ::testing::TempDir() + "ssc_profile_test.json";
  { std::ofstream(path) << kGood; }
  Topology topo = makeUniformTopology(1, 2, 2);
  for (GpuInfo& g : topo.gpus) g.model = "MI300X";
  setenv("STARSCREAM_TUNER_PROFILE", path.c_str(), 1);
  ASSERT_EQ(resolveProfile(topo, &p), sscSuccess) << lastError();
  EXPECT_EQ(p.name, "test");
  EXPECT_EQ(p.origin, path);
  { std::ofstream(path) << "{"; }
  EXPECT_EQ(resolveProfile(topo, &p), sscInvalidArgument);
  unsetenv("STARSCREAM_TUNER_PROFILE");
  // Without the variable: the shipped profile of the GPU model, else the topology's links.
  ASSERT_EQ(resolveProfile(topo, &p), sscSuccess);
  EXPECT_EQ(p.name, "mi300x-cpx");
  Topology unknown = makeFlatTopology(2);
  for (GpuInfo& g : unknown.gpus) g.model = "X9000";
  ASSERT_EQ(resolveProfile(unknown, &p), sscSuccess);
  EXPECT_EQ(p.origin, "built-in");
  std::remove(path.c_str());
}

}  // namespace
}  // namespace ssc
