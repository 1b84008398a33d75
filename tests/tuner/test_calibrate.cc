// SPDX-License-Identifier: MIT
// Self-calibration (tuner/calibrate.h): the sweep it times, the fit that turns the times into a
// profile (it must recover the choices of the machine that produced them), the anchors it keeps,
// and the cache (round trip with the anchors, missing directories, corrupt, foreign and
// earlier-format files, concurrent writers).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/core/errors.h"
#include "tests/support/topology_files.h"
#include "src/collectives/algorithms.h"
#include "tuner/calibrate.h"
#include "tuner/model.h"
#include "tuner/select.h"

namespace ssc {
namespace {

namespace fs = std::filesystem;

using test::topoFile;

// A fresh directory under the test's temporary directory, removed at the end.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "ssc-calib-XXXXXX").string();
    path_ = mkdtemp(tmpl.data()) != nullptr ? tmpl : "";
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

CalibrationKey someKey() {
  CalibrationKey k;
  k.backend = "gpu";
  k.gpuModel = "NVIDIA Test GPU 80GB";
  k.driver = "13000";
  k.library = "0.1.0/model-2";
  k.partitionsPerGpu = 8;
  k.gpus = 1;
  k.nodes = 1;
  k.nranks = 8;
  k.computeUnits = 16;
  k.limitsHash = 42;
  return k;
}

// A machine whose FIFO kernel is slow and whose zero-copy kernels are fast (what an MPS
// partition of a Hopper GPU looks like), as a profile the test uses as the truth.
TunerProfile slowFifoMachine() {
  TunerProfile p;
  p.name = "truth";
  ProfileVariant v;
  v.partitionsPerGpu = 8;
  v.launchUs = 9;
  v.copyGBps = 180;
  v.launchExtraUs[static_cast<int>(Protocol::kFifo)] = 12;
  v.tiers[0][static_cast<int>(Protocol::kFifo)] = {3, 60};
  v.tiers[0][static_cast<int>(Protocol::kLL)] = {4, 200};
  v.tiers[0][static_cast<int>(Protocol::kZeroCopy)] = {1.5, 420, 350};
  v.tiers[0][static_cast<int>(Protocol::kZeroCopyWide)] = {1.3, 380, 380};
  p.variants = {v};
  return p;
}

std::vector<double> timesOf(const Tuner& truth, const std::vector<CalibrationPoint>& points) {
  std::vector<double> out;
  for (const CalibrationPoint& p : points) {
    const Protocol proto = p.protocol;
    const Estimate e = truth.estimate(p.coll, p.bytes, p.algo, true, p.pinned ? &proto : nullptr);
    out.push_back(e.valid ? e.timeUs : 0);
  }
  return out;
}

// A calibration as init makes one: the profile, and as anchors the times the machine the profile
// describes gives the sweep on an 8-partition GPU.
Calibration calibrationOf(const TunerProfile& p) {
  const Topology topo = topoFile("h200-mps-8");
  const auto points = calibrationPoints(topo, ModelLimits{});
  return {p, anchorsFromSweep(points, timesOf(Tuner(topo, p), points))};
}

TEST(Calibration, SweepCoversEveryAlgorithmAndProtocol) {
  const Topology topo = topoFile("h200-mps-8");
  ModelLimits limits;
  const auto points = calibrationPoints(topo, limits);
  ASSERT_FALSE(points.empty());
  bool ll = false, wide = false, bulk = false, ring = false, direct = false;
  for (const CalibrationPoint& p : points) {
    EXPECT_TRUE(algoSupports(topo, p.coll, p.algo));
    if (p.pinned && p.protocol == Protocol::kLL) {
      ll = true;
      EXPECT_EQ(p.coll, CollKind::kAllReduce);
      EXPECT_LE(p.bytes, limits.llMaxBytes);
    }
    if (p.pinned && p.protocol == Protocol::kZeroCopyWide) {
      wide = true;
      EXPECT_EQ(p.coll, CollKind::kAllGather);
    }
    bulk = bulk || (p.pinned && p.protocol == Protocol::kZeroCopy);
    ring = ring || p.algo == Algo::kRing;
    direct = direct || p.algo == Algo::kDirect;
    // Reduce-scatter and all-gather move a whole number of elements per rank.
    if (p.coll != CollKind::kAllReduce) EXPECT_EQ(p.bytes % (limits.elemBytes * 8), 0u);
  }
  EXPECT_TRUE(ll && wide && bulk && ring && direct);
  // Bandwidth-bound sizes are in it, and the buffers it needs are bounded.
  EXPECT_GE(calibrationBufferBytes(points), uint64_t{64} << 20);
  EXPECT_LE(calibrationBufferBytes(points), uint64_t{256} << 20);
  // One rank: nothing to choose, nothing to measure.
  EXPECT_TRUE(calibrationPoints(makeFlatTopology(1), limits).empty());
}

// Every series the sweep times starts at the smallest call (one element per rank), so its anchors
// reach the latency-bound sizes where close predictions flip; and that costs one point a series.
TEST(Calibration, SweepMeasuresTheSmallestSizeOfEverySeries) {
  for (const char* name : {"h200-mps-2", "h200-mps-8"}) {
    SCOPED_TRACE(name);
    const Topology topo = topoFile(name);
    ModelLimits limits;
    const uint64_t floor = limits.elemBytes * static_cast<uint64_t>(topo.nranks());
    for (bool thorough : {false, true}) {
      const auto points = calibrationPoints(topo, limits, 0, thorough);
      std::map<std::tuple<int, int, int>, std::vector<uint64_t>> series;
      for (const CalibrationPoint& p : points)
        series[{static_cast<int>(p.coll), static_cast<int>(p.algo), static_cast<int>(p.protocol)}]
            .push_back(p.bytes);
      EXPECT_GE(series.size(), 14u);
      for (const auto& [id, sizes] : series) {
        ASSERT_FALSE(sizes.empty());
        EXPECT_EQ(sizes.front(), floor) << std::get<0>(id) << " " << std::get<1>(id);
        // Below the sweep's next size: that one point only (the sweep's budget).
        EXPECT_EQ(std::count_if(sizes.begin(), sizes.end(), [](uint64_t b) { return b < 256; }), 1);
      }
    }
  }
}

// The anchors are the measured points, one series per (collective, algorithm, protocol), at four
// significant digits (what the cache file gives back), without the points not measured.
TEST(Calibration, AnchorsFromTheSweep) {
  const Topology topo = topoFile("h200-mps-2");
  const auto points = calibrationPoints(topo, ModelLimits{});
  std::vector<double> times(points.size(), 0);
  for (size_t i = 0; i < points.size(); ++i) times[i] = i % 5 == 4 ? 0 : 10.0 + i + 1.0 / 3;
  const Anchors a = anchorsFromSweep(points, times);
  size_t kept = 0;
  for (const AnchorSeries& s : a.series) {
    EXPECT_EQ(s.protocol == Protocol::kFifo, s.algo != Algo::kSymmetric);
    for (size_t k = 0; k < s.points.size(); ++k) {
      if (k > 0) {
        EXPECT_LT(s.points[k - 1].bytes, s.points[k].bytes);
      }
      const double t = s.points[k].timeUs;
      EXPECT_NEAR(t, std::round(t * 100) / 100, 1e-9) << "four significant digits";
    }
    kept += s.points.size();
  }
  EXPECT_EQ(kept, static_cast<size_t>(
                      std::count_if(times.begin(), times.end(), [](double t) { return t > 0; })));
}

// The fit must recover, from the sweep's times alone, the choices of the machine that produced
// them: within 10 % of that machine's best at every size, though the fit starts from the
// topology's link figures, which favour the FIFO algorithms.
TEST(Calibration, FitRecoversTheMachinesChoices) {
  for (const char* name : {"h200-mps-8", "h200-mps-4", "h200-mps-3", "h200-mps-2"}) {
    SCOPED_TRACE(name);
    Topology topo = topoFile(name);
    for (auto& g : topo.gpus) g.model = "Test GPU";  // no shipped profile applies
    ModelLimits limits;
    limits.blocksPerChannel = 4;
    const Tuner truth(topo, slowFifoMachine(), limits);
    const auto points = calibrationPoints(topo, limits);
    TunerProfile fitted;
    ASSERT_EQ(fitCalibration(topo, limits, defaultProfile(topo), points, timesOf(truth, points),
                             180, someKey(), &fitted),
              sscSuccess)
        << lastError();
    ASSERT_EQ(fitted.variants.size(), 1u);
    EXPECT_EQ(fitted.variants[0].partitionsPerGpu, topo.maxPartitions());
    // The fitted model alone, and with the sweep's times as anchors (what init uses).
    const auto times = timesOf(truth, points);
    for (const Anchors& anchors : {Anchors{}, anchorsFromSweep(points, times)})
      for (CollKind coll : {CollKind::kAllReduce, CollKind::kReduceScatter, CollKind::kAllGather})
        for (uint64_t bytes = 64; bytes <= (uint64_t{1} << 30); bytes *= 4)
          for (bool sym : {true, false}) {
            const Tuner model(topo, fitted, limits, anchors);
            const Choice c = model.choose(coll, bytes, sym);
            double best = 1e300;
            for (const Estimate& e : truth.estimateAll(coll, bytes, sym))
              if (e.valid) best = std::min(best, e.timeUs);
            const Protocol proto = c.protocol;
            const Estimate got = truth.estimate(coll, bytes, c.algo, sym, &proto);
            ASSERT_TRUE(got.valid) << collName(coll) << " " << bytes << " " << algoName(c.algo);
            EXPECT_LE(got.timeUs, 1.10 * best)
                << collName(coll) << " " << bytes << " B sym=" << sym
                << " anchors=" << !anchors.empty() << ": chose " << algoName(c.algo) << " at "
                << got.timeUs << " us, best " << best << " us";
          }
  }
}

// Times no machine should give (a loaded host: one protocol's calls crawl in proportion to their
// size) still fit a profile that reads back: the cache file written from it must not be refused.
// Both the GPU backend's limits and the host backend's (one memory, its built-in profile).
TEST(Calibration, FitOfWildTimesReadsBack) {
  for (bool host : {false, true}) {
    SCOPED_TRACE(host ? "host backend" : "GPU backend");
    const Topology topo = topoFile(host ? "2x2" : "h200-mps-8");
    ModelLimits limits;
    limits.blocksPerChannel = host ? 1 : 4;
    limits.oneMemory = host;
    const TunerProfile start = host ? hostProfile() : defaultProfile(topo);
    const Tuner truth(topo, host ? hostProfile() : slowFifoMachine(), limits);
    const auto points = calibrationPoints(topo, limits, host ? uint64_t{4} << 20 : 0);
    for (Protocol slow : {Protocol::kZeroCopyWide, Protocol::kZeroCopy, Protocol::kLL}) {
      std::vector<double> times = timesOf(truth, points);
      for (size_t i = 0; i < points.size(); ++i)
        if (points[i].pinned && points[i].protocol == slow)
          times[i] = 1e3 * static_cast<double>(points[i].bytes);  // 1 ms a byte: 1e-6 GB/s
      TunerProfile fitted;
      ASSERT_EQ(fitCalibration(topo, limits, start, points, times, 180, someKey(), &fitted),
                sscSuccess)
          << lastError();
      for (const auto& tier : fitted.variants[0].tiers)
        for (const AlphaBeta& ab : tier) {
          EXPECT_TRUE(ab.bandwidthGBps == 0 || ab.bandwidthGBps >= kProfileMinBandwidthGBps)
              << ab.bandwidthGBps;
          EXPECT_LE(ab.latencyUs, kProfileMaxLatencyUs);
        }
      TunerProfile back;
      EXPECT_EQ(parseProfile(profileToJson(fitted), "round trip", &back), sscSuccess)
          << protocolName(slow) << ": " << lastError();
    }
  }
}

TEST(Calibration, FitRefusesNoData) {
  const Topology topo = topoFile("h200-mps-8");
  const auto points = calibrationPoints(topo, ModelLimits{});
  TunerProfile out;
  EXPECT_EQ(fitCalibration(topo, ModelLimits{}, defaultProfile(topo), points,
                           std::vector<double>(points.size(), 0), 0, someKey(), &out),
            sscInvalidArgument);
  EXPECT_EQ(
      fitCalibration(topo, ModelLimits{}, defaultProfile(topo), points, {1.0}, 0, someKey(), &out),
      sscInternalError);
}

TEST(CalibrationKey, FileNameIsSafeAndDistinct) {
  CalibrationKey a = someKey(), b = someKey();
  b.driver = "13010";
  EXPECT_NE(a.fileName(), b.fileName());
  EXPECT_NE(a.text(), b.text());
  a.gpuModel = "../../etc/passwd \"x\"";
  const std::string f = a.fileName();
  EXPECT_EQ(f.find('/'), std::string::npos);
  EXPECT_EQ(f.find('"'), std::string::npos);
  EXPECT_EQ(f.find(' '), std::string::npos);
  EXPECT_EQ(f.substr(f.size() - 5), ".json");
}

TEST(CalibrationMode, ParsesEveryValue) {
  TuneMode m;
  for (const char* s : {"auto", "cached", "off", "refresh"}) {
    ASSERT_TRUE(parseTuneMode(s, &m)) << s;
    EXPECT_STREQ(tuneModeName(m), s);
  }
  EXPECT_TRUE(parseTuneMode("", &m));
  EXPECT_EQ(m, TuneMode::kAuto);
  EXPECT_FALSE(parseTuneMode("always", &m));
}

TEST(CalibrationCache, RoundTripIntoMissingDirectories) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  const std::string dir = tmp.path() + "/a/b/starscream";  // none of it exists yet
  const CalibrationKey key = someKey();
  const Calibration p = calibrationOf(slowFifoMachine());
  ASSERT_FALSE(p.anchors.empty());
  Calibration back;
  std::string why;
  EXPECT_FALSE(readCalibration(dir, key, &back, &why));
  EXPECT_TRUE(why.empty()) << "a missing file is not worth a warning: " << why;
  ASSERT_EQ(writeCalibration(dir, key, p), sscSuccess) << lastError();
  bool outdated = true;
  ASSERT_TRUE(readCalibration(dir, key, &back, &why, &outdated)) << why;
  EXPECT_FALSE(outdated);
  EXPECT_EQ(back.profile.variants, p.profile.variants);
  EXPECT_EQ(back.profile.name, p.profile.name);
  // The anchors come back exactly, so a tuner from the file chooses as the fresh one did.
  EXPECT_EQ(back.anchors, p.anchors);
  const Topology topo = topoFile("h200-mps-8");
  EXPECT_EQ(Tuner(topo, back.profile, {}, back.anchors).fingerprint(),
            Tuner(topo, p.profile, {}, p.anchors).fingerprint());
  EXPECT_NE(Tuner(topo, back.profile, {}, back.anchors).fingerprint(),
            Tuner(topo, back.profile, {}).fingerprint());
  // Written again (a refresh): replaced, and no temporary file is left behind.
  ASSERT_EQ(writeCalibration(dir, key, p), sscSuccess) << lastError();
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    ++files;
    EXPECT_EQ(e.path().filename().string(), key.fileName());
  }
  EXPECT_EQ(files, 1);
}

