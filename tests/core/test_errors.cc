// SPDX-License-Identifier: MIT
// The error macro family: SSC_CHECK leaves each place a failure passes in the thread's trace,
// a new error starts a new trace, SSC_INTERNAL names where an invariant broke.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "src/core/errors.h"

namespace ssc {
namespace {

sscResult_t innermost() { return fail(sscInvalidArgument, "count is {}", -1); }
int g_middleLine = 0, g_outerLine = 0;
sscResult_t middle() {
  g_middleLine = __LINE__ + 1;
  SSC_CHECK(innermost());
  return sscSuccess;
}
sscResult_t outer() {
  g_outerLine = __LINE__ + 1;
  SSC_CHECK(middle());
  return sscSuccess;
}
sscResult_t succeeds() {
  SSC_CHECK(sscSuccess);
  return sscSuccess;
}

TEST(Errors, CheckRecordsTheWayUpInnermostFirst) {
  clearLastError();
  EXPECT_EQ(outer(), sscInvalidArgument);
  EXPECT_EQ(lastError(), "count is -1");  // the message itself is unchanged
  const std::string want = "test_errors.cc:" + std::to_string(g_middleLine) +
                           " <- test_errors.cc:" + std::to_string(g_outerLine);
  EXPECT_EQ(errorTrace(), want);
}

TEST(Errors, ANewErrorStartsANewTrace) {
  EXPECT_EQ(outer(), sscInvalidArgument);
  EXPECT_FALSE(errorTrace().empty());
  fail(sscTimeout, "later");
  EXPECT_EQ(errorTrace(), "");
  EXPECT_EQ(succeeds(), sscSuccess);
  EXPECT_EQ(errorTrace(), "");  // success leaves nothing
  clearLastError();
  EXPECT_EQ(errorTrace(), "");
}

TEST(Errors, TraceIsBounded) {
  fail(sscInvalidArgument, "start");
  for (int i = 0; i < 10000; ++i) traceFailure(__FILE__, i, sscInvalidArgument);
  EXPECT_LT(errorTrace().size(), 1200u);
}

TEST(Errors, InternalNamesThePlace) {
  const int line = __LINE__ + 1;
  EXPECT_EQ(SSC_INTERNAL("plan for rank {} of {}", 5, 4), sscInternalError);
  EXPECT_EQ(lastError(),
            "plan for rank 5 of 4 (internal error at test_errors.cc:" + std::to_string(line) + ")");
}

TEST(Errors, BaseNameStripsDirectories) {
  static_assert(std::string_view(baseName("/a/b/c.cc")) == "c.cc");
  EXPECT_STREQ(baseName("plain.cc"), "plain.cc");
  EXPECT_STREQ(baseName("dir/"), "");
}

}  // namespace
}  // namespace ssc
