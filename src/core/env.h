// The one registry of STARSCREAM_* environment variables. Every variable the library reads is
// declared in env.cc with its default and meaning; reading an undeclared name is a bug that
// getString reports (and tests catch). docs/environment.md is generated from the same table.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace ssc::env {

struct Variable {
  const char* name;
  const char* defaultValue;  // as text; "" means unset
  const char* meaning;
};

// Every declared variable, in documentation order.
std::span<const Variable> registry();

// The variable's value, or its declared default when unset or empty.
std::string getString(const char* name);
// Parsed as a signed integer with optional K/M/G suffix (powers of 1024); falls back to the
// default, with a warning, when the text does not parse.
int64_t getInt(const char* name);
double getDouble(const char* name);

// The registry as a Markdown table (what docs/environment.md holds).
std::string markdownTable();

}  // namespace ssc::env
