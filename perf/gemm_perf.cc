// SPDX-License-Identifier: MIT
// gemmPerfMain: what gemm_rs_perf and ag_gemm_perf run. The collective tools' sequence
// (common/driver.cc) for the fused GEMM-collectives of starscream_ops.h: parse
// (common/gemm_args.h), header, communicator, then for every type, layer and M one row: warm-up
// calls, timed calls from a barrier to a stream synchronize, the check, the row and its JSON
// record; the footer; an exit code that says whether anything was wrong. Runs on either backend
// (the host backend's GEMM is the CPU reference, for tests; timings mean something on the GPU).
#include "perf/gemm_perf.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "perf/common/datatype.h"
#include "perf/common/device_buffer.h"
#include "perf/common/gemm_args.h"
#include "perf/common/launch.h"
#include "starscream/starscream_ops.h"

namespace ssc::perf {
namespace {

// Element (row, col) of a seeded matrix before rounding: uniform in [-1, 1), any element on
// demand, so the check recomputes the few it needs of every rank's inputs without holding them.
double uniform(uint64_t seed, int64_t row, int64_t col, int64_t cols) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(row * cols + col) + 1;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

// The element as the GEMM sees it: rounded to `type`.
double element(uint64_t seed, int64_t row, int64_t col, int64_t cols, sscDataType_t type) {
  unsigned char bytes[8];
  encode(type, uniform(seed, row, col, cols), bytes);
  return decode(type, bytes);
}

// rows x cols of the seeded matrix from row `first`, encoded, copied to `dst`.
void fill(DeviceBuffer* dst, uint64_t seed, int64_t first, int64_t rows, int64_t cols,
          sscDataType_t type) {
  const size_t elt = typeSize(type);
  std::vector<unsigned char> host(static_cast<size_t>(rows * cols) * elt);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      encode(type, uniform(seed, first + r, c, cols), &host[(r * cols + c) * elt]);
  PERF_CHECK(dst->allocate(std::max<size_t>(host.size(), 1)));
  if (!host.empty()) PERF_CHECK(copyToDevice(dst->data(), host.data(), host.size()));
}

struct Shape {
  bool rs;
  int64_t m, n, k;  // each rank's call (sscGemmArgs_t)
  int nranks, rank;
  int64_t first, own;  // this rank's rows (sscGemmRowShard)
};

// Seeds: the reduce-scatter's X and W differ by rank (each holds a K-slice); the all-gather's X
// is one matrix (each rank holds its rows) and its W differ by rank (N-slices).
uint64_t xSeed(const Shape& s, int q) { return 1000 + (s.rs ? 7 * q : 0); }
uint64_t wSeed(int q) { return 5000 + 7 * q; }

// Wrong elements among up to 9 rows x 65 columns of this rank's y (spread over it, the first and
// last row and column included), against the fp64 sum of the same rounded inputs. y holds `rows`
// rows of n.
int64_t checkRows(const Shape& s, const std::vector<unsigned char>& y, int64_t rows,
                  sscDataType_t type) {
  if (rows == 0 || s.n == 0) return 0;
  std::vector<int64_t> at, cols;
  for (int i = 0; i < 8; ++i) at.push_back(std::min(rows - 1, i * std::max<int64_t>(1, rows / 7)));
  at.push_back(rows - 1);
  for (int j = 0; j < 64; ++j)
    cols.push_back(std::min(s.n - 1, j * std::max<int64_t>(1, s.n / 63)));
  cols.push_back(s.n - 1);
  for (auto* v : {&at, &cols}) {  // small outputs: each element once
    std::sort(v->begin(), v->end());
    v->erase(std::unique(v->begin(), v->end()), v->end());
  }
  const int terms = s.rs ? s.nranks : 1;
  const double eps = unitRoundoff(type);
  int64_t wrong = 0;
  for (int64_t i : at)
    for (int64_t j : cols) {
      const int64_t row = s.rs ? s.first + i : i;  // the row of the M-row problem
      double sum = 0, mag = 0, partials = 0;       // partials: sum over ranks of |rank's product|
      for (int q = 0; q < terms; ++q) {
        const int qw = s.rs ? q : s.rank;
        double part = 0;
        for (int64_t t = 0; t < s.k; ++t) {
          const double v =
              element(xSeed(s, q), row, t, s.k, type) * element(wSeed(qw), j, t, s.k, type);
          part += v;
          mag += std::fabs(v);
        }
        sum += part;
        partials += std::fabs(part);
      }
      const double got = decode(type, &y[(i * s.n + j) * typeSize(type)]);
      // Each rank's product is rounded to `type` (eps of it), the reduction may round each of
      // its running sums (a ring: nranks roundings), y is rounded once; fp32 accumulation adds
      // 2^-20 of the magnitude. A rank's whole product missing is ~1/nranks of `partials`: more.
      const double tol = eps * (terms + 2) * (partials + std::fabs(sum)) + mag * 0x1p-20 + 1e-6;
      if (!(std::fabs(got - sum) <= tol)) ++wrong;
    }
  return wrong;
}

}  // namespace

int gemmPerfMain(int argc, char** argv, bool reduceScatter) {
  setlinebuf(stdout);
  const std::string program = programName(argv[0]);
  const World world = startMpi(&argc, &argv);
  const bool printer = world.rank == 0;

  GemmFlags flags;
  std::vector<char*> rest;
  Options options = gemmDefaultOptions();
  std::string problem = splitGemmFlags(argc, argv, &flags, &rest);
  ParseResult parsed;
  std::string warnings;
  if (problem.empty()) {
    parsed = parseArgs(static_cast<int>(rest.size()), rest.data(), &options);
    warnings = parsed.message;
    if (parsed.status == ParseStatus::kError) problem = parsed.message;
  }
  if (problem.empty() && parsed.status == ParseStatus::kOk)
    problem = checkGemmOptions(options, &warnings);
  if (problem.empty() && parsed.status == ParseStatus::kOk) problem = applyEnvironment(options);
  if (parsed.status == ParseStatus::kHelp || !problem.empty()) {
    if (printer && !problem.empty())
      std::fprintf(stderr, "%s: %s\n", program.c_str(), problem.c_str());
    if (printer) std::fputs(gemmUsage(program).c_str(), problem.empty() ? stdout : stderr);
    stopMpi();
    return problem.empty() ? kExitOk : kExitUsage;
  }
  JsonLinesWriter json;
  if (!openJsonOnRank0(world, options.jsonFile, program, &json)) {
    stopMpi();
    return kExitUsage;
  }

  RunInfo run;
  run.program = program;
  run.collective = reduceScatter ? "gemm_reduce_scatter" : "all_gather_gemm";
  run.algorithm = envOr("STARSCREAM_ALGO", "auto");
  run.topology = envOr("STARSCREAM_TOPO_FILE", "");
  run.hostname = world.hostname;
  int version = 0;
  PERF_CHECK(sscGetVersion(&version));
  run.version = versionString(version);
  run.nranks = world.nranks;
  if (printer) {
    std::printf("# Starscream perf tests: library %s\n# GEMM-collective test starting: %s (%s)\n",
                run.version.c_str(), program.c_str(),
                reduceScatter ? "sscGemmReduceScatter: K split over the ranks"
                              : "sscAllGatherGemm: N split over the ranks");
    std::fputs(warnings.c_str(), stdout);
    std::fputs(gemmRunHeader(options, flags).c_str(), stdout);
    std::printf("# Algorithm: %s  Topology: %s  Ranks: %d\n", run.algorithm.c_str(),
                run.topology.empty() ? "(discovered)" : run.topology.c_str(), world.nranks);
    if (!options.jsonFile.empty())
      std::printf("# Writing JSON output to %s\n", options.jsonFile.c_str());
    std::printf("#\n");
  }
  Session session = openSession(world);
  const std::string ranks = gatherLines(rankLine(world.rank, world.pid, world.hostname,
                                                 session.device, describeDevice(session.device)));
  if (printer) std::printf("# Using devices\n%s#\n%s", ranks.c_str(), gemmTableHeader().c_str());
  // On a GPU the workspace gemm_coll_perf's table ran with (1 GiB a rank: the forced fused forms
  // hold a whole gathered X or collective there); on the host backend the library's default.
  sscGemmConfig_t config = SSC_GEMM_CONFIG_INITIALIZER;
  if (session.device >= 0) config.workspaceBytes = size_t{1} << 30;
  sscGemm_t gemm = nullptr;
  PERF_CHECK(sscGemmCreate(session.comm, &config, &gemm));

  const int P = world.nranks;
  int64_t errors = 0;
  double busSum = 0;
  int busCount = 0;
  for (sscDataType_t type : gemmTypes(options)) {
    for (const GemmLayer& layer : gemmLayers()) {
      if (!layerWanted(flags.layers, layer.name)) continue;
      for (size_t rows :
           sizeSeries(options.minBytes, options.maxBytes, options.stepFactor, options.stepBytes)) {
        Shape s{reduceScatter, static_cast<int64_t>(rows), 0, 0, P, world.rank, 0, 0};
        s.n = reduceScatter ? layer.n : (layer.n + P - 1) / P;
        s.k = reduceScatter ? (layer.k + P - 1) / P : layer.k;
        PERF_CHECK(sscGemmRowShard(s.m, P, world.rank, &s.first, &s.own));
        const int64_t yRows = reduceScatter ? s.own : s.m;
        DeviceBuffer x, w, y;
        fill(&x, xSeed(s, world.rank), reduceScatter ? 0 : s.first, reduceScatter ? s.m : s.own,
             s.k, type);
        fill(&w, wSeed(world.rank), 0, s.n, s.k, type);
        PERF_CHECK(
            y.allocate(std::max<size_t>(static_cast<size_t>(yRows * s.n) * typeSize(type), 1)));
        sscGemmArgs_t a = SSC_GEMM_ARGS_INITIALIZER;
        a.m = s.m, a.n = s.n, a.k = s.k;
        a.dtype = type;
        a.x = x.data(), a.w = w.data(), a.y = y.data();
        a.variant = flags.variant.variant;
        a.chunks = flags.variant.perRank ? P : 0;
        sscGemmVariant_t variant = sscGemmAuto;
        int chunks = 0;
        // A variant the workspace cannot hold (every rank decides alike): a line, not a row.
        if (sscGemmQueryPlan(gemm, reduceScatter ? sscGemmOpReduceScatter : sscGemmOpAllGather, &a,
                             &variant, &chunks) != sscSuccess) {
          const char* whyNot = sscGetLastError(nullptr);
          if (printer)
            std::printf("# %s M=%zu %s: not run: %s\n", layer.name, rows, typeName(type), whyNot);
          continue;
        }
        const auto call = [&] {
          PERF_CHECK(reduceScatter ? sscGemmReduceScatter(gemm, &a, session.stream)
                                   : sscAllGatherGemm(gemm, &a, session.stream));
        };
        for (int i = 0; i < options.warmupIters; ++i) call();
        PERF_CHECK(sscStreamSynchronize(session.stream));
        barrier();
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < options.iters; ++i) call();
        PERF_CHECK(sscStreamSynchronize(session.stream));
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() /
            options.iters;
        const std::vector<double> all = gatherToRoot(&seconds, 1);
        int64_t wrong = 0;
        if (options.check > 0) {
          std::vector<unsigned char> host(static_cast<size_t>(yRows * s.n) * typeSize(type));
          if (!host.empty()) PERF_CHECK(copyFromDevice(host.data(), y.data(), host.size()));
          wrong = sumOverRanks(checkRows(s, host, yRows, type));
          errors += wrong;
        }
        if (!printer) continue;
        GemmRow r;
        r.layer = layer.name;
        r.m = s.m, r.n = layer.n, r.k = layer.k, r.rankN = s.n, r.rankK = s.k;
        r.type = typeName(type);
        r.variant = variant == sscGemmFused     ? "fused x" + std::to_string(chunks)
                    : variant == sscGemmChunked ? "chunked x" + std::to_string(chunks)
                                                : std::string("unfused");
        const double t = combineOverRanks(all, options.average);
        r.timeUs = t * 1e6;
        r.tflops = t > 0 ? 2.0 * r.m * r.n * r.k / t / 1e12 : 0;
        r.bw = gemmBandwidth(reduceScatter, r.m, r.n, r.k, typeSize(type), t, P);
        r.checked = options.check > 0;
        r.wrong = wrong;
        busSum += r.bw.busBw;
        ++busCount;
        std::fputs(gemmRowText(r).c_str(), stdout);
        if (json.isOpen()) json.write(gemmRowJson(run, options, flags, r, isoDateUtcNow()));
      }
    }
  }
  if (printer) {
    std::fputs(footer(errors, busCount > 0 ? busSum / busCount : 0.0).c_str(), stdout);
    std::printf("# GEMM-collective test concluded: %s\n", program.c_str());
  }
  PERF_CHECK(sscGemmDestroy(gemm));
  closeSession(&session);
  stopMpi();
  return errors > 0 ? kExitWrongResults : kExitOk;
}

}  // namespace ssc::perf
