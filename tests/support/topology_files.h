// SPDX-License-Identifier: MIT
// The emulation topologies of tools/topologies, loaded by name in tests (SSC_SOURCE_DIR is the
// repository root, set by the test's CMake target).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "src/core/errors.h"
#include "src/topology/topology.h"

namespace ssc::test {

// tools/topologies/<name>.json at any rank count; a load failure fails the calling test.
inline Topology topoFile(const std::string& name) {
  Topology t;
  const std::string path = std::string(SSC_SOURCE_DIR) + "/tools/topologies/" + name + ".json";
  EXPECT_EQ(loadTopologyFile(path, kAnyRankCount, &t), sscSuccess) << lastError();
  return t;
}

}  // namespace ssc::test
