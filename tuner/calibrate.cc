// SPDX-License-Identifier: MIT
#include "tuner/calibrate.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "src/collectives/algorithms.h"
#include "src/core/env.h"
#include "src/core/errors.h"
#include "tuner/select.h"

namespace ssc {
namespace {

// Version 2 added the anchors. A file of an earlier version is no error: the machine is
// calibrated again (a sweep of well under a second) and the file replaced.
constexpr const char* kCalibrationFormat = "starscream-calibration/2";
constexpr const char* kOlderFormats[] = {"starscream-calibration/1"};
// A cache file larger than this is not a calibration (a profile is a few KiB): refused unread.
constexpr std::streamoff kMaxCalibrationFileBytes = 1 << 20;

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// Sizes of the sweep, per-rank bytes as Tuner::estimate counts them: from where the launch and
// per-step latencies dominate to where bandwidth does, at the protocol limits' edges (the LL limit
// is a power of two). 64 MiB is in the bandwidth regime on every device measured (a FIFO step is
// a 2 MiB chunk, a zero-copy call one pass over the buffers); larger sizes add time, not terms.
constexpr uint64_t kSizes[] = {uint64_t{1} << 10, uint64_t{16} << 10, uint64_t{64} << 10,
                               uint64_t{1} << 20, uint64_t{8} << 20,  uint64_t{64} << 20};
constexpr uint64_t kWideCheckBytes = uint64_t{256} << 20;

// Four significant digits, as the profile's figures: a sweep's times carry no more.
double rounded(double v) {
  if (v == 0 || !std::isfinite(v)) return v;
  const double scale = std::pow(10.0, 3 - std::floor(std::log10(std::fabs(v))));
  return std::round(v * scale) / scale;
}

int createDirs(const std::string& dir) {
  if (dir.empty()) return EINVAL;
  std::string path;
  std::stringstream parts(dir);
  std::string part;
  if (dir[0] == '/') path = "/";
  while (std::getline(parts, part, '/')) {
    if (part.empty()) continue;
    path += part;
    if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) return errno;
    path += "/";
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return errno;
  return S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
}

}  // namespace

bool parseTuneMode(const std::string& text, TuneMode* out) {
  if (text.empty() || text == "auto")
    *out = TuneMode::kAuto;
  else if (text == "cached")
    *out = TuneMode::kCached;
  else if (text == "off")
    *out = TuneMode::kOff;
  else if (text == "refresh")
    *out = TuneMode::kRefresh;
  else
    return false;
  return true;
}

const char* tuneModeName(TuneMode m) {
  switch (m) {
    case TuneMode::kAuto: return "auto";
    case TuneMode::kCached: return "cached";
    case TuneMode::kOff: return "off";
    case TuneMode::kRefresh: return "refresh";
  }
  return "?";
}

std::string CalibrationKey::text() const {
  return fmt::format(
      "backend={};gpu={};driver={};library={};partitions={};gpus={};nodes={};"
      "ranks={};units={};limits={:016x}",
      backend, gpuModel, driver, library, partitionsPerGpu, gpus, nodes, nranks, computeUnits,
      limitsHash);
}

std::string CalibrationKey::fileName() const {
  std::string model;
  for (char c : gpuModel.empty() ? backend : gpuModel) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (ok)
      model += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    else if (!model.empty() && model.back() != '-')
      model += '-';
  }
  while (!model.empty() && model.back() == '-') model.pop_back();
  if (model.size() > 40) model.resize(40);
  if (model.empty()) model = "device";
  return fmt::format("{}-{}p-{:016x}.json", model, partitionsPerGpu, fnv1a(text()));
}

uint64_t limitsHash(const ModelLimits& l) {
  return fnv1a(fmt::format("{}|{}|{}|{}|{}|{}|{}|{}", l.chunkBytes, l.channels, l.llMaxBytes,
                           l.elemBytes, l.pipelineBytes, l.oneMemory, l.blocksPerChannel,
                           l.pushLaunchBytes));
}

