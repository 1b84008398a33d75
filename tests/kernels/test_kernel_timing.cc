// SPDX-License-Identifier: MIT
// A traced call's stamps (src/kernels/gpu/kernel_timing.h), checked on the host: each 8-byte
// word carries its slot's generation and the ticks since the call's base, so the host tells a
// stamp of the current call from one left by an earlier call of the slot, and gets the device
// clock's ticks back whatever the clock's value; the count that says a call's blocks have all
// ended; and which launch of a call cut in several stamps what.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "src/kernels/gpu/kernel_timing.h"

namespace ssc::gpu {
namespace {

TEST(KernelTiming, StampsCarryTheirGenerationAndTicksFromTheBase) {
  // A nanosecond clock near the Unix epoch's present (1.7e18): far beyond 48 bits, which is why
  // stamps count from the call's base.
  const uint64_t base = 1'765'000'000'000'000'000ull;
  for (uint32_t gen : {1u, 2u, 0x7fffu, 0xffffu}) {
    for (uint64_t since : {uint64_t{0}, uint64_t{1}, uint64_t{15'000}, kStampTickMask}) {
      const uint64_t stamp = packStamp(gen, base + since, base);
      EXPECT_EQ(stampGen(stamp), gen);
      EXPECT_EQ(stampTicks(stamp, base), base + since);
    }
  }
  // A zeroed slot reads as generation 0, which no call is given.
  EXPECT_EQ(stampGen(0), 0u);
  // The generation of the call before is told apart.
  EXPECT_NE(stampGen(packStamp(6, base + 10, base)), 7u);
  // Past 48 bits of ticks (78 hours after the base) the count wraps and leaves the generation be.
  const uint64_t wrapped = packStamp(3, base + kStampTickMask + 5, base);
  EXPECT_EQ(stampGen(wrapped), 3u);
  EXPECT_EQ(stampTicks(wrapped, base), base + 4);
}

TEST(KernelTiming, LaterCallsOfASlotHaveLaterEnds) {
  // The end is a maximum over the blocks: a stamp of the slot's earlier call, landing late, must
  // not win over this call's, however the two calls' ticks compare (each counts from its own
  // base, and the base changes with the anchor).
  const uint64_t base = 1'000'000;
  EXPECT_GT(packStamp(8, base, base), packStamp(7, base + kStampTickMask, base));
  EXPECT_GT(packStamp(8, base + 5, base), packStamp(8, base + 4, base));
  // Past the last generation the slot is cleared by the host first (gpu_timing.cc): generation
  // 1's stamps are below 0xffff's.
  EXPECT_LT(packStamp(1, base + kStampTickMask, base), packStamp(0xffff, base, base));
}

TEST(KernelTiming, TheCountReachesTheCallsMarkOnlyWhenEveryBlockHasEnded) {
  for (uint32_t blocks : {1u, 2u, 3u, 7u, 132u, 1024u}) {
    // Block 0 anywhere in the order: first, last, in the middle.
    for (uint32_t zeroAt : {0u, blocks / 2, blocks - 1}) {
      std::vector<uint32_t> order;  // the blocks in the order they end
      for (uint32_t b = 1; b < blocks; ++b) order.push_back(b);
      order.insert(order.begin() + zeroAt, 0u);
      // The slot's count after two earlier calls, and this call's mark.
      const uint64_t before = 2 * kDonePerCall;
      const uint64_t mark = before + kDonePerCall;
      uint64_t done = before;
      for (uint32_t k = 0; k < blocks; ++k) {
        EXPECT_NE(done, mark) << blocks << " blocks, " << k << " ended";
        done += doneShare(order[k], blocks);
      }
      EXPECT_EQ(done, mark) << blocks << " blocks, block 0 ended " << zeroAt + 1 << "th";
    }
  }
  // The count wraps past 2^64 (after 2^32 calls of a slot) and still meets its mark.
  uint64_t done = uint64_t{0} - kDonePerCall;
  for (uint32_t b = 0; b < 5; ++b) done += doneShare(b, 5);
  EXPECT_EQ(done, 0u);
}

TEST(KernelTiming, ACallCutInSeveralLaunchesStampsItsStartFirstAndItsEndLast) {
  TimingSlot slot{};
  const KernelTiming call{&slot, 42, kStampStart | kStampEnd, 9};
  const KernelTiming first = launchTiming(call, true, false);
  EXPECT_EQ(first.marks, kStampStart);
  EXPECT_EQ(first.slot, &slot);
  EXPECT_EQ(first.gen, 9u);
  EXPECT_EQ(first.base, 42u);
  EXPECT_EQ(launchTiming(call, false, true).marks, kStampEnd);
  EXPECT_EQ(launchTiming(call, true, true).marks, kStampStart | kStampEnd);
  // A middle launch stamps nothing: no slot, so its kernels pay one branch.
  const KernelTiming middle = launchTiming(call, false, false);
  EXPECT_EQ(middle.marks, 0u);
  EXPECT_EQ(middle.slot, nullptr);
}

}  // namespace
}  // namespace ssc::gpu
