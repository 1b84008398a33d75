// SPDX-License-Identifier: MIT
// Tuner profiles: reading, writing and choosing one. Profiles are written by hand (projections)
// or by starscream-tune; every rejection names the file, the field and the line, because the
// person reading the message is the one who typed the mistake.
#include "tuner/profile.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <set>
#include <span>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "src/core/env.h"
#include "src/core/errors.h"
#include "tuner/shipped_profiles.h"

namespace ssc {
namespace {

using Json = nlohmann::json;

constexpr const char* kFormat = "starscream-tuner-profile/1";
constexpr size_t kMaxProfileBytes = 1u << 20;
constexpr const char* kTierKeys[kNumTiers] = {"usr", "xgmi", "net"};
constexpr const char* kProtoKeys[kNumProtocols] = {"fifo", "ll", "zero_copy", "zero_copy_wide"};
// Sanity bounds: a typo (1e9 us, 0 GB/s) fails with a message rather than steering every choice.
// Latency and bandwidth bounds are profile.h's, shared with the fit that writes profiles.
constexpr double kMaxCacheMB = 1e6, kMaxBytes = 1e15;
constexpr int kMaxPartitions = 1024;

// Parse context: the origin, the text (for line numbers of fields) and the field path.
struct Ctx {
  const std::string& origin;
  const std::string& text;
  // The line of the first occurrence of "key" in the text: a field's name is where an editor
  // should jump, and profiles are small enough that the first occurrence is almost always it.
  size_t lineOf(const std::string& key) const {
    const size_t at = text.find("\"" + key + "\"");
    if (at == std::string::npos) return 0;
    return 1 + std::count(text.begin(), text.begin() + at, '\n');
  }
  template <class... Args>
  sscResult_t bad(const std::string& path, const std::string& key, fmt::format_string<Args...> what,
                  Args&&... args) const {
    const size_t line = lineOf(key);
    const std::string where = line == 0 ? origin : fmt::format("{}:{}", origin, line);
    return fail(sscInvalidArgument, "tuner profile {}: field '{}': {}", where, path,
                fmt::format(what, std::forward<Args>(args)...));
  }
};

sscResult_t parseJsonText(const Ctx& c, Json* out) {
  try {
    *out = Json::parse(c.text);
  } catch (const Json::parse_error& e) {
    const size_t at = std::min<size_t>(e.byte == 0 ? 0 : e.byte - 1, c.text.size());
    const size_t line = 1 + std::count(c.text.begin(), c.text.begin() + at, '\n');
    std::string what = e.what();
    if (auto pos = what.find("column "); pos != std::string::npos)
      if (auto colon = what.find(": ", pos); colon != std::string::npos)
        what = what.substr(colon + 2);
    return fail(sscInvalidArgument, "tuner profile {}:{}: invalid JSON: {}", c.origin, line, what);
  } catch (const std::exception& e) {
    return fail(sscInvalidArgument, "tuner profile {}: invalid JSON: {}", c.origin, e.what());
  }
  return sscSuccess;
}

// Keys other than `allowed` (and the free-text "source"/"note") are typos: refused.
sscResult_t onlyKeys(const Ctx& c, const Json& obj, const std::string& path,
                     std::span<const char* const> allowed) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const std::string& k = it.key();
    bool ok = k == "source" || k == "note";
    for (const char* a : allowed) ok = ok || k == a;
    if (!ok) {
      std::string names;
      for (const char* a : allowed) names += (names.empty() ? "" : ", ") + std::string(a);
      return c.bad(path.empty() ? k : path + "." + k, k,
                   "unknown field (accepted: {}, source, note)", names);
    }
    if ((k == "source" || k == "note") && !it.value().is_string())
      return c.bad(path.empty() ? k : path + "." + k, k, "must be a string");
  }
  return sscSuccess;
}
sscResult_t onlyKeys(const Ctx& c, const Json& obj, const std::string& path,
                     std::initializer_list<const char*> allowed) {
  return onlyKeys(c, obj, path, std::span<const char* const>(allowed.begin(), allowed.size()));
}

sscResult_t getNumber(const Ctx& c, const Json& obj, const std::string& path, const char* key,
                      double lo, double hi, bool required, double* out) {
  auto it = obj.find(key);
  const std::string field = path + "." + key;
  if (it == obj.end()) {
    if (required) return c.bad(field, key, "missing (a number in [{}, {}])", lo, hi);
    return sscSuccess;
  }
  if (!it->is_number()) return c.bad(field, key, "must be a number, not {}", it->type_name());
  const double v = it->get<double>();
  if (!std::isfinite(v) || v < lo || v > hi)
    return c.bad(field, key, "{} is outside [{}, {}]", v, lo, hi);
  *out = v;
  return sscSuccess;
}

