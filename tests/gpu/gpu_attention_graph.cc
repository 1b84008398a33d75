// SPDX-License-Identifier: MIT
// The captured-decode cases of gpu_attention_test: a decode captured once into a CUDA/HIP graph
// and replayed while its sequences grow, as a serving engine replays its decode step (vLLM
// captures one per batch size). Each step appends tokens (eagerly, on the replay stream), replays
// the graph and checks its output against the fp32 host reference at the lengths of that step;
// every other step also runs an eager decode of the same batch first, so captured and eager calls
// share the fused exchange's call counter. One sequence is released halfway and grows again from
// nothing; the windowed case trims after every append (its trims stay at the window start), and
// a trim below what the graph reads is refused. Every interleave, full and sharded heads.
#include "tests/gpu/gpu_attention_graph.h"

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

constexpr int kKvHeads = 2, kRatio = 8, kHeads = kKvHeads * kRatio, kDim = 128, kPage = 16,
              kStep = 29;

struct GraphCase {
  sscKvInterleave_t interleave;
  int flags;
  int window;  // 0: whole sequences; else trimmed to the window after every append
};

// Appends up to kStep more tokens of every sequence below its final length. False with *what set
// when the append failed.
bool grow(sscKvCache_t cache, hipStream_t stream, const ref::Workload& w,
          const std::vector<int>& finalLengths, std::vector<int>* len, std::string* what) {
  int appended = 0;
  const sscResult_t r =
      appendGrowth(cache, stream, w, finalLengths, kKvHeads, kDim, kStep, len, &appended, g_rank);
  if (r != sscSuccess) *what = std::string("append: ") + sscGetLastError(nullptr);
  return r == sscSuccess;
}

