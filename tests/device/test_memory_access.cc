// SPDX-License-Identifier: MIT
// Which memory a GPU kernel may touch as given (src/device/memory_access.h): the rule the GPU
// backend applies, after asking the runtime, before it queues a call on an application's buffer.
#include <gtest/gtest.h>

#include <string>

#include "src/device/memory_access.h"

namespace ssc {
namespace {

TEST(MemoryAccess, DeviceManagedAndPinnedMemoryIsAccessibleEverywhere) {
  for (bool pageable : {false, true}) {
    EXPECT_TRUE(accessibleFor(MemoryKind::kDevice, pageable));
    EXPECT_TRUE(accessibleFor(MemoryKind::kManaged, pageable));
    EXPECT_TRUE(accessibleFor(MemoryKind::kHostPinned, pageable));
    EXPECT_EQ(whyInaccessible(MemoryKind::kHostPinned, pageable, "cuda"), "");
  }
}

TEST(MemoryAccess, PageableHostMemoryOnlyWhereTheDeviceCanAccessIt) {
  EXPECT_FALSE(accessibleFor(MemoryKind::kHostPageable, false));
  EXPECT_TRUE(accessibleFor(MemoryKind::kHostPageable, true));  // HMM, ATS
  EXPECT_EQ(whyInaccessible(MemoryKind::kHostPageable, true, "cuda"), "");
  EXPECT_EQ(whyInaccessible(MemoryKind::kHostPageable, false, "cuda"),
            "pageable host memory the GPU cannot access; allocate with sscMemAlloc/cudaMalloc or "
            "register it with cudaHostRegister");
  EXPECT_NE(whyInaccessible(MemoryKind::kHostPageable, false, "hip").find("hipHostRegister"),
            std::string::npos);
}

TEST(MemoryAccess, RegisteredMemorySeenElsewhereIsRefusedWithTheAddressToUse) {
  for (bool pageable : {false, true}) {
    EXPECT_FALSE(accessibleFor(MemoryKind::kHostPinnedElsewhere, pageable));
    EXPECT_NE(whyInaccessible(MemoryKind::kHostPinnedElsewhere, pageable, "hip")
                  .find("hipHostGetDevicePointer"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace ssc
