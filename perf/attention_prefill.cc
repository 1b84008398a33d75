// SPDX-License-Identifier: MIT
// attention_perf --prefill: time of sscAttentionPrefill on one GPU's partitions against the
// whole GPU running the same op in one process, per model and context.
//
//   tools/emulate/partition-run.sh 8 build/bin/attention_perf --prefill [flags]   (K = 8)
//   tools/emulate/partition-run.sh 1 build/bin/attention_perf --prefill [flags]   (whole GPU)
//
// One sequence of `context` tokens whose last `chunk` tokens are the call's queries (chunk =
// context: a whole prompt; smaller: chunked prefill after a cached prefix). Models as the decode
// modes (one GPU's share at TP 8: 70b 8 q heads / 1 KV head d 128, 405b 16 / 1 d 128, oss 8 / 1
// d 64 with sinks), bf16 KV, 16-token pages round-robin, queries replicated, one exchange round
// (maxBatch = chunk). Modes: sharded (the default exchange, every rank returns all heads;
// K = 1: "whole"), sharded-heads (each rank returns its numQHeads / K heads, default exchange),
// sharded-ag and sharded-fused (that exchange by name; "refused" where the fused one cannot map
// the peers' scratch). Columns: time per call (max over ranks), TFLOP/s of the causal
// attention (4 * headDim * heads * attended pairs), and the partials each rank writes and the
// exchange moves (MB), the bytes the merge costs that the whole GPU does not pay in full.
#include "perf/attention_prefill.h"

#include <mpi.h>

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

#include "src/platform/gpu_runtime.h"
#include "starscream/starscream_ops.h"
#include "tests/gpu/gpu_test_setup.h"

