// SPDX-License-Identifier: MIT
// gemm_coll_perf: the fused GEMM-collectives (starscream_ops.h) over the per-GPU tensor-parallel
// (TP8) shapes of Llama-3-70B, Llama-3.1-405B and GPT-OSS-120B, with their baselines in the same
// run. K ranks = K partitions of one GPU (tools/emulate/partition-run.sh K ...), each shape the
// per-GPU problem Y[M][N] = X[M][K] W^T split over the partitions two ways:
//
//   rs: split K, sscGemmReduceScatter (partials [M][N] reduce-scattered),
//   ag: split N, sscAllGatherGemm     (X [M][K] all-gathered);
//
// each as the GEMM alone (the same shape on a one-rank communicator, all ranks at once), unfused,
// auto (the rule), forced chunked and forced fused (ag: both forms, "ag.fused" = push + one
// GEMM, "ag.fusedpr" = one GEMM per source rank reading the peers' rows in place; a "ce" suffix:
// the same form with SSC_GEMM_COPY_ENGINE, copy engines and stream waits). Which of rs/ag is "1D"
// (the dimension the GPUs already split) depends on the layer: column-parallel layers (qkv,
// gate_up) split N across GPUs, so ag is their 1D and rs their 2D; row-parallel layers (o, down)
// the reverse. With -np 1 the program times the whole per-GPU GEMM (the unpartitioned baseline).
// perf/gemm_table.py joins a K = 1 and a K > 1 record file into one table (docs/gemm.md). The
// topology is the library's own discovery (K ranks on one GPU: K partitions of it), or
// STARSCREAM_TOPO_FILE where set.
//
//   tools/emulate/partition-run.sh 8 build/bin/gemm_coll_perf -J k8.json
//   tools/emulate/partition-run.sh 1 build/bin/gemm_coll_perf -J k1.json
//
// Flags: -m M list (default 16,64,256,1024,4096,16384), -s shape-name filter (substring),
// -n timed iterations (5), -w warm-up iterations (2), -d bf16|fp16, -J JSON Lines file (rank 0),
// -o rs|ag|rs,ag (which splits to time; default both), -F 0|1 (also time the fused variants,
// forced; default 1), -c configs (comma list, e.g. rs.gemm,rs.fused: time only these),
// -v 1 (rank 0 names each cell on stderr before timing it: where a hang happened).
// Time per call: the slowest rank's mean over the timed iterations (events on its stream).
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "perf/common/gemm_args.h"
#include "src/platform/gpu_runtime.h"
#include "starscream/starscream.h"
#include "starscream/starscream_ops.h"

namespace {

int g_rank = 0, g_n = 1;

void check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "rank %d: %s failed: %s\n", g_rank, what, sscGetLastError(nullptr));
  MPI_Abort(MPI_COMM_WORLD, 2);
}
#define CHECK_SSC(x) check((x) == sscSuccess, #x)
#define CHECK_GPU(x) check((x) == hipSuccess, #x)

struct Options {
  std::vector<int64_t> ms = {16, 64, 256, 1024, 4096, 16384};
  std::string filter;
  std::string ops = "rs,ag";  // -o: which of the two splits to time
  bool fused = true;          // -F 0: leave out the forced fused variant
  int iters = 5, warmup = 2;
  sscDataType_t dtype = sscBfloat16;
  std::string json;
  std::string configs;  // -c: empty = all
  bool verbose = false;
};

bool wanted(const Options& o, const std::string& config) {
  if (o.configs.empty()) return true;
  const std::string list = "," + o.configs + ",";
  return list.find("," + config + ",") != std::string::npos;
}

bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string f = argv[i];
    if (i + 1 >= argc) return false;
    const std::string v = argv[++i];
    if (f == "-m") {
      o->ms.clear();
      size_t pos = 0;
      while (pos <= v.size()) {
        const size_t comma = v.find(',', pos);
        o->ms.push_back(std::atoll(v.substr(pos, comma - pos).c_str()));
        if (comma == std::string::npos) break;
        pos = comma + 1;
      }
    } else if (f == "-s")
      o->filter = v;
    else if (f == "-o")
      o->ops = v;
    else if (f == "-F")
      o->fused = std::atoi(v.c_str()) != 0;
    else if (f == "-n")
      o->iters = std::max(1, std::atoi(v.c_str()));
    else if (f == "-w")
      o->warmup = std::max(0, std::atoi(v.c_str()));
    else if (f == "-d")
      o->dtype = v == "fp16" ? sscFloat16 : sscBfloat16;
    else if (f == "-J")
      o->json = v;
    else if (f == "-c")
      o->configs = v;
    else if (f == "-v")
      o->verbose = std::atoi(v.c_str()) != 0;
    else
      return false;
  }
  return true;
}

struct Buffers {
  void* x = nullptr;
  void* w = nullptr;
  void* y = nullptr;
  Buffers(size_t xb, size_t wb, size_t yb) {
    for (auto [p, b] : {std::pair{&x, xb}, std::pair{&w, wb}, std::pair{&y, yb}}) {
      CHECK_GPU(hipMalloc(p, std::max<size_t>(b, 256)));
      CHECK_GPU(hipMemset(*p, 0x3C, std::max<size_t>(b, 256)));  // bf16 0.0115 / fp16 1.06
    }
  }
  ~Buffers() {
    for (void* p : {x, w, y}) (void)hipFree(p);
  }
};

