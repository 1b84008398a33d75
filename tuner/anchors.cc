// SPDX-License-Identifier: MIT
#include "tuner/anchors.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "src/core/errors.h"

namespace ssc {
namespace {

using Json = nlohmann::json;

constexpr CollKind kColls[] = {CollKind::kAllReduce, CollKind::kReduceScatter, CollKind::kAllGather,
                               CollKind::kBroadcast, CollKind::kReduce,        CollKind::kAllToAll,
                               CollKind::kSendRecv};
constexpr Algo kAlgos[] = {Algo::kRing, Algo::kBidirRing, Algo::kDirect, Algo::kHierarchical,
                           Algo::kSymmetric};
// Sanity bounds, as for a profile's figures: a typo fails with a message.
constexpr double kMaxBytes = 1e15, kMaxTimeUs = 1e9;
constexpr size_t kMaxSeries = 256, kMaxPoints = 256;

std::string sizeText(uint64_t b) {
  if (b >= uint64_t{1} << 30 && b % (uint64_t{1} << 30) == 0) return fmt::format("{} GiB", b >> 30);
  if (b >= uint64_t{1} << 20 && b % (uint64_t{1} << 20) == 0) return fmt::format("{} MiB", b >> 20);
  if (b >= uint64_t{1} << 10 && b % (uint64_t{1} << 10) == 0) return fmt::format("{} KiB", b >> 10);
  return fmt::format("{} B", b);
}

template <class T, size_t N>
bool byName(const std::string& name, const T (&all)[N], const char* (*nameOf)(T), T* out) {
  for (T v : all)
    if (name == nameOf(v)) {
      *out = v;
      return true;
    }
  return false;
}

}  // namespace

std::string candidateName(Algo algo, Protocol protocol) {
  if (algo != Algo::kSymmetric) return algoName(algo);
  return fmt::format("{}/{}", algoName(algo), protocolName(protocol));
}

bool Anchors::timeAt(CollKind coll, Algo algo, Protocol protocol, uint64_t bytes, double* us,
                     std::string* where) const {
  if (bytes == 0) return false;
  const AnchorSeries* s = nullptr;
  for (const AnchorSeries& c : series)
    if (c.coll == coll && c.algo == algo && c.protocol == protocol && !c.points.empty()) s = &c;
  if (s == nullptr) return false;
  const auto& p = s->points;
  const double x = static_cast<double>(bytes);
  if (x * kAnchorReach < static_cast<double>(p.front().bytes) ||
      x > kAnchorReach * static_cast<double>(p.back().bytes))
    return false;
  if (p.size() == 1) {
    *us = p[0].timeUs;
    if (where != nullptr) *where = sizeText(p[0].bytes);
    return true;
  }
  // The segment around `bytes`, or the nearest one beyond an end.
  size_t hi = 1;
  while (hi + 1 < p.size() && p[hi].bytes < bytes) ++hi;
  const AnchorPoint &a = p[hi - 1], &b = p[hi];
  const double lx = std::log(static_cast<double>(b.bytes) / static_cast<double>(a.bytes));
  double slope = std::log(b.timeUs / a.timeUs) / lx;
  const bool inside = bytes >= a.bytes && bytes <= b.bytes;
  if (!inside) slope = std::clamp(slope, 0.0, 1.0);
  // From the nearer end of the segment: beyond it, the last measured point is where it starts.
  const AnchorPoint& from = bytes > b.bytes ? b : a;
  *us = from.timeUs * std::exp(slope * std::log(x / static_cast<double>(from.bytes)));
  if (where != nullptr) {
    if (bytes == a.bytes || bytes == b.bytes)
      *where = sizeText(bytes);
    else if (inside)
      *where = fmt::format("{} - {}", sizeText(a.bytes), sizeText(b.bytes));
    else
      *where = fmt::format("{} beyond {}", sizeText(bytes),
                           sizeText(bytes < a.bytes ? a.bytes : b.bytes));
  }
  return true;
}

AnchoredRanking rankWithAnchors(const Anchors& anchors, CollKind coll, uint64_t bytes,
                                const std::vector<RankedCandidate>& cands) {
  AnchoredRanking out;
  const size_t none = cands.size();
  size_t modelBest = none, measuredBest = none, unmeasuredBest = none;
  std::vector<double> measured(cands.size(), 0);
  std::vector<std::string> where(cands.size());
  std::vector<bool> reached(cands.size(), false);
  for (size_t i = 0; i < cands.size(); ++i) {
    const RankedCandidate& c = cands[i];
    if (modelBest == none || c.modelUs < cands[modelBest].modelUs) modelBest = i;
    if (!anchors.empty() &&
        anchors.timeAt(coll, c.algo, c.protocol, bytes, &measured[i], &where[i])) {
      reached[i] = true;
      if (measuredBest == none || measured[i] < measured[measuredBest]) measuredBest = i;
    } else if (unmeasuredBest == none || c.modelUs < cands[unmeasuredBest].modelUs) {
      unmeasuredBest = i;
    }
  }
  out.best = modelBest == none ? 0 : modelBest;
  // One measured candidate ranks nothing: set against the others on the model's scale (below),
  // the model's ranking is what would decide.
  if (std::count(reached.begin(), reached.end(), true) < 2) return out;
  // Measured times closer than kMeasuredTie are a tie, which the model breaks: a sweep's timings
  // of one call differ by a few percent from batch to batch, so a smaller difference ranks noise,
  // and where every candidate is bound by the same launch or enqueue (the smallest calls), noise
  // would pick a heavier kernel than the model knows it to be.
  size_t pick = measuredBest;
  for (size_t i = 0; i < cands.size(); ++i)
    if (reached[i] && measured[i] <= measured[measuredBest] * (1 + kMeasuredTie) &&
        cands[i].modelUs < cands[pick].modelUs)
      pick = i;
  // The measured winner meets the unmeasured candidates on the model's scale: its measured time
  // against their predictions would set two kinds of error against each other.
  if (unmeasuredBest != none && cands[unmeasuredBest].modelUs < cands[pick].modelUs) {
    out.best = unmeasuredBest;
    out.why = fmt::format("model: {} was not measured here and beats {} ({:.1f} us measured)",
                          candidateName(cands[unmeasuredBest].algo, cands[unmeasuredBest].protocol),
                          candidateName(cands[pick].algo, cands[pick].protocol), measured[pick]);
    return out;
  }
  out.best = pick;
  out.measured = true;
  out.why = fmt::format("measured {:.1f} us ({})", measured[pick], where[pick]);
  if (pick != measuredBest)
    out.why += fmt::format(", within {:.0f} % of {}'s {:.1f} us: a tie the model breaks",
                           100 * kMeasuredTie,
                           candidateName(cands[measuredBest].algo, cands[measuredBest].protocol),
                           measured[measuredBest]);
  size_t next = none;
  for (size_t i = 0; i < cands.size(); ++i)
    if (i != pick && i != measuredBest && reached[i] &&
        (next == none || measured[i] < measured[next]))
      next = i;
  if (next != none)
    out.why += fmt::format(", next {} {:.1f} us",
                           candidateName(cands[next].algo, cands[next].protocol), measured[next]);
  if (modelBest != pick)
    out.why += fmt::format("; the model alone: {}",
                           candidateName(cands[modelBest].algo, cands[modelBest].protocol));
  return out;
}

std::string anchorsToJson(const Anchors& anchors) {
  Json out = Json::array();
  for (const AnchorSeries& s : anchors.series) {
    Json points = Json::array();
    for (const AnchorPoint& p : s.points) points.push_back(Json::array({p.bytes, p.timeUs}));
    out.push_back({{"collective", collName(s.coll)},
                   {"algorithm", algoName(s.algo)},
                   {"protocol", protocolName(s.protocol)},
                   {"points", points}});
  }
  return out.dump();
}

sscResult_t parseAnchors(const std::string& text, const std::string& origin, Anchors* out) {
  auto bad = [&](const std::string& field, const std::string& what) {
    return fail(sscInvalidArgument, "calibration anchors {}: {}: {}", origin, field, what);
  };
  Json j;
  try {
    j = Json::parse(text);
  } catch (const std::exception& e) {
    return bad("anchors", fmt::format("invalid JSON ({})", e.what()));
  }
  if (!j.is_array()) return bad("anchors", "must be an array");
  if (j.size() > kMaxSeries) return bad("anchors", "too many series");
  Anchors a;
  std::set<std::tuple<int, int, int>> seen;
  for (size_t i = 0; i < j.size(); ++i) {
    const Json& s = j[i];
    const std::string path = fmt::format("anchors[{}]", i);
    if (!s.is_object()) return bad(path, "must be an object");
    for (auto it = s.begin(); it != s.end(); ++it)
      if (it.key() != "collective" && it.key() != "algorithm" && it.key() != "protocol" &&
          it.key() != "points")
        return bad(path + "." + it.key(),
                   "unknown field (accepted: collective, algorithm, protocol, points)");
    AnchorSeries series;
    auto name = [&](const char* key, std::string* v) {
      auto it = s.find(key);
      if (it == s.end() || !it->is_string()) return false;
      *v = it->get<std::string>();
      return true;
    };
    std::string coll, algo, proto;
    if (!name("collective", &coll) || !byName(coll, kColls, collName, &series.coll))
      return bad(path + ".collective", fmt::format("'{}' is not a collective", coll));
    if (!name("algorithm", &algo) || !byName(algo, kAlgos, algoName, &series.algo))
      return bad(path + ".algorithm", fmt::format("'{}' is not an algorithm", algo));
    bool protoOk = name("protocol", &proto);
    if (protoOk) {
      protoOk = false;
      for (int p = 0; p < kNumProtocols; ++p)
        if (proto == protocolName(static_cast<Protocol>(p))) {
          series.protocol = static_cast<Protocol>(p);
          protoOk = true;
        }
    }
    if (!protoOk) return bad(path + ".protocol", fmt::format("'{}' is not a protocol", proto));
    if (!seen.insert({static_cast<int>(series.coll), static_cast<int>(series.algo),
                      static_cast<int>(series.protocol)})
             .second)
      return bad(path, fmt::format("a second series for {} {}", coll,
                                   candidateName(series.algo, series.protocol)));
    auto pts = s.find("points");
    if (pts == s.end() || !pts->is_array() || pts->empty() || pts->size() > kMaxPoints)
      return bad(path + ".points",
                 fmt::format("must be an array of 1 - {} [bytes, us] pairs", kMaxPoints));
    for (size_t k = 0; k < pts->size(); ++k) {
      const Json& p = (*pts)[k];
      const std::string ppath = fmt::format("{}.points[{}]", path, k);
      if (!p.is_array() || p.size() != 2 || !p[0].is_number_unsigned() || !p[1].is_number())
        return bad(ppath, "must be [bytes (a positive integer), us (a number)]");
      const uint64_t bytes = p[0].get<uint64_t>();
      const double us = p[1].get<double>();
      if (bytes == 0 || static_cast<double>(bytes) > kMaxBytes)
        return bad(ppath, fmt::format("{} bytes is outside [1, {}]", bytes, kMaxBytes));
      if (!std::isfinite(us) || us <= 0 || us > kMaxTimeUs)
        return bad(ppath, fmt::format("{} us is outside (0, {}]", us, kMaxTimeUs));
      if (!series.points.empty() && bytes <= series.points.back().bytes)
        return bad(ppath, "sizes must ascend");
      series.points.push_back({bytes, us});
    }
    a.series.push_back(std::move(series));
  }
  *out = std::move(a);
  return sscSuccess;
}

}  // namespace ssc
