// SPDX-License-Identifier: MIT
// How a traced call's kernels time it with their own clock (sscGpuTimer), for STARSCREAM_TRACE's
// device intervals (src/device/gpu/gpu_timing.h keeps the slots and reads them back). Plain
// structs, no runtime headers: g++ and the device compilers include it.
//
// The call's slot is in pinned host memory the device maps: block 0 of the call's first launch
// writes `start` at entry, before any wait on a peer; at exit every block of the last launch
// counts itself on `blocksDone` (device memory), and the block that finishes last writes `end`,
// then, after a system fence, `done`. The host reads the slot when `done` is set, never waiting.
// Nothing orders block 0's `start` before `done` for the host (block 0 fences at device scope
// only, so as not to wait for the host link), so the host also waits for `start` to be non-zero:
// the clock never reads 0 once the device is up.
#pragma once

#include <cstdint>

namespace ssc::gpu {

// One traced call's stamps, in sscGpuTimer() ticks; the host zeroes the slot before handing it
// out.
struct alignas(32) TimingSlot {
  uint64_t start;
  uint64_t end;
  uint64_t done;  // 1 once `end` is written
  uint64_t pad;
};

enum : uint32_t { kStampStart = 1, kStampEnd = 2 };

// What one launch of a traced call stamps; all zero (slot null) for an untimed launch, which
// then pays one uniform branch at entry and one at exit.
struct KernelTiming {
  TimingSlot* slot;      // the device's address of the call's slot (host memory)
  uint32_t* blocksDone;  // the slot's count of finished blocks, device memory, 0 between calls
  uint32_t marks;        // kStampStart (the call's first launch) | kStampEnd (its last)
  uint32_t pad;
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
