// SPDX-License-Identifier: MIT
// Test support for sharded attention: a KV workload (tokens appended over several rounds, the
// values rounded to the cache's storage type) and a straightforward fp32-input, double-
// accumulated reference attention over it. Shared by the host tests (tests/ops) and the GPU test
// program (tests/gpu/gpu_attention_test.cc). Header-only; needs ssc_kernels' conversions.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "src/kernels/host/reduce.h"
#include "starscream/starscream.h"
#include "starscream/starscream_ops.h"
#include "tests/support/half_storage.h"

namespace ssc::test::attn {

// Short names for test output and parameterized test names.
inline const char* interleaveName(sscKvInterleave_t i) {
  return i == sscKvPageRoundRobin ? "rr" : i == sscKvContiguous ? "contig" : "seqowner";
}
inline const char* typeName(sscDataType_t t) {
  return t == sscFloat32 ? "fp32" : t == sscFloat16 ? "fp16" : "bf16";
}

// A host test's parameters: ranks (threads) and the cache's interleave; named "<interleave>_np<n>".
struct RanksCase {
  int nranks;
  sscKvInterleave_t interleave;
};
inline std::string ranksCaseName(int nranks, sscKvInterleave_t interleave) {
  return std::string(interleaveName(interleave)) + "_np" + std::to_string(nranks);
}

using ssc::test::fromStorage;
using ssc::test::toStorage;
// Rounds x through type t (fp32 stays as it is).
inline float roundTo(float x, sscDataType_t t) {
  return t == sscFloat32 ? x : fromStorage(toStorage(x, t), t);
}

// Tokens appended in rounds. Round r appends rounds[r].seqs[i] with K/V rows
// [i][kv head][headDim] (storage bits); seqK/seqV hold the same values as floats by sequence:
// [seq][position][kv head][headDim].
struct Workload {
  int numKvHeads = 0, headDim = 0;
  sscDataType_t dtype = sscBfloat16;
  struct Round {
    std::vector<int32_t> seqs;
    std::vector<uint16_t> k, v;
  };
  std::vector<Round> rounds;
  std::vector<std::vector<float>> seqK, seqV;

  int length(int seq) const {
    return static_cast<int>(seqK[seq].size() / (static_cast<size_t>(numKvHeads) * headDim));
  }
  const float* k(int seq, int pos, int head) const {
    return &seqK[seq][(static_cast<size_t>(pos) * numKvHeads + head) * headDim];
  }
  const float* v(int seq, int pos, int head) const {
    return &seqV[seq][(static_cast<size_t>(pos) * numKvHeads + head) * headDim];
  }
};

// lengths[s] tokens for sequence s, spread over `rounds` appends with the sequences'
// tokens interleaved in each (the last round appends one token per non-empty sequence, like a
// decode step). Values uniform in [-1, 1), deterministic in seed.
inline Workload makeWorkload(uint32_t seed, int numKvHeads, int headDim, sscDataType_t dtype,
                             const std::vector<int>& lengths, int rounds) {
  Workload w;
  w.numKvHeads = numKvHeads;
  w.headDim = headDim;
  w.dtype = dtype;
  w.rounds.resize(rounds);
  w.seqK.resize(lengths.size());
  w.seqV.resize(lengths.size());
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const size_t row = static_cast<size_t>(numKvHeads) * headDim;
  std::vector<int> left(lengths);
  for (int r = 0; r < rounds; ++r) {
    // Earlier rounds take equal shares of all but the last token; the last takes the rest.
    std::vector<int> quota(lengths.size());
    for (size_t s = 0; s < lengths.size(); ++s)
      quota[s] = r + 1 == rounds ? left[s] : std::max(0, lengths[s] - 1) / (rounds - 1);
    for (bool more = true; more;) {
      more = false;
      for (size_t s = 0; s < lengths.size(); ++s) {  // one token per sequence at a time
        if (quota[s] == 0) continue;
        --quota[s];
        --left[s];
        more = true;
        w.rounds[r].seqs.push_back(static_cast<int32_t>(s));
        for (size_t i = 0; i < row; ++i) {
          const uint16_t kb = toStorage(u(rng), dtype), vb = toStorage(u(rng), dtype);
          w.rounds[r].k.push_back(kb);
          w.rounds[r].v.push_back(vb);
          w.seqK[s].push_back(fromStorage(kb, dtype));
          w.seqV[s].push_back(fromStorage(vb, dtype));
        }
      }
    }
  }
  return w;
}

// Attention of query q (headDim floats) over KV head `head` of sequence seq: tokens [start, L)
// with start = max(0, L - window) when window > 0; sink: an extra logit without a value, or
// null. Writes out (zeros when there is nothing) and returns the log-sum-exp (-inf when
// nothing). Accumulates in double.
// end: the query sees positions before end only (a prefill query at position p: end = p + 1;
// -1: the whole sequence, as a decode).
inline float referenceAttention(const Workload& w, int seq, int head, const float* q, float scale,
                                int window, const float* sink, float* out, int end = -1) {
  const int L = end >= 0 ? end : w.length(seq), D = w.headDim;
  const int start = window > 0 && L > window ? L - window : 0;
  std::vector<double> s(L > start ? L - start : 0);
  double m = sink != nullptr ? *sink : -std::numeric_limits<double>::infinity();
  for (int t = start; t < L; ++t) {
    double dot = 0;
    for (int i = 0; i < D; ++i) dot += static_cast<double>(q[i]) * w.k(seq, t, head)[i];
    s[t - start] = dot * scale;
    m = std::max(m, s[t - start]);
  }
  std::fill(out, out + D, 0.0f);
  if (m == -std::numeric_limits<double>::infinity()) return -std::numeric_limits<float>::infinity();
  double z = sink != nullptr ? std::exp(*sink - m) : 0.0;
  std::vector<double> acc(D, 0.0);
  for (int t = start; t < L; ++t) {
    const double e = std::exp(s[t - start] - m);
    z += e;
    for (int i = 0; i < D; ++i) acc[i] += e * w.v(seq, t, head)[i];
  }
  for (int i = 0; i < D; ++i) out[i] = static_cast<float>(acc[i] / z);
  return static_cast<float>(m + std::log(z));
}

}  // namespace ssc::test::attn
