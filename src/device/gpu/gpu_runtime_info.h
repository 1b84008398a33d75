// SPDX-License-Identifier: MIT
// Fills the topology layer's GpuRuntimeInfo from the GPU runtime (see gpu_runtime_info.cc).
#pragma once

#include "src/topology/discovery.h"

namespace ssc {

// False when there is no current device or the runtime cannot describe it.
bool queryGpuRuntimeInfo(GpuRuntimeInfo* out);

}  // namespace ssc
