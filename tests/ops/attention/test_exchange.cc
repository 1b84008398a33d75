// SPDX-License-Identifier: MIT
// The fused exchange's layout (src/ops/attention/attention_exchange_layout.h): every region inside
// the scratch and disjoint from the others, rows and flags aligned, parities apart, each partial
// row sent to exactly the ranks that return its head, and the query chunks covering a slice
// exactly.
#include <gtest/gtest.h>

#include <set>
#include <utility>
#include <vector>

#include "src/ops/attention/attention_exchange_layout.h"

namespace ssc::attn {
namespace {

TEST(AttnExchange, RegionsAreDisjointAlignedAndInside) {
  for (int n : {1, 2, 3, 8}) {
    for (int d : {64, 128}) {
      ExchangeLayout l{n, 5, 16, d};
      const size_t rowBytes = l.rowFloats() * 4;
      EXPECT_EQ(rowBytes % 16, 0u);
      EXPECT_EQ(l.flagFloat() * 4 % 8, 0u);
      EXPECT_GT(l.flagFloat(), static_cast<size_t>(d));  // after the outputs and the LSE
      EXPECT_LT(l.flagFloat() + 1, l.rowFloats());       // 8 bytes fit in the row
      // Every (parity, sender, slot) row is its own, and all rows end before the queries.
      std::set<size_t> starts;
      for (int p = 0; p < 2; ++p)
        for (int s = 0; s < n; ++s)
          for (size_t slot = 0; slot < l.rowsPerSender(); ++slot) {
            const size_t o = l.rowOffset(p, s, slot);
            EXPECT_TRUE(starts.insert(o).second);
            EXPECT_LE((o + l.rowFloats()) * 4, l.qOffsetBytes(0));
          }
      EXPECT_EQ(l.qOffsetBytes(1) - l.qOffsetBytes(0), l.qParityBytes());
      // A call's slices (at most maxBatch x ceil(heads / n) x d x 4 bytes each) fit a parity.
      const size_t slice = 5 * ((16 + n - 1) / n) * static_cast<size_t>(d) * 4;
      EXPECT_LE(n * slice, l.qParityBytes());
      EXPECT_EQ(l.qOffsetBytes(0) % 16, 0u);
      // Flags after the query areas, 128-byte aligned start, each its own 8 bytes.
      EXPECT_GE(l.qFlagOffsetBytes(0, 0, 0), l.qOffsetBytes(1) + l.qParityBytes());
      EXPECT_EQ(l.qFlagOffsetBytes(0, 0, 0) % 128, 0u);
      std::set<size_t> flags;
      for (int p = 0; p < 2; ++p)
        for (int s = 0; s < n; ++s)
          for (int c = 0; c < kExchangeMaxQChunks; ++c) {
            const size_t f = l.qFlagOffsetBytes(p, s, c);
            EXPECT_TRUE(flags.insert(f).second);
            EXPECT_LE(f + 8, l.totalBytes());
          }
    }
  }
}

// The slot and flag the kernels compute for a (sequence, head) row (rowTarget, outHeadsOf,
// rowSlot, flagFloatOf: what attention_finish.cuh and attention_exchange.cu call) are the layout's
// rows: inside a sender's rows, one per (sequence, returned head), the flag inside the row.
TEST(AttnExchange, KernelSlotsAreTheLayoutsRows) {
  for (int n : {1, 2, 4, 8})
    for (bool sharded : {false, true})
      for (int d : {64, 128}) {
        const int H = 16, B = 3;
        ExchangeLayout l{n, B, H, d};
        EXPECT_EQ(flagFloatOf(d), l.flagFloat());
        EXPECT_EQ(rowFloatsOf(d), l.rowFloats());
        const int outHeads = outHeadsOf(H, n, sharded);
        EXPECT_EQ(outHeads, sharded ? H / n : H);
        std::set<size_t> slots;
        for (int b = 0; b < B; ++b)
          for (int h = 0; h < H; ++h) {
            const RowTarget t = rowTarget(h, H, n, sharded);
            const size_t slot = rowSlot(b, outHeads, t.j);
            ASSERT_LT(slot, l.rowsPerSender());
            slots.insert(slot);
            // The offset a sender's kernel stores at in parity p is the layout's row.
            for (int p = 0; p < 2; ++p)
              EXPECT_EQ(p * l.rowOffset(1, 0, 0) + (n > 1 ? l.rowOffset(0, 1, 0) : 0) +
                            slot * l.rowFloats(),
                        l.rowOffset(p, n > 1 ? 1 : 0, slot));
          }
        EXPECT_EQ(slots.size(), static_cast<size_t>(B) * outHeads);
      }
}

TEST(AttnExchange, EpochsAlternateParity) {
  EXPECT_EQ(parityOf(1), 1);
  EXPECT_EQ(parityOf(2), 0);
  for (uint64_t e = 1; e < 10; ++e) EXPECT_NE(parityOf(e), parityOf(e + 1));
}

// Every (receiver, slot) of a call gets exactly one row per sender, and a receiver's slot j holds
// head firstHead + j, the head the merge writes there.
TEST(AttnExchange, EveryRowReachesExactlyItsReceivers) {
  for (int n : {1, 2, 4, 8})
    for (bool sharded : {false, true}) {
      const int H = 16;
      const int outHeads = sharded ? H / n : H;
      std::set<std::pair<int, int>> got;  // (receiver, slot head)
      for (int h = 0; h < H; ++h) {
        const RowTarget t = rowTarget(h, H, n, sharded);
        ASSERT_LE(t.firstRank, t.lastRank);
        ASSERT_GE(t.firstRank, 0);
        ASSERT_LT(t.lastRank, n);
        ASSERT_GE(t.j, 0);
        ASSERT_LT(t.j, outHeads);
        for (int r = t.firstRank; r <= t.lastRank; ++r) {
          EXPECT_EQ((sharded ? r * outHeads : 0) + t.j, h);
          EXPECT_TRUE(got.insert({r, t.j}).second);
        }
      }
      EXPECT_EQ(got.size(), static_cast<size_t>(n) * outHeads);
    }
}

TEST(AttnExchange, QueryChunksCoverASliceExactly) {
  for (size_t bytes : {size_t{256}, size_t{8192}, size_t{8193 * 2}, size_t{1} << 20, size_t{130}}) {
    const QChunks c = qChunks(bytes);
    ASSERT_GE(c.chunks, 1);
    ASSERT_LE(c.chunks, kExchangeMaxQChunks);
    EXPECT_EQ(c.chunkBytes % 16, 0u);
    EXPECT_GE(c.chunkBytes * c.chunks, bytes);        // covered
    EXPECT_LT(c.chunkBytes * (c.chunks - 1), bytes);  // no empty chunk
  }
}

}  // namespace
}  // namespace ssc::attn