std::vector<CalibrationPoint> calibrationPoints(const Topology& topo, const ModelLimits& limits,
                                                uint64_t maxBytes, bool thorough) {
  std::vector<uint64_t> sizes(std::begin(kSizes), std::end(kSizes));
  if (thorough) {
    sizes.clear();
    for (uint64_t b = 256; b <= kWideCheckBytes; b *= 2) sizes.push_back(b);
  }
  std::vector<CalibrationPoint> out;
  const int n = topo.nranks();
  if (n < 2) return out;
  const bool mappable = topo.nnodes == 1 && n <= kSymmetricMaxRanks;
  for (CollKind coll : {CollKind::kAllReduce, CollKind::kReduceScatter, CollKind::kAllGather}) {
    // One element per rank: the smallest call a reduce-scatter or all-gather can make, and an
    // all-reduce every algorithm splits into whole elements. Each series starts there: below the
    // sweep's next size every call is latency-bound, which is where algorithms whose fitted
    // latencies are close can differ most on the machine (the FIFO kernel's plan against the LL
    // kernel's one shot), so the anchors must reach it. One point a series, on the same batch
    // rule as the others: a few hundred microseconds each.
    const uint64_t minBytes = limits.elemBytes * static_cast<uint64_t>(n);
    std::vector<uint64_t> own = {minBytes};
    own.insert(own.end(), sizes.begin(), sizes.end());
    auto add = [&](Algo algo, bool pinned, Protocol protocol, bool (*keep)(uint64_t, uint64_t)) {
      uint64_t last = 0;
      for (uint64_t b : own) {
        const uint64_t bytes = std::max(b, minBytes);
        if (bytes == last) continue;  // a floor that several sizes round up to
        last = bytes;
        if (keep != nullptr && !keep(bytes, limits.llMaxBytes)) continue;
        if (maxBytes > 0 && bytes > maxBytes) continue;
        out.push_back({coll, algo, pinned, protocol, bytes});
      }
    };
    for (Algo a : {Algo::kRing, Algo::kBidirRing, Algo::kDirect, Algo::kHierarchical})
      if (algoSupports(topo, coll, a)) add(a, false, Protocol::kFifo, nullptr);
    if (!mappable || !algoSupports(topo, coll, Algo::kSymmetric)) continue;
    if (coll == CollKind::kAllReduce && limits.llMaxBytes > 0)
      add(Algo::kSymmetric, true, Protocol::kLL,
          [](uint64_t bytes, uint64_t ll) { return bytes <= ll; });
    add(Algo::kSymmetric, true, Protocol::kZeroCopy, nullptr);
    if (coll == CollKind::kAllGather) {
      add(Algo::kSymmetric, true, Protocol::kZeroCopyWide, nullptr);
      // The two grids of the push can trade places at large sizes (the wide grid's many small
      // blocks win while they keep more stores in flight, then lose to scheduling): one size
      // more decides up to where the wide grid is kept.
      if (!thorough && (maxBytes == 0 || kWideCheckBytes <= maxBytes))
        for (Protocol p : {Protocol::kZeroCopy, Protocol::kZeroCopyWide})
          out.push_back({coll, Algo::kSymmetric, true, p, kWideCheckBytes});
    }
  }
  return out;
}

uint64_t calibrationBufferBytes(const std::vector<CalibrationPoint>& points) {
  uint64_t most = 0;
  for (const CalibrationPoint& p : points) most = std::max(most, p.bytes);
  return most;
}

Anchors anchorsFromSweep(const std::vector<CalibrationPoint>& points,
                         const std::vector<double>& timesUs) {
  Anchors out;
  for (size_t i = 0; i < points.size() && i < timesUs.size(); ++i) {
    if (!(timesUs[i] > 0) || points[i].bytes == 0) continue;
    const CalibrationPoint& p = points[i];
    // A FIFO algorithm runs its one protocol; the symmetric one the protocol the point pinned.
    const Protocol protocol = p.algo == Algo::kSymmetric ? p.protocol : Protocol::kFifo;
    AnchorSeries* s = nullptr;
    for (AnchorSeries& c : out.series)
      if (c.coll == p.coll && c.algo == p.algo && c.protocol == protocol) s = &c;
    if (s == nullptr) {
      out.series.push_back({p.coll, p.algo, protocol, {}});
      s = &out.series.back();
    }
    s->points.push_back({p.bytes, rounded(timesUs[i])});
  }
  // Ascending and distinct, as parseAnchors requires (a size measured twice keeps its first time).
  for (AnchorSeries& s : out.series) {
    std::stable_sort(s.points.begin(), s.points.end(),
                     [](const AnchorPoint& a, const AnchorPoint& b) { return a.bytes < b.bytes; });
    s.points.erase(
        std::unique(s.points.begin(), s.points.end(),
                    [](const AnchorPoint& a, const AnchorPoint& b) { return a.bytes == b.bytes; }),
        s.points.end());
  }
  return out;
}

