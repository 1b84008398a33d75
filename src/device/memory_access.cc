// SPDX-License-Identifier: MIT
#include "src/device/memory_access.h"

#include <fmt/format.h>

namespace ssc {

bool accessibleFor(MemoryKind kind, bool pageableAccess) {
  switch (kind) {
    case MemoryKind::kDevice:
    case MemoryKind::kManaged:
    case MemoryKind::kHostPinned: return true;
    case MemoryKind::kHostPageable: return pageableAccess;
    case MemoryKind::kHostPinnedElsewhere: return false;
  }
  return false;
}

std::string whyInaccessible(MemoryKind kind, bool pageableAccess, const char* runtime) {
  if (accessibleFor(kind, pageableAccess)) return "";
  if (kind == MemoryKind::kHostPinnedElsewhere)
    return fmt::format(
        "registered host memory that the GPU sees only at another address: pass "
        "the address {0}HostGetDevicePointer gives, or allocate with "
        "sscMemAlloc/{0}Malloc",
        runtime);
  return fmt::format(
      "pageable host memory the GPU cannot access; allocate with sscMemAlloc/{0}Malloc "
      "or register it with {0}HostRegister",
      runtime);
}

}  // namespace ssc
