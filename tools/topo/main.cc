// SPDX-License-Identifier: MIT
// starscream-topo: shows the topology graph Starscream would use, as text (default), JSON
// (--json, itself a valid emulation file) or Graphviz DOT (--dot), optionally rendered to a
// PNG (--png). Input: an emulation file (--file, else STARSCREAM_TOPO_FILE as the library reads
// it), or this machine. All formatting lives in src/topology/ so that the tests check what this
// prints.
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "src/core/env.h"
#include "src/core/errors.h"
#include "src/topology/discovery.h"
#include "src/topology/provider.h"
#include "src/topology/topology.h"
#include "src/topology/topology_format.h"
#include "tools/topo/render_png.h"

namespace {

// This machine as one rank of a communicator would see it: discoverLocal with no GPU (the tool
// does not start a GPU runtime), then buildTopology over that single rank.
sscResult_t localTopology(const ssc::DiscoveryOptions& options, ssc::Topology* out) {
  ssc::LocalRankInfo info;
  SSC_CHECK(ssc::discoverLocal(nullptr, options, &info));
  SSC_CHECK(ssc::buildTopology({info}, out));
  out->name = "local";
  return sscSuccess;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "starscream-topo: print the two-tier topology (node > GPU > partition) Starscream "
      "builds, from an emulation file or this machine"};
  std::string file, png;
  int nranks = ssc::kAnyRankCount;
  bool json = false, dot = false, sources = false;
  app.add_option("-f,--file", file, "Emulation topology file (tools/topologies/*.json)")
      ->check(CLI::ExistingFile);
  app.add_option("-n,--nranks", nranks,
                 "Fail unless the file describes this many ranks (as a communicator would)")
      ->check(CLI::PositiveNumber);
  auto* jsonFlag = app.add_flag("--json", json, "Print JSON (a valid topology file)");
  auto* dotFlag = app.add_flag("--dot", dot, "Print Graphviz DOT");
  jsonFlag->excludes(dotFlag);
  app.add_flag("--sources", sources, "Also say where each link figure comes from (text view)");
  app.add_option("--png", png, "Also render the graph to this PNG file (needs Graphviz 'dot')");
  ssc::DiscoveryOptions options;
  app.add_option("--sysfs-root", options.sysfsRoot, "Where discovery reads sysfs (default /sys)");
  app.footer(
      "Without --file, STARSCREAM_TOPO_FILE names the file, as it does for the library; with\n"
      "neither, this machine is discovered (sysfs, hwloc, rocm-smi).\n\n"
      "Examples:\n"
      "  starscream-topo                         # this machine\n"
      "  starscream-topo -f tools/topologies/mi300x-8x-cpx-nps4.json --png topo.png\n"
      "  STARSCREAM_TOPO_FILE=tools/topologies/2x4.json starscream-topo --json");
  CLI11_PARSE(app, argc, argv);

  // The library's rule: STARSCREAM_TOPO_FILE replaces discovery. --file wins over it.
  std::string from = "--file";
  if (file.empty()) {
    file = ssc::env::getString("STARSCREAM_TOPO_FILE");
    from = "STARSCREAM_TOPO_FILE";
  }

  ssc::Topology topo;
  const sscResult_t rc =
      file.empty() ? localTopology(options, &topo) : ssc::loadTopologyFile(file, nranks, &topo);
  if (rc != sscSuccess) {
    std::fprintf(stderr, "starscream-topo: %s%s\n", ssc::lastError().c_str(),
                 file.empty() ? "" : (" (file from " + from + ")").c_str());
    return 1;
  }
  if (!file.empty() && from != "--file" && !json && !dot)
    std::printf("(from STARSCREAM_TOPO_FILE=%s)\n", file.c_str());
  const std::string text = json  ? ssc::topologyToJson(topo)
                           : dot ? ssc::formatTopologyDot(topo)
                                 : ssc::formatTopologyText(topo, sources);
  std::fputs(text.c_str(), stdout);
  // The local text view adds what hwloc sees, GPUs and NICs included: on a machine without a
  // GPU runtime that is the part of the picture the single-rank graph cannot show.
  ssc::MachineSummary machine;
  if (file.empty() && !json && !dot && ssc::hwlocMachineSummary(&machine))
    std::fputs(ssc::formatMachineSummary(machine).c_str(), stdout);
  if (!png.empty()) {
    const std::string error = ssc::topo::renderPng(ssc::formatTopologyDot(topo), png);
    if (!error.empty()) {
      std::fprintf(stderr, "starscream-topo: --png %s: %s\n", png.c_str(), error.c_str());
      return 1;
    }
    // On stderr: stdout may be the JSON or DOT a caller pipes on.
    std::fprintf(stderr, "starscream-topo: wrote %s\n", png.c_str());
  }
  return 0;
}