TEST(CalibrationCache, CorruptAndForeignFilesAreIgnoredWithAReason) {
  TempDir tmp;
  const CalibrationKey key = someKey();
  const std::string path = tmp.path() + "/" + key.fileName();
  Calibration out;
  std::string why;
  auto put = [&](const std::string& text) { std::ofstream(path, std::ios::trunc) << text; };
  put("{\"format\": \"starscream-calibration/2\", \"key\": ");  // cut short
  EXPECT_FALSE(readCalibration(tmp.path(), key, &out, &why));
  EXPECT_NE(why.find("corrupt"), std::string::npos) << why;

  put("[1, 2, 3]");
  EXPECT_FALSE(readCalibration(tmp.path(), key, &out, &why));
  EXPECT_NE(why.find("format"), std::string::npos) << why;

  // Another machine's file under this name (copied between hosts, or a hash collision).
  CalibrationKey other = key;
  other.gpuModel = "Another GPU";
  put(calibrationJson(other, calibrationOf(slowFifoMachine())));
  EXPECT_FALSE(readCalibration(tmp.path(), key, &out, &why));
  EXPECT_NE(why.find("another machine"), std::string::npos) << why;

  // The right key with a profile that does not parse.
  std::string text = calibrationJson(key, calibrationOf(slowFifoMachine()));
  text.replace(text.find("\"variants\""), 10, "\"variantz\"");
  put(text);
  EXPECT_FALSE(readCalibration(tmp.path(), key, &out, &why));
  EXPECT_NE(why.find("variantz"), std::string::npos) << why;

  // The right key with anchors that do not parse: an unknown algorithm, sizes out of order, a
  // time of zero, none at all.
  const std::string good = calibrationJson(key, calibrationOf(slowFifoMachine()));
  auto withAnchors = [&](const std::string& anchors) {
    nlohmann::json j = nlohmann::json::parse(good);
    if (anchors.empty())
      j.erase("anchors");
    else
      j["anchors"] = nlohmann::json::parse(anchors);
    return j.dump(2);
  };
  const std::pair<std::string, std::string> badAnchors[] = {
      {R"([{"collective": "allreduce", "algorithm": "tree", "protocol": "fifo",
            "points": [[8, 7.0]]}])",
       "anchors[0].algorithm"},
      {R"([{"collective": "allreduce", "algorithm": "ring", "protocol": "fifo",
            "points": [[1024, 9.0], [8, 7.0]]}])",
       "ascend"},
      {R"([{"collective": "allgather", "algorithm": "direct", "protocol": "fifo",
            "points": [[8, 0]]}])",
       "anchors[0].points[0]"},
      {R"({"ring": 1})", "array"},
      {"", "no anchors"}};
  for (const auto& [anchors, expect] : badAnchors) {
    put(withAnchors(anchors));
    bool outdated = true;
    EXPECT_FALSE(readCalibration(tmp.path(), key, &out, &why, &outdated)) << anchors;
    EXPECT_FALSE(outdated);
    EXPECT_NE(why.find(expect), std::string::npos) << why;
  }

  // Far too large to be a calibration: refused unread.
  put(std::string(2 << 20, ' '));
  EXPECT_FALSE(readCalibration(tmp.path(), key, &out, &why));
  EXPECT_NE(why.find("not a calibration"), std::string::npos) << why;
}

