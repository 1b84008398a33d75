// SPDX-License-Identifier: MIT
// Loud configuration errors: malformed STARSCREAM_* values refuse communicator init (env::validate)
// and misspelt names are found with a likely intended spelling.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "src/core/env.h"
#include "src/core/errors.h"

namespace ssc::env {
namespace {

class EnvValidate : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const char* name : {"STARSCREAM_TIMEOUT", "STARSCREAM_DEBUG", "STARSCREAM_BACKEND",
                             "STARSCREAM_HOST_SLOT_BYTES", "STARSCREAM_TIMEUOT",
                             "STARSCREAM_SOCKET_IFNAME", "STARSCREAM_GPU"})
      ::unsetenv(name);
  }
};

TEST_F(EnvValidate, WellFormedValuesPass) {
  ::setenv("STARSCREAM_TIMEOUT", "2.5", 1);
  ::setenv("STARSCREAM_DEBUG", "warn", 1);  // any case
  ::setenv("STARSCREAM_BACKEND", "host", 1);
  ::setenv("STARSCREAM_HOST_SLOT_BYTES", "128K", 1);
  ::setenv("STARSCREAM_SOCKET_IFNAME", "anything goes", 1);  // free text
  EXPECT_EQ(checkSetValues(), "");
  EXPECT_EQ(validate(Snapshot::take()), sscSuccess);
}

TEST_F(EnvValidate, MalformedValuesNameTheVariableAndWhatItAccepts) {
  const struct {
    const char* name;
    const char* value;
    const char* accepted;
  } cases[] = {
      {"STARSCREAM_TIMEOUT", "soon", "a number"},
      {"STARSCREAM_DEBUG", "VERBOSE", "WARN|INFO|TRACE"},
      {"STARSCREAM_BACKEND", "cuda", "auto|gpu|host"},
      {"STARSCREAM_BACKEND", "HOST", "auto|gpu|host"},  // read as written: would mean auto
      {"STARSCREAM_HOST_SLOT_BYTES", "64KB", "K, M or G"},
  };
  for (const auto& c : cases) {
    ::setenv(c.name, c.value, 1);
    const std::string why = checkSetValues();
    EXPECT_NE(why.find(c.name), std::string::npos) << why;
    EXPECT_NE(why.find(c.value), std::string::npos) << why;
    EXPECT_NE(why.find(c.accepted), std::string::npos) << why;
    EXPECT_EQ(validate(Snapshot::take()), sscInvalidArgument) << c.name;
    EXPECT_NE(lastError().find(c.name), std::string::npos) << lastError();
    ::unsetenv(c.name);
  }
  ::setenv("STARSCREAM_TIMEOUT", "", 1);  // empty: the default
  EXPECT_EQ(validate(Snapshot::take()), sscSuccess);
}

TEST_F(EnvValidate, UnknownNamesAreFoundWithTheirLikelySpelling) {
  ::setenv("STARSCREAM_TIMEUOT", "30", 1);
  ::setenv("STARSCREAM_GPU", "none", 1);  // read by scripts/build.sh, not a typo
  bool found = false;
  for (const std::string& name : unknownNames()) {
    EXPECT_NE(name, "STARSCREAM_GPU");
    EXPECT_NE(name, "STARSCREAM_TIMEOUT");
    found |= name == "STARSCREAM_TIMEUOT";
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(closestName("STARSCREAM_TIMEUOT"), "STARSCREAM_TIMEOUT");
  EXPECT_EQ(closestName("STARSCREAM_ALOG"), "STARSCREAM_ALGO");
  EXPECT_EQ(closestName("STARSCREAM_SOMETHING_ELSE_ENTIRELY"), "");
  // An unknown name warns; it does not fail init.
  EXPECT_EQ(validate(Snapshot::take()), sscSuccess);
}

}  // namespace
}  // namespace ssc::env
