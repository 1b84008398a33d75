// SPDX-License-Identifier: MIT
// The decode's split-K choice (decode_plan.h).
#include "src/ops/attention/decode_plan.h"

#include <algorithm>
#include <cmath>

namespace ssc::attn {

int64_t decodeSplits(int64_t blocks, int64_t longest, int64_t residentBlocks, int64_t cap) {
  const double slots = static_cast<double>(std::max<int64_t>(residentBlocks, 1));
  cap = std::max<int64_t>(1, std::min({cap, longest / kDecodeMinSpansPerSplit, kDecodeMaxSplits}));
  int64_t best = 1;
  double bestEfficiency = 0;
  for (int64_t s = 1; s <= cap; ++s) {
    const double waves = static_cast<double>(std::max<int64_t>(blocks, 1) * s) / slots;
    const double efficiency = waves / std::ceil(waves);
    if (efficiency >= kDecodeWaveEfficiency) return s;
    if (efficiency > bestEfficiency + 1e-9) {
      best = s;
      bestEfficiency = efficiency;
    }
  }
  return best;
}

}  // namespace ssc::attn
