// SPDX-License-Identifier: MIT
// A traced call's stamps (src/kernels/gpu/kernel_timing.h), checked on the host: each 8-byte
// word carries its slot's generation and the ticks since the call's base, so the host tells a
// stamp of the current call from one left by an earlier call of the slot, and gets the device
// clock's ticks back whatever the clock's value; and which launch of a call cut in several
// stamps what.
#include <gtest/gtest.h>

#include <cstdint>

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

TEST(KernelTiming, ACallCutInSeveralLaunchesStampsItsStartFirstAndItsEndLast) {
  TimingSlot slot{};
  uint32_t done = 0;
  const KernelTiming call{&slot, &done, 42, kStampStart | kStampEnd, 9};
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
