// SPDX-License-Identifier: MIT
// starscream-tune: calibrates the tuner's cost model on this machine and writes a profile.
//   starscream-tune --topo 'tools/topologies/h200-mps-{K}.json' --out h200-mps.json ...
//       --sweep 'tools/emulate/partition-run.sh {K} build/bin/gpu_coll_perf 268435456 {json}' -K 8
//   starscream-tune --topo ... --out ... --from sweep-k8.json --from sweep-k2.json
//   mpirun -np 8 starscream-tune --calibrate [--budget SECONDS]   (this machine's calibration
//       cache, with a longer sweep than communicator init's; docs/tuner.md)
// The sweep command (gpu_coll_perf: every algorithm, 8 B up) writes its JSON to {json}; each
// result file (one per partition count K) becomes one profile variant, fitted per tier and
// protocol (tuner/fit.h). Prints the model-vs-measured error of each variant.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "src/core/errors.h"
#include "tools/tune/calibrate_mpi.h"
#include "tuner/fit.h"

namespace {

std::string replaceAll(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "--calibrate") return runCalibrate(argc, argv);
  CLI::App app{"Fit the tuner's cost model to measured collectives and write a profile"};
  std::string topoPattern, outPath, sweep, name = "measured", model, source;
  std::vector<std::string> from;
  std::vector<int> ks;
  uint64_t chunk = 2ull << 20, llMax = 64 << 10;
  int channels = 2;
  double cacheMB = 0;
  std::string pointsPath, checkPath;
  std::vector<std::string> blocksSpec;
  app.add_option("--topo", topoPattern, "Topology file; {K} is replaced by the partition count")
      ->required();
  app.add_option("--out", outPath, "Profile to write")->required();
  app.add_option("--from", from, "gpu_coll_perf JSON results (one per K); skips the sweep");
  app.add_option("--sweep", sweep, "Command running the sweep at K ranks into {json}");
  app.add_option("-K", ks, "Partition counts to sweep (with --sweep)");
  app.add_option("--name", name, "Profile name");
  app.add_option("--gpu-model", model, "Profile gpu_model (default: the topology's)");
  app.add_option("--source", source, "Profile source text");
  app.add_option("--chunk-bytes", chunk, "FIFO chunk of the backend measured (GPU: 2 MiB)");
  app.add_option("--channels", channels, "Channels of the backend measured (GPU: 2)");
  app.add_option("--ll-max-bytes", llMax, "LL packet limit of the backend measured (GPU: 64 KiB)");
  app.add_option("--cache-mb", cacheMB,
                 "The GPU's last-level cache, MB (H200: 50 L2), kept "
                 "in every variant: one-rank calls that fit in it cost their launch only");
  app.add_option("--fifo-blocks", blocksSpec,
                 "K=B: the FIFO kernel ran B blocks per channel at "
                 "K partitions (the library's INFO line 'GPU launch limits'; H200: 8=4 4=8 2=16 "
                 "1=32); the model needs it for steps shorter than a slot (default 1)");
  app.add_option("--points", pointsPath,
                 "Also write every point (K coll algo bytes model_us "
                 "measured_us error) to this file");
  app.add_option("--check", checkPath,
                 "Only report this profile's error on the --from data "
                 "(no fit; --out is then not written)");
  CLI11_PARSE(app, argc, argv);
  std::ofstream points;
  if (!pointsPath.empty()) points.open(pointsPath);