sscResult_t fitCalibration(const Topology& topo, const ModelLimits& limits,
                           const TunerProfile& start, const std::vector<CalibrationPoint>& points,
                           const std::vector<double>& timesUs, double copyGBps,
                           const CalibrationKey& key, TunerProfile* out) {
  if (points.size() != timesUs.size())
    return fail(sscInternalError, "calibration: {} points but {} times", points.size(),
                timesUs.size());
  std::vector<Measurement> data;
  for (size_t i = 0; i < points.size(); ++i) {
    if (!(timesUs[i] > 0)) continue;
    Measurement m;
    m.coll = points[i].coll;
    m.algo = points[i].algo;
    m.bytes = points[i].bytes;
    m.timeUs = timesUs[i];
    m.symmetric = true;
    m.pinned = points[i].pinned;
    m.protocol = points[i].protocol;
    data.push_back(m);
  }
  if (data.empty()) return fail(sscInvalidArgument, "calibration: nothing was measured");
  uint64_t smallest = UINT64_MAX, largest = 0;
  for (const Measurement& m : data) {
    smallest = std::min(smallest, m.bytes);
    largest = std::max(largest, m.bytes);
  }
  // The fit starts from the variant the profile holds for this partitioning, and only with what
  // cannot be measured on this machine (tiers it does not have) taken from it.
  TunerProfile base = start.variants.empty() ? defaultProfile(topo) : start;
  ProfileVariant v;
  SSC_CHECK(fitVariant(topo, limits, base, data, copyGBps, &v));
  v.partitionsPerGpu = topo.maxPartitions();
  // The wide grid is kept only as far as it was measured not to lose (fitVariant leaves it
  // unbounded when it did not lose at the largest size measured).
  if (v.wideGridMaxBytes == 0) {
    uint64_t largest = 0;
    for (const Measurement& m : data)
      if (m.pinned && m.protocol == Protocol::kZeroCopyWide) largest = std::max(largest, m.bytes);
    if (largest > 0) v.wideGridMaxBytes = static_cast<double>(largest);
  }
  TunerProfile p;
  p.name = "calibrated";
  p.origin = "calibration";
  // Only what every rank shares goes into the profile (the ranks compare its fingerprint): the
  // key, which could differ in a rank's own fields, is kept beside it in the cache file.
  p.gpuModel = topo.gpus.empty() ? key.gpuModel : topo.gpus.front().model;
  p.source = fmt::format(
      "Measured on this machine: {} timed collectives (every algorithm and "
      "protocol from {} B to {} B, each point the slowest rank's), fitted by "
      "the cost model's least squares",
      data.size(), smallest, largest);
  p.variants = {v};
  const ErrorStats err = modelError(Tuner(topo, p, limits), data);
  p.source += fmt::format("; model error median {:.1f} %, worst {:.1f} % ({})", 100 * err.median,
                          100 * err.worst, err.worstWhat);
  *out = std::move(p);
  return sscSuccess;
}

std::string calibrationCacheDir() {
  const std::string set = env::getString("STARSCREAM_TUNE_CACHE");
  if (!set.empty()) return set;
  const std::string xdg = env::getExternal("XDG_CACHE_HOME");
  if (xdg.starts_with('/')) return xdg + "/starscream";
  const std::string home = env::getExternal("HOME");
  if (!home.empty()) return home + "/.cache/starscream";
  return "";
}

std::string calibrationJson(const CalibrationKey& key, const Calibration& calibration) {
  nlohmann::json j;
  j["format"] = kCalibrationFormat;
  j["key"] = key.text();
  j["profile"] = nlohmann::json::parse(profileToJson(calibration.profile));
  j["anchors"] = nlohmann::json::parse(anchorsToJson(calibration.anchors));
  return j.dump(2) + "\n";
}

