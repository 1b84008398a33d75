// SPDX-License-Identifier: MIT
// The profiles shipped in tuner/profiles/, compiled into the library (a generated file, see
// tuner/CMakeLists.txt), so a default per machine needs no install path.
#pragma once

#include <span>

namespace ssc {

struct ShippedProfile {
  const char* file;      // "h200-mps.json"
  const char* gpuModel;  // its "gpu_model"
  const char* text;      // the JSON text
};

std::span<const ShippedProfile> shippedProfiles();

}  // namespace ssc