  if (from.empty()) {
    if (sweep.empty() || ks.empty()) {
      fmt::print(stderr, "starscream-tune: give --from files, or --sweep and -K\n");
      return 2;
    }
    for (int k : ks) {
      const std::string json = fmt::format("{}.k{}.sweep.json", outPath, k);
      const std::string cmd =
          replaceAll(replaceAll(sweep, "{K}", std::to_string(k)), "{json}", json);
      fmt::print(stderr, "starscream-tune: {}\n", cmd);
      if (std::system(cmd.c_str()) != 0) {
        fmt::print(stderr, "starscream-tune: the sweep failed: {}\n", cmd);
        return 1;
      }
      from.push_back(json);
    }
  }
  ssc::TunerProfile profile;
  profile.name = name;
  profile.source = source;
  std::map<int, int> blocksAt;
  for (const std::string& kb : blocksSpec) {
    const auto eq = kb.find('=');
    const int k = eq == std::string::npos ? 0 : std::atoi(kb.substr(0, eq).c_str());
    const int b = eq == std::string::npos ? 0 : std::atoi(kb.substr(eq + 1).c_str());
    if (k < 1 || b < 1) {
      fmt::print(stderr, "starscream-tune: --fifo-blocks '{}': want K=B with K, B >= 1\n", kb);
      return 2;
    }
    blocksAt[k] = b;
  }
  const ssc::ModelLimits base{chunk, channels, llMax, 4};
  fmt::print("{:>3} {:>7} {:>9} {:>9}  worst point\n", "K", "points", "median", "worst");
  for (const std::string& path : from) {
    std::vector<ssc::Measurement> data;
    int k = 0;
    double copy = 0;
    if (ssc::readPerfJson(path, &data, &k, &copy) != sscSuccess) {
      fmt::print(stderr, "starscream-tune: {}\n", ssc::lastError());
      return 1;
    }
    ssc::ModelLimits limits = base;
    if (auto it = blocksAt.find(k); it != blocksAt.end()) limits.blocksPerChannel = it->second;
    ssc::Topology topo;
    const std::string topoPath = replaceAll(topoPattern, "{K}", std::to_string(k));
    if (ssc::loadTopologyFile(topoPath, k, &topo) != sscSuccess) {
      fmt::print(stderr, "starscream-tune: {}\n", ssc::lastError());
      return 1;
    }
    if (profile.gpuModel.empty())
      profile.gpuModel = !model.empty() ? model : topo.gpus.empty() ? "" : topo.gpus[0].model;
    ssc::ProfileVariant v;
    if (!checkPath.empty()) {
      ssc::TunerProfile given;
      if (ssc::loadProfileFile(checkPath, &given) != sscSuccess) {
        fmt::print(stderr, "starscream-tune: {}\n", ssc::lastError());
        return 1;
      }
      const ssc::ErrorStats err = ssc::modelError(ssc::Tuner(topo, given, limits), data);
      fmt::print("{:>3} {:>7} {:>8.1f}% {:>8.1f}%  {}\n", k, err.points, 100 * err.median,
                 100 * err.worst, err.worstWhat);
      for (const std::string& row : err.rows) points << k << ' ' << row << '\n';
      continue;
    }
    // gpu_coll_perf's copy figure is all K ranks copying at once: one rank's share is 1/K.
    const double perRankCopy = k > 0 ? copy / k : copy;
    ssc::TunerProfile start = ssc::defaultProfile(topo);
    start.variants[0].cacheMB = cacheMB;
    if (ssc::fitVariant(topo, limits, start, data, perRankCopy, &v) != sscSuccess) {
      fmt::print(stderr, "starscream-tune: {}: {}\n", path, ssc::lastError());
      return 1;
    }
    ssc::TunerProfile one = profile;
    one.variants = {v};
    const ssc::ErrorStats err = ssc::modelError(ssc::Tuner(topo, one, limits), data);
    fmt::print("{:>3} {:>7} {:>8.1f}% {:>8.1f}%  {}\n", k, err.points, 100 * err.median,
               100 * err.worst, err.worstWhat);
    for (const std::string& row : err.rows) points << k << ' ' << row << '\n';
    profile.variants.push_back(v);
  }
  if (!checkPath.empty()) return 0;
  std::ofstream out(outPath);
  out << ssc::profileToJson(profile);
  if (!out) {
    fmt::print(stderr, "starscream-tune: cannot write {}\n", outPath);
    return 1;
  }
  fmt::print(stderr, "starscream-tune: wrote {}\n", outPath);
  return 0;
}
