// SPDX-License-Identifier: MIT
#include "src/ops/attention/merge.h"

#include <algorithm>
#include <cmath>

namespace ssc::attn {

namespace {
constexpr float kNegInf = -__builtin_inff();
}

void PartialAccumulator::add(float score, const float* value) {
  const int dim = static_cast<int>(acc_.size());
  if (score > max_) {
    // Rescale what is there to the new maximum (exp(-inf) = 0 on the first row).
    const float c = std::exp(max_ - score);
    sum_ *= c;
    for (int i = 0; i < dim; ++i) acc_[i] *= c;
    max_ = score;
  }
  const float w = std::exp(score - max_);
  sum_ += w;
  for (int i = 0; i < dim; ++i) acc_[i] += w * value[i];
}

float PartialAccumulator::finish(float* out) const {
  const int dim = static_cast<int>(acc_.size());
  if (sum_ == 0.0f) {
    std::fill(out, out + dim, 0.0f);
    return kNegInf;
  }
  const float inv = 1.0f / sum_;
  for (int i = 0; i < dim; ++i) out[i] = acc_[i] * inv;
  return max_ + std::log(sum_);
}

float mergePartials(const float* outs, int64_t outStride, const float* lses, int n, int dim,
                    const float* sink, float* out) {
  float m = sink != nullptr ? *sink : kNegInf;
  for (int i = 0; i < n; ++i) m = std::max(m, lses[i]);
  std::fill(out, out + dim, 0.0f);
  if (m == kNegInf) return kNegInf;  // nothing anywhere: no token, no sink
  float total = sink != nullptr ? std::exp(*sink - m) : 0.0f;
  for (int i = 0; i < n; ++i) {
    if (lses[i] == kNegInf) continue;  // an empty shard (also keeps NaN out of -inf - -inf)
    const float w = std::exp(lses[i] - m);
    total += w;
    const float* o = outs + i * outStride;
    for (int j = 0; j < dim; ++j) out[j] += w * o[j];
  }
  const float inv = 1.0f / total;
  for (int j = 0; j < dim; ++j) out[j] *= inv;
  return m + std::log(total);
}

void mergeInto(float* aOut, float* aLse, const float* bOut, float bLse, int dim) {
  if (bLse == kNegInf) return;
  if (*aLse == kNegInf) {
    std::copy(bOut, bOut + dim, aOut);
    *aLse = bLse;
    return;
  }
  const float m = std::max(*aLse, bLse);
  const float wa = std::exp(*aLse - m), wb = std::exp(bLse - m), inv = 1.0f / (wa + wb);
  for (int j = 0; j < dim; ++j) aOut[j] = (wa * aOut[j] + wb * bOut[j]) * inv;
  *aLse = m + std::log(wa + wb);
}

}  // namespace ssc::attn