sscResult_t parseVariant(const Ctx& c, const Json& v, const std::string& path,
                         ProfileVariant* out) {
  if (!v.is_object()) return c.bad(path, "variants", "must be an object");
  SSC_CHECK(onlyKeys(c, v, path,
                     {"partitions_per_gpu", "launch_us", "launch_extra_us", "copy_gbps", "cache_mb",
                      "wide_grid_max_bytes", "tiers"}));
  double parts = 0;
  SSC_CHECK(getNumber(c, v, path, "partitions_per_gpu", 0, kMaxPartitions, false, &parts));
  if (parts != std::floor(parts))
    return c.bad(path + ".partitions_per_gpu", "partitions_per_gpu", "must be an integer");
  out->partitionsPerGpu = static_cast<int>(parts);
  SSC_CHECK(getNumber(c, v, path, "launch_us", 0, kProfileMaxLatencyUs, true, &out->launchUs));
  if (auto extra = v.find("launch_extra_us"); extra != v.end()) {
    const std::string epath = path + ".launch_extra_us";
    if (!extra->is_object()) return c.bad(epath, "launch_extra_us", "must be an object");
    SSC_CHECK(onlyKeys(c, *extra, epath, kProtoKeys));
    for (int p = 0; p < kNumProtocols; ++p)
      SSC_CHECK(getNumber(c, *extra, epath, kProtoKeys[p], 0, kProfileMaxLatencyUs, false,
                          &out->launchExtraUs[p]));
  }
  SSC_CHECK(getNumber(c, v, path, "copy_gbps", 0, kProfileMaxBandwidthGBps, false, &out->copyGBps));
  SSC_CHECK(getNumber(c, v, path, "cache_mb", 0, kMaxCacheMB, false, &out->cacheMB));
  SSC_CHECK(
      getNumber(c, v, path, "wide_grid_max_bytes", 0, kMaxBytes, false, &out->wideGridMaxBytes));
  auto tiers = v.find("tiers");
  if (tiers == v.end())
    return c.bad(path + ".tiers", "launch_us", "missing (an object of usr, xgmi, net)");
  if (!tiers->is_object()) return c.bad(path + ".tiers", "tiers", "must be an object");
  SSC_CHECK(onlyKeys(c, *tiers, path + ".tiers", {"usr", "xgmi", "net"}));
  for (int t = 0; t < kNumTiers; ++t) {
    auto tier = tiers->find(kTierKeys[t]);
    if (tier == tiers->end()) continue;
    const std::string tpath = path + ".tiers." + kTierKeys[t];
    if (!tier->is_object()) return c.bad(tpath, kTierKeys[t], "must be an object");
    SSC_CHECK(onlyKeys(c, *tier, tpath, kProtoKeys));
    for (int p = 0; p < kNumProtocols; ++p) {
      auto proto = tier->find(kProtoKeys[p]);
      if (proto == tier->end()) continue;
      const std::string ppath = tpath + "." + kProtoKeys[p];
      if (!proto->is_object()) return c.bad(ppath, kProtoKeys[p], "must be an object");
      SSC_CHECK(
          onlyKeys(c, *proto, ppath, {"latency_us", "bandwidth_gbps", "store_bandwidth_gbps"}));
      AlphaBeta& ab = out->tiers[t][p];
      SSC_CHECK(
          getNumber(c, *proto, ppath, "latency_us", 0, kProfileMaxLatencyUs, true, &ab.latencyUs));
      SSC_CHECK(getNumber(c, *proto, ppath, "bandwidth_gbps", kProfileMinBandwidthGBps,
                          kProfileMaxBandwidthGBps, true, &ab.bandwidthGBps));
      SSC_CHECK(getNumber(c, *proto, ppath, "store_bandwidth_gbps", kProfileMinBandwidthGBps,
                          kProfileMaxBandwidthGBps, false, &ab.storeBandwidthGBps));
    }
  }
  return sscSuccess;
}

