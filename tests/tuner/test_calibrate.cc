// SPDX-License-Identifier: MIT
// Self-calibration (tuner/calibrate.h): the sweep it times, the fit that turns the times into a
// profile (it must recover the choices of the machine that produced them), and the cache (round
// trip, missing directories, corrupt and foreign files, concurrent writers).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

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
    const Tuner model(topo, fitted, limits);
    for (CollKind coll : {CollKind::kAllReduce, CollKind::kReduceScatter, CollKind::kAllGather})
      for (uint64_t bytes = 1024; bytes <= (uint64_t{1} << 30); bytes *= 4)
        for (bool sym : {true, false}) {
          const Choice c = model.choose(coll, bytes, sym);
          double best = 1e300;
          for (const Estimate& e : truth.estimateAll(coll, bytes, sym))
            if (e.valid) best = std::min(best, e.timeUs);
          const Protocol proto = c.protocol;
          const Estimate got = truth.estimate(coll, bytes, c.algo, sym, &proto);
          ASSERT_TRUE(got.valid) << collName(coll) << " " << bytes << " " << algoName(c.algo);
          EXPECT_LE(got.timeUs, 1.10 * best)
              << collName(coll) << " " << bytes << " B sym=" << sym << ": chose "
              << algoName(c.algo) << " at " << got.timeUs << " us, best " << best << " us";
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
  const TunerProfile p = slowFifoMachine();
  TunerProfile back;
  std::string why;
  EXPECT_FALSE(readCalibration(dir, key, &back, &why));
  EXPECT_TRUE(why.empty()) << "a missing file is not worth a warning: " << why;
  ASSERT_EQ(writeCalibration(dir, key, p), sscSuccess) << lastError();
  ASSERT_TRUE(readCalibration(dir, key, &back, &why)) << why;
  EXPECT_EQ(back.variants, p.variants);
  EXPECT_EQ(back.name, p.name);
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
  TunerProfile out;
  std::string why;
  auto put = [&](const std::string& text) { std::ofstream(path, std::ios::trunc) << text; };
  put("{\"format\": \"starscream-calibration/1\", \"key\": ");  // cut short
  EXPECT_FALSE(readCalibration(tmp.path(), key, &out, &why));
  EXPECT_NE(why.find("corrupt"), std::string::npos) << why;

  put("[1, 2, 3]");
  EXPECT_FALSE(readCalibration(tmp.path(), key, &out, &why));
  EXPECT_NE(why.find("format"), std::string::npos) << why;

  // Another machine's file under this name (copied between hosts, or a hash collision).
  CalibrationKey other = key;
  other.gpuModel = "Another GPU";
  put(calibrationJson(other, slowFifoMachine()));
  EXPECT_FALSE(readCalibration(tmp.path(), key, &out, &why));
  EXPECT_NE(why.find("another machine"), std::string::npos) << why;

  // The right key with a profile that does not parse.
  std::string text = calibrationJson(key, slowFifoMachine());
  text.replace(text.find("\"variants\""), 10, "\"variantz\"");
  put(text);
  EXPECT_FALSE(readCalibration(tmp.path(), key, &out, &why));
  EXPECT_NE(why.find("variantz"), std::string::npos) << why;

  // Far too large to be a calibration: refused unread.
  put(std::string(2 << 20, ' '));
  EXPECT_FALSE(readCalibration(tmp.path(), key, &out, &why));
  EXPECT_NE(why.find("not a calibration"), std::string::npos) << why;
}

TEST(CalibrationCache, UnwritableDirectoryFailsWithThePath) {
  TempDir tmp;
  const std::string file = tmp.path() + "/plain-file";
  std::ofstream(file) << "x";
  EXPECT_EQ(writeCalibration(file + "/sub", someKey(), slowFifoMachine()), sscSystemError);
  EXPECT_NE(lastError().find("plain-file"), std::string::npos) << lastError();
  EXPECT_EQ(writeCalibration("", someKey(), slowFifoMachine()), sscSystemError);
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
      TunerProfile p = slowFifoMachine();
      p.name = "writer-" + std::to_string(w);
      p.variants[0].launchUs = 1 + w;
      int rc = 0;
      for (int i = 0; i < 20 && rc == 0; ++i)
        rc = writeCalibration(tmp.path(), key, p) == sscSuccess ? 0 : 1;
      _exit(rc);
    }
    kids.push_back(pid);
  }
  // Read while they write: any file seen must be whole.
  for (int i = 0; i < 200; ++i) {
    TunerProfile p;
    std::string why;
    if (readCalibration(tmp.path(), key, &p, &why)) {
      ASSERT_EQ(p.name.rfind("writer-", 0), 0u);
      EXPECT_EQ(p.variants[0].launchUs, 1 + std::stoi(p.name.substr(7)));
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