// A file of the format before anchors: not an error, not a warning; init calibrates again and
// replaces it.
TEST(CalibrationCache, EarlierFormatMeansCalibrateAgain) {
  TempDir tmp;
  const CalibrationKey key = someKey();
  nlohmann::json old =
      nlohmann::json::parse(calibrationJson(key, calibrationOf(slowFifoMachine())));
  old["format"] = "starscream-calibration/1";
  old.erase("anchors");
  std::ofstream(tmp.path() + "/" + key.fileName()) << old.dump(2);
  Calibration out;
  std::string why;
  bool outdated = false;
  EXPECT_FALSE(readCalibration(tmp.path(), key, &out, &why, &outdated));
  EXPECT_TRUE(outdated);
  EXPECT_NE(why.find("earlier format"), std::string::npos) << why;
  // Written again, it reads.
  ASSERT_EQ(writeCalibration(tmp.path(), key, calibrationOf(slowFifoMachine())), sscSuccess);
  EXPECT_TRUE(readCalibration(tmp.path(), key, &out, &why, &outdated)) << why;
  EXPECT_FALSE(outdated);
}

TEST(CalibrationCache, UnwritableDirectoryFailsWithThePath) {
  TempDir tmp;
  const std::string file = tmp.path() + "/plain-file";
  std::ofstream(file) << "x";
  const Calibration c = calibrationOf(slowFifoMachine());
  EXPECT_EQ(writeCalibration(file + "/sub", someKey(), c), sscSystemError);
  EXPECT_NE(lastError().find("plain-file"), std::string::npos) << lastError();
  EXPECT_EQ(writeCalibration("", someKey(), c), sscSystemError);
}

