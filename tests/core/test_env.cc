// SPDX-License-Identifier: MIT
// The STARSCREAM_* registry and its parsers.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>

#include "src/core/env.h"

namespace ssc::env {
namespace {

// Tests set real environment variables; each restores what it touched.
class Env : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const char* name :
         {"STARSCREAM_HOST_SLOT_BYTES", "STARSCREAM_TIMEOUT", "STARSCREAM_SOCKET_IFNAME"})
      ::unsetenv(name);
  }
};

TEST_F(Env, RegistryNamesAreUniqueAndPrefixed) {
  std::set<std::string> seen;
  ASSERT_FALSE(registry().empty());
  for (const Variable& v : registry()) {
    EXPECT_EQ(std::string(v.name).rfind("STARSCREAM_", 0), 0u) << v.name;
    EXPECT_TRUE(seen.insert(v.name).second) << v.name << " is declared twice";
    EXPECT_NE(std::string(v.meaning), "") << v.name << " has no description";
  }
}

TEST_F(Env, GetIntParsesSuffixes) {
  const char* name = "STARSCREAM_HOST_SLOT_BYTES";
  const std::pair<const char*, int64_t> cases[] = {
      {"12", 12}, {"4K", 4096}, {"4k", 4096}, {"3M", 3 << 20}, {"2G", int64_t{2} << 30},
      {"-1", -1}, {" 7 ", 7},   {"+5", 5},    {"010", 10},  // decimal, not octal
  };
  for (const auto& [text, expected] : cases) {
    ::setenv(name, text, 1);
    EXPECT_EQ(getInt(name), expected) << "'" << text << "'";
  }
}

TEST_F(Env, UnsetOrMalformedFallsBackToTheDefault) {
  const char* name = "STARSCREAM_HOST_SLOT_BYTES";  // default 64K
  ::unsetenv(name);
  EXPECT_EQ(getInt(name), 64 << 10);
  ::setenv(name, "", 1);
  EXPECT_EQ(getInt(name), 64 << 10);
  for (const char* bad :
       {"abc", "12Q", "4KB", "1.5", "K", "99999999999999999999", "9999999999999G"}) {
    ::setenv(name, bad, 1);
    EXPECT_EQ(getInt(name), 64 << 10) << "'" << bad << "'";
  }
  ::setenv("STARSCREAM_TIMEOUT", "2.5", 1);
  EXPECT_DOUBLE_EQ(getDouble("STARSCREAM_TIMEOUT"), 2.5);
  ::setenv("STARSCREAM_TIMEOUT", "soon", 1);
  EXPECT_DOUBLE_EQ(getDouble("STARSCREAM_TIMEOUT"), 300.0);
  ::unsetenv("STARSCREAM_TIMEOUT");
  EXPECT_DOUBLE_EQ(getDouble("STARSCREAM_TIMEOUT"), 300.0);
  // An unset variable whose default is empty is 0, and its string is empty.
  EXPECT_EQ(getString("STARSCREAM_SOCKET_IFNAME"), "");
  EXPECT_EQ(getInt("STARSCREAM_SOCKET_IFNAME"), 0);
}

TEST_F(Env, MarkdownTableListsEveryVariable) {
  const std::string table = markdownTable();
  for (const Variable& v : registry())
    EXPECT_NE(table.find(std::string("`") + v.name + "`"), std::string::npos) << v.name;
  size_t rows = 0;
  for (char c : table) rows += c == '\n';
  EXPECT_EQ(rows, registry().size() + 2);  // header and separator
}

}  // namespace
}  // namespace ssc::env