// One captured decode grown over its steps; returns 1 when any step failed on any rank.
int runGraphCase(sscComm_t comm, hipStream_t stream, const GraphCase& gc, uint32_t seed) {
  const std::vector<int> finalLengths = {420, 97, 1, 260};
  const int nseqs = static_cast<int>(finalLengths.size());
  const ref::Workload w = ref::makeWorkload(seed, kKvHeads, kDim, sscBfloat16, finalLengths, 1);
  sscKvCacheConfig_t cfg = SSC_KV_CACHE_CONFIG_INITIALIZER;
  cfg.numKvHeads = kKvHeads;
  cfg.headDim = kDim;
  cfg.pageSize = kPage;
  int pages = 0;
  for (int len : finalLengths) pages += (len + kPage - 1) / kPage + 1;
  cfg.maxPages = pages;
  cfg.maxSeqs = nseqs;
  cfg.maxBatch = nseqs;
  cfg.maxQHeads = kHeads;
  cfg.interleave = gc.interleave;
  cfg.blockPages = 2;
  cfg.exchange = sscKvExchangeAuto;
  sscKvCache_t cache = nullptr;
  CHECK_SSC(sscKvCacheCreate(comm, &cfg, &cache));

  const bool qSharded = gc.flags & SSC_ATTN_Q_SHARDED_HEADS,
             outSharded = gc.flags & SSC_ATTN_OUT_SHARDED_HEADS;
  const int qHeads = qSharded ? kHeads / g_nranks : kHeads,
            outHeads = outSharded ? kHeads / g_nranks : kHeads;
  const int qFirst = qSharded ? g_rank * qHeads : 0, outFirst = outSharded ? g_rank * outHeads : 0;
  std::vector<float> qFull(static_cast<size_t>(nseqs) * kHeads * kDim), sinks(kHeads);
  for (size_t i = 0; i < qFull.size(); ++i)
    qFull[i] = ref::roundTo(std::cos(0.11f * static_cast<float>(i + seed)), sscBfloat16);
  for (int h = 0; h < kHeads; ++h) sinks[h] = -1.0f + 0.125f * h;
  std::vector<uint16_t> qH;
  for (int b = 0; b < nseqs; ++b)
    for (int h = qFirst; h < qFirst + qHeads; ++h)
      for (int i = 0; i < kDim; ++i)
        qH.push_back(
            ref::toStorage(qFull[(static_cast<size_t>(b) * kHeads + h) * kDim + i], sscBfloat16));
  uint16_t* dQ = toDevice(qH, g_rank);
  float* dSinks = toDevice(sinks, g_rank);
  const size_t outElems = static_cast<size_t>(nseqs) * outHeads * kDim,
               lseElems = static_cast<size_t>(nseqs) * outHeads;
  void *dOut = nullptr, *dEagerOut = nullptr;
  float *dLse = nullptr, *dEagerLse = nullptr;
  CHECK_GPU(hipMalloc(&dOut, outElems * 2));
  CHECK_GPU(hipMalloc(&dEagerOut, outElems * 2));
  CHECK_GPU(hipMalloc(reinterpret_cast<void**>(&dLse), lseElems * 4));
  CHECK_GPU(hipMalloc(reinterpret_cast<void**>(&dEagerLse), lseElems * 4));
  const float scale = 1.0f / std::sqrt(static_cast<float>(kDim));
  const std::vector<int32_t> batch = {3, 0, 2, 1};

  std::vector<int> len(nseqs, 0);
  AttnErrors err;
  std::string what;
  bool ok = grow(cache, stream, w, finalLengths, &len, &what);

  // The capture: one decode, nothing else in the graph.
  hipGraph_t graph = nullptr;
  hipGraphExec_t exec = nullptr;
  if (ok) {
    CHECK_GPU(hipStreamBeginCapture(stream, hipStreamCaptureModeGlobal));
    const sscResult_t r =
        sscAttentionDecode(cache, dQ, sscBfloat16, kHeads, nseqs, batch.data(), scale, dSinks,
                           gc.window, gc.flags, dOut, dLse, stream);
    const hipError_t ce = hipStreamEndCapture(stream, &graph);
    if (r != sscSuccess || ce != hipSuccess) {
      ok = false;
      what = r != sscSuccess ? std::string("captured decode: ") + sscGetLastError(nullptr)
                             : hipGetErrorString(ce);
    } else {
      CHECK_GPU(hipGraphInstantiateWithFlags(&exec, graph, 0));
    }
  }

  // Checks one output (outHeads of every batch entry) against the reference at the lengths now.
  const auto check = [&](void* dO, float* dL) {
    const std::vector<float> out = readOutput(dO, outElems, sscBfloat16, g_rank);
    std::vector<float> lse(lseElems), expect(kDim);
    CHECK_GPU(hipMemcpy(lse.data(), dL, lse.size() * 4, hipMemcpyDeviceToHost));
    for (int b = 0; b < nseqs; ++b)
      for (int j = 0; j < outHeads; ++j) {
        const int h = outFirst + j, s = batch[b];
        const float el = ref::referenceAttention(
            w, s, h / kRatio, &qFull[(static_cast<size_t>(b) * kHeads + h) * kDim], scale,
            gc.window, &sinks[h], expect.data(), len[s]);
        const size_t row = static_cast<size_t>(b) * outHeads + j;
        for (int i = 0; i < kDim; ++i) err.addOut(out[row * kDim + i], expect[i]);
        err.addLse(lse[row], el);
      }
  };

  int steps = 0;
  bool released = false;
  for (; ok; ++steps) {
    if (steps > 0) {
      const std::vector<int> before = len;
      if (!(ok = grow(cache, stream, w, finalLengths, &len, &what))) break;
      if (len == before) break;
    }
    for (int s = 0; ok && gc.window > 0 && s < nseqs; ++s) {
      const sscResult_t r = sscKvCacheTrimSequence(cache, s, std::max(0, len[s] - gc.window));
      if (r != sscSuccess) {
        ok = false;
        what = std::string("trim: ") + sscGetLastError(nullptr);
      }
    }
    // Halfway, sequence 1 (released) restarts from nothing: the next replay reads it empty.
    if (ok && steps == 4 && !released) {
      CHECK_SSC(sscKvCacheReleaseSequence(cache, 1));
      len[1] = 0;
      released = true;
    }
    if (!ok) break;
    if (steps % 2 == 1) {
      const sscResult_t r =
          sscAttentionDecode(cache, dQ, sscBfloat16, kHeads, nseqs, batch.data(), scale, dSinks,
                             gc.window, gc.flags, dEagerOut, dEagerLse, stream);
      if (r != sscSuccess) {
        ok = false;
        what = std::string("eager decode: ") + sscGetLastError(nullptr);
        break;
      }
    }
    const hipError_t le = hipGraphLaunch(exec, stream);
    const hipError_t se = hipStreamSynchronize(stream);
    if (le != hipSuccess || se != hipSuccess) {
      ok = false;
      what = std::string("replay: ") + hipGetErrorString(le != hipSuccess ? le : se);
      break;
    }
    check(dOut, dLse);
    if (steps % 2 == 1) check(dEagerOut, dEagerLse);
  }
  // A trim below what the graph reads: refused, nothing changed (whole sequences: any trim).
  if (ok) {
    const int s = 0, position = gc.window > 0 ? len[s] - gc.window + 1 : 1;
    const sscResult_t r = sscKvCacheTrimSequence(cache, s, position);
    if (r != sscInvalidUsage) {
      ok = false;
      what = std::string("a trim below the graph's window start returned ") + sscGetErrorString(r);
    }
  }
  ok = ok && err.pass(sscBfloat16);
  AttnErrors worst;
  const bool pass = allRanksPass(ok, err, &worst);
  if (!ok) std::fprintf(stderr, "rank %d: captured decode: %s\n", g_rank, what.c_str());
  if (g_rank == 0)
    std::printf(
        "%s GRAPH K=%d %s kv%d gqa%d d%d page%d window=%d flags=%d steps=%d: max |out err| %.3g, "
        "max lse rel err %.3g\n",
        pass ? "PASS" : "FAIL", g_nranks, ref::interleaveName(gc.interleave), kKvHeads, kRatio,
        kDim, kPage, gc.window, gc.flags, steps, worst.out, worst.lse);
  if (exec != nullptr) CHECK_GPU(hipGraphExecDestroy(exec));
  if (graph != nullptr) CHECK_GPU(hipGraphDestroy(graph));
  CHECK_SSC(sscKvCacheDestroy(cache));
  CHECK_GPU(hipFree(dQ));
  CHECK_GPU(hipFree(dSinks));
  CHECK_GPU(hipFree(dOut));
  CHECK_GPU(hipFree(dEagerOut));
  CHECK_GPU(hipFree(dLse));
  CHECK_GPU(hipFree(dEagerLse));
  return pass ? 0 : 1;
}

}  // namespace

int runGraphCases(sscComm_t comm, hipStream_t stream, int rank, int nranks) {
  g_rank = rank;
  g_nranks = nranks;
  int failures = 0;
  uint32_t seed = 700;
  const int sharded = SSC_ATTN_Q_SHARDED_HEADS | SSC_ATTN_OUT_SHARDED_HEADS;
  for (sscKvInterleave_t il : {sscKvPageRoundRobin, sscKvContiguous, sscKvSequenceOwner}) {
    failures += runGraphCase(comm, stream, {il, 0, 0}, seed++);
    if (kHeads % nranks == 0) failures += runGraphCase(comm, stream, {il, sharded, 0}, seed++);
  }
  failures += runGraphCase(comm, stream, {sscKvPageRoundRobin, 0, 100}, seed++);
  return failures;
}
