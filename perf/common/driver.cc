// SPDX-License-Identifier: MIT
// perfMain: the sequence every perf program runs. Parse the flags, put -A and -T into the
// environment before the communicator exists, print nccl-tests' header, create the communicator,
// run every requested type x op x root over the sizes, print the footer, exit with a code that
// says whether anything was wrong.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "perf/common/bench.h"
#include "perf/common/collective.h"

namespace ssc::perf {
namespace {

std::vector<sscDataType_t> typesToRun(const Options& o) {
  if (o.type) return {*o.type};
  const auto all = allTypes();
  return {all.begin(), all.end()};
}

std::vector<PerfOp> opsToRun(const Options& o, CollKind kind) {
  if (!collReduces(kind)) return {PerfOp::kNone};
  if (o.op) return {*o.op};
  const auto all = allReduceOps();
  return {all.begin(), all.end()};
}

std::vector<int> rootsToRun(const Options& o, CollKind kind, int nranks) {
  if (!collHasRoot(kind)) return {0};
  if (o.root >= 0) return {o.root};
  std::vector<int> roots;
  for (int r = 0; r < nranks; ++r) roots.push_back(r);
  return roots;
}

}  // namespace

int perfMain(int argc, char** argv, const Collective& collective) {
  setlinebuf(stdout);  // rows appear as they finish, also through mpirun's pipes
  const std::string program = programName(argv[0]);
  const World world = startMpi(&argc, &argv);
  const bool printer = world.rank == 0;

  Options options;
  const ParseResult parsed = parseArgs(argc, argv, &options);
  std::string problem = parsed.status == ParseStatus::kError ? parsed.message : "";
  if (problem.empty() && parsed.status == ParseStatus::kOk) {
    if (collHasRoot(collective.kind) && options.root >= world.nranks) {
      problem = "-r: root " + std::to_string(options.root) + " is not a rank (0.." +
                std::to_string(world.nranks - 1) + ")";
    } else {
      problem = applyEnvironment(options);
    }
  }
  if (parsed.status == ParseStatus::kHelp || !problem.empty()) {
    if (printer && !problem.empty())
      std::fprintf(stderr, "%s: %s\n", program.c_str(), problem.c_str());
    if (printer) std::fputs(usage(program).c_str(), problem.empty() ? stdout : stderr);
    stopMpi();
    return problem.empty() ? kExitOk : kExitUsage;
  }

  // -J is written by rank 0 only; every rank learns whether it could open the file.
  JsonLinesWriter json;
  if (!openJsonOnRank0(world, options.jsonFile, program, &json)) {
    stopMpi();
    return kExitUsage;
  }

  int libraryVersion = 0;
  PERF_CHECK(sscGetVersion(&libraryVersion));
  RunInfo run;
  run.program = program;
  run.collective = collName(collective.kind);
  run.algorithm = envOr("STARSCREAM_ALGO", "auto");
  run.topology = envOr("STARSCREAM_TOPO_FILE", "");
  run.hostname = world.hostname;
  run.version = versionString(libraryVersion);
  run.nranks = world.nranks;

  if (printer) {
    std::printf("# Starscream perf tests: headers %s, library %s\n",
                versionString(SSC_VERSION_CODE).c_str(), run.version.c_str());
    std::printf("# Collective test starting: %s\n", program.c_str());
    std::fputs(parsed.message.c_str(), stdout);  // warnings, e.g. -G ignored
    std::fputs(runHeader(options).c_str(), stdout);
    std::printf("# Algorithm: %s  Topology: %s  Ranks: %d\n", run.algorithm.c_str(),
                run.topology.empty() ? "(discovered)" : run.topology.c_str(), world.nranks);
    if (!options.jsonFile.empty())
      std::printf("# Writing JSON output to %s\n", options.jsonFile.c_str());
    std::printf("#\n");
  }

  Session session = openSession(world);
  const std::string ranks = gatherLines(rankLine(world.rank, world.pid, world.hostname,
                                                 session.device, describeDevice(session.device)));
  if (printer) std::printf("# Using devices\n%s", ranks.c_str());

  // nccl-tests sizes both buffers for the largest row; every row and in-place layout fits.
  DeviceBuffer send;
  DeviceBuffer recv;
  PERF_CHECK(send.allocate(options.maxBytes));
  PERF_CHECK(recv.allocate(options.maxBytes));
  void* sendHandle = nullptr;
  void* recvHandle = nullptr;
  if (options.localRegister) {
    PERF_CHECK(sscCommRegister(session.comm, send.data(), send.size(), &sendHandle));
    PERF_CHECK(sscCommRegister(session.comm, recv.data(), recv.size(), &recvHandle));
  }

  if (printer) std::printf("#\n%s", tableHeader(options.reportCpuTime).c_str());
  Bench bench(options, collective, world, session, &send, &recv, run,
              json.isOpen() ? &json : nullptr);
  for (sscDataType_t type : typesToRun(options)) {
    for (PerfOp op : opsToRun(options, collective.kind)) {
      for (int root : rootsToRun(options, collective.kind, world.nranks)) {
        bench.timeTest(type, op, root);
      }
    }
  }

  const BenchTotals& totals = bench.totals();
  const int64_t errors = sumOverRanks(totals.failedChecks);
  const double avgBusBw = totals.busBwCount > 0 ? totals.busBwSum / totals.busBwCount : 0.0;
  if (printer) {
    std::fputs(footer(errors, avgBusBw).c_str(), stdout);
    std::printf("# Collective test concluded: %s\n", program.c_str());
  }

  if (options.localRegister) {
    PERF_CHECK(sscCommDeregister(session.comm, sendHandle));
    PERF_CHECK(sscCommDeregister(session.comm, recvHandle));
  }
  send.reset();
  recv.reset();
  closeSession(&session);
  stopMpi();
  return errors > 0 ? kExitWrongResults : kExitOk;
}

}  // namespace ssc::perf