// Times `iters` calls of one op on gemm's communicator; every rank returns the slowest rank's
// microseconds per call.
double timeOp(sscGemm_t gemm, bool rs, const sscGemmArgs_t& a, hipStream_t s, const Options& o) {
  hipEvent_t t0, t1;
  CHECK_GPU(hipEventCreate(&t0));
  CHECK_GPU(hipEventCreate(&t1));
  auto call = [&] {
    CHECK_SSC(rs ? sscGemmReduceScatter(gemm, &a, s) : sscAllGatherGemm(gemm, &a, s));
  };
  for (int i = 0; i < o.warmup; ++i) call();
  CHECK_GPU(hipStreamSynchronize(s));
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK_GPU(hipEventRecord(t0, s));
  for (int i = 0; i < o.iters; ++i) call();
  CHECK_GPU(hipEventRecord(t1, s));
  CHECK_GPU(hipEventSynchronize(t1));
  float ms = 0;
  CHECK_GPU(hipEventElapsedTime(&ms, t0, t1));
  CHECK_GPU(hipEventDestroy(t0));
  CHECK_GPU(hipEventDestroy(t1));
  double us = 1000.0 * ms / o.iters, worst = 0;
  MPI_Allreduce(&us, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return worst;
}

struct Row {
  std::string config;
  double us;
  sscGemmVariant_t variant;
  int chunks;
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_n);
  Options o;
  if (!parse(argc, argv, &o)) {
    if (g_rank == 0)
      std::fprintf(stderr,
                   "usage: gemm_coll_perf [-m M,...] [-s filter] [-o rs,ag] [-F 0|1] [-n iters] "
                   "[-w warmup] [-d bf16|fp16] [-J file] [-c configs] [-v 0|1]\n");
    MPI_Finalize();
    return 2;
  }
  int ndev = 0;
  if (hipGetDeviceCount(&ndev) != hipSuccess || ndev == 0) {
    if (g_rank == 0) std::printf("SKIPPED: gemm_coll_perf: no GPU visible\n");
    MPI_Finalize();
    return 0;
  }
  CHECK_GPU(hipSetDevice(g_rank % ndev));
  sscUniqueId id;
  if (g_rank == 0) CHECK_SSC(sscGetUniqueId(&id));
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  sscComm_t comm = nullptr, self = nullptr;
  CHECK_SSC(sscCommInitRank(&comm, g_n, id, g_rank));
  CHECK_SSC(sscCommSplit(comm, g_rank, 0, &self, nullptr));  // one rank each: the GEMM alone
  sscGemmConfig_t cfg = SSC_GEMM_CONFIG_INITIALIZER;
  cfg.workspaceBytes = size_t{1} << 30;
  sscGemm_t gemm = nullptr, alone = nullptr;
  CHECK_SSC(sscGemmCreate(comm, &cfg, &gemm));
  cfg.workspaceBytes = 4096;
  CHECK_SSC(sscGemmCreate(self, &cfg, &alone));
  hipStream_t s = nullptr;
  CHECK_GPU(hipStreamCreateWithFlags(&s, hipStreamNonBlocking));
  FILE* json = g_rank == 0 && !o.json.empty() ? std::fopen(o.json.c_str(), "w") : nullptr;
  const int P = g_n;
  if (g_rank == 0)
    std::printf(
        "# gemm_coll_perf: K = %d partitions, %s, us per call (slowest rank), chunks in ()\n", P,
        o.dtype == sscFloat16 ? "fp16" : "bf16");
  const bool doRs = o.ops.find("rs") != std::string::npos,
             doAg = o.ops.find("ag") != std::string::npos;
  for (const ssc::perf::GemmLayer& L :
       ssc::perf::gemmLayers()) {  // the TP8 layers (perf/common/gemm_args.cc)
    if (!o.filter.empty() && std::string(L.name).find(o.filter) == std::string::npos) continue;
    for (int64_t M : o.ms) {
      std::vector<Row> rows;
      auto args = [&](int64_t m, int64_t n, int64_t k, const Buffers& b, sscGemmVariant_t variant) {
        sscGemmArgs_t a = SSC_GEMM_ARGS_INITIALIZER;
        a.m = m, a.n = n, a.k = k;
        a.dtype = o.dtype;
        a.x = b.x, a.w = b.w, a.y = b.y;
        a.variant = variant;
        return a;
      };
      auto record = [&](const char* config, sscGemm_t g, bool rs, const sscGemmArgs_t& a) {
        if (!wanted(o, config)) return;
        if (o.verbose && g_rank == 0)
          std::fprintf(stderr, "# timing %s M=%lld %s\n", L.name, (long long)M, config);
        Row r{config, 0, sscGemmAuto, 0};
        CHECK_SSC(sscGemmQueryPlan(g, rs ? sscGemmOpReduceScatter : sscGemmOpAllGather, &a,
                                   &r.variant, &r.chunks));
        r.us = timeOp(g, rs, a, s, o);
        rows.push_back(r);
      };
      int64_t first = 0, mine = 0;
      CHECK_SSC(sscGemmRowShard(M, P, g_rank, &first, &mine));
      const int64_t c = (M + P - 1) / P;
      if (P == 1) {
        Buffers b(M * L.k * 2, L.n * L.k * 2, M * L.n * 2);
        record("whole", gemm, true, args(M, L.n, L.k, b, sscGemmAuto));
      } else {
        const int64_t kp = (L.k + P - 1) / P, np = (L.n + P - 1) / P;
        if (doRs) {  // rs: split K
          Buffers b(M * kp * 2, L.n * kp * 2, M * L.n * 2);
          record("rs.gemm", alone, true, args(M, L.n, kp, b, sscGemmAuto));
          for (auto [name, v] : {std::pair{"rs.unfused", sscGemmUnfused},
                                 {"rs.auto", sscGemmAuto},
                                 {"rs.chunked", sscGemmChunked},
                                 {"rs.fused", sscGemmFused}})
            if (v != sscGemmFused || o.fused) record(name, gemm, true, args(M, L.n, kp, b, v));
          if (o.fused) {  // the same fused form ordered by stream memory operations
            sscGemmArgs_t a = args(M, L.n, kp, b, sscGemmFused);
            a.flags = SSC_GEMM_COPY_ENGINE;
            record("rs.fusedce", gemm, true, a);
          }
        }
        if (doAg) {  // ag: split N
          Buffers b(std::max(c, M) * L.k * 2, np * L.k * 2, M * np * 2);
          // The GEMM alone multiplies the gathered X: M rows on one rank.
          record("ag.gemm", alone, false, args(M, np, L.k, b, sscGemmAuto));
          for (auto [name, v] : {std::pair{"ag.unfused", sscGemmUnfused},
                                 {"ag.auto", sscGemmAuto},
                                 {"ag.chunked", sscGemmChunked}})
            record(name, gemm, false, args(M, np, L.k, b, v));
          if (o.fused) {  // both forms: push + one GEMM (chunks 1), one GEMM per source rank
            record("ag.fused", gemm, false, args(M, np, L.k, b, sscGemmFused));
            sscGemmArgs_t a = args(M, np, L.k, b, sscGemmFused);
            a.chunks = P;
            record("ag.fusedpr", gemm, false, a);
            a.flags = SSC_GEMM_COPY_ENGINE;  // both forms with copy engines and stream waits
            record("ag.fusedprce", gemm, false, a);
            a.chunks = 0;
            record("ag.fusedce", gemm, false, a);
          }
        }
      }
      sscGemmShard2dQuery_t q = SSC_GEMM_SHARD2D_QUERY_INITIALIZER;
      q.inter = L.columnParallel ? sscLinearColumnParallel : sscLinearRowParallel;
      q.m = M, q.n = L.n, q.k = L.k;
      q.partitions = P;
      sscGemmShard2dPlan_t h = SSC_GEMM_SHARD2D_PLAN_INITIALIZER;
      CHECK_SSC(sscGemmShard2d(&q, &h));
      if (g_rank != 0) continue;
      std::printf("  %-18s %6lld", L.name, (long long)M);
      for (const Row& r : rows) {
        std::printf(" %s %.1f", r.config.c_str(), r.us);
        if (r.variant != sscGemmUnfused)
          std::printf("(%c%d)", r.variant == sscGemmFused ? 'f' : 'c', r.chunks);
      }
      std::printf(" | helper %s %s\n", h.op == sscGemmOpReduceScatter ? "rs" : "ag",
                  h.twoD ? "2D" : "1D");
      std::fflush(stdout);
      for (const Row& r : rows)
        if (json)
          std::fprintf(
              json,
              "{\"layer\":\"%s\",\"inter\":\"%s\",\"K\":%lld,\"N\":%lld,\"M\":%lld,\"P\":%d,"
              "\"config\":\"%s\",\"us\":%.3f,\"variant\":\"%s\",\"chunks\":%d,\"helper_op\":\"%s\","
              "\"helper_2d\":%d,\"helper_est_us\":%.1f,\"helper_other_us\":%.1f}\n",
              L.name, L.columnParallel ? "column" : "row", (long long)L.k, (long long)L.n,
              (long long)M, P, r.config.c_str(), r.us,
              r.variant == sscGemmFused     ? "fused"
              : r.variant == sscGemmChunked ? "chunked"
                                            : "unfused",
              r.chunks, h.op == sscGemmOpReduceScatter ? "rs" : "ag", h.twoD, h.estUs,
              h.otherEstUs);
      if (json) std::fflush(json);  // a run cut off by a time limit keeps every finished cell
    }
  }
  if (json) std::fclose(json);
  CHECK_SSC(sscGemmDestroy(alone));
  CHECK_SSC(sscGemmDestroy(gemm));
  CHECK_GPU(hipStreamDestroy(s));
  CHECK_SSC(sscCommDestroy(self));
  CHECK_SSC(sscCommFinalize(comm));
  CHECK_SSC(sscCommDestroy(comm));
  MPI_Finalize();
  return 0;
}
