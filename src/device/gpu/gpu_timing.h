// SPDX-License-Identifier: MIT
// The GPU side of a traced call's timing (src/device/work_timing.h): two events from a pool,
// recorded around the work on its own stream, read back later with hipEventQuery, never with a
// synchronisation of the caller's stream. Only traced calls (STARSCREAM_TRACE) come here.
#pragma once

#include "src/device/work_timing.h"
#include "src/platform/gpu_runtime.h"
#include "starscream/starscream.h"

namespace ssc::gpu {

// Records the start event on `stream` (the current device's) and attaches the timer to `timing`.
sscResult_t timingStart(WorkTiming* timing, hipStream_t stream);
// Records the end event; after timingStart on the same stream.
sscResult_t timingEnd(WorkTiming* timing, hipStream_t stream);

}  // namespace ssc::gpu