namespace {

enum class Parsed { kOk, kOutdated, kBad };

// Reads a cache file: its key into *keyText, the rest into *out. kBad and kOutdated with *why
// saying what. `want`: the key it must have (checked before the rest: another machine's file says
// so whatever it holds); null: any.
Parsed parseCalibrationFile(const std::string& path, std::ifstream& in, const std::string* want,
                            Calibration* out, std::string* keyText, std::string* why) {
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size < 0 || size > kMaxCalibrationFileBytes) {
    *why = fmt::format("{}: not a calibration ({} bytes)", path, static_cast<long long>(size));
    return Parsed::kBad;
  }
  in.seekg(0);
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(ss.str());
  } catch (const std::exception& e) {
    *why = fmt::format("{}: corrupt ({})", path, e.what());
    return Parsed::kBad;
  }
  const std::string format = j.is_object() && j.contains("format") && j["format"].is_string()
                                 ? j["format"].get<std::string>()
                                 : "";
  for (const char* older : kOlderFormats)
    if (format == older) {
      *why = fmt::format("{}: written in the earlier format {} (no measured anchors)", path, older);
      return Parsed::kOutdated;
    }
  if (format != kCalibrationFormat) {
    *why = fmt::format("{}: not in format {}", path, kCalibrationFormat);
    return Parsed::kBad;
  }
  *keyText = j.contains("key") && j["key"].is_string() ? j["key"].get<std::string>() : "";
  if (want != nullptr ? *keyText != *want : keyText->empty()) {
    *why = fmt::format(
        "{}: written for another machine or configuration (its key '{}', this one '{}')", path,
        keyText->empty() ? "?" : *keyText, want != nullptr ? *want : "?");
    return Parsed::kBad;
  }
  if (!j.contains("profile") || !j["profile"].is_object()) {
    *why = fmt::format("{}: has no profile", path);
    return Parsed::kBad;
  }
  Calibration c;
  if (parseProfile(j["profile"].dump(), path, &c.profile) != sscSuccess) {
    *why = fmt::format("{}: {}", path, lastError());
    return Parsed::kBad;
  }
  if (!j.contains("anchors")) {
    *why = fmt::format("{}: has no anchors", path);
    return Parsed::kBad;
  }
  if (parseAnchors(j["anchors"].dump(), path, &c.anchors) != sscSuccess) {
    *why = lastError();
    return Parsed::kBad;
  }
  c.profile.origin = path;
  *out = std::move(c);
  return Parsed::kOk;
}

}  // namespace

bool readCalibration(const std::string& dir, const CalibrationKey& key, Calibration* out,
                     std::string* why, bool* outdated) {
  why->clear();
  if (outdated != nullptr) *outdated = false;
  if (dir.empty()) return false;
  const std::string path = dir + "/" + key.fileName();
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;  // none yet: not worth a warning
  Calibration c;
  std::string keyText;
  const std::string want = key.text();
  const Parsed r = parseCalibrationFile(path, in, &want, &c, &keyText, why);
  if (r == Parsed::kOutdated && outdated != nullptr) *outdated = true;
  if (r != Parsed::kOk) return false;
  *out = std::move(c);
  return true;
}

sscResult_t loadCalibrationFile(const std::string& path, Calibration* out, std::string* keyText) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(sscInvalidArgument, "calibration {}: cannot open it", path);
  std::string why;
  if (parseCalibrationFile(path, in, nullptr, out, keyText, &why) != Parsed::kOk)
    return fail(sscInvalidArgument, "calibration {}", why);
  return sscSuccess;
}

sscResult_t writeCalibration(const std::string& dir, const CalibrationKey& key,
                             const Calibration& calibration) {
  if (dir.empty())
    return fail(sscSystemError,
                "calibration cache: no directory (set STARSCREAM_TUNE_CACHE, "
                "XDG_CACHE_HOME or HOME)");
  if (const int e = createDirs(dir); e != 0)
    return fail(sscSystemError, "calibration cache {}: cannot create the directory: {}", dir,
                std::strerror(e));
  static std::atomic<uint64_t> serial{0};
  const std::string path = dir + "/" + key.fileName();
  const std::string tmp =
      fmt::format("{}.tmp.{}.{}", path, static_cast<long>(::getpid()), serial++);
  const std::string text = calibrationJson(key, calibration);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return fail(sscSystemError, "calibration cache {}: {}", tmp, std::strerror(errno));
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t w = ::write(fd, text.data() + done, text.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      const int e = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return fail(sscSystemError, "calibration cache {}: write failed: {}", tmp, std::strerror(e));
    }
    done += static_cast<size_t>(w);
  }
  const int synced = ::fsync(fd) == 0 ? 0 : errno;
  const int closed = ::close(fd) == 0 ? 0 : errno;
  if (synced != 0 || closed != 0) {
    const int e = synced != 0 ? synced : closed;
    ::unlink(tmp.c_str());
    return fail(sscSystemError, "calibration cache {}: {}", tmp, std::strerror(e));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    return fail(sscSystemError, "calibration cache {}: rename failed: {}", path, std::strerror(e));
  }
  return sscSuccess;
}

}  // namespace ssc
