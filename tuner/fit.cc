// SPDX-License-Identifier: MIT
#include "tuner/fit.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "src/core/errors.h"
#include "tuner/select.h"

namespace ssc {
namespace {

constexpr int kIterations = 12;
constexpr double kTolerance = 0.3;  // relative error a point may keep without more weight
constexpr double kMaxEmphasis = 30;
constexpr double kMaxFitBandwidthGBps = 1e5;  // a bandwidth the data cannot see: effectively free
// A figure outside what a profile file may hold (profile.h) would make the calibration's cache file
// unreadable: noisy times (a loaded host) can fit a rate near 0 or a latency past any use.
double profileLatency(double us) { return std::min(us, kProfileMaxLatencyUs); }

// gpu_coll_perf's rows that pin the symmetric algorithm's protocol, by name: read from its JSON
// (readPerfJson) and written back in the error rows (modelError).
struct PinnedRow {
  const char* name;
  Protocol protocol;
};
constexpr PinnedRow kPinnedRows[] = {{"symmetric_ll", Protocol::kLL},
                                     {"symmetric_bulk", Protocol::kZeroCopy},
                                     {"symmetric_wide", Protocol::kZeroCopyWide}};

// The name a measurement's row had in the benchmark.
std::string rowName(const Measurement& m) {
  if (m.pinned)
    for (const PinnedRow& p : kPinnedRows)
      if (p.protocol == m.protocol) return p.name;
  return algoName(m.algo);
}

// Solves min ||A x - y|| with x >= 0 by fixing negative coefficients at 0 and solving again
// (an active-set loop; the systems here have at most 1 + 4 + 3 x 12 columns).
std::vector<double> nnls(const std::vector<std::vector<double>>& a, const std::vector<double>& y) {
  const size_t m = a.empty() ? 0 : a[0].size();
  std::vector<bool> active(m, true);
  std::vector<double> x(m, 0);
  for (size_t round = 0; round <= m; ++round) {
    std::vector<size_t> cols;
    for (size_t j = 0; j < m; ++j)
      if (active[j]) cols.push_back(j);
    const size_t k = cols.size();
    // Normal equations over the active columns, scaled to unit column norm.
    std::vector<double> scale(k, 0);
    for (size_t c = 0; c < k; ++c) {
      for (const auto& row : a) scale[c] += row[cols[c]] * row[cols[c]];
      scale[c] = scale[c] > 0 ? std::sqrt(scale[c]) : 1;
    }
    std::vector<std::vector<double>> n(k, std::vector<double>(k + 1, 0));
    for (size_t i = 0; i < a.size(); ++i)
      for (size_t p = 0; p < k; ++p) {
        const double ap = a[i][cols[p]] / scale[p];
        for (size_t q = 0; q < k; ++q) n[p][q] += ap * a[i][cols[q]] / scale[q];
        n[p][k] += ap * y[i];
      }
    for (size_t p = 0; p < k; ++p) n[p][p] += 1e-12;  // columns the data never exercises
    for (size_t p = 0; p < k; ++p) {                  // Gaussian elimination with partial pivoting
      size_t piv = p;
      for (size_t q = p + 1; q < k; ++q)
        if (std::fabs(n[q][p]) > std::fabs(n[piv][p])) piv = q;
      std::swap(n[p], n[piv]);
      if (std::fabs(n[p][p]) < 1e-300) continue;
      for (size_t q = 0; q < k; ++q) {
        if (q == p) continue;
        const double f = n[q][p] / n[p][p];
        for (size_t c = p; c <= k; ++c) n[q][c] -= f * n[p][c];
      }
    }
    std::fill(x.begin(), x.end(), 0);
    bool negative = false;
    for (size_t p = 0; p < k; ++p) {
      const double v = std::fabs(n[p][p]) < 1e-300 ? 0 : n[p][k] / n[p][p] / scale[p];
      x[cols[p]] = v;
      if (v < 0) {
        active[cols[p]] = false;
        negative = true;
      }
    }
    if (!negative) break;
  }
  for (double& v : x) v = std::max(v, 0.0);
  return x;
}

bool parseColl(const std::string& s, CollKind* out) {
  for (CollKind k : {CollKind::kAllReduce, CollKind::kReduceScatter, CollKind::kAllGather,
                     CollKind::kBroadcast, CollKind::kReduce, CollKind::kAllToAll})
    if (s == collName(k)) {
      *out = k;
      return true;
    }
  return false;
}

}  // namespace

ErrorStats modelError(const Tuner& tuner, const std::vector<Measurement>& data) {
  ErrorStats s;
  std::vector<double> errs;
  for (const Measurement& m : data) {
    const Estimate e = tuner.estimate(m.coll, m.bytes, m.algo, m.symmetric, m.as());
    if (!e.valid || m.timeUs <= 0) continue;
    const double err = std::fabs(e.timeUs - m.timeUs) / m.timeUs;
    errs.push_back(err);
    const std::string algo = rowName(m);  // pinned rows keep the benchmark's name
    s.rows.push_back(fmt::format("{} {} {} {:.2f} {:.2f} {:+.1f}%", collName(m.coll), algo, m.bytes,
                                 e.timeUs, m.timeUs, 100 * (e.timeUs - m.timeUs) / m.timeUs));
    if (err >= s.worst) {
      s.worst = err;
      s.worstWhat = fmt::format("{} {} {} B: model {:.1f} us, measured {:.1f} us", collName(m.coll),
                                algo, m.bytes, e.timeUs, m.timeUs);
    }
  }
  s.points = errs.size();
  if (!errs.empty()) {
    std::sort(errs.begin(), errs.end());
    const size_t h = errs.size() / 2;
    s.median = errs.size() % 2 ? errs[h] : (errs[h - 1] + errs[h]) / 2;
  }
  return s;
}

namespace {

// Columns: launch, each protocol's launch extra, then per (tier, protocol) pair its latency,
// 1 / bandwidth and 1 / store bandwidth.
constexpr int kPairs = kNumTiers * kNumProtocols;
constexpr int kLat = 1 + kNumProtocols, kBw = kLat + kPairs, kStore = kBw + kPairs,
              kCols = kStore + kPairs;

// The largest all-gather the wide grid keeps (ProfileVariant::wideGridMaxBytes), from the pinned
// rows of both grids: from the largest size down, while the bulk grid was faster, the wide grid
// is dropped; the limit is the first size where it was not slower. `keep` when the data has no
// size with both grids; 0 when the wide grid was not slower at the largest size.
double wideGridLimit(const std::vector<Measurement>& data, double keep) {
  std::map<uint64_t, std::pair<double, double>> grids;  // bytes -> (bulk us, wide us); 0: none
  for (const Measurement& m : data)
    if (m.pinned && m.coll == CollKind::kAllGather && m.algo == Algo::kSymmetric) {
      auto& g = grids[m.bytes];
      if (m.protocol == Protocol::kZeroCopy) g.first = m.timeUs;
      if (m.protocol == Protocol::kZeroCopyWide) g.second = m.timeUs;
    }
  double limit = -1;
  bool any = false;
  for (auto it = grids.rbegin(); it != grids.rend(); ++it) {
    const auto [bulk, wide] = it->second;
    if (bulk <= 0 || wide <= 0) continue;
    any = true;
    if (bulk < wide) {
      limit = 1;  // dropped here and above; 1 byte: below every size measured so far
      continue;
    }
    return limit < 0 ? 0 : static_cast<double>(it->first);
  }
  return any ? limit : keep;
}

}  // namespace

sscResult_t fitVariant(const Topology& topo, const ModelLimits& limits, const TunerProfile& start,
                       const std::vector<Measurement>& data, double copyGBps, ProfileVariant* out) {
  if (data.empty()) return fail(sscInvalidArgument, "fit: no measurements");
  TunerProfile profile = start;
  if (profile.variants.empty()) profile = defaultProfile(topo);
  ProfileVariant v = profile.variantFor(topo.maxPartitions());
  v.partitionsPerGpu = topo.maxPartitions();
  if (copyGBps > 0) v.copyGBps = copyGBps;
  // One rank has no grid to choose (every call is one copy).
  if (topo.nranks() > 1) v.wideGridMaxBytes = wideGridLimit(data, v.wideGridMaxBytes);
  bool everUsed[kPairs] = {}, everStored[kPairs] = {}, everCalled[kNumProtocols] = {};
  // Least squares alone settles the many points well and leaves a few far off; the target is
  // also a worst case. Points that stay beyond kTolerance weigh more in each next round
  // (Lawson's reweighting toward the minimax fit).
  std::vector<double> emphasis(data.size(), 1.0);
  ProfileVariant best = v;
  double bestWorst = std::numeric_limits<double>::infinity(), bestMedian = bestWorst;
  for (int it = 0; it < kIterations; ++it) {
    std::vector<size_t> index;  // rows[k] is data[index[k]]
    profile.variants = {v};
    const Tuner tuner(topo, profile, limits);
    std::vector<std::vector<double>> rows;
    std::vector<double> ys;
    bool used[kPairs] = {}, loaded[kPairs] = {}, stored[kPairs] = {}, called[kNumProtocols] = {};
    const double copy = v.copyGBps > 0 ? v.copyGBps : std::max(1.0, topo.intraGpu.bandwidthGBps);
    for (const Measurement& m : data) {
      const Estimate e = tuner.estimate(m.coll, m.bytes, m.algo, m.symmetric, m.as());
      if (!e.valid || m.timeUs <= 0) continue;
      std::vector<double> row(kCols, 0);
      row[0] = std::max(1.0, e.features.launches);
      for (int p = 0; p < kNumProtocols; ++p) {
        row[1 + p] = e.features.calls[p];
        called[p] = called[p] || row[1 + p] > 0;
      }
      for (int t = 0; t < kNumTiers; ++t)
        for (int p = 0; p < kNumProtocols; ++p) {
          const int j = t * kNumProtocols + p;
          row[kLat + j] = e.features.latency[t][p];
          row[kBw + j] = e.features.bytes[t][p] * 1e-3;
          row[kStore + j] = e.features.storeBytes[t][p] * 1e-3;
          loaded[j] = loaded[j] || row[kBw + j] > 0;
          stored[j] = stored[j] || row[kStore + j] > 0;
          if (row[kLat + j] > 0 || loaded[j] || stored[j]) used[j] = true;
        }
      // Relative error: every point weighs the same whether it takes 5 us or 5 ms.
      const double w = emphasis[static_cast<size_t>(&m - data.data())] / m.timeUs;
      for (double& x : row) x *= w;
      index.push_back(static_cast<size_t>(&m - data.data()));
      rows.push_back(row);
      ys.push_back((m.timeUs - e.features.copyBytes / copy * 1e-3) * w);
    }
    if (rows.empty()) return fail(sscInvalidArgument, "fit: no measurement the model can serve");
    const std::vector<double> x = nnls(rows, ys);
    for (size_t k = 0; k < rows.size(); ++k) {
      double r = -ys[k];
      for (size_t c = 0; c < x.size(); ++c) r += rows[k][c] * x[c];
      const double rel = std::fabs(r) / emphasis[index[k]];  // rows carry the emphasis
      emphasis[index[k]] =
          std::min(kMaxEmphasis, emphasis[index[k]] * std::max(1.0, rel / kTolerance));
    }
    // Every call pays the launch and exactly one protocol's extra, so only their sums are
    // determined: the launch takes the least extra of the protocols seen, which leaves the
    // lightest kernel's extra at 0.
    double least = std::numeric_limits<double>::infinity();
    for (int p = 0; p < kNumProtocols; ++p)
      if (called[p]) least = std::min(least, x[1 + p]);
    if (!std::isfinite(least)) least = 0;
    v.launchUs = profileLatency(x[0] + least);
    for (int p = 0; p < kNumProtocols; ++p)
      if (called[p]) {
        everCalled[p] = true;
        v.launchExtraUs[p] = profileLatency(x[1 + p] - least);
      }
    for (int t = 0; t < kNumTiers; ++t)
      for (int p = 0; p < kNumProtocols; ++p) {
        const int j = t * kNumProtocols + p;
        if (!used[j]) continue;
        everUsed[j] = true;
        AlphaBeta& ab = v.tiers[t][p];
        ab.latencyUs = profileLatency(x[kLat + j]);
        const auto rate = [](double g) {
          return g > 1 / kMaxFitBandwidthGBps ? std::max(1 / g, kProfileMinBandwidthGBps)
                                              : kMaxFitBandwidthGBps;
        };
        if (stored[j]) {
          everStored[j] = true;
          ab.storeBandwidthGBps = rate(x[kStore + j]);
        }
        // A pair the data only stores with (the wide grid: all-gather's push) takes its store
        // figure as its load figure too, so that it counts as given.
        if (loaded[j] || !stored[j])
          ab.bandwidthGBps = rate(x[kBw + j]);
        else
          ab.bandwidthGBps = ab.storeBandwidthGBps;
      }
    // A round's new figures can move critical paths so that the next linear fit starts from a
    // worse place (at K = 8 the rounds can drift away): keep the round whose own prediction has
    // the least worst-case error (then the least median), not merely the last one.
    profile.variants = {v};
    const ErrorStats err = modelError(Tuner(topo, profile, limits), data);
    if (err.worst < bestWorst || (err.worst == bestWorst && err.median < bestMedian)) {
      best = v;
      bestWorst = err.worst;
      bestMedian = err.median;
    }
  }
  v = best;
  // Pairs the data never exercised keep no figure: the model then takes the topology's link,
  // and the profile does not claim a measurement it does not have.
  for (int t = 0; t < kNumTiers; ++t)
    for (int p = 0; p < kNumProtocols; ++p) {
      if (!everUsed[t * kNumProtocols + p]) v.tiers[t][p] = AlphaBeta{};
      if (!everStored[t * kNumProtocols + p]) v.tiers[t][p].storeBandwidthGBps = 0;  // = bandwidth
    }
  for (int p = 0; p < kNumProtocols; ++p)
    if (!everCalled[p]) v.launchExtraUs[p] = 0;
  *out = v;
  return sscSuccess;
}

sscResult_t readPerfJson(const std::string& path, std::vector<Measurement>* out, int* k,
                         double* copyGBps) {
  std::ifstream in(path);
  if (!in) return fail(sscInvalidArgument, "perf results {}: cannot open", path);
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(ss.str());
    *k = j.value("K", 0);
    *copyGBps = j.value("copy_GBps", 0.0);
    for (const auto& r : j.at("results")) {
      Measurement m;
      Algo a;
      if (!parseColl(r.at("coll").get<std::string>(), &m.coll)) continue;
      std::string algo = r.at("algo").get<std::string>();
      for (const PinnedRow& p : kPinnedRows)
        if (algo == p.name) {
          m.pinned = true;
          m.protocol = p.protocol;
          algo = "symmetric";
        }
      if (algo == "default" || !parseAlgoName(algo, &a) || a == Algo::kAuto) continue;
      if (a == Algo::kSymmetric && !m.pinned && m.coll == CollKind::kAllGather) continue;
      m.algo = a;
      m.bytes = r.at("bytes").get<uint64_t>();
      m.timeUs = r.at("time_us").get<double>();
      out->push_back(m);
    }
  } catch (const std::exception& e) {
    return fail(sscInvalidArgument, "perf results {}: {}", path, e.what());
  }
  return sscSuccess;
}

}  // namespace ssc
