// SPDX-License-Identifier: MIT
// Whether a GPU kernel may load and store at an application's pointer as it was given, decided
// from how the runtime classifies the memory behind it. The GPU backend refuses a buffer that its
// kernels cannot touch before any kernel does (Backend::checkAccessible): a kernel that
// dereferences pageable host memory faults with an illegal memory access, a sticky error that
// ruins the process's GPU context for every later call. Pure functions, so the host build tests
// them; the runtime queries live in src/device/gpu/gpu_memory_access.cc.
#pragma once

#include <string>

namespace ssc {

enum class MemoryKind {
  kDevice,               // a device allocation (hipMalloc/cudaMalloc, VMM, a pool)
  kManaged,              // managed (unified) memory: migrates on access
  kHostPinned,           // host memory registered or allocated pinned, mapped at the same address
  kHostPinnedElsewhere,  // registered host memory the device sees at another address only
  kHostPageable,         // plain host memory (malloc, new, std::vector, the stack)
};

// Whether the device's kernels can use a pointer into memory of `kind` as it is. Pageable host
// memory only where the device can access it coherently (cudaDevAttrPageableMemoryAccess /
// hipDeviceAttributePageableMemoryAccess: HMM or ATS systems).
bool accessibleFor(MemoryKind kind, bool pageableAccess);

// Why not, to follow "<argument> <pointer> is ": "" when accessibleFor(kind, pageableAccess).
// `runtime` prefixes the runtime's calls it suggests ("cuda" or "hip").
std::string whyInaccessible(MemoryKind kind, bool pageableAccess, const char* runtime);

}  // namespace ssc
