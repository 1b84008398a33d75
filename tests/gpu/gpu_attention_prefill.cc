// SPDX-License-Identifier: MIT
// Prefill (sscAttentionPrefill) on the GPU backend against the fp32 host reference, every query
// token at its own position: every interleave, GQA 1/8/16, head dims 64/128, bf16 and fp16
// storage, fp32 and bf16 queries, a batch of sequences with a cached prefix and a new chunk
// (chunked prefill), a whole odd-length prompt, a one-token first chunk, a one-token chunk after
// a prefix, a sequence without new tokens; sinks, a sliding window, sharded output heads; then
// larger cases (thousands of tokens, several exchange rounds, the all-gather by name), whose
// check samples tokens to keep the host reference short. Each call runs twice in a row (the
// exchange's buffer reuse); the second result is checked. Run it at any K:
// tools/emulate/partition-run.sh 8 build/bin/gpu_attention_test (its prefill cases).
#include "tests/gpu/gpu_attention_prefill.h"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "starscream/starscream_ops.h"
#include "tests/gpu/gpu_attention_check.h"
#include "tests/gpu/gpu_test_setup.h"
#include "tests/support/attention_reference.h"

namespace ref = ssc::test::attn;

namespace {

int g_rank = 0, g_nranks = 1;

struct PrefillCase {
  sscKvInterleave_t interleave;
  int kvHeads, ratio, headDim, pageSize;
  sscDataType_t dtype, io;
  std::vector<int> lengths;    // by sequence id
  std::vector<int32_t> batch;  // sequence ids of the call
  std::vector<int> newTokens;  // by batch entry: the chunk, the sequence's last tokens
  int window;
  bool sinks;
  int flags;
  int maxBatch;     // 0: one exchange round for the whole call
  int exchange;     // -1: the program's choice
  int sampleEvery;  // check every n-th token of a sequence (and its last)
};

using ref::interleaveName;
using ref::typeName;

int runCase(sscComm_t comm, hipStream_t stream, const PrefillCase& c, uint32_t seed,
            sscKvExchange_t exchange) {
  const int H = c.kvHeads * c.ratio, D = c.headDim, B = static_cast<int>(c.batch.size());
  const ref::Workload w = ref::makeWorkload(seed, c.kvHeads, D, c.dtype, c.lengths, 3);
  std::vector<int32_t> cu = {0};
  for (int b = 0; b < B; ++b) cu.push_back(cu.back() + c.newTokens[b]);
  const int T = cu.back();
  int maxPages = 0;
  for (int len : c.lengths) maxPages += (len + c.pageSize - 1) / c.pageSize;

  sscKvCacheConfig_t cfg = SSC_KV_CACHE_CONFIG_INITIALIZER;
  cfg.numKvHeads = c.kvHeads;
  cfg.headDim = D;
  cfg.pageSize = c.pageSize;
  cfg.maxPages = maxPages + 1;
  cfg.maxSeqs = static_cast<int>(c.lengths.size());
  cfg.maxBatch = c.maxBatch > 0 ? c.maxBatch : std::max(T, 1);
  cfg.maxQHeads = H;
  cfg.dtype = c.dtype;
  cfg.interleave = c.interleave;
  cfg.blockPages = 3;
  cfg.exchange = c.exchange >= 0 ? static_cast<sscKvExchange_t>(c.exchange) : exchange;
  sscKvCache_t cache = cacheWithWorkload(comm, stream, cfg, w, g_rank);

  const bool outSharded = c.flags & SSC_ATTN_OUT_SHARDED_HEADS;
  const int outHeads = outSharded ? H / g_nranks : H, outFirst = outSharded ? g_rank * outHeads : 0;
  std::mt19937 rng(seed * 7 + 1);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<float> qFull(static_cast<size_t>(T) * H * D), qF;
  std::vector<uint16_t> qH;
  for (float& x : qFull) {
    x = ref::roundTo(u(rng), c.io);
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
  const size_t outElems = static_cast<size_t>(T) * outHeads * D;
  void* dOut = nullptr;
  float* dLse = nullptr;
  CHECK_GPU(hipMalloc(&dOut, std::max<size_t>(outElems, 1) * 4));
  CHECK_GPU(hipMalloc(reinterpret_cast<void**>(&dLse),
                      std::max<size_t>(static_cast<size_t>(T) * outHeads, 1) * 4));
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  sscResult_t r = sscSuccess;
  for (int rep = 0; rep < 2 && r == sscSuccess; ++rep)
    r = sscAttentionPrefill(cache, dQ, c.io, H, B, c.batch.data(), cu.data(), scale,
                            c.sinks ? dSinks : nullptr, c.window, c.flags, dOut, dLse, stream);
  const hipError_t se = hipStreamSynchronize(stream);
  bool ok = r == sscSuccess && se == hipSuccess;
  std::vector<float> outF, lse(static_cast<size_t>(T) * outHeads);
  if (ok && T > 0) {
    outF = readOutput(dOut, outElems, c.io, g_rank);
    CHECK_GPU(hipMemcpy(lse.data(), dLse, lse.size() * 4, hipMemcpyDeviceToHost));
  }

  AttnErrors err;
  std::vector<float> expect(D);
  for (int b = 0; ok && b < B; ++b)
    for (int t = 0; t < c.newTokens[b]; ++t) {
      if (t % c.sampleEvery != 0 && t != c.newTokens[b] - 1) continue;
      const int seq = c.batch[b], pos = c.lengths[seq] - c.newTokens[b] + t, token = cu[b] + t;
      for (int j = 0; j < outHeads; ++j) {
        const int h = outFirst + j;
        const float el = ref::referenceAttention(
            w, seq, h / c.ratio, &qFull[(static_cast<size_t>(token) * H + h) * D], scale, c.window,
            c.sinks ? &sinks[h] : nullptr, expect.data(), pos + 1);
        for (int i = 0; i < D; ++i)
          err.addOut(outF[(static_cast<size_t>(token) * outHeads + j) * D + i], expect[i]);
        err.addLse(lse[static_cast<size_t>(token) * outHeads + j], el);
      }
    }
  ok = ok && err.pass(c.io);
  AttnErrors worst;
  const bool pass = allRanksPass(ok, err, &worst);
  if (!ok)
    std::fprintf(stderr, "rank %d: prefill %s%s\n", g_rank, sscGetErrorString(r),
                 r != sscSuccess ? (std::string(": ") + sscGetLastError(nullptr)).c_str() : "");
  if (g_rank == 0)
    std::printf(
        "%s PREFILL K=%d %s kv%d gqa%d d%d page%d kv=%s io=%s seqs=%d tokens=%d window=%d sinks=%d "
        "flags=%d maxBatch=%d %s: max |out err| %.3g, max lse rel err %.3g\n",
        pass ? "PASS" : "FAIL", g_nranks, interleaveName(c.interleave), c.kvHeads, c.ratio, D,
        c.pageSize, typeName(c.dtype), typeName(c.io), B, T, c.window, c.sinks, c.flags,
        cfg.maxBatch, exchangeName(cfg.exchange), worst.out, worst.lse);
  CHECK_SSC(sscKvCacheDestroy(cache));
  CHECK_GPU(hipFree(dQ));
  CHECK_GPU(hipFree(dOut));
  CHECK_GPU(hipFree(dLse));
  CHECK_GPU(hipFree(dSinks));
  return pass ? 0 : 1;
}

}  // namespace

int runPrefillCases(sscComm_t comm, hipStream_t stream, int rank, int nranks,
                    sscKvExchange_t exchange) {
  g_rank = rank;
  g_nranks = nranks;
  int failures = 0;
  uint32_t seed = 500;
  // Seq 4: 60 new after 69 cached; 0: its first token; 2: no new token; 1: a whole 37-token
  // prompt; 6: one token after 299 (a decode through prefill); 5: 16 after nothing; 3: 10 after 54.
  const std::vector<int> lengths = {1, 37, 0, 64, 129, 16, 300};
  const std::vector<int32_t> batch = {4, 0, 2, 1, 6, 5, 3};
  const std::vector<int> fresh = {60, 1, 0, 37, 1, 16, 10};
  int i = 0;
  for (sscKvInterleave_t il : {sscKvPageRoundRobin, sscKvContiguous, sscKvSequenceOwner})
    for (int ratio : {1, 8, 16})
      for (int d : {64, 128})
        for (sscDataType_t dtype : {sscBfloat16, sscFloat16}) {
          const int pageSizes[] = {16, 1, 5};
          // maxBatch 0 (one round) or 3 (rounds of 3 * 2 * ratio / (2 * ratio) = 3 tokens).
          PrefillCase c{il,
                        2,
                        ratio,
                        d,
                        pageSizes[i % 3],
                        dtype,
                        i % 2 == 0 ? sscFloat32 : sscBfloat16,
                        lengths,
                        batch,
                        fresh,
                        0,
                        false,
                        0,
                        i % 4 == 1 ? 3 : 0,
                        -1,
                        1};
          ++i;
          failures += runCase(comm, stream, c, seed++, exchange);
          c.sinks = true;
          c.window = 7;
          if ((2 * ratio) % nranks == 0) c.flags = SSC_ATTN_OUT_SHARDED_HEADS;
          failures += runCase(comm, stream, c, seed++, exchange);
        }
  // Larger: 2 KV heads x GQA 8, head dim 128, 16-token pages, 1600+ new tokens: a 700-token chunk
  // after 800 cached, a whole 901-token prompt, a one-token first chunk, one token after 63.
  PrefillCase big{sscKvPageRoundRobin,
                  2,
                  8,
                  128,
                  16,
                  sscBfloat16,
                  sscBfloat16,
                  {1500, 901, 1, 64},
                  {0, 1, 2, 3},
                  {700, 901, 1, 1},
                  0,
                  true,
                  0,
                  0,
                  -1,
                  13};
  failures += runCase(comm, stream, big, seed++, exchange);
  big.window = 256;  // a sliding window over pages of several ranks
  big.interleave = sscKvContiguous;
  failures += runCase(comm, stream, big, seed++, exchange);
  big.window = 0;
  big.maxBatch = 40;  // rounds of 40 tokens: sequences straddle rounds
  big.io = sscFloat32;
  failures += runCase(comm, stream, big, seed++, exchange);
  big.exchange = sscKvExchangeAllGather;
  big.io = sscBfloat16;
  failures += runCase(comm, stream, big, seed++, exchange);
  if (16 % nranks == 0) {
    big.flags = SSC_ATTN_OUT_SHARDED_HEADS;
    big.maxBatch = 0;
    failures += runCase(comm, stream, big, seed++, exchange);
  }
  // A sliding-window layer as the op wants it: not sharded (sequence owner), GQA 8, d 64, sinks.
  PrefillCase swa{
      sscKvSequenceOwner, 1,   8,    64, 16, sscBfloat16, sscBfloat16, {1200, 333, 700}, {2, 0, 1},
      {500, 333, 1},      128, true, 0,  0,  -1,          11};
  failures += runCase(comm, stream, swa, seed++, exchange);
  return failures;
}
