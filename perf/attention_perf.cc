// SPDX-License-Identifier: MIT
// attention_perf: decode time of the sequence-sharded paged attention (sscAttentionDecode) on
// one GPU's partitions, against the naive alternative and the whole GPU, per model and shape.
//
//   tools/emulate/partition-run.sh 8 build/bin/attention_perf [flags]    (K = 8 partitions)
//   mpirun -np 1 build/bin/attention_perf [flags]                        (the whole GPU)
//   ... attention_perf --prefill [flags]      the prefill benchmark (perf/attention_prefill.cc)
//
// Models, as one GPU's share at TP 8 (one KV head group, bf16 KV, 16-token pages):
//   70b   Llama-3-70B     8 q heads / 1 KV head, head dim 128
//   405b  Llama-3.1-405B 16 q heads / 1 KV head, head dim 128
//   oss   GPT-OSS-120B    8 q heads / 1 KV head, head dim 64, sinks; its sliding-window layers
//         (window 128, alternate layers) are the row "oss-swa": sequence-owner placement, not
//         sharded, each sequence whole on one partition.
// Modes, each timed in the same run:
//   sharded    the op over the K ranks with its default exchange (sscKvExchangeAuto: the
//              fused exchange where the peers' scratch maps), KV pages round-robin, Q and out
//              heads sharded (K = 1: "whole", the op over the whole GPU in one process);
//   sharded-ag the same with sscKvExchangeAllGather named (two sscAllGather calls, a merge);
//   sharded-fused  the same with sscKvExchangeFused (reported as refused where the peers'
//              scratch does not map; not checked here: gpu_attention_test --fused is);
//   sharded-rq the default exchange with the queries replicated (every rank passes the whole q,
//              as when each partition computes the q projection of its GPU's heads itself): no
//              query exchange, so one wait for the other ranks a step instead of two; out heads
//              sharded;
//   local      K > 1 only: each rank alone (a communicator of one) over a cache of 1/K of each
//              sequence, all q heads: the sharded step without any exchange;
//   local-sync K > 1 only: the local step, then an 8-byte sscAllReduce over all K ranks: what
//              tying the ranks together once a step costs without the exchange's data (against
//              sharded-rq, whose step also ends when the slowest rank's rows arrive);
//   naive      K > 1 only: every rank holds a replicated copy of the whole KV (a communicator of
//              its own) and computes its share of the q heads; "OOM" where the K copies do not fit.
// --graph: every mode's decode step captured once into a CUDA/HIP graph and replayed (what a
// serving engine does: vLLM replays its decode step as a graph); the mode is then reported as
// "<mode>+graph" (whole+graph at K = 1).
// Columns: time per decode step (max over ranks, stream events), KV bytes the step reads (all
// ranks), GB/s of that, % of the copy roofline (device-to-device copies by all ranks at once,
// read + write bytes per second, measured at start), KV bytes per rank, and for sharded and
// sharded-ag the exchange share: (step - local step) / step, where local ran in the same run
// (else, for sharded-ag, its two all-gathers timed alone over the step).
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "perf/attention_prefill.h"
#include "src/platform/gpu_runtime.h"
#include "starscream/starscream_ops.h"
#include "tests/gpu/gpu_test_setup.h"

