// SPDX-License-Identifier: MIT
// The GPU backend's device services (src/device/services.h): the runtime's memory, stream and
// event calls for the layers above, each checked through SSC_GPU_FAIL.
#pragma once

#include "src/device/services.h"

namespace ssc {

// One per process: the calls act on the calling thread's current device, which the callers make
// their communicator's (as every runtime call of the GPU backend does).
DeviceServices* gpuServices();

}  // namespace ssc
