// SPDX-License-Identifier: MIT
// The sliding-window cases of gpu_attention_test: a GPT-OSS-like sliding-window layer (one KV
// head group of 8 query heads, head dim 64, bf16, 16-token pages, window 128, sinks) whose
// sequences grow by chunks of tokens in a pool that holds only their windows, trimmed
// (sscKvCacheTrimSequence) after every append, so the pages a trim frees go to the other
// sequences at once. Every step decodes the batch (twice: the page-list upload is reused while
// the table does not change) and is checked against the fp32 host reference over the window.
#include "tests/gpu/gpu_attention_trim.h"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "starscream/starscream_ops.h"
#include "tests/gpu/gpu_attention_check.h"
#include "tests/gpu/gpu_test_setup.h"
#include "tests/support/attention_reference.h"

namespace ref = ssc::test::attn;

namespace {

int g_rank = 0, g_nranks = 1;

constexpr int kKvHeads = 1, kRatio = 8, kHeads = kKvHeads * kRatio, kDim = 64, kPage = 16;
constexpr int kWindow = 128, kStep = 37;  // tokens a sequence grows by between decodes

// One layer's decode loop; returns 1 when any step failed on any rank (the same on all).
int runTrimCase(sscComm_t comm, hipStream_t stream, sscKvInterleave_t interleave,
                sscKvExchange_t exchange, uint32_t seed) {
  const std::vector<int> finalLengths = {700, 333, 150};
  const int nseqs = static_cast<int>(finalLengths.size());
  const ref::Workload w = ref::makeWorkload(seed, kKvHeads, kDim, sscBfloat16, finalLengths, 2);
  sscKvCacheConfig_t cfg = SSC_KV_CACHE_CONFIG_INITIALIZER;
  cfg.numKvHeads = kKvHeads;
  cfg.headDim = kDim;
  cfg.pageSize = kPage;
  // A window plus one step's tokens over ceil(tokens / page) + 1 pages, per sequence: the
  // sequences untrimmed need about twice that (75 pages against 36).
  cfg.maxPages = nseqs * ((kWindow + kStep + kPage - 1) / kPage + 1);
  cfg.maxSeqs = nseqs;
  cfg.maxBatch = nseqs;
  cfg.maxQHeads = kHeads;
  cfg.interleave = interleave;
  cfg.blockPages = 2;
  cfg.exchange = exchange;
  sscKvCache_t cache = nullptr;
  CHECK_SSC(sscKvCacheCreate(comm, &cfg, &cache));

  std::vector<float> sinks(kHeads), q(static_cast<size_t>(nseqs) * kHeads * kDim);
  for (int h = 0; h < kHeads; ++h) sinks[h] = -0.5f + 0.25f * h;
  for (size_t i = 0; i < q.size(); ++i)
    q[i] = ref::roundTo(std::sin(0.37f * static_cast<float>(i)), sscBfloat16);
  std::vector<uint16_t> qH;
  for (float x : q) qH.push_back(ref::toStorage(x, sscBfloat16));
  float* dSinks = toDevice(sinks, g_rank);
  uint16_t* dQ = toDevice(qH, g_rank);
  uint16_t* dOut = nullptr;
  float* dLse = nullptr;
  CHECK_GPU(hipMalloc(reinterpret_cast<void**>(&dOut), q.size() * 2));
  CHECK_GPU(hipMalloc(reinterpret_cast<void**>(&dLse), static_cast<size_t>(nseqs) * kHeads * 4));
  const float scale = 1.0f / std::sqrt(static_cast<float>(kDim));
  const std::vector<int32_t> all = {0, 1, 2};

  std::vector<int> len(nseqs, 0);
  AttnErrors err;
  bool ok = true;
  std::string what;
  int steps = 0;
  for (bool growing = true; growing && ok; ++steps) {
    int appended = 0;
    sscResult_t grown = appendGrowth(cache, stream, w, finalLengths, kKvHeads, kDim, kStep, &len,
                                     &appended, g_rank);
    growing = appended > 0;
    if (growing) {
      for (int s = 0; s < nseqs && grown == sscSuccess; ++s)
        grown = sscKvCacheTrimSequence(cache, s, std::max(0, len[s] - kWindow));
      if (grown != sscSuccess) {
        ok = false;
        what = std::string("append or trim: ") + sscGetLastError(nullptr);
        break;
      }
    }
    sscResult_t r = sscSuccess;
    for (int rep = 0; rep < 2 && r == sscSuccess; ++rep)
      r = sscAttentionDecode(cache, dQ, sscBfloat16, kHeads, nseqs, all.data(), scale, dSinks,
                             kWindow, 0, dOut, dLse, stream);
    const hipError_t se = hipStreamSynchronize(stream);
    if (r != sscSuccess || se != hipSuccess) {
      ok = false;
      what = r != sscSuccess ? std::string("decode: ") + sscGetLastError(nullptr)
                             : hipGetErrorString(se);
      break;
    }
    const std::vector<float> out = readOutput(dOut, q.size(), sscBfloat16, g_rank);
    std::vector<float> lse(static_cast<size_t>(nseqs) * kHeads), expect(kDim);
    CHECK_GPU(hipMemcpy(lse.data(), dLse, lse.size() * 4, hipMemcpyDeviceToHost));
    for (int s = 0; s < nseqs; ++s)
      for (int h = 0; h < kHeads; ++h) {
        const size_t row = static_cast<size_t>(s) * kHeads + h;
        const float el = ref::referenceAttention(w, s, h / kRatio, &q[row * kDim], scale, kWindow,
                                                 &sinks[h], expect.data(), len[s]);
        for (int i = 0; i < kDim; ++i) err.addOut(out[row * kDim + i], expect[i]);
        err.addLse(lse[row], el);
      }
  }
  // The whole sequence reaches below the trims: refused on every rank alike, before any launch.
  const sscResult_t whole = sscAttentionDecode(cache, dQ, sscBfloat16, kHeads, nseqs, all.data(),
                                               scale, dSinks, 0, 0, dOut, dLse, stream);
  if (ok && whole != sscInvalidUsage) {
    ok = false;
    what = std::string("window 0 after trims: ") + sscGetErrorString(whole);
  }
  ok = ok && err.pass(sscBfloat16);
  AttnErrors worst;
  const bool pass = allRanksPass(ok, err, &worst);
  if (!ok) std::fprintf(stderr, "rank %d: trimmed window: %s\n", g_rank, what.c_str());
  if (g_rank == 0)
    std::printf(
        "%s TRIM K=%d %s kv%d gqa%d d%d page%d window=%d lengths=700,333,150 steps=%d pool=%d %s: "
        "max |out err| %.3g, max lse rel err %.3g\n",
        pass ? "PASS" : "FAIL", g_nranks, ref::interleaveName(interleave), kKvHeads, kRatio, kDim,
        kPage, kWindow, steps, cfg.maxPages, exchangeName(exchange), worst.out, worst.lse);
  CHECK_SSC(sscKvCacheDestroy(cache));
  CHECK_GPU(hipFree(dQ));
  CHECK_GPU(hipFree(dOut));
  CHECK_GPU(hipFree(dLse));
  CHECK_GPU(hipFree(dSinks));
  return pass ? 0 : 1;
}

}  // namespace

int runTrimCases(sscComm_t comm, hipStream_t stream, int rank, int nranks,
                 sscKvExchange_t exchange) {
  g_rank = rank;
  g_nranks = nranks;
  int failures = 0;
  uint32_t seed = 900;
  for (sscKvInterleave_t il : {sscKvSequenceOwner, sscKvPageRoundRobin, sscKvContiguous})
    failures += runTrimCase(comm, stream, il, exchange, seed++);
  return failures;
}
