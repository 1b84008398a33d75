// SPDX-License-Identifier: MIT
// starscream-model: what the tuner's cost model predicts for a machine that may not be here.
//   starscream-model --topo tools/topologies/mi300x-8x-cpx-nps4.json --collective all_reduce ...
//       -b 8 -e 1G [-f 2] [--profile F | --calibration F] [--plain] [--json] [--png chart.png]
// For every size: the predicted time and busbw of every algorithm, the model's choice, its
// speedup over the flat ring, and why: the choice's largest term (launch, a tier's latency or
// bytes at a protocol's rate, local copies) and its share of the predicted time, or, with a
// machine's calibration cache file, "measured ..." where its anchors (the sweep's own times)
// ranked the algorithms. --png draws the
// chart through Graphviz (tools/topo/render_png.h); tools/model/plot.py draws the JSON with
// matplotlib where that is installed.
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "src/core/errors.h"
#include "tools/model/chart_dot.h"
#include "tools/topo/render_png.h"
#include "tuner/calibrate.h"
#include "tuner/model.h"
#include "tuner/select.h"
#include "tuner/shipped_profiles.h"

namespace {

using ssc::Algo;
using ssc::CollKind;

bool parseSize(std::string s, uint64_t* out) {
  if (s.empty()) return false;
  uint64_t mult = 1;
  const char last = static_cast<char>(toupper(s.back()));
  if (last == 'K' || last == 'M' || last == 'G') {
    mult = last == 'K' ? 1ull << 10 : last == 'M' ? 1ull << 20 : 1ull << 30;
    s.pop_back();
  }
  try {
    size_t used = 0;
    const unsigned long long v = std::stoull(s, &used);
    if (used != s.size()) return false;
    *out = v * mult;
  } catch (...) {
    return false;
  }
  return true;
}

bool parseCollective(std::string s, CollKind* out) {
  std::string k;
  for (char c : s)
    if (c != '_') k += static_cast<char>(tolower(c));
  for (CollKind c : {CollKind::kAllReduce, CollKind::kReduceScatter, CollKind::kAllGather,
                     CollKind::kBroadcast, CollKind::kReduce})
    if (k == ssc::collName(c)) {
      *out = c;
      return true;
    }
  return false;
}

std::string human(uint64_t b) {
  if (b >= 1ull << 30 && b % (1ull << 30) == 0) return fmt::format("{}G", b >> 30);
  if (b >= 1ull << 20 && b % (1ull << 20) == 0) return fmt::format("{}M", b >> 20);
  if (b >= 1ull << 10 && b % (1ull << 10) == 0) return fmt::format("{}K", b >> 10);
  return fmt::format("{}", b);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Predict collective times on a topology with the tuner's cost model"};
  std::string topoPath, profilePath, calibrationPath, collText = "all_reduce", minText = "8",
                                                      maxText = "1G";
  int factor = 2;
  bool plain = false, json = false;
  std::string pngPath;
  ssc::ModelLimits limits;
  app.add_option("--topo", topoPath, "Topology file (tools/topologies/*.json)")->required();
  app.add_option("--collective", collText,
                 "all_reduce, reduce_scatter, all_gather, broadcast, reduce");
  app.add_option("-b,--minbytes", minText, "Smallest size (per-rank buffer, nccl-tests' meaning)");
  app.add_option("-e,--maxbytes", maxText, "Largest size");
  app.add_option("-f,--stepfactor", factor, "Size multiplier")->check(CLI::Range(2, 1024));
  app.add_option("--profile", profilePath,
                 "Tuner profile (default: the shipped one for the GPU "
                 "model, else the topology's links)");
  app.add_option("--calibration", calibrationPath,
                 "A calibration cache file (a machine's STARSCREAM_TUNE_CACHE): its profile and "
                 "its measured anchors, which rank the algorithms they reach")
      ->excludes("--profile");
  app.add_flag("--plain", plain, "Unregistered buffers (no zero-copy symmetric algorithm)");
  app.add_flag("--json", json, "Print JSON (tools/model/plot.py reads it)");
  app.add_option("--png", pngPath, "Also draw the busbw chart into this PNG (Graphviz 'dot')");
  app.add_option("--chunk-bytes", limits.chunkBytes, "FIFO chunk (GPU backend: 2 MiB)");
  app.add_option("--channels", limits.channels, "Channels (GPU backend: 2)");
  app.add_option("--ll-max-bytes", limits.llMaxBytes, "LL packet limit (GPU: 64 KiB; 0: none)");
  app.add_flag("--one-memory", limits.oneMemory, "All ranks in one memory (the host backend)");
  app.add_option("--fifo-blocks", limits.blocksPerChannel,
                 "FIFO kernel blocks per channel (the "
                 "library's 'GPU launch limits' INFO line; H200: 4, 8, 16 at K = 8, 4, 2)")
      ->check(CLI::Range(1, 1024));
  CLI11_PARSE(app, argc, argv);

  CollKind coll;
  uint64_t lo = 0, hi = 0;
  if (!parseCollective(collText, &coll)) {
    fmt::print(stderr, "starscream-model: unknown collective '{}'\n", collText);
    return 2;
  }
  if (!parseSize(minText, &lo) || !parseSize(maxText, &hi) || lo == 0 || hi < lo) {
    fmt::print(stderr, "starscream-model: bad size range '{}'..'{}'\n", minText, maxText);
    return 2;
  }
  ssc::Topology topo;
  if (ssc::loadTopologyFile(topoPath, ssc::kAnyRankCount, &topo) != sscSuccess) {
    fmt::print(stderr, "starscream-model: {}\n", ssc::lastError());
    return 1;
  }
  ssc::TunerProfile profile;
  ssc::Anchors anchors;
  if (!calibrationPath.empty()) {
    ssc::Calibration calibration;
    std::string key;
    if (ssc::loadCalibrationFile(calibrationPath, &calibration, &key) != sscSuccess) {
      fmt::print(stderr, "starscream-model: {}\n", ssc::lastError());
      return 1;
    }
    profile = std::move(calibration.profile);
    anchors = std::move(calibration.anchors);
  } else if (!profilePath.empty()) {
    if (ssc::loadProfileFile(profilePath, &profile) != sscSuccess) {
      fmt::print(stderr, "starscream-model: {}\n", ssc::lastError());
      return 1;
    }
  } else if (limits.oneMemory) {
    profile = ssc::hostProfile();  // as the library does for the host backend
  } else if (ssc::resolveProfile(topo, &profile) != sscSuccess) {
    fmt::print(stderr, "starscream-model: {}\n", ssc::lastError());
    return 1;
  }
  const ssc::Tuner tuner(topo, profile, limits, anchors);
  const int n = topo.nranks();
  const Algo algos[] = {Algo::kRing, Algo::kBidirRing, Algo::kDirect, Algo::kHierarchical,
                        Algo::kSymmetric};
  nlohmann::json rows = nlohmann::json::array();
  if (!json) {
    fmt::print("# {} ({} ranks, {} GPU(s), {} node(s)), {}, {} buffers, profile '{}' ({})\n",
               topo.name, n, topo.gpus.size(), topo.nnodes, ssc::collName(coll),
               plain ? "plain" : "registered", tuner.profile().name, tuner.profile().origin);
    fmt::print("# time us (busbw GB/s); '-': the algorithm cannot serve the call\n");
    if (!tuner.anchors().empty())
      fmt::print(
          "# {} measured series from the calibration: 'measured' choices come from their times, "
          "the columns are the model's\n",
          tuner.anchors().series.size());
    fmt::print("{:>6}", "size");
    for (Algo a : algos) fmt::print(" {:>22}", ssc::algoName(a));
    fmt::print(" {:>13} {:>9}  {}\n", "choice", "vs ring", "the choice's largest term (why)");
  }
  for (uint64_t b = lo; b <= hi; b *= static_cast<uint64_t>(factor)) {
    nlohmann::json row;
    row["bytes"] = b;
    double ringUs = 0, bestUs = 0;
    Algo best = Algo::kAuto;
    if (!json) fmt::print("{:>6}", human(b));
    for (Algo a : algos) {
      const ssc::Estimate e = tuner.estimate(coll, b, a, !plain);
      if (!e.valid) {
        row["algos"][ssc::algoName(a)] = nullptr;
        if (!json) fmt::print(" {:>22}", "-");
        continue;
      }
      const double bw = ssc::busBandwidthGBps(coll, b, n, e.timeUs);
      row["algos"][ssc::algoName(a)] = {
          {"time_us", e.timeUs}, {"busbw_gbps", bw}, {"protocol", ssc::protocolName(e.protocol)}};
      if (!json) fmt::print(" {:>22}", fmt::format("{:.1f} ({:.1f})", e.timeUs, bw));
      if (a == Algo::kRing) ringUs = e.timeUs;
      if (best == Algo::kAuto || e.timeUs < bestUs) {
        best = a;
        bestUs = e.timeUs;
      }
    }
    const ssc::Decision decision = tuner.explain(coll, b, !plain);
    const ssc::Choice chosen = decision.choice;
    const ssc::Estimate chosenEst = tuner.estimate(coll, b, chosen.algo, !plain, &chosen.protocol);
    const double chosenUs = chosenEst.timeUs;
    const std::string bound = chosenEst.valid ? tuner.boundBy(chosenEst.features) : "";
    // A choice the anchors made says so, with the times that made it; the model's term follows.
    const std::string why = decision.measured ? fmt::format("{}; model: {}", decision.why, bound)
                            : decision.why.empty() ? bound
                                                   : fmt::format("{}; {}", bound, decision.why);
    row["bound_by"] = bound;
    row["measured"] = decision.measured;
    if (!decision.why.empty()) row["anchors"] = decision.why;
    row["choice"] = ssc::algoName(chosen.algo);
    row["choice_protocol"] = ssc::protocolName(chosen.protocol);
    row["speedup_vs_ring"] = ringUs > 0 && chosenUs > 0 ? ringUs / chosenUs : 0;
    // The wide grid is the zero-copy protocol's other form: marked with a '+'.
    const std::string name = std::string(ssc::algoName(chosen.algo)) +
                             (chosen.protocol == ssc::Protocol::kZeroCopyWide ? "+" : "");
    if (!json)
      fmt::print(" {:>13} {:>8.2f}x  {}\n", name,
                 ringUs > 0 && chosenUs > 0 ? ringUs / chosenUs : 0.0, why);
    rows.push_back(row);
    if (b > hi / static_cast<uint64_t>(factor)) break;
  }
  // The figures a projection rests on, so a chart drawn from this JSON can say where they came
  // from.
  const auto link = [](const ssc::LinkSpec& l) {
    return nlohmann::json{
        {"bandwidth_gbps", l.bandwidthGBps}, {"latency_us", l.latencyUs}, {"source", l.source}};
  };
  const nlohmann::json out = {
      {"topology", topo.name},
      {"nranks", n},
      {"gpus", topo.gpus.size()},
      {"nodes", topo.nnodes},
      {"gpu_model", topo.gpus.empty() ? "" : topo.gpus[0].model},
      {"links",
       {{"usr", link(topo.intraGpu)}, {"xgmi", link(topo.interGpu)}, {"net", link(topo.network)}}},
      {"collective", ssc::collName(coll)},
      {"buffers", plain ? "plain" : "registered"},
      {"profile", tuner.profile().name},
      {"profile_origin", tuner.profile().origin},
      {"anchor_series", tuner.anchors().series.size()},
      {"rows", rows}};
  if (json) fmt::print("{}\n", out.dump(1));
  if (!pngPath.empty()) {
    const std::string err = ssc::topo::renderPng(ssc::model::chartDot(out), pngPath);
    if (!err.empty()) {
      fmt::print(stderr, "starscream-model: --png: {}\n", err);
      return 1;
    }
    fmt::print(stderr, "starscream-model: wrote {}\n", pngPath);
  }
  return 0;
}
