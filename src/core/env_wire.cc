// SPDX-License-Identifier: MIT
// The settings every rank of a communicator must share (env.h, wireSettings): what is compared
// at init and how a difference is told. Kept apart from env.cc, the one file that reads the
// environment: this one only looks at a Snapshot.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "src/core/env.h"

namespace ssc::env {

namespace {

std::string shown(const Snapshot& settings, const char* name) {
  if (const char* raw = settings.raw(name)) return fmt::format("'{}'", raw);
  const std::string def = settings.getString(name);
  return def.empty() ? "unset" : fmt::format("unset (default {})", def);
}

std::string digest(const std::string& text) {
  return fmt::format("{:016x}", std::hash<std::string>{}(text));
}

// The digest of a file's content, read with bounds (a regular file of at most 16 MiB; never
// blocks on a FIFO), so that the same content under two paths agrees; else why not.
std::string fileDigest(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return fmt::format("cannot open: {}", std::strerror(errno));
  std::string text;
  struct stat st {};
  bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= (16 << 20);
  char buffer[16 << 10];
  for (ssize_t got = 1; ok && got != 0 && text.size() <= (16u << 20);) {
    got = ::read(fd, buffer, sizeof(buffer));
    if (got > 0) text.append(buffer, static_cast<size_t>(got));
    ok = got >= 0 || errno == EINTR;
  }
  ::close(fd);
  return ok ? digest(text) : "not a readable regular file of at most 16 MiB";
}

// "rank 3" / "ranks 0, 2-5, 7" (long lists cut short).
std::string rankList(const std::vector<int>& ranks) {
  std::string out;
  size_t runs = 0, i = 0;
  for (; i < ranks.size() && runs < 8; ++runs) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    out +=
        fmt::format("{}{}", out.empty() ? "" : ", ",
                    j == i ? std::to_string(ranks[i]) : fmt::format("{}-{}", ranks[i], ranks[j]));
    i = j + 1;
  }
  if (i < ranks.size()) out += fmt::format(", ... ({} ranks)", ranks.size());
  return (ranks.size() == 1 ? "rank " : "ranks ") + out;
}

}  // namespace

std::vector<WireSetting> wireSettings(const Snapshot& settings, const WireContext& context) {
  std::vector<WireSetting> out;
  const bool host = context.backend == "host";
  out.push_back({"STARSCREAM_BACKEND", context.backend, context.backend});
  out.push_back({"STARSCREAM_ALGO", context.algos, shown(settings, "STARSCREAM_ALGO")});
  for (const char* name : {"STARSCREAM_ZERO_COPY_GRID", "STARSCREAM_HOST_SLOTS",
                           "STARSCREAM_HOST_SLOT_BYTES", "STARSCREAM_HOST_CHANNELS"}) {
    std::string value = settings.getString(name);  // validate() checked the shape
    if (std::strcmp(name, "STARSCREAM_ZERO_COPY_GRID") != 0) {
      int64_t v = settings.getInt(name);
      if (std::strcmp(name, "STARSCREAM_HOST_SLOT_BYTES") == 0 && v > 0) v = (v + 63) / 64 * 64;
      value = host ? std::to_string(v) : "(not the host backend)";
    }
    out.push_back({name, value, shown(settings, name)});
  }
  const int64_t staging = settings.getString("STARSCREAM_STAGING_BYTES").empty()
                              ? static_cast<int64_t>(context.defaultStagingBytes)
                              : settings.getInt("STARSCREAM_STAGING_BYTES");
  out.push_back({"STARSCREAM_STAGING_BYTES",
                 std::to_string(staging <= 0 ? 0 : (staging - 1) / 16 + 1),
                 shown(settings, "STARSCREAM_STAGING_BYTES")});
  out.push_back(
      {"STARSCREAM_ZERO_COPY_MIN_BYTES",
       std::to_string(std::max<int64_t>(-1, settings.getInt("STARSCREAM_ZERO_COPY_MIN_BYTES"))),
       shown(settings, "STARSCREAM_ZERO_COPY_MIN_BYTES")});
  const std::string topo = settings.getString("STARSCREAM_TOPO_FILE");
  if (context.topologyPreset)
    out.push_back({"STARSCREAM_TOPO_FILE", "", "(the parent communicator's topology)"});
  else
    out.push_back({"STARSCREAM_TOPO_FILE", topo.empty() ? "" : context.topologyDigest,
                   topo.empty()
                       ? "unset (discovery)"
                       : fmt::format("'{}' (topology '{}' #{})", topo, context.topologyName,
                                     context.topologyDigest.substr(0, 8))});
  for (const char* name : {"STARSCREAM_CHECK", "STARSCREAM_TUNE", "STARSCREAM_TUNE_ONLINE"})
    out.push_back({name, settings.getString(name), shown(settings, name)});
  const std::string profile = settings.getString("STARSCREAM_TUNER_PROFILE");
  const std::string content = profile.empty() ? "" : fileDigest(profile);
  out.push_back({"STARSCREAM_TUNER_PROFILE", content,
                 profile.empty()
                     ? "unset"
                     : fmt::format("'{}' ({})", profile,
                                   content.size() == 16 ? "#" + content.substr(0, 8) : content)});
  // Read at init for the ops layer: the GEMM ops' arrival barrier is a collective kernel, and the
  // prefill split decides which ranks register their KV pools and what they exchange. Compared
  // as chosen ("auto" is not resolved: the topology that resolves it is not known yet).
  for (const char* name : {"STARSCREAM_GEMM_BARRIER", "STARSCREAM_ATTN_PREFILL"})
    out.push_back({name, settings.getString(name), shown(settings, name)});
  return out;
}

std::string describeDifferences(
    const std::vector<const char*>& names,
    const std::vector<std::vector<std::pair<uint64_t, std::string>>>& byRank) {
  std::string text;
  for (size_t s = 0; s < names.size(); ++s) {
    std::vector<std::pair<uint64_t, std::vector<int>>> groups;  // by value, in order of first rank
    for (size_t q = 0; q < byRank.size(); ++q) {
      const uint64_t v = byRank[q][s].first;
      auto g =
          std::find_if(groups.begin(), groups.end(), [&](const auto& e) { return e.first == v; });
      if (g == groups.end())
        groups.push_back({v, {static_cast<int>(q)}});
      else
        g->second.push_back(static_cast<int>(q));
    }
    if (groups.size() < 2) continue;
    text += fmt::format("{}{} is ", text.empty() ? "" : "; ", names[s]);
    for (size_t g = 0; g < groups.size() && g < 4; ++g)
      text += fmt::format("{}{} on {}",
                          g == 0                   ? ""
                          : g + 1 == groups.size() ? " but "
                                                   : ", ",
                          byRank[static_cast<size_t>(groups[g].second.front())][s].second,
                          rankList(groups[g].second));
    if (groups.size() > 4) text += fmt::format(" (and {} other values)", groups.size() - 4);
  }
  return text;
}

}  // namespace ssc::env
