// SPDX-License-Identifier: MIT
// How a traced call's kernels time it with their own clock (sscGpuTimer), for STARSCREAM_TRACE's
// device intervals (src/device/gpu/gpu_timing.h keeps the slots and reads them back). Plain
// structs, no runtime headers: g++ and the device compilers include it.
//
// The call's slot is in device memory: block 0 of the call's first launch writes `start` at entry,
// before any wait on a peer; at exit every block of the last launch folds its end into `end` (a
// maximum) and counts itself out on `done` (a sum), both reductions whose answer no thread waits
// for, so a block leaves as soon as it has issued them, where an atomic that answers (to find the
// grid's last block, which then wrote the end) held every block for a round trip to memory; the
// two measured the same on small calls, which are bound by their enqueue (docs/trace.md). Not
// host memory the device maps: with the slots there, small traced calls took 1.25x their
// untraced time (8 MPS partitions of an H100). The host copies the slots back now and then on a
// stream of its own, never waiting on the caller's (src/device/gpu/gpu_timing.cc). Slots are not
// cleared between calls: each stamp carries the call's generation of its slot, so a stamp of an
// earlier call is told apart, and `done` only grows, by exactly kDonePerCall a call.
#pragma once

#include <cstdint>

#include "src/collectives/host_device.h"

namespace ssc::gpu {

// One traced call's stamps. `start` and `end` are one 8-byte word each, so a copy sees a whole
// stamp or none: the slot's generation in the top 16 bits (never 0 for a handed-out call), the
// clock's ticks since the call's `base` in the low 48 (78 hours of a nanosecond clock). A later
// call of the slot has a higher generation (until the generation wraps, when the host clears the
// slot), so the maximum over a call's blocks is that call's latest end.
struct alignas(32) TimingSlot {
  uint64_t start;
  uint64_t end;   // the maximum of the last launch's blocks' ends
  uint64_t done;  // grows by kDonePerCall once every block of the call's last launch has ended
};

// What one call adds to its slot's `done`: each block of its last launch adds 1, and block 0
// adds kDonePerCall - gridDim.x besides, so the sum reaches the call's mark only once every block
// has ended, whichever order they end in, and a partial sum never reads as a finished call
// (grids are far smaller than 2^32 blocks). The host knows each call's mark: the slot's previous
// mark plus kDonePerCall.
constexpr uint64_t kDonePerCall = uint64_t{1} << 32;
SSC_HOST_DEVICE uint64_t doneShare(uint32_t block, uint32_t blocks) {
  return block == 0 ? kDonePerCall - blocks + 1 : 1;
}

constexpr int kStampTickBits = 48;
constexpr uint64_t kStampTickMask = (uint64_t{1} << kStampTickBits) - 1;

SSC_HOST_DEVICE uint64_t packStamp(uint32_t gen, uint64_t ticks, uint64_t base) {
  return (uint64_t{gen} << kStampTickBits) | ((ticks - base) & kStampTickMask);
}
SSC_HOST_DEVICE uint32_t stampGen(uint64_t stamp) {
  return static_cast<uint32_t>(stamp >> kStampTickBits);
}
SSC_HOST_DEVICE uint64_t stampTicks(uint64_t stamp, uint64_t base) {
  return base + (stamp & kStampTickMask);
}

enum : uint32_t { kStampStart = 1, kStampEnd = 2 };

// What one launch of a traced call stamps; all zero (slot null) for an untimed launch, which
// then pays one uniform branch at entry and one at exit.
struct KernelTiming {
  TimingSlot* slot;  // the call's slot, device memory
  uint64_t base;     // the clock's ticks the stamps count from
  uint32_t marks;    // kStampStart (the call's first launch) | kStampEnd (its last)
  uint32_t gen;      // the slot's generation for this call, 1 - 0xffff
};

// The marks of one launch of a call cut into several: the start in its first, the end in its
// last, so the interval runs from the first launch's start to the last one's end.
inline KernelTiming launchTiming(KernelTiming call, bool first, bool last) {
  call.marks &= (first ? kStampStart : 0u) | (last ? kStampEnd : 0u);
  if (call.marks == 0) call.slot = nullptr;
  return call;
}

// Where a device's clock meets the host's (gpu_timing.cc): the anchor kernel writes `ready`, spins
// until the host writes `go` (or `spinTicks` pass), reads its clock into `ticks`, then, after a
// system fence, writes `done`. Every word carries the attempt's number, so a late kernel of an
// abandoned attempt is told apart. `sawGo` is 0 when the kernel gave up waiting.
struct ClockAnchorCell {
  uint64_t ticks;
  uint32_t ready;
  uint32_t go;
  uint32_t done;
  uint32_t sawGo;
};

// Queues the anchor kernel (one thread) on `stream`. 0 or the runtime's error code.
int launchClockAnchor(ClockAnchorCell* cell, uint32_t attempt, uint64_t spinTicks, void* stream);

}  // namespace ssc::gpu