sscResult_t readProfileText(const std::string& path, std::string* text) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return fail(sscInvalidArgument, "tuner profile {}: cannot open: {}", path,
                std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    return fail(sscInvalidArgument, "tuner profile {}: not a regular file", path);
  text->clear();
  char buffer[16 << 10];
  while (text->size() <= kMaxProfileBytes) {
    const ssize_t got = ::read(fd, buffer, sizeof(buffer));
    if (got == 0) return sscSuccess;
    if (got < 0 && errno == EINTR) continue;
    if (got < 0)
      return fail(sscSystemError, "tuner profile {}: read error: {}", path, std::strerror(errno));
    text->append(buffer, static_cast<size_t>(got));
  }
  return fail(sscInvalidArgument, "tuner profile {}: larger than {} bytes", path, kMaxProfileBytes);
}

}  // namespace

const char* protocolName(Protocol p) {
  const int i = static_cast<int>(p);
  return i >= 0 && i < kNumProtocols ? kProtoKeys[i] : "?";
}

const ProfileVariant& TunerProfile::variantFor(int partitionsPerGpu) const {
  const ProfileVariant* any = nullptr;
  const ProfileVariant* nearest = &variants.front();
  for (const auto& v : variants) {
    if (v.partitionsPerGpu == partitionsPerGpu) return v;
    if (v.partitionsPerGpu == 0 && any == nullptr) any = &v;
    if (std::abs(v.partitionsPerGpu - partitionsPerGpu) <
        std::abs(nearest->partitionsPerGpu - partitionsPerGpu))
      nearest = &v;
  }
  return any != nullptr ? *any : *nearest;
}

TunerProfile defaultProfile(const Topology& topo) {
  TunerProfile p;
  p.name = "default (topology links)";
  p.origin = "built-in";
  p.gpuModel = topo.gpus.empty() ? "" : topo.gpus.front().model;
  p.source =
      "the topology's link figures (LinkSpec); LL at a quarter of the link bandwidth; "
      "FIFO at the link's figure times the FIFO kernel's share of the compute units "
      "(resolved by the Tuner, which knows the kernel's blocks)";
  ProfileVariant v;
  for (int t = 0; t < kNumTiers; ++t) {
    const LinkSpec& l = topo.link(static_cast<LinkTier>(t));
    v.tiers[t][static_cast<int>(Protocol::kFifo)] = {l.latencyUs, 0};
    v.tiers[t][static_cast<int>(Protocol::kZeroCopy)] = {l.latencyUs, l.bandwidthGBps};
    v.tiers[t][static_cast<int>(Protocol::kLL)] = {l.latencyUs, l.bandwidthGBps / 4};
  }
  p.variants.push_back(v);
  return p;
}

TunerProfile hostProfile() {
  // Estimates, not measurements: a FIFO step hands a slot from one thread or process to another
  // (flag, wake-up); a zero-copy barrier is one shared counter.
  constexpr double kHandoffUs = 5, kBarrierUs = 1, kCopyGBps = 10;
  TunerProfile p;
  p.name = "host";
  p.origin = "built-in";
  p.source =
      "estimate: one RAM; a FIFO step copies into the slot and the model adds the "
      "receiver's copy out of it at the copy rate, a zero-copy step copies once";
  ProfileVariant v;
  v.launchUs = 2;
  v.copyGBps = kCopyGBps;
  for (auto& tier : v.tiers) {
    tier[static_cast<int>(Protocol::kFifo)] = {kHandoffUs, kCopyGBps};
    tier[static_cast<int>(Protocol::kLL)] = {kHandoffUs, kCopyGBps / 4};
    tier[static_cast<int>(Protocol::kZeroCopy)] = {kBarrierUs, kCopyGBps};
  }
  p.variants.push_back(v);
  return p;
}

