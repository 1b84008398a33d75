// SPDX-License-Identifier: MIT
// fp16/bf16 test data: a float rounded to its 16-bit storage and back, and a seeded matrix of
// such values (the same on every rank for the same seed). Shared by the attention reference and
// the GEMM-collective tests. Header-only; needs ssc_kernels' conversions.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "src/kernels/host/reduce.h"
#include "starscream/starscream.h"

namespace ssc::test {

inline uint16_t toStorage(float x, sscDataType_t t) {
  return t == sscFloat16 ? floatToHalf(x) : floatToBf16(x);
}
inline float fromStorage(uint16_t b, sscDataType_t t) {
  return t == sscFloat16 ? halfToFloat(b) : bf16ToFloat(b);
}

// `elems` values uniform in [-1, 1), rounded to t, drawn from `seed`.
inline std::vector<uint16_t> seededMatrix(uint32_t seed, int64_t elems, sscDataType_t t) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<uint16_t> v(static_cast<size_t>(elems));
  for (auto& e : v) e = toStorage(u(rng), t);
  return v;
}

}  // namespace ssc::test