// Ranks of one node calibrate together and all write the same file: every reader sees a whole
// file, never a mix, and no temporary file survives.
TEST(CalibrationCache, ConcurrentWritersLeaveOneWholeFile) {
  TempDir tmp;
  const CalibrationKey key = someKey();
  constexpr int kWriters = 8;
  std::vector<pid_t> kids;
  for (int w = 0; w < kWriters; ++w) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      Calibration p = calibrationOf(slowFifoMachine());
      p.profile.name = "writer-" + std::to_string(w);
      p.profile.variants[0].launchUs = 1 + w;
      int rc = 0;
      for (int i = 0; i < 20 && rc == 0; ++i)
        rc = writeCalibration(tmp.path(), key, p) == sscSuccess ? 0 : 1;
      _exit(rc);
    }
    kids.push_back(pid);
  }
  // Read while they write: any file seen must be whole.
  for (int i = 0; i < 200; ++i) {
    Calibration p;
    std::string why;
    if (readCalibration(tmp.path(), key, &p, &why)) {
      ASSERT_EQ(p.profile.name.rfind("writer-", 0), 0u);
      EXPECT_EQ(p.profile.variants[0].launchUs, 1 + std::stoi(p.profile.name.substr(7)));
    } else {
      EXPECT_TRUE(why.empty()) << why;
    }
  }
  for (pid_t pid : kids) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  int files = 0;
  for (const auto& e : fs::directory_iterator(tmp.path())) {
    ++files;
    EXPECT_EQ(e.path().filename().string(), key.fileName());
  }
  EXPECT_EQ(files, 1);
}

