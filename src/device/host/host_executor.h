// SPDX-License-Identifier: MIT
// Runs a plan on the CPU over the shared-memory transport: the host backend's executor. It
// mirrors the GPU executor step for step (same plans, same FIFO protocol), so a plan that passes
// here is the plan the GPU runs.
#pragma once

#include <atomic>

#include "src/device/work.h"
#include "transports/host/shm_transport.h"

namespace ssc {

// Executes every channel of work.plan in order. Fails with sscTimeout / sscRemoteError (abort)
// from waits, sscInvalidUsage when a peer posts a slot of another size than this rank expects
// (mismatched counts between ranks).
sscResult_t runPlanOnHost(ShmTransport& transport, const Work& work,
                          const std::atomic<bool>* abort);

}  // namespace ssc
