// SPDX-License-Identifier: MIT
// The fp32 arithmetic of sharded attention on the host: one rank's partial attention over its
// tokens (an online softmax: output normalised by its own denominator, plus the log-sum-exp of
// its scores) and the exact merge of the ranks' partials.
//
// Why (output, LSE) pairs: with o_r = sum_t e^{s_t} v_t / Z_r and lse_r = log Z_r over the
// tokens of rank r, the attention over all tokens is sum_r e^{lse_r - lse} o_r with
// lse = log sum_r e^{lse_r}. The merge is associative and commutative, so partials may be
// combined in any grouping; a rank without tokens contributes lse = -inf, weight 0. A sink
// logit is one more term in the denominator without a value: a partial (o = 0, lse = sink),
// added exactly once, here in the merge, never per shard.
#pragma once

#include <cstdint>
#include <vector>

namespace ssc::attn {

// Online softmax over rows streamed one at a time (scores arrive in any order).
class PartialAccumulator {
 public:
  explicit PartialAccumulator(int dim) : acc_(dim, 0.0f) {}
  // Adds one key's score and its value row (dim floats).
  void add(float score, const float* value);
  // Writes the normalised partial output (zeros when nothing was added) and returns its LSE
  // (-inf when nothing was added).
  float finish(float* out) const;

 private:
  float max_ = -__builtin_inff();
  float sum_ = 0.0f;        // sum of e^{s - max_}
  std::vector<float> acc_;  // sum of e^{s - max_} v
};

// Merges n partials: outs[i * outStride .. + dim) with LSE lses[i]; sink, when not null, is one
// more term with no value. Writes the merged output to out (dim floats; zeros when every LSE is
// -inf and there is no sink) and returns the merged LSE.
float mergePartials(const float* outs, int64_t outStride, const float* lses, int n, int dim,
                    const float* sink, float* out);

// The associative pairwise form: folds (bOut, bLse) into (aOut, aLse) in place.
void mergeInto(float* aOut, float* aLse, const float* bOut, float bLse, int dim);

}  // namespace ssc::attn
