// The one registry of STARSCREAM_* environment variables. Every variable the library reads is
// declared in env.cc with its default and meaning; reading an undeclared name is a bug that
// getString reports (and tests catch). docs/environment.md is generated from the same table.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "starscream/starscream.h"

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

// Checks the values of the set STARSCREAM_* variables whose values have a shape (integers,
// numbers, fixed choices): "" or a message naming the first bad variable, its value and what it
// accepts. STARSCREAM_ALGO is the tuner's to check (checkAlgoSpec in tuner/select.h).
std::string checkSetValues();
// STARSCREAM_* names in the environment that are neither in the registry nor read by the
// repository's scripts (STARSCREAM_GPU, STARSCREAM_REPO): typos such as STARSCREAM_TIMEUOT.
std::vector<std::string> unknownNames();
// The registry name closest to `name` (a likely intended spelling), or "" if none is close.
std::string closestName(const std::string& name);
// Communicator init: warns on stderr (whatever STARSCREAM_DEBUG says), once per process, about
// unknown names, then fails with sscInvalidArgument and checkSetValues's message when a value is
// malformed.
sscResult_t validate();

// The registry as a Markdown table (what docs/environment.md holds).
std::string markdownTable();

}  // namespace ssc::env
