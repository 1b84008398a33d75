// SPDX-License-Identifier: MIT
// The GPU side of a traced call's timing (src/device/work_timing.h): the call's kernels stamp a
// slot of device memory with their own clock (src/kernels/gpu/kernel_timing.h), and the timer
// reads the slot later from a copy the host makes now and then on a stream of its own, never
// waiting for the call, placing the stamps on the host's clock through an anchor. No event and no
// extra launch on the caller's stream, and nothing synchronises it. Only traced calls
// (STARSCREAM_TRACE) come here.
#pragma once

#include "src/device/work_timing.h"
#include "src/kernels/gpu/kernel_timing.h"

namespace ssc::gpu {

class SlotTimer;

// A traced call's timing while the backend queues it.
struct CallTiming {
  KernelTiming kernels{};      // what the call's launches stamp (slot null: untimed)
  SlotTimer* timer = nullptr;  // owned by the call's WorkTiming
};

// Gives a traced call about to be queued on `device` (the calling thread's current one) a timing
// slot and attaches the timer that reads it to `timing`. A call captured into a graph (`capturing`:
// its replays are not traced), or one that finds no free slot or no anchor, goes without a device
// time: the returned kernels.slot is null, and the trace shows the call's enqueue only.
CallTiming timingStart(WorkTiming* timing, int device, bool capturing);

// How the call's launches went; after timingStart, whatever happened.
enum class TimingEnd {
  kQueued,      // every launch was queued, the last one writing the end stamp
  kNothingRan,  // nothing was launched with the slot: no device time
  kFailed,      // a launch failed: no device time
};
void timingEnd(const CallTiming& call, TimingEnd how);

}  // namespace ssc::gpu
