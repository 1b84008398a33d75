// SPDX-License-Identifier: MIT
// Sequence-sharded paged attention on the GPU backend (starscream_ops.h): K ranks (mpirun, one
// per GPU or K MPS partitions of one GPU) build a sharded KV cache, append a workload in rounds,
// decode, and compare every rank's output and LSE with the fp32 host reference
// (tests/support/attention_reference.h). Covers every interleave, GQA ratios 1/8/16, head dims
// 64/128, bf16 and fp16 storage, fp32 and bf16 queries/outputs, odd lengths, an empty sequence,
// one token (empty shards), sinks, a sliding window, full and sharded heads (queries, output,
// both; replicated queries with sharded output is attention_perf's sharded-rq); then one larger
// case (8 KV heads, 64 query heads, thousands of tokens). Rank 0 prints one PASS/FAIL line per
// case with the largest error over all ranks; SKIPPED without a GPU. Most cases split each
// rank's pages over several blocks (split-K); the many-sequence case does not. Every case
// decodes three times in a row (an exchange's buffer reuse); the exchange is AUTO, the large case
// also runs ALLGATHER by name. --fused runs every case through the fused exchange by name
// and adds a case where a rank skips a call (its timeout).
//
//   mpirun -np 4 build/bin/gpu_attention_test        (or tools/emulate/partition-run.sh 4 ...)
//   mpirun -np 4 build/bin/gpu_attention_test --bench [batch=32] [context=8192] [iters=50]
//   mpirun -np 4 build/bin/gpu_attention_test --fused
//   mpirun -np 4 build/bin/gpu_attention_test --prefill      (only the prefill cases)
//   mpirun -np 4 build/bin/gpu_attention_test --graph        (only the captured decodes)
// After the decode cases, a sliding-window layer trimmed as it grows (gpu_attention_trim.cc),
// decodes captured into graphs and replayed as their sequences grow (gpu_attention_graph.cc),
// then the prefill cases (sscAttentionPrefill, gpu_attention_prefill.cc).
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "starscream/starscream_ops.h"
#include "tests/gpu/gpu_attention_check.h"
#include "tests/gpu/gpu_attention_graph.h"
#include "tests/gpu/gpu_attention_prefill.h"
#include "tests/gpu/gpu_attention_trim.h"
#include "tests/gpu/gpu_test_setup.h"
#include "tests/support/attention_reference.h"

namespace ref = ssc::test::attn;

