// SPDX-License-Identifier: MIT
// How gpu_attention_test's cases (decode, prefill, trimmed windows) judge a result against the
// fp32 host reference (tests/support/attention_reference.h): the largest output error, the
// largest LSE error, and one verdict that every rank agrees on.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "starscream/starscream_ops.h"
#include "tests/gpu/gpu_test_setup.h"
#include "tests/support/attention_reference.h"

struct AttnErrors {
  double out = 0;  // largest |got - want| of an output element (NaN: infinite)
  double lse = 0;  // largest LSE error relative to max(1, |want|); an infinite want must match

  void addOut(float got, float want) {
    out = std::isnan(got) ? INFINITY : std::max(out, std::fabs(static_cast<double>(got) - want));
  }
  void addLse(float got, float want) {
    if (std::isnan(got))
      lse = INFINITY;
    else if (std::isinf(want))
      lse = std::max(lse, got == want ? 0.0 : INFINITY);
    else
      lse = std::max(lse,
                     std::fabs(static_cast<double>(got) - want) / std::max(1.0f, std::fabs(want)));
  }
  // Outputs within the io type's rounding plus fp32 accumulation; LSEs within fp32's.
  bool pass(sscDataType_t io) const {
    return out <= (io == sscFloat32 ? 1e-4 : 1e-2) && lse <= 1e-4;
  }
};

// Collective over MPI_COMM_WORLD: whether every rank's `ok` holds, with the largest errors of all
// ranks in *worst.
inline bool allRanksPass(bool ok, const AttnErrors& mine, AttnErrors* worst) {
  int bad = ok ? 0 : 1, anyBad = 0;
  double e[2] = {mine.out, mine.lse}, all[2] = {0, 0};
  MPI_Allreduce(&bad, &anyBad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(e, all, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  worst->out = all[0];
  worst->lse = all[1];
  return anyBad == 0;
}

// A cache of cfg on comm holding w's tokens: each round appended from device copies, freed once
// the append has run.
inline sscKvCache_t cacheWithWorkload(sscComm_t comm, hipStream_t stream,
                                      const sscKvCacheConfig_t& cfg,
                                      const ssc::test::attn::Workload& w, int rank) {
  sscKvCache_t cache = nullptr;
  checkSscOrAbort(sscKvCacheCreate(comm, &cfg, &cache), "sscKvCacheCreate", rank);
  for (const auto& round : w.rounds) {
    uint16_t* k = toDevice(round.k, rank);
    uint16_t* v = toDevice(round.v, rank);
    checkSscOrAbort(sscKvCacheAppend(cache, static_cast<int>(round.seqs.size()), round.seqs.data(),
                                     k, v, stream),
                    "sscKvCacheAppend", rank);
    checkGpuOrAbort(hipStreamSynchronize(stream), "hipStreamSynchronize", rank);
    checkGpuOrAbort(hipFree(k), "hipFree", rank);
    checkGpuOrAbort(hipFree(v), "hipFree", rank);
  }
  return cache;
}

// Grows every sequence of w by up to `step` tokens, none past its final length: w's bf16 K/V of
// the positions they land on, appended from device copies that are freed once the append has
// run; advances *len. *appended: how many tokens went in (0: nothing left, nothing called).
inline sscResult_t appendGrowth(sscKvCache_t cache, hipStream_t stream,
                                const ssc::test::attn::Workload& w,
                                const std::vector<int>& finalLengths, int kvHeads, int dim,
                                int step, std::vector<int>* len, int* appended, int rank) {
  std::vector<int32_t> ids;
  std::vector<uint16_t> k, v;
  for (int s = 0; s < static_cast<int>(finalLengths.size()); ++s)
    for (int t = 0; t < step && (*len)[s] < finalLengths[s]; ++t, ++(*len)[s]) {
      ids.push_back(s);
      for (int i = 0; i < kvHeads * dim; ++i) {
        k.push_back(ssc::test::attn::toStorage(w.k(s, (*len)[s], 0)[i], sscBfloat16));
        v.push_back(ssc::test::attn::toStorage(w.v(s, (*len)[s], 0)[i], sscBfloat16));
      }
    }
  *appended = static_cast<int>(ids.size());
  if (ids.empty()) return sscSuccess;
  uint16_t* dK = toDevice(k, rank);
  uint16_t* dV = toDevice(v, rank);
  const sscResult_t r =
      sscKvCacheAppend(cache, static_cast<int>(ids.size()), ids.data(), dK, dV, stream);
  checkGpuOrAbort(hipStreamSynchronize(stream), "hipStreamSynchronize", rank);  // before the frees
  checkGpuOrAbort(hipFree(dK), "hipFree", rank);
  checkGpuOrAbort(hipFree(dV), "hipFree", rank);
  return r;
}

inline const char* exchangeName(int exchange) {
  return exchange == sscKvExchangeAllGather ? "allgather"
         : exchange == sscKvExchangeFused   ? "fused"
                                            : "auto";
}

// `elems` outputs of io type on the device, as floats on the host.
inline std::vector<float> readOutput(const void* dOut, size_t elems, sscDataType_t io, int rank) {
  std::vector<float> f(elems);
  if (io == sscFloat32) {
    checkGpuOrAbort(hipMemcpy(f.data(), dOut, elems * 4, hipMemcpyDeviceToHost), "hipMemcpy", rank);
    return f;
  }
  std::vector<uint16_t> h(elems);
  checkGpuOrAbort(hipMemcpy(h.data(), dOut, elems * 2, hipMemcpyDeviceToHost), "hipMemcpy", rank);
  for (size_t i = 0; i < elems; ++i) f[i] = ssc::test::attn::fromStorage(h[i], io);
  return f;
}