namespace {

int g_rank = 0, g_nranks = 1;

std::vector<std::string> splitList(const char* s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

template <class F>
double timeUs(hipStream_t stream, int iters, F fn) {
  for (int i = 0; i < 2; ++i) fn();
  return eventTimeUs(
      stream, iters,
      [&] {
        for (int i = 0; i < iters; ++i) fn();
      },
      g_rank);
}

uint16_t bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}

struct Model {
  std::string name;
  int qHeads, headDim;
  bool sinks;
};

Model modelOf(const std::string& n) {
  if (n == "70b") return {n, 8, 128, false};
  if (n == "405b") return {n, 16, 128, false};
  if (n == "oss") return {n, 8, 64, true};
  if (g_rank == 0)
    std::fprintf(stderr, "attention_perf --prefill: unknown model '%s' (70b, 405b, oss)\n",
                 n.c_str());
  MPI_Abort(MPI_COMM_WORLD, 2);
  return {};
}

// Mean time of one prefill call of `chunk` queries at the end of a `context`-token sequence.
double runShape(const Model& m, const std::string& mode, int context, int chunk, sscComm_t comm,
                hipStream_t stream, int iters, std::string* note) {
  const int D = m.headDim, H = m.qHeads, ps = 16;
  sscKvCacheConfig_t cfg = SSC_KV_CACHE_CONFIG_INITIALIZER;
  cfg.numKvHeads = 1;
  cfg.headDim = D;
  cfg.pageSize = ps;
  cfg.maxPages = (context + ps - 1) / ps / g_nranks + 2;
  cfg.maxSeqs = 1;
  cfg.maxBatch = chunk;
  cfg.maxQHeads = H;
  cfg.exchange = mode == "sharded-ag"      ? sscKvExchangeAllGather
                 : mode == "sharded-fused" ? sscKvExchangeFused
                                           : sscKvExchangeAuto;
  sscKvCache_t cache = nullptr;
  const sscResult_t made = sscKvCacheCreate(comm, &cfg, &cache);
  int bad = made != sscSuccess ? 1 : 0, anyBad = 0;
  MPI_Allreduce(&bad, &anyBad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (anyBad != 0) {  // every rank skips the shape alike
    *note = made != sscSuccess ? sscGetLastError(nullptr) : "another rank's create failed";
    if (cache != nullptr) CHECK_SSC(sscKvCacheDestroy(cache));
    (void)hipGetLastError();
    return -1;
  }
  const int fill = 8192;
  std::vector<uint16_t> kv(static_cast<size_t>(fill) * D);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (auto& x : kv) x = bf16(u(rng));
  uint16_t *dK = nullptr, *dV = nullptr;
  CHECK_GPU(hipMalloc(reinterpret_cast<void**>(&dK), kv.size() * 2));
  CHECK_GPU(hipMemcpy(dK, kv.data(), kv.size() * 2, hipMemcpyHostToDevice));
  for (auto& x : kv) x = bf16(u(rng));
  CHECK_GPU(hipMalloc(reinterpret_cast<void**>(&dV), kv.size() * 2));
  CHECK_GPU(hipMemcpy(dV, kv.data(), kv.size() * 2, hipMemcpyHostToDevice));
  CHECK_GPU(hipDeviceSynchronize());
  const std::vector<int32_t> seqs(fill, 0);
  for (int t = 0; t < context; t += fill)
    CHECK_SSC(sscKvCacheAppend(cache, std::min(fill, context - t), seqs.data(), dK, dV, stream));
  const bool heads = mode == "sharded-heads" && g_nranks > 1;
  const int outHeads = heads ? H / g_nranks : H;
  std::vector<uint16_t> q(static_cast<size_t>(chunk) * H * D);
  for (auto& x : q) x = bf16(u(rng));
  std::vector<float> sinks(H, 0.5f);
  void *dQ = nullptr, *dOut = nullptr;
  float* dSinks = nullptr;
  CHECK_GPU(hipMalloc(&dQ, q.size() * 2));
  CHECK_GPU(hipMalloc(&dOut, static_cast<size_t>(chunk) * outHeads * D * 2));
  CHECK_GPU(hipMalloc(reinterpret_cast<void**>(&dSinks), sinks.size() * 4));
  CHECK_GPU(hipMemcpy(dQ, q.data(), q.size() * 2, hipMemcpyHostToDevice));
  CHECK_GPU(hipMemcpy(dSinks, sinks.data(), sinks.size() * 4, hipMemcpyHostToDevice));
  CHECK_GPU(hipDeviceSynchronize());
  const int32_t id = 0, cu[2] = {0, chunk};
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const double us = timeUs(stream, iters, [&] {
    CHECK_SSC(sscAttentionPrefill(cache, dQ, sscBfloat16, H, 1, &id, cu, scale,
                                  m.sinks ? dSinks : nullptr, 0,
                                  heads ? SSC_ATTN_OUT_SHARDED_HEADS : 0, dOut, nullptr, stream));
  });
  CHECK_GPU(hipStreamSynchronize(stream));
  CHECK_SSC(sscKvCacheDestroy(cache));
  for (void* p :
       {static_cast<void*>(dK), static_cast<void*>(dV), dQ, dOut, static_cast<void*>(dSinks)})
    CHECK_GPU(hipFree(p));
  return us;
}

}  // namespace

int prefillMain(int argc, char** argv, int first) {
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_nranks);
  std::vector<std::string> models = {"70b", "405b", "oss"}, modes = {"sharded", "sharded-heads"};
  std::vector<int> contexts = {16384}, chunks = {0};
  int iters = 10;
  std::string json;
  for (int i = first; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    auto ints = [](const char* s) {
      std::vector<int> out;
      for (const auto& x : splitList(s)) out.push_back(std::atoi(x.c_str()));
      return out;
    };
    if (v != nullptr && a == "--models")
      models = splitList(v);
    else if (v != nullptr && a == "--contexts")
      contexts = ints(v);
    else if (v != nullptr && a == "--chunks")
      chunks = ints(v);
    else if (v != nullptr && a == "--modes")
      modes = splitList(v);
    else if (v != nullptr && a == "--iters")
      iters = std::atoi(v);
    else if (v != nullptr && a == "--json")
      json = v;
    else {
      if (g_rank == 0)
        std::fprintf(
            stderr,
            "usage: attention_perf --prefill [--models 70b,405b,oss] [--contexts 16384,...] "
            "[--chunks 0,2048,... (0: the whole context)] [--modes "
            "sharded,sharded-heads,sharded-ag,sharded-fused] "
            "[--iters N] [--json FILE]\n");
      return a == "--help" || a == "-h" ? 0 : 2;
    }
    ++i;
  }
  for (const auto& mode : modes)
    if (mode != "sharded" && mode != "sharded-heads" && mode != "sharded-ag" &&
        mode != "sharded-fused") {
      if (g_rank == 0)
        std::fprintf(stderr, "attention_perf --prefill: unknown mode '%s' (see --help)\n",
                     mode.c_str());
      return 2;
    }
  if (setUpGpuRank("attention_perf", g_rank, g_nranks) < 0) return 0;
  sscComm_t comm = newMpiComm(g_rank, g_nranks);
  hipStream_t stream = nullptr;
  CHECK_GPU(hipStreamCreateWithFlags(&stream, hipStreamNonBlocking));
  int sms = 0;
  CHECK_GPU(hipDeviceGetAttribute(&sms, hipDeviceAttributeMultiprocessorCount, 0));
  if (g_rank == 0) {
    std::printf(
        "# attention_perf --prefill K=%d, %d SMs per rank as reported; bf16 KV, 16-token pages, "
        "one KV head group, one sequence\n",
        g_nranks, sms);
    std::printf("# %-6s %-13s %7s %6s %10s %8s %12s %12s\n", "model", "mode", "context", "chunk",
                "time_us", "TFLOP/s", "partials_MB", "exchange_MB");
  }
  nlohmann::json records = nlohmann::json::array();
  for (const auto& name : models) {
    const Model m = modelOf(name);
    for (int context : contexts)
      for (int c0 : chunks) {
        const int chunk = c0 <= 0 || c0 > context ? context : c0;
        for (const auto& mode : modes) {
          if (g_nranks == 1 && mode != "sharded") continue;
          std::string note;
          const double us = runShape(m, mode, context, chunk, comm, stream, iters, &note);
          // Causal pairs: query i of the chunk (position context - chunk + i) sees position + 1
          // keys.
          const double pairs =
              static_cast<double>(chunk) * (context - chunk) + 0.5 * chunk * (chunk + 1.0);
          const double flops = 4.0 * m.headDim * m.qHeads * pairs;
          const double rowBytes = static_cast<double>(chunk) * m.qHeads * (m.headDim + 1) * 4;
          // Each rank writes its partials once; the exchange moves them to every rank that
          // returns the row (all of them, or each head's owner).
          const double exchange =
              g_nranks == 1 ? 0 : rowBytes * (mode == "sharded-heads" ? 1 : g_nranks);
          const std::string shown = g_nranks == 1 ? "whole" : mode;
          if (g_rank == 0) {
            if (us < 0)
              std::printf("  %-6s %-13s %7d %6d %10s  (%s)\n", name.c_str(), shown.c_str(), context,
                          chunk, "refused", note.c_str());
            else
              std::printf("  %-6s %-13s %7d %6d %10.1f %8.1f %12.1f %12.1f\n", name.c_str(),
                          shown.c_str(), context, chunk, us, flops / (us * 1e6), rowBytes / 1e6,
                          exchange / 1e6);
            std::fflush(stdout);
          }
          records.push_back({{"op", "prefill"},
                             {"model", name},
                             {"mode", shown},
                             {"K", g_nranks},
                             {"context", context},
                             {"chunk", chunk},
                             {"time_us", us},
                             {"tflops", us > 0 ? flops / (us * 1e6) : 0},
                             {"partials_bytes_per_rank", rowBytes},
                             {"exchange_bytes", exchange},
                             {"sms_reported", sms}});
        }
      }
  }
  if (g_rank == 0 && !json.empty()) std::ofstream(json) << records.dump(1) << "\n";
  CHECK_GPU(hipStreamDestroy(stream));
  CHECK_SSC(sscCommFinalize(comm));
  CHECK_SSC(sscCommDestroy(comm));
  return 0;
}
