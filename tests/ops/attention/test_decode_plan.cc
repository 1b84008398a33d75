// SPDX-License-Identifier: MIT
// The decode's split-K choice (src/ops/attention/decode_plan.h): the splits of two launches an
// H200 ran (the grids Nsight Compute reported, 132 SMs whole and 14 under an MPS cap), and the
// rule's invariant over a grid of shapes, SM counts and caps: within its caps, the fewest splits
// whose last wave is full enough, else the fullest.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "src/ops/attention/decode_plan.h"

namespace ssc::attn {
namespace {

double efficiency(int64_t blocks, int64_t splits, int64_t slots) {
  const double waves = static_cast<double>(blocks * splits) / static_cast<double>(slots);
  return waves / std::ceil(waves);
}

TEST(AttnDecodePlan, MatchesTheGridsSeenOnTheH200) {
  // 70b, 32K context, batch 8 on the whole GPU (132 SMs): 8 row groups of 2048 spans.
  EXPECT_EQ(decodeSplits(8, 2048, 3 * 132, kDecodeMaxSplits),
            45);  // 3 blocks an SM: grid (8, 1, 45)
  EXPECT_EQ(decodeSplits(8, 2048, 2 * 132, kDecodeMaxSplits),
            30);  // 2 blocks an SM: grid (8, 1, 30)
  // The same at K = 8 (14 SMs, 3 blocks each), 256 spans a rank: one wave of 40 of 42 slots.
  EXPECT_EQ(decodeSplits(8, 256, 42, kDecodeMaxSplits), 5);
}

TEST(AttnDecodePlan, KeepsItsCaps) {
  // One sequence of 256 spans on 42 slots: no split under 16 spans, so 16 splits, the fullest.
  EXPECT_EQ(decodeSplits(1, 256, 42, kDecodeMaxSplits), 16);
  EXPECT_EQ(decodeSplits(1, 256, 42, 3), 3);   // the scratch holds 3 splits' partials
  EXPECT_EQ(decodeSplits(1, 15, 42, 100), 1);  // shorter than one split's worth
  EXPECT_EQ(decodeSplits(1, 1 << 20, 100000, 1 << 20), kDecodeMaxSplits);
  EXPECT_EQ(decodeSplits(4, 4096, 0, 64), 1);  // no resident block reported: one, not a fault
  EXPECT_EQ(decodeSplits(0, 4096, 42, 64),
            decodeSplits(1, 4096, 42, 64));  // counted as one row group
  EXPECT_EQ(decodeSplits(64, 4096, 42, 0), 1);
}

TEST(AttnDecodePlan, TakesTheFewestFullEnoughSplitsElseTheFullest) {
  for (int64_t blocks : {1, 2, 3, 7, 8, 16, 31, 64, 200})
    for (int64_t longest : {1, 16, 100, 256, 1024, 8192})
      for (int64_t slots : {28, 42, 56, 264, 396})
        for (int64_t cap : {1, 4, 256}) {
          const int64_t s = decodeSplits(blocks, longest, slots, cap);
          const int64_t limit = std::max<int64_t>(
              1, std::min({cap, longest / kDecodeMinSpansPerSplit, kDecodeMaxSplits}));
          SCOPED_TRACE(testing::Message() << "blocks " << blocks << " longest " << longest
                                          << " slots " << slots << " cap " << cap << " -> " << s);
          ASSERT_GE(s, 1);
          ASSERT_LE(s, limit);
          for (int64_t fewer = 1; fewer < s; ++fewer)
            EXPECT_LT(efficiency(blocks, fewer, slots), kDecodeWaveEfficiency)
                << "a smaller count was full enough";
          if (efficiency(blocks, s, slots) < kDecodeWaveEfficiency)
            for (int64_t other = 1; other <= limit; ++other)
              EXPECT_LE(efficiency(blocks, other, slots), efficiency(blocks, s, slots) + 1e-9)
                  << "no count within the caps is full enough, and " << other << " is fuller";
        }
}

}  // namespace
}  // namespace ssc::attn