namespace {

int g_rank = 0, g_nranks = 1;
sscComm_t g_world = nullptr;  // every rank: local-sync's all-reduce

struct Model {
  std::string name;
  int qHeads, headDim;
  bool sinks;
  int window;  // 0: full attention
};

struct Options {
  std::vector<std::string> models = {"70b", "405b", "oss", "oss-swa"};
  std::vector<int> contexts = {16384, 32768, 131072};
  std::vector<int> batches = {1, 8, 16, 64};
  std::vector<std::string> modes = {"local", "sharded", "naive"};
  int iters = 20;
  bool graph = false;
  std::string json;
};

std::vector<std::string> splitList(const char* s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

Model modelOf(const std::string& n) {
  if (n == "70b") return {n, 8, 128, false, 0};
  if (n == "405b") return {n, 16, 128, false, 0};
  if (n == "oss") return {n, 8, 64, true, 0};
  if (n == "oss-swa") return {n, 8, 64, true, 128};
  if (g_rank == 0)
    std::fprintf(stderr, "attention_perf: unknown model '%s' (70b, 405b, oss, oss-swa)\n",
                 n.c_str());
  MPI_Abort(MPI_COMM_WORLD, 2);
  return {};
}

// Every mode the header lists; main refuses any other name.
bool isMode(const std::string& mode) {
  for (const char* m :
       {"local", "local-sync", "sharded", "sharded-ag", "sharded-fused", "sharded-rq", "naive"})
    if (mode == m) return true;
  return false;
}
bool isSharded(const std::string& mode) { return mode.rfind("sharded", 0) == 0; }
// Each rank alone over its 1/K of each sequence (local-sync then ties the ranks each step).
bool isLocal(const std::string& mode) { return mode.rfind("local", 0) == 0; }

bool anyRank(bool x) {
  int v = x ? 1 : 0, any = 0;
  MPI_Allreduce(&v, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return any != 0;
}

// Mean microseconds of fn() queued `iters` times on stream (after 3 warm-ups), max over ranks.
template <class F>
double timeUs(hipStream_t stream, int iters, F fn) {
  for (int i = 0; i < 3; ++i) fn();
  return eventTimeUs(
      stream, iters,
      [&] {
        for (int i = 0; i < iters; ++i) fn();
      },
      g_rank);
}

// Copy roofline: every rank copies bytes/K device-to-device at the same time; read + write
// bytes of all ranks per second.
double copyRoofline(hipStream_t stream) {
  const size_t bytes = (size_t{2} << 30) / g_nranks;
  void *a = nullptr, *b = nullptr;
  CHECK_GPU(hipMalloc(&a, bytes));
  CHECK_GPU(hipMalloc(&b, bytes));
  CHECK_GPU(hipMemset(a, 1, bytes));
  const double us = timeUs(
      stream, 10, [&] { CHECK_GPU(hipMemcpyAsync(b, a, bytes, hipMemcpyDeviceToDevice, stream)); });
  CHECK_GPU(hipFree(a));
  CHECK_GPU(hipFree(b));
  return 2.0 * bytes * g_nranks / (us * 1e3);
}

uint16_t bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}

struct Row {
  std::string model, mode;
  int context, batch;
  double us = 0, exchangeUs = 0, kvBytes = 0, kvPerRank = 0;
  bool oom = false;
  std::string note;
};

// One mode of one shape: builds the cache on `comm` (every rank of it holding its shard, or
// a whole copy on a communicator of one), fills it, times decode steps. qHeads: the heads this
// process decodes (all of the model's for sharded, its share for naive).
Row runShape(const Model& m, const std::string& mode, int context, int batch, sscComm_t comm,
             int commRanks, hipStream_t stream, int iters, bool graph) {
  const bool sharded = isSharded(mode);
  const bool local = isLocal(mode);
  Row row;
  row.model = m.name;
  row.mode = std::string(sharded && g_nranks == 1 ? "whole" : mode) + (graph ? "+graph" : "");
  row.context = context;
  row.batch = batch;
  const int D = m.headDim, ps = 16, kvHeads = 1;
  const int qHeads = mode == "naive" ? m.qHeads / g_nranks : m.qHeads;
  // A sliding-window layer reads only its window: fill just enough tokens for it. A local rank
  // holds its 1/K of each sequence.
  const int full = m.window > 0 ? std::min(context, 8 * m.window) : context;
  const int filled = local ? (full + g_nranks - 1) / g_nranks : full;
  const int read = m.window > 0 ? std::min(filled, m.window) : filled;
  const double rowBytes = 2.0 * kvHeads * D * 2;  // K and V
  row.kvBytes = rowBytes * batch * read * (mode == "naive" || local ? g_nranks : 1);
  const int pagesPerSeq = (filled + ps - 1) / ps;
  sscKvCacheConfig_t cfg = SSC_KV_CACHE_CONFIG_INITIALIZER;
  cfg.numKvHeads = kvHeads;
  cfg.headDim = D;
  cfg.pageSize = ps;
  cfg.interleave = m.window > 0 ? sscKvSequenceOwner : sscKvPageRoundRobin;
  const int64_t perRank =
      m.window > 0 ? static_cast<int64_t>((batch + commRanks - 1) / commRanks) * pagesPerSeq
                   : static_cast<int64_t>(batch) * ((pagesPerSeq + commRanks - 1) / commRanks);
  cfg.maxPages = static_cast<int>(perRank + batch);
  cfg.maxSeqs = batch;
  cfg.maxBatch = batch;
  cfg.maxQHeads = qHeads;
  cfg.exchange = mode == "sharded-ag"      ? sscKvExchangeAllGather
                 : mode == "sharded-fused" ? sscKvExchangeFused
                                           : sscKvExchangeAuto;
  row.kvPerRank = rowBytes * ps * static_cast<double>(perRank);
  sscKvCache_t cache = nullptr;
  const sscResult_t made = sscKvCacheCreate(comm, &cfg, &cache);
  if (anyRank(made != sscSuccess)) {
    row.oom = true;
    row.note = made != sscSuccess ? sscGetLastError(nullptr) : "another rank's create failed";
    if (cache != nullptr) CHECK_SSC(sscKvCacheDestroy(cache));
    (void)hipGetLastError();
    return row;
  }
  // Fill: every rank passes the same tokens, chunk by chunk (random bf16 K/V, one buffer).
  const int chunk = 8192;
  std::vector<uint16_t> kv(static_cast<size_t>(chunk) * kvHeads * D);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (auto& x : kv) x = bf16(u(rng));
  uint16_t* dKv = nullptr;
  CHECK_GPU(hipMalloc(reinterpret_cast<void**>(&dKv), kv.size() * 2));
  CHECK_GPU(hipMemcpy(dKv, kv.data(), kv.size() * 2, hipMemcpyHostToDevice));
  CHECK_GPU(hipDeviceSynchronize());
  std::vector<int32_t> seqs;
  seqs.reserve(chunk);
  for (int s = 0; s < batch; ++s)
    for (int t = 0; t < filled; ++t) {
      seqs.push_back(s);
      if (static_cast<int>(seqs.size()) == chunk || (s == batch - 1 && t == filled - 1)) {
        CHECK_SSC(
            sscKvCacheAppend(cache, static_cast<int>(seqs.size()), seqs.data(), dKv, dKv, stream));
        seqs.clear();
      }
    }
  // Queries: this rank's slice of the heads when sharded over K > 1 (all-gathered by the op),
  // the whole q with sharded-rq; out heads sharded either way.
  const bool shardOut = sharded && commRanks > 1 && m.qHeads % commRanks == 0;
  const bool shardHeads = shardOut && mode != "sharded-rq";
  const int flags =
      (shardHeads ? SSC_ATTN_Q_SHARDED_HEADS : 0) | (shardOut ? SSC_ATTN_OUT_SHARDED_HEADS : 0);
  const int myHeads = shardHeads ? qHeads / commRanks : qHeads;
  const int outHeads = shardOut ? qHeads / commRanks : qHeads;
  std::vector<uint16_t> q(static_cast<size_t>(batch) * myHeads * D);
  for (auto& x : q) x = bf16(u(rng));
  std::vector<float> sinks(qHeads, 0.5f);
  void *dQ = nullptr, *dOut = nullptr;
  float* dSinks = nullptr;
  CHECK_GPU(hipMalloc(&dQ, q.size() * 2));
  CHECK_GPU(hipMalloc(&dOut, static_cast<size_t>(batch) * outHeads * D * 2));
  CHECK_GPU(hipMalloc(reinterpret_cast<void**>(&dSinks), sinks.size() * 4));
  CHECK_GPU(hipMemcpy(dQ, q.data(), q.size() * 2, hipMemcpyHostToDevice));
  CHECK_GPU(hipMemcpy(dSinks, sinks.data(), sinks.size() * 4, hipMemcpyHostToDevice));
  CHECK_GPU(hipDeviceSynchronize());
  std::vector<int32_t> ids(batch);
  for (int s = 0; s < batch; ++s) ids[s] = s;
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  float* dTie = nullptr;  // local-sync: 8 bytes all-reduced over every rank after each step
  if (mode == "local-sync") {
    CHECK_GPU(hipMalloc(reinterpret_cast<void**>(&dTie), 2 * sizeof(float)));
    CHECK_GPU(hipMemset(dTie, 0, 2 * sizeof(float)));
  }
  const auto step = [&] {
    CHECK_SSC(sscAttentionDecode(cache, dQ, sscBfloat16, qHeads, batch, ids.data(), scale,
                                 m.sinks ? dSinks : nullptr, m.window, flags, dOut, nullptr,
                                 stream));
    if (dTie != nullptr)
      CHECK_SSC(sscAllReduce(dTie, dTie, 2, sscFloat32, sscSum, g_world, stream));
  };
  hipGraphExec_t exec = nullptr;
  if (graph) {
    hipGraph_t g = nullptr;
    CHECK_GPU(hipStreamBeginCapture(stream, hipStreamCaptureModeGlobal));
    step();
    CHECK_GPU(hipStreamEndCapture(stream, &g));
    CHECK_GPU(hipGraphInstantiateWithFlags(&exec, g, 0));
    CHECK_GPU(hipGraphDestroy(g));
  }
  row.us = timeUs(stream, iters, [&] {
    if (exec != nullptr)
      CHECK_GPU(hipGraphLaunch(exec, stream));
    else
      step();
  });
  if (exec != nullptr) {
    CHECK_GPU(hipStreamSynchronize(stream));
    CHECK_GPU(hipGraphExecDestroy(exec));
  }
  if (mode == "sharded-ag" && commRanks > 1) {  // the op's two all-gathers, alone
    const size_t qCount = static_cast<size_t>(batch) * myHeads * D;
    const size_t pCount = static_cast<size_t>(batch) * qHeads * (D + 1);
    void *qAll = nullptr, *pAll = nullptr;
    CHECK_GPU(hipMalloc(&qAll, qCount * 2 * commRanks));
    CHECK_GPU(hipMalloc(&pAll, pCount * 4 * commRanks));
    row.exchangeUs = timeUs(stream, iters, [&] {
      if (shardHeads) CHECK_SSC(sscAllGather(dQ, qAll, qCount, sscBfloat16, comm, stream));
      CHECK_SSC(sscAllGather(static_cast<char*>(pAll) + g_rank * pCount * 4, pAll, pCount,
                             sscFloat32, comm, stream));
    });
    CHECK_GPU(hipFree(qAll));
    CHECK_GPU(hipFree(pAll));
  }
  CHECK_GPU(hipStreamSynchronize(stream));
  CHECK_SSC(sscKvCacheDestroy(cache));
  CHECK_GPU(hipFree(dKv));
  CHECK_GPU(hipFree(dQ));
  CHECK_GPU(hipFree(dOut));
  CHECK_GPU(hipFree(dSinks));
  if (dTie != nullptr) CHECK_GPU(hipFree(dTie));
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_nranks);
  if (argc > 1 && std::string(argv[1]) == "--prefill") {  // the prefill mode (attention_prefill.cc)
    const int rc = prefillMain(argc, argv, 2);
    MPI_Finalize();
    return rc;
  }
  Options o;
  const auto localFirst = [&o] {  // the exchange share needs the local step before the others
    std::stable_partition(o.modes.begin(), o.modes.end(),
                          [](const std::string& m) { return m == "local"; });
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    auto ints = [](const char* s) {
      std::vector<int> out;
      for (const auto& x : splitList(s)) out.push_back(std::atoi(x.c_str()));
      return out;
    };
    if (v != nullptr && a == "--models")
      o.models = splitList(v);
    else if (v != nullptr && a == "--contexts")
      o.contexts = ints(v);
    else if (v != nullptr && a == "--batches")
      o.batches = ints(v);
    else if (v != nullptr && a == "--modes")
      o.modes = splitList(v);
    else if (v != nullptr && a == "--iters")
      o.iters = std::atoi(v);
    else if (v != nullptr && a == "--json")
      o.json = v;
    else if (a == "--graph") {
      o.graph = true;
      continue;
    } else {
      if (g_rank == 0)
        std::fprintf(stderr,
                     "usage: attention_perf [--models 70b,405b,oss,oss-swa] [--contexts 16384,...] "
                     "[--batches 1,8,...] [--modes "
                     "local,local-sync,sharded,sharded-ag,sharded-fused,sharded-rq,naive] "
                     "[--iters N] [--graph] "
                     "[--json FILE]\n");
      MPI_Finalize();
      return a == "--help" || a == "-h" ? 0 : 2;
    }
    ++i;
  }
  for (const auto& mode : o.modes)
    if (!isMode(
            mode)) {  // a mistyped mode would otherwise leave its rows out of the table unnoticed
      if (g_rank == 0)
        std::fprintf(stderr, "attention_perf: unknown mode '%s' (see --help)\n", mode.c_str());
      MPI_Finalize();
      return 2;
    }
  localFirst();
  if (setUpGpuRank("attention_perf", g_rank, g_nranks) < 0) {
    MPI_Finalize();
    return 0;
  }
  sscComm_t world = newMpiComm(g_rank, g_nranks);
  g_world = world;
  sscComm_t self = nullptr;  // naive: every rank alone with a whole copy
  CHECK_SSC(sscCommSplit(world, g_rank, 0, &self, nullptr));
  hipStream_t stream = nullptr;
  CHECK_GPU(hipStreamCreateWithFlags(&stream, hipStreamNonBlocking));
  const double roof = copyRoofline(stream);
  int sms = 0;
  CHECK_GPU(hipDeviceGetAttribute(&sms, hipDeviceAttributeMultiprocessorCount, 0));
  if (g_rank == 0) {
    std::printf(
        "# attention_perf K=%d, %d SMs per rank as reported, copy roofline %.0f GB/s "
        "(read + write, all ranks at once); bf16 KV, 16-token pages, one KV head group\n",
        g_nranks, sms, roof);
    std::printf("# %-8s %-8s %7s %5s %10s %10s %8s %6s %10s %8s\n", "model", "mode", "context",
                "batch", "time_us", "KV_MB", "GB/s", "%roof", "MB/rank", "exch_%");
  }
  nlohmann::json records = nlohmann::json::array();
  for (const auto& name : o.models) {
    const Model m = modelOf(name);
    for (int context : o.contexts)
      for (int batch : o.batches) {
        double localUs = 0;  // this shape's local step, when "local" ran (it runs first)
        for (const auto& mode : o.modes) {
          if (mode == "naive" && (g_nranks == 1 || m.qHeads % g_nranks != 0)) continue;
          if (isLocal(mode) && (g_nranks == 1 || m.window > 0)) continue;
          if (isSharded(mode) && mode != "sharded" && g_nranks == 1) continue;
          const bool alone = mode == "naive" || isLocal(mode);
          Row r = runShape(m, mode, context, batch, alone ? self : world, alone ? 1 : g_nranks,
                           stream, o.iters, o.graph);
          if (mode == "local" && !r.oom) localUs = r.us;
          if (isSharded(mode) && g_nranks > 1 && localUs > 0 && !r.oom)
            r.exchangeUs = std::max(0.0, r.us - localUs);
          const double gbs = r.oom ? 0 : r.kvBytes / (r.us * 1e3);
          if (g_rank == 0) {
            if (r.oom)
              std::printf("  %-8s %-8s %7d %5d %10s %10.1f %8s %6s %10.1f %8s  (%s)\n",
                          r.model.c_str(), r.mode.c_str(), context, batch,
                          mode == "naive" ? "OOM" : "refused", r.kvBytes / 1e6, "-", "-",
                          r.kvPerRank / 1e6, "-", r.note.substr(0, 80).c_str());
            else
              std::printf("  %-8s %-8s %7d %5d %10.1f %10.1f %8.0f %6.1f %10.1f %8.1f\n",
                          r.model.c_str(), r.mode.c_str(), context, batch, r.us, r.kvBytes / 1e6,
                          gbs, 100.0 * gbs / roof, r.kvPerRank / 1e6,
                          r.exchangeUs > 0 ? 100.0 * r.exchangeUs / r.us : 0.0);
            std::fflush(stdout);
          }
          records.push_back({{"model", r.model},
                             {"mode", r.mode},
                             {"K", g_nranks},
                             {"context", context},
                             {"batch", batch},
                             {"oom", r.oom},
                             {"time_us", r.us},
                             {"kv_bytes", r.kvBytes},
                             {"kv_bytes_per_rank", r.kvPerRank},
                             {"gbps", gbs},
                             {"roofline_gbps", roof},
                             {"roofline_pct", r.oom ? 0 : 100.0 * gbs / roof},
                             {"exchange_us", r.exchangeUs},
                             {"sms_reported", sms},
                             {"graph", o.graph}});
        }
      }
  }
  if (g_rank == 0 && !o.json.empty()) std::ofstream(o.json) << records.dump(1) << "\n";
  CHECK_GPU(hipStreamDestroy(stream));
  CHECK_SSC(sscCommFinalize(self));
  CHECK_SSC(sscCommDestroy(self));
  CHECK_SSC(sscCommFinalize(world));
  CHECK_SSC(sscCommDestroy(world));
  MPI_Finalize();
  return 0;
}
