// SPDX-License-Identifier: MIT
// Backend::checkAccessible on the GPU: refuses a buffer the communicator's device cannot touch
// (pageable host memory, where the device cannot access it coherently) before a kernel faults on
// it. Device allocations seen once are remembered by range, so the calls that normally come (on
// hipMalloc'd or caching-allocator memory) cost a lookup and no runtime call; only a pointer
// outside every remembered range asks the runtime, first for its legacy device allocation
// (sscPointerRange, as the plain-buffer peer cache does), then, when it is not one, how the
// runtime classifies it (hipPointerGetAttributes: managed, pinned, VMM or plain host memory).
#pragma once

#include <cstddef>

#include "starscream/starscream.h"

namespace ssc::gpu {

// Success, or sscInvalidArgument "<fn>: <what> <p> is ..." naming why `device`'s kernels cannot
// use [p, p + bytes). Any thread; safe while a stream is being captured.
sscResult_t checkAccessible(int device, const char* fn, const char* what, const void* p,
                            size_t bytes);

// sscMemFree of the allocation at `base`: its range is no longer known to be device memory.
void forgetDeviceRange(const void* base);

}  // namespace ssc::gpu
