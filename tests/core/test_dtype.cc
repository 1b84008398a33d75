// SPDX-License-Identifier: MIT
// The datatype vocabulary (src/core/dtype.h): one table answers size, float-ness and both names
// for every sscDataType_t, and every question about a value outside the enum gets a safe answer.
#include <gtest/gtest.h>

#include <string>

#include "src/core/dtype.h"

namespace ssc {
namespace {

TEST(Dtype, EveryTypeHasItsSizeKindAndNames) {
  const struct {
    sscDataType_t t;
    size_t bytes;
    bool isFloat;
    const char* name;
    const char* api;
  } want[] = {{sscInt8, 1, false, "int8", "int8"},
              {sscUint8, 1, false, "uint8", "uint8"},
              {sscInt32, 4, false, "int32", "int32"},
              {sscUint32, 4, false, "uint32", "uint32"},
              {sscInt64, 8, false, "int64", "int64"},
              {sscUint64, 8, false, "uint64", "uint64"},
              {sscFloat16, 2, true, "half", "float16"},
              {sscFloat32, 4, true, "float", "float32"},
              {sscFloat64, 8, true, "double", "float64"},
              {sscBfloat16, 2, true, "bfloat16", "bfloat16"},
              {sscFloat8e4m3, 1, true, "f8e4m3", "float8e4m3"},
              {sscFloat8e5m2, 1, true, "f8e5m2", "float8e5m2"}};
  ASSERT_EQ(std::size(want), static_cast<size_t>(sscNumTypes));
  for (const auto& w : want) {
    EXPECT_EQ(dtypeSize(w.t), w.bytes) << w.api;
    EXPECT_TRUE(dtypeValid(w.t)) << w.api;
    EXPECT_EQ(dtypeIsFloat(w.t), w.isFloat) << w.api;
    EXPECT_STREQ(dtypeName(w.t), w.name);
    EXPECT_STREQ(dtypeApiName(static_cast<int>(w.t)), w.api);
  }
}

TEST(Dtype, ValuesOutsideTheEnumAreInvalidNotUndefined) {
  for (int bad : {-1, static_cast<int>(sscNumTypes), 99, -1000}) {
    const auto t = static_cast<sscDataType_t>(bad);
    EXPECT_EQ(dtypeSize(t), 0u) << bad;
    EXPECT_FALSE(dtypeValid(t)) << bad;
    EXPECT_FALSE(dtypeIsFloat(t)) << bad;
    EXPECT_STREQ(dtypeName(t), "unknown");
    EXPECT_STREQ(dtypeApiName(bad), "an invalid datatype");
  }
}

}  // namespace
}  // namespace ssc