namespace {

int g_rank = 0, g_nranks = 1;
int g_failures = 0;
// --fused: every case through sscKvExchangeFused by name, plus the skipped-call case; else
// AUTO (the fused exchange where the scratch maps; the large case also names the all-gather).
sscKvExchange_t g_exchange = sscKvExchangeAuto;

struct Case {
  sscKvInterleave_t interleave;
  int kvHeads, ratio, headDim, pageSize;
  sscDataType_t dtype, io;
  std::vector<int> lengths;
  std::vector<int32_t> batch;
  int window;
  bool sinks;
  int flags;
  sscKvExchange_t exchange = sscKvExchangeAuto;  // AUTO is the fused exchange on one node's GPUs
};

using ref::interleaveName;
using ref::typeName;

void runCase(sscComm_t comm, hipStream_t stream, const Case& c, uint32_t seed) {
  const int H = c.kvHeads * c.ratio, D = c.headDim, B = static_cast<int>(c.batch.size());
  const ref::Workload w = ref::makeWorkload(seed, c.kvHeads, D, c.dtype, c.lengths, 3);
  int maxPages = 0;
  for (int len : c.lengths) maxPages += (len + c.pageSize - 1) / c.pageSize;

  sscKvCacheConfig_t cfg = SSC_KV_CACHE_CONFIG_INITIALIZER;
  cfg.numKvHeads = c.kvHeads;
  cfg.headDim = D;
  cfg.pageSize = c.pageSize;
  cfg.maxPages = maxPages + 1;  // enough for everything on one rank (sequence-owner)
  cfg.maxSeqs = static_cast<int>(c.lengths.size());
  cfg.maxBatch = B;
  cfg.maxQHeads = H;
  cfg.dtype = c.dtype;
  cfg.interleave = c.interleave;
  cfg.blockPages = 3;
  cfg.exchange = c.exchange == sscKvExchangeAuto ? g_exchange : c.exchange;
  sscKvCache_t cache = cacheWithWorkload(comm, stream, cfg, w, g_rank);

  // Queries (this rank's slice when sharded), sinks, outputs.
  const bool qSharded = c.flags & SSC_ATTN_Q_SHARDED_HEADS,
             outSharded = c.flags & SSC_ATTN_OUT_SHARDED_HEADS;
  const int qHeads = qSharded ? H / g_nranks : H, outHeads = outSharded ? H / g_nranks : H;
  const int qFirst = qSharded ? g_rank * qHeads : 0, outFirst = outSharded ? g_rank * outHeads : 0;
  std::mt19937 rng(seed * 7 + 1);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<float> qFull(static_cast<size_t>(B) * H * D);
  for (float& x : qFull) x = ref::roundTo(u(rng), c.io);
  std::vector<float> qF;
  std::vector<uint16_t> qH;
  for (int b = 0; b < B; ++b)
    for (int h = qFirst; h < qFirst + qHeads; ++h)
      for (int i = 0; i < D; ++i) {
        const float x = qFull[(static_cast<size_t>(b) * H + h) * D + i];
        if (c.io == sscFloat32)
          qF.push_back(x);
        else
          qH.push_back(ref::toStorage(x, c.io));
      }
  std::vector<float> sinks(H);
  for (int h = 0; h < H; ++h) sinks[h] = -1.0f + 0.2f * (h % 16);
  float* dSinks = toDevice(sinks, g_rank);
  void* dQ = c.io == sscFloat32 ? static_cast<void*>(toDevice(qF, g_rank))
                                : static_cast<void*>(toDevice(qH, g_rank));
  const size_t outElems = static_cast<size_t>(B) * outHeads * D;
  void* dOut = nullptr;
  float* dLse = nullptr;
  CHECK_GPU(hipMalloc(&dOut, outElems * 4));
  CHECK_GPU(hipMalloc(reinterpret_cast<void**>(&dLse), static_cast<size_t>(B) * outHeads * 4));
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  // Three decodes in a row, without a synchronize: the fused exchange reuses its two buffers
  // (epoch parity) while the ranks may run a call apart; the last result is checked.
  sscResult_t r = sscSuccess;
  for (int rep = 0; rep < 3 && r == sscSuccess; ++rep)
    r = sscAttentionDecode(cache, dQ, c.io, H, B, c.batch.data(), scale, c.sinks ? dSinks : nullptr,
                           c.window, c.flags, dOut, dLse, stream);
  const hipError_t se = hipStreamSynchronize(stream);
  bool ok = r == sscSuccess && se == hipSuccess;
  std::vector<float> outF, lse(static_cast<size_t>(B) * outHeads);
  if (ok) {
    outF = readOutput(dOut, outElems, c.io, g_rank);
    CHECK_GPU(hipMemcpy(lse.data(), dLse, lse.size() * 4, hipMemcpyDeviceToHost));
  }

  AttnErrors err;
  std::vector<float> expect(D);
  for (int b = 0; ok && b < B; ++b)
    for (int j = 0; j < outHeads; ++j) {
      const int h = outFirst + j;
      const float el = ref::referenceAttention(
          w, c.batch[b], h / c.ratio, &qFull[(static_cast<size_t>(b) * H + h) * D], scale, c.window,
          c.sinks ? &sinks[h] : nullptr, expect.data());
      for (int i = 0; i < D; ++i)
        err.addOut(outF[(static_cast<size_t>(b) * outHeads + j) * D + i], expect[i]);
      err.addLse(lse[static_cast<size_t>(b) * outHeads + j], el);
    }
  ok = ok && err.pass(c.io);
  AttnErrors worst;
  const bool pass = allRanksPass(ok, err, &worst);
  if (!ok)
    std::fprintf(stderr, "rank %d: decode %s%s\n", g_rank, sscGetErrorString(r),
                 r != sscSuccess ? (std::string(": ") + sscGetLastError(nullptr)).c_str() : "");
  if (g_rank == 0)
    std::printf(
        "%s K=%d %s kv%d gqa%d d%d page%d kv=%s io=%s batch=%d window=%d sinks=%d flags=%d %s: "
        "max |out err| %.3g, max lse rel err %.3g\n",
        pass ? "PASS" : "FAIL", g_nranks, interleaveName(c.interleave), c.kvHeads, c.ratio, D,
        c.pageSize, typeName(c.dtype), typeName(c.io), B, c.window, c.sinks, c.flags,
        exchangeName(cfg.exchange), worst.out, worst.lse);
  g_failures += pass ? 0 : 1;
  CHECK_SSC(sscKvCacheDestroy(cache));
  CHECK_GPU(hipFree(dQ));
  CHECK_GPU(hipFree(dOut));
  CHECK_GPU(hipFree(dLse));
  CHECK_GPU(hipFree(dSinks));
}

// A rank that skips a call: with the fused exchange its peers' waits end at STARSCREAM_TIMEOUT
// (1 s here; read at cache create) with NaN rows, and their next call on the cache fails with
// sscTimeout instead of hanging. Rank 0 never decodes (any push of it would carry the epoch the
// others wait for).
void skippedCall(sscComm_t comm, hipStream_t stream) {
  sscKvCacheConfig_t cfg = SSC_KV_CACHE_CONFIG_INITIALIZER;
  cfg.numKvHeads = 1;
  cfg.headDim = 64;
  cfg.pageSize = 4;
  cfg.maxPages = 8;
  cfg.maxSeqs = 1;
  cfg.maxBatch = 1;
  cfg.maxQHeads = 1;
  cfg.exchange = sscKvExchangeFused;
  const char* old = std::getenv("STARSCREAM_TIMEOUT");
  const std::string saved = old != nullptr ? old : "";
  setenv("STARSCREAM_TIMEOUT", "1", 1);
  sscKvCache_t cache = nullptr;
  const sscResult_t made = sscKvCacheCreate(comm, &cfg, &cache);
  if (old != nullptr)
    setenv("STARSCREAM_TIMEOUT", saved.c_str(), 1);
  else
    unsetenv("STARSCREAM_TIMEOUT");
  bool ok = made == sscSuccess;
  if (!ok) std::fprintf(stderr, "rank %d: create: %s\n", g_rank, sscGetLastError(nullptr));
  const int32_t seq = 0;
  std::vector<uint16_t> kvH(8 * 64, ref::toStorage(0.5f, sscBfloat16));
  uint16_t* kv = toDevice(kvH, g_rank);
  std::vector<float> qH(64, 0.25f);
  float* q = toDevice(qH, g_rank);
  float *out = nullptr, *lse = nullptr;
  CHECK_GPU(hipMalloc(reinterpret_cast<void**>(&out), 64 * 4));
  CHECK_GPU(hipMalloc(reinterpret_cast<void**>(&lse), 4));
  if (ok) {
    std::vector<int32_t> seqs(8, 0);
    CHECK_SSC(sscKvCacheAppend(cache, 8, seqs.data(), kv, kv, stream));
    CHECK_GPU(hipStreamSynchronize(stream));
  }
  if (ok && g_rank != 0) {
    const sscResult_t first = sscAttentionDecode(cache, q, sscFloat32, 1, 1, &seq, 0.125f, nullptr,
                                                 0, 0, out, lse, stream);
    CHECK_GPU(hipStreamSynchronize(stream));
    float l = 0;
    CHECK_GPU(hipMemcpy(&l, lse, 4, hipMemcpyDeviceToHost));
    const sscResult_t second = sscAttentionDecode(cache, q, sscFloat32, 1, 1, &seq, 0.125f, nullptr,
                                                  0, 0, out, lse, stream);
    const std::string msg = sscGetLastError(nullptr);
    ok = first == sscSuccess && std::isnan(l) && second == sscTimeout &&
         msg.find("STARSCREAM_TIMEOUT") != std::string::npos;
    if (!ok)
      std::fprintf(stderr, "rank %d: skipped call: first %s, lse %g, second %s (%s)\n", g_rank,
                   sscGetErrorString(first), l, sscGetErrorString(second), msg.c_str());
  }
  int bad = ok ? 0 : 1, anyBad = 0;
  MPI_Allreduce(&bad, &anyBad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0)
    std::printf(
        "%s K=%d fused exchange, rank 0 skips a decode: the others time out (NaN) and then "
        "fail with sscTimeout\n",
        anyBad ? "FAIL" : "PASS", g_nranks);
  g_failures += anyBad;
  if (cache != nullptr) CHECK_SSC(sscKvCacheDestroy(cache));
  CHECK_GPU(hipFree(kv));
  CHECK_GPU(hipFree(q));
  CHECK_GPU(hipFree(out));
  CHECK_GPU(hipFree(lse));
}

// --bench: decode latency on one shape (8 KV heads, GQA 8, head dim 128, bf16, 16-token pages,
// round-robin), every sequence `context` tokens long. Random data; no reference check. Prints
// the mean time of one sscAttentionDecode (max over ranks) and the KV bytes each rank reads.
void bench(sscComm_t comm, hipStream_t stream, int batch, int context, int iters) {
  const int kvHeads = 8, ratio = 8, H = kvHeads * ratio, D = 128, ps = 16;
  sscKvCacheConfig_t cfg = SSC_KV_CACHE_CONFIG_INITIALIZER;
  cfg.numKvHeads = kvHeads;
  cfg.headDim = D;
  cfg.pageSize = ps;
  const int pagesPerSeq = (context + ps - 1) / ps;
  cfg.maxPages = batch * ((pagesPerSeq + g_nranks - 1) / g_nranks) + batch;
  cfg.maxSeqs = batch;
  cfg.maxBatch = batch;
  cfg.maxQHeads = H;
  sscKvCache_t cache = nullptr;
  CHECK_SSC(sscKvCacheCreate(comm, &cfg, &cache));
  const int chunk = 4096;
  std::vector<uint16_t> kv(static_cast<size_t>(chunk) * kvHeads * D);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (auto& x : kv) x = ref::toStorage(u(rng), sscBfloat16);
  uint16_t* dKv = toDevice(kv, g_rank);
  std::vector<int32_t> seqs;
  for (int s = 0; s < batch; ++s)
    for (int t = 0; t < context; ++t) {
      seqs.push_back(s);
      if (static_cast<int>(seqs.size()) == chunk || (s == batch - 1 && t == context - 1)) {
        CHECK_SSC(
            sscKvCacheAppend(cache, static_cast<int>(seqs.size()), seqs.data(), dKv, dKv, stream));
        seqs.clear();
      }
    }
  std::vector<uint16_t> q(static_cast<size_t>(batch) * H * D);
  for (auto& x : q) x = ref::toStorage(u(rng), sscBfloat16);
  uint16_t* dQ = toDevice(q, g_rank);
  void* dOut = nullptr;
  CHECK_GPU(hipMalloc(&dOut, q.size() * 2));
  std::vector<int32_t> ids(batch);
  for (int s = 0; s < batch; ++s) ids[s] = s;
  auto once = [&] {
    CHECK_SSC(sscAttentionDecode(cache, dQ, sscBfloat16, H, batch, ids.data(), 0.088f, nullptr, 0,
                                 0, dOut, nullptr, stream));
  };
  for (int i = 0; i < 5; ++i) once();
  CHECK_GPU(hipStreamSynchronize(stream));
  MPI_Barrier(MPI_COMM_WORLD);
  hipEvent_t t0, t1;
  CHECK_GPU(hipEventCreate(&t0));
  CHECK_GPU(hipEventCreate(&t1));
  CHECK_GPU(hipEventRecord(t0, stream));
  for (int i = 0; i < iters; ++i) once();
  CHECK_GPU(hipEventRecord(t1, stream));
  CHECK_GPU(hipEventSynchronize(t1));
  float ms = 0;
  CHECK_GPU(hipEventElapsedTime(&ms, t0, t1));
  double us = 1000.0 * ms / iters, worst = 0;
  MPI_Allreduce(&us, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  const double kvBytes = 2.0 * batch * context * kvHeads * D * 2 / g_nranks;
  if (g_rank == 0)
    std::printf(
        "BENCH K=%d batch=%d context=%d kv8 gqa8 d128 bf16 page16: %.1f us per decode, "
        "%.1f MB of KV per rank, %.0f GB/s per rank\n",
        g_nranks, batch, context, worst, kvBytes / 1e6, kvBytes / (worst * 1e3));
  CHECK_GPU(hipEventDestroy(t0));
  CHECK_GPU(hipEventDestroy(t1));
  CHECK_SSC(sscKvCacheDestroy(cache));
  CHECK_GPU(hipFree(dKv));
  CHECK_GPU(hipFree(dQ));
  CHECK_GPU(hipFree(dOut));
}

// The decode cases.
void decodeCases(sscComm_t comm, hipStream_t stream) {
  // Odd lengths, one token (seq 0: empty shards on all ranks but one), an empty sequence (2).
  const std::vector<int> lengths = {1, 37, 0, 64, 129, 16, 300};
  const std::vector<int32_t> batch = {4, 0, 2, 1, 6, 5, 3};
  uint32_t seed = 1;
  int i = 0;
  for (sscKvInterleave_t il : {sscKvPageRoundRobin, sscKvContiguous, sscKvSequenceOwner})
    for (int ratio : {1, 8, 16})
      for (int d : {64, 128})
        for (sscDataType_t dtype : {sscBfloat16, sscFloat16}) {
          const int pageSizes[] = {16, 1, 5};
          Case c{il,
                 2,
                 ratio,
                 d,
                 pageSizes[i % 3],
                 dtype,
                 i % 2 == 0 ? sscFloat32 : sscBfloat16,
                 lengths,
                 batch,
                 0,
                 false,
                 0};
          ++i;
          runCase(comm, stream, c, seed++);
          c.sinks = true;
          c.window = 7;
          runCase(comm, stream, c, seed++);
          if ((2 * ratio) % g_nranks == 0) {
            c.flags = SSC_ATTN_Q_SHARDED_HEADS | SSC_ATTN_OUT_SHARDED_HEADS;
            c.window = 0;
            runCase(comm, stream, c, seed++);
            // One flag alone, in turn: replicated queries with sharded output (every rank
            // passes the whole q, the exchange an all-to-all: attention_perf's sharded-rq), and
            // sharded queries with every head returned.
            c.flags = i % 2 == 0 ? SSC_ATTN_OUT_SHARDED_HEADS : SSC_ATTN_Q_SHARDED_HEADS;
            runCase(comm, stream, c, seed++);
          }
        }
  // Many sequences: enough (sequence, KV head) blocks that the partial kernel runs without
  // split-K (the cases above mostly split each rank's pages over several blocks).
  Case many{sscKvContiguous, 8, 1, 64, 4, sscFloat16, sscFloat32, {}, {}, 0, true, 0};
  for (int s = 0; s < 48; ++s) {
    many.lengths.push_back((s * 37) % 61);
    many.batch.push_back(47 - s);
  }
  runCase(comm, stream, many, seed++);
  // A larger case: 8 KV heads x GQA 8, head dim 128, 16-token pages, thousands of tokens.
  Case big{sscKvPageRoundRobin,
           8,
           8,
           128,
           16,
           sscBfloat16,
           sscBfloat16,
           {4097, 1, 2500, 333, 8000, 17, 1024, 5},
           {0, 1, 2, 3, 4, 5, 6, 7},
           0,
           true,
           0};
  runCase(comm, stream, big, seed++);
  big.interleave = sscKvContiguous;
  big.window = 4096;
  runCase(comm, stream, big, seed++);
  // The all-gather exchange by name too, full and sharded heads.
  big.exchange = sscKvExchangeAllGather;
  runCase(comm, stream, big, seed++);
  if ((8 * 8) % g_nranks == 0) {
    big.flags = SSC_ATTN_Q_SHARDED_HEADS | SSC_ATTN_OUT_SHARDED_HEADS;
    runCase(comm, stream, big, seed++);
    // Replicated queries, sharded output, through the default exchange (the fused one where
    // the scratch maps): attention_perf's sharded-rq at a size that splits each rank's pages.
    big.exchange = sscKvExchangeAuto;
    big.flags = SSC_ATTN_OUT_SHARDED_HEADS;
    runCase(comm, stream, big, seed++);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (!startGpuRank(&argc, &argv, "gpu_attention_test", &g_rank, &g_nranks)) return 0;
  sscComm_t comm = newMpiComm(g_rank, g_nranks);
  hipStream_t stream = nullptr;
  CHECK_GPU(hipStreamCreateWithFlags(&stream, hipStreamNonBlocking));
  if (argc > 1 && std::string(argv[1]) == "--fused") g_exchange = sscKvExchangeFused;
  const bool prefillOnly = argc > 1 && std::string(argv[1]) == "--prefill";
  const bool graphOnly = argc > 1 && std::string(argv[1]) == "--graph";
  if (argc > 1 && std::string(argv[1]) == "--bench") {
    bench(comm, stream, argc > 2 ? std::atoi(argv[2]) : 32, argc > 3 ? std::atoi(argv[3]) : 8192,
          argc > 4 ? std::atoi(argv[4]) : 50);
    CHECK_GPU(hipStreamDestroy(stream));
    CHECK_SSC(sscCommFinalize(comm));
    CHECK_SSC(sscCommDestroy(comm));
    MPI_Finalize();
    return 0;
  }

  if (!prefillOnly && !graphOnly) decodeCases(comm, stream);
  if (!prefillOnly && !graphOnly)
    g_failures += runTrimCases(comm, stream, g_rank, g_nranks, g_exchange);
  if (!prefillOnly) g_failures += runGraphCases(comm, stream, g_rank, g_nranks);
  if (!graphOnly) g_failures += runPrefillCases(comm, stream, g_rank, g_nranks, g_exchange);
  if (g_nranks > 1 && g_exchange == sscKvExchangeFused) skippedCall(comm, stream);

  CHECK_GPU(hipStreamDestroy(stream));
  CHECK_SSC(sscCommFinalize(comm));
  CHECK_SSC(sscCommDestroy(comm));
  if (g_rank == 0)
    std::printf("gpu_attention_test K=%d: %s (%d failure(s))\n", g_nranks,
                g_failures == 0 ? "PASSED" : "FAILED", g_failures);
  MPI_Finalize();
  return g_failures == 0 ? 0 : 1;
}