TEST(CalibrationCache, DirectoryFromTheEnvironment) {
  const char* saved[] = {std::getenv("STARSCREAM_TUNE_CACHE"), std::getenv("XDG_CACHE_HOME"),
                         std::getenv("HOME")};
  const std::string keep[] = {saved[0] ? saved[0] : "", saved[1] ? saved[1] : "",
                              saved[2] ? saved[2] : ""};
  unsetenv("STARSCREAM_TUNE_CACHE");
  setenv("XDG_CACHE_HOME", "/x/cache", 1);
  setenv("HOME", "/home/u", 1);
  EXPECT_EQ(calibrationCacheDir(), "/x/cache/starscream");
  unsetenv("XDG_CACHE_HOME");
  EXPECT_EQ(calibrationCacheDir(), "/home/u/.cache/starscream");
  setenv("STARSCREAM_TUNE_CACHE", "/elsewhere", 1);
  EXPECT_EQ(calibrationCacheDir(), "/elsewhere");
  unsetenv("STARSCREAM_TUNE_CACHE");
  unsetenv("HOME");
  EXPECT_EQ(calibrationCacheDir(), "");
  const char* names[] = {"STARSCREAM_TUNE_CACHE", "XDG_CACHE_HOME", "HOME"};
  for (int i = 0; i < 3; ++i)
    if (saved[i] != nullptr) setenv(names[i], keep[i].c_str(), 1);
}

}  // namespace
}  // namespace ssc