sscResult_t parseProfile(const std::string& text, const std::string& origin, TunerProfile* out) {
  if (out == nullptr) return fail(sscInvalidArgument, "parseProfile: out is null");
  const Ctx c{origin, text};
  Json j;
  SSC_CHECK(parseJsonText(c, &j));
  if (!j.is_object())
    return fail(sscInvalidArgument, "tuner profile {}: the top level must be an object", origin);
  SSC_CHECK(onlyKeys(c, j, "", {"format", "name", "gpu_model", "variants"}));
  auto fmtIt = j.find("format");
  if (fmtIt == j.end() || !fmtIt->is_string() || fmtIt->get<std::string>() != kFormat)
    return c.bad("format", "format", "must be \"{}\"", kFormat);
  TunerProfile p;
  p.origin = origin;
  for (auto [key, dst] : {std::pair{"name", &p.name}, std::pair{"gpu_model", &p.gpuModel},
                          std::pair{"source", &p.source}}) {
    auto it = j.find(key);
    if (it == j.end()) continue;
    if (!it->is_string()) return c.bad(key, key, "must be a string");
    *dst = it->get<std::string>();
  }
  if (p.name.empty()) return c.bad("name", "name", "missing (a non-empty string)");
  auto vars = j.find("variants");
  if (vars == j.end() || !vars->is_array() || vars->empty())
    return c.bad("variants", "variants", "must be a non-empty array of variants");
  if (vars->size() > kMaxPartitions) return c.bad("variants", "variants", "too many variants");
  std::set<int> seen;
  for (size_t i = 0; i < vars->size(); ++i) {
    ProfileVariant v;
    const std::string path = fmt::format("variants[{}]", i);
    SSC_CHECK(parseVariant(c, (*vars)[i], path, &v));
    if (!seen.insert(v.partitionsPerGpu).second)
      return c.bad(path + ".partitions_per_gpu", "partitions_per_gpu",
                   "a second variant for {} partitions per GPU", v.partitionsPerGpu);
    p.variants.push_back(v);
  }
  *out = std::move(p);
  return sscSuccess;
}

sscResult_t loadProfileFile(const std::string& path, TunerProfile* out) {
  std::string text;
  SSC_CHECK(readProfileText(path, &text));
  return parseProfile(text, path, out);
}

namespace {
// Four significant digits: a fitted 36.74714004905895 GB/s claims precision no sweep has.
double rounded(double v) {
  if (v == 0 || !std::isfinite(v)) return v;
  const double scale = std::pow(10.0, 3 - std::floor(std::log10(std::fabs(v))));
  return std::round(v * scale) / scale;
}
}  // namespace

std::string profileToJson(const TunerProfile& profile) {
  Json j;
  j["format"] = kFormat;
  j["name"] = profile.name;
  if (!profile.gpuModel.empty()) j["gpu_model"] = profile.gpuModel;
  if (!profile.source.empty()) j["source"] = profile.source;
  Json vars = Json::array();
  for (const auto& v : profile.variants) {
    Json jv;
    jv["partitions_per_gpu"] = v.partitionsPerGpu;
    jv["launch_us"] = rounded(v.launchUs);
    Json extra = Json::object();
    for (int p = 0; p < kNumProtocols; ++p)
      if (v.launchExtraUs[p] > 0) extra[kProtoKeys[p]] = rounded(v.launchExtraUs[p]);
    if (!extra.empty()) jv["launch_extra_us"] = extra;
    if (v.copyGBps > 0) jv["copy_gbps"] = rounded(v.copyGBps);
    if (v.cacheMB > 0) jv["cache_mb"] = rounded(v.cacheMB);
    if (v.wideGridMaxBytes > 0) jv["wide_grid_max_bytes"] = v.wideGridMaxBytes;
    Json tiers = Json::object();
    for (int t = 0; t < kNumTiers; ++t) {
      Json jt = Json::object();
      for (int p = 0; p < kNumProtocols; ++p) {
        const AlphaBeta& ab = v.tiers[t][p];
        if (ab.bandwidthGBps <= 0) continue;
        jt[kProtoKeys[p]] = {{"latency_us", rounded(ab.latencyUs)},
                             {"bandwidth_gbps", rounded(ab.bandwidthGBps)}};
        if (ab.storeBandwidthGBps > 0)
          jt[kProtoKeys[p]]["store_bandwidth_gbps"] = rounded(ab.storeBandwidthGBps);
      }
      if (!jt.empty()) tiers[kTierKeys[t]] = jt;
    }
    jv["tiers"] = tiers;
    vars.push_back(jv);
  }
  j["variants"] = vars;
  return j.dump(2) + "\n";
}

sscResult_t resolveProfile(const Topology& topo, TunerProfile* out) {
  const std::string path = env::getString("STARSCREAM_TUNER_PROFILE");
  if (!path.empty()) return loadProfileFile(path, out);
  const std::string model = topo.gpus.empty() ? "" : topo.gpus.front().model;
  const int parts = topo.maxPartitions();
  for (const ShippedProfile& s : shippedProfiles()) {
    if (model != s.gpuModel) continue;
    TunerProfile p;
    // A shipped profile that does not parse is a build defect: said loudly, never skipped.
    SSC_CHECK(parseProfile(s.text, std::string("shipped ") + s.file, &p));
    (void)parts;
    *out = std::move(p);
    return sscSuccess;
  }
  *out = defaultProfile(topo);
  return sscSuccess;
}

}  // namespace ssc
