// SPDX-License-Identifier: MIT
// The anchor kernel of STARSCREAM_TRACE's device timing (kernel_timing.h): one thread that meets
// the host through mapped memory and reads the device clock while the host is known to be
// waiting, so src/device/gpu/gpu_timing.cc can place the kernels' stamps on the host clock.
#include <cstdint>

#include "src/platform/gpu_runtime.h"
#include "src/kernels/gpu/device_common.h"
#include "src/kernels/gpu/kernel_timing.h"

namespace ssc::gpu {
namespace {

__global__ void clockAnchorKernel(ClockAnchorCell* cell, uint32_t attempt, uint64_t spinTicks) {
  volatile ClockAnchorCell* c = cell;
  c->ready = attempt;
  __threadfence_system();
  // The host writes `go` while this spins: loaded as the abort word is, from host memory each time.
  // Bounded, so an attempt the host abandoned costs its stream at most spinTicks.
  const uint64_t t0 = sscGpuTimer();
  bool go = false;
  while (!(go = loadAbortWord(&cell->go) == attempt) && sscGpuTimer() - t0 < spinTicks) {
  }
  c->ticks = sscGpuTimer();
  c->sawGo = go ? 1u : 0u;
  __threadfence_system();
  c->done = attempt;
}

}  // namespace

int launchClockAnchor(ClockAnchorCell* cell, uint32_t attempt, uint64_t spinTicks, void* stream) {
  clockAnchorKernel<<<1, 1, 0, static_cast<hipStream_t>(stream)>>>(cell, attempt, spinTicks);
  return static_cast<int>(hipGetLastError());
}

}  // namespace ssc::gpu
