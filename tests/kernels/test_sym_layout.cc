// The symmetric kernels' device-side numbering (src/kernels/gpu/sym_kernel.h), checked on the
// host: the LL round that the last block of a launch advances on the device, and the control
// area's own counters, which must not overlap the barrier slots or the LL inboxes.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>

#include "src/kernels/gpu/sym_kernel.h"

namespace ssc::gpu {
namespace {

TEST(SymLayout, LLRoundsAlternateParityAndNeverCarryFlagZeroAcrossTheWrap) {
  uint64_t round = 0xFFFFFFF0ull;
  std::set<int> clearedParities;
  for (int i = 0; i < 40; ++i) {
    const uint64_t next = llNextRound(round);
    EXPECT_NE(static_cast<uint32_t>(next), 0u) << "flag 0 is what a cleared line holds";
    EXPECT_NE(next & 1, round & 1) << "parities must alternate at round " << round;
    EXPECT_GT(next, round);
    if (llClearsAfterRound(round)) {
      EXPECT_GE(static_cast<uint32_t>(round), 0xFFFFFFFEu);
      clearedParities.insert(static_cast<int>(round & 1));
    }
    round = next;
  }
  EXPECT_EQ(clearedParities.size(), 2u) << "each inbox parity is cleared once before the wrap";
  EXPECT_EQ(llNextRound(1), 2u);
}

TEST(SymLayout, OwnCountersSitBetweenTheBarrierSlotsAndTheInboxes) {
  const uint64_t words[] = {SymCtrlLayout::kGridArrive, SymCtrlLayout::kGridGeneration,
                            SymCtrlLayout::kLLDone, SymCtrlLayout::kLLRound};
  std::set<uint64_t> distinct;
  for (uint64_t w : words) {
    EXPECT_GE(w, SymCtrlLayout::kBarriers + kMaxSymBlocks * sizeof(SymBarrierSlot));
    EXPECT_LE(w + 8, SymCtrlLayout::kInbox);
    EXPECT_EQ(w % 8, 0u);
    distinct.insert(w);
  }
  EXPECT_EQ(distinct.size(), 4u);
}

}  // namespace
}  // namespace ssc::gpu
